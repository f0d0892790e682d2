package gateway

import (
	"fmt"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
)

// ToolEntry turns a live tool of the upstream called upstream into the
// registry entry of kind tool that SPEC §14 describes, named "U.T":
//
//   - sem: effect "read" exactly when annotations.readOnlyHint is true,
//     else "write"; destructive, idempotent and open_world from the
//     hints, with MCP's defaults where one is missing (destructiveHint
//     true, idempotentHint false, openWorldHint true);
//   - alg: the input and output schemas as declared (RFC 8785 form; the
//     output schema null when none);
//   - impl: the upstream, the tool's name, and the server's name and
//     version when pin is PinVersion;
//   - disc: the tool's title (or its annotations' title) and
//     description: what a sync approves, outside the identity.
//
// A tool with a Problem is refused with ErrInvalidTool. The entry is
// validated as the registry validates it.
func ToolEntry(upstream string, pin Pin, server ServerInfo, t LiveTool) (registry.Entry, error) {
	if t.Problem != "" {
		return registry.Entry{}, fmt.Errorf("%w: %s.%s: %s", ErrInvalidTool, upstream, clip(t.Name, 128), t.Problem)
	}
	a := Annotations{}
	if t.Annotations != nil {
		a = *t.Annotations
	}
	hint := func(p *bool, dflt bool) bool {
		if p == nil {
			return dflt
		}
		return *p
	}
	sem := registry.ToolSemantic{
		Effect:      registry.EffectWrite,
		Destructive: hint(a.DestructiveHint, true),
		Idempotent:  hint(a.IdempotentHint, false),
		OpenWorld:   hint(a.OpenWorldHint, true),
	}
	if hint(a.ReadOnlyHint, false) {
		sem.Effect = registry.EffectRead
	}
	impl := registry.ToolImplementation{Upstream: upstream, Tool: t.Name}
	switch pin {
	case PinSchema:
	case PinVersion:
		impl.Server = &registry.ToolServer{Name: server.Name, Version: server.Version}
	default:
		return registry.Entry{}, fmt.Errorf("%w: pin %q", ErrInvalidConfig, pin)
	}
	title := t.Title
	if title == "" {
		title = a.Title
	}
	e := registry.Entry{
		Name: upstream + "." + t.Name,
		Kind: registry.KindTool,
		Disc: registry.Discovery{Title: title, Description: t.Description},
		Tool: &registry.ToolLayers{
			Sem:  sem,
			Alg:  registry.ToolAlgebraic{InputSchema: t.InputSchema, OutputSchema: t.OutputSchema},
			Impl: impl,
		},
	}
	if err := e.Validate(); err != nil {
		return registry.Entry{}, fmt.Errorf("%w: %w", ErrInvalidTool, err)
	}
	return e, nil
}

// ToolIdentity is the identity ToolEntry's entry has (SPEC §2's formula
// over its sem, alg and impl layers).
func ToolIdentity(upstream string, pin Pin, server ServerInfo, t LiveTool) (hashing.Digest, error) {
	e, err := ToolEntry(upstream, pin, server, t)
	if err != nil {
		return hashing.Digest{}, err
	}
	return e.Identity()
}
