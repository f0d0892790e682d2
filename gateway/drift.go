package gateway

import (
	"slices"
	"strings"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
)

// State is how a tool of an upstream stands against the registry
// (SPEC §14, the status of GET /v1/upstreams/{name}).
type State string

// The states.
const (
	// StateOK: the live tool has the identity of the entry in force.
	StateOK State = "ok"
	// StateNew: the upstream lists a tool no entry holds yet.
	StateNew State = "new"
	// StateDrift: the live tool's identity differs from the entry in
	// force (schemas, annotations, the server version when pinned by
	// version), or it can no longer be an entry at all. Its calls are
	// quarantined (F12) until a sync applies.
	StateDrift State = "drift"
	// StateRemoved: an entry is in force for a tool the upstream no
	// longer lists.
	StateRemoved State = "removed"
)

// ToolState is one tool's row of an upstream's status.
type ToolState struct {
	Name string `json:"name"`
	// Identity is the entry in force's (zero when none); Live the live
	// tool's (zero when it is not listed or cannot be an entry).
	Identity hashing.Digest `json:"identity,omitzero"`
	Live     hashing.Digest `json:"live,omitzero"`
	State    State          `json:"state"`
	// Described says that the live title or description is not the
	// approved one. It quarantines nothing (the disc layer is outside the
	// identity); a sync reports it as "described" and screens the text.
	Described bool `json:"described,omitempty"`
	// Problem is the live tool's, when it cannot be an entry.
	Problem string `json:"problem,omitempty"`
}

// Compare sets the live tools of the upstream called upstream against
// the registry's entries in force (inForce may hold any entries: those of
// kind tool whose impl names this upstream are the ones compared) and
// returns one row per tool name, sorted by name. pin and server are the
// upstream's, as ToolEntry takes them.
func Compare(upstream string, pin Pin, server ServerInfo, live []LiveTool, inForce []registry.Capability) []ToolState {
	byTool := map[string]registry.Capability{}
	for _, c := range inForce {
		if c.Kind == registry.KindTool && c.Tool != nil && c.Tool.Impl.Upstream == upstream {
			byTool[c.Tool.Impl.Tool] = c
		}
	}
	var out []ToolState
	seen := map[string]bool{}
	for _, t := range live {
		if seen[t.Name] {
			continue // listed twice: one row (finishList gave both the problem)
		}
		seen[t.Name] = true
		row := ToolState{Name: t.Name}
		e, err := ToolEntry(upstream, pin, server, t)
		if err == nil {
			row.Live, err = e.Identity()
		}
		if err != nil {
			row.Problem = t.Problem
			if row.Problem == "" {
				row.Problem = err.Error()
			}
		}
		c, inForceNow := byTool[t.Name]
		switch {
		case !inForceNow:
			row.State = StateNew
		case row.Live.IsZero() || row.Live != BaseIdentity(c):
			row.Identity, row.State = c.Identity, StateDrift
		default:
			row.Identity, row.State = c.Identity, StateOK
		}
		if inForceNow && err == nil {
			row.Described = e.Disc.Title != c.Disc.Title || e.Disc.Description != c.Disc.Description
		}
		out = append(out, row)
	}
	for name, c := range byTool {
		if !seen[name] {
			out = append(out, ToolState{Name: name, Identity: c.Identity, State: StateRemoved})
		}
	}
	slices.SortFunc(out, func(a, b ToolState) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// BaseIdentity is the identity of a tool entry without its overlay's
// contract: what the upstream itself declares, so what a live tool's
// identity is compared with. A contract is the admin's, never drift.
func BaseIdentity(c registry.Capability) hashing.Digest {
	if c.Tool == nil || c.Tool.Sem.Contract.Empty() {
		return c.Identity
	}
	t := *c.Tool
	t.Sem.Contract = nil
	id, err := t.Identity()
	if err != nil {
		return c.Identity
	}
	return id
}
