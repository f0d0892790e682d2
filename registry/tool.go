package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/hashing"
)

// Entries of kind tool (SPEC §14): an upstream MCP server's tool, named
// "U.T" (upstream U, tool T). Its layers are not the trading kinds':
//
//	sem   effect (read|write), destructive, idempotent, open_world, and
//	      the overlay's contract over the call (contract.ToolSchemaVersion)
//	alg   input_schema, output_schema (null when none), as declared
//	impl  upstream, tool, and server {name, version} when pinned by version
//	disc  the approved title and description (Discovery)
//
// The identity is §2's formula over these three layers; the schemas are
// hashed in their RFC 8785 form. The gateway (package gateway) builds
// these entries from live tools; the registry checks their shape, and
// that a contract's clauses compile against the call's state schema.

// Effect says whether a tool only reads (SPEC §14: annotated read-only)
// or may change the world.
type Effect string

// The effects a tool entry may declare.
const (
	EffectRead  Effect = "read"
	EffectWrite Effect = "write"
)

// Bounds of a tool entry.
const (
	// MaxToolNameLen bounds a tool entry's name: an upstream name (32),
	// a dot and an MCP tool name (128).
	MaxToolNameLen = 32 + 1 + 128
	// MaxToolSchemaBytes bounds each of a tool's two schemas.
	MaxToolSchemaBytes = 1 << 20
	// maxServerText bounds a pinned server name or version.
	maxServerText = 256
)

var (
	// UpstreamNameRE is the spelling of an upstream's name (SPEC §14).
	UpstreamNameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)
	// ToolNameRE is the spelling of an MCP tool name the registry can
	// hold: the characters MCP recommends (letters, digits, _ - .), 1 to
	// 128 of them.
	ToolNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)
)

// ToolLayers are the behavioural layers of a kind-tool entry.
type ToolLayers struct {
	Sem  ToolSemantic
	Alg  ToolAlgebraic
	Impl ToolImplementation
}

// ToolSemantic is a tool's sem layer: what MCP's annotations say it does,
// with MCP's defaults where a hint is missing.
type ToolSemantic struct {
	Effect      Effect `json:"effect"`
	Destructive bool   `json:"destructive"`
	Idempotent  bool   `json:"idempotent"`
	OpenWorld   bool   `json:"open_world"`
	// Contract is the overlay's (SPEC §14): preconditions over the call
	// (tool, arguments), checked by Γ (F9), and postconditions over the
	// call and its result (result, structured), checked on the forwarded
	// call's result (F10); the keys are contract.ToolKeys, the state
	// contract.ToolState. It is behaviour, so inside the identity; a
	// contract without clauses vanishes from the canonical form
	// (omitzero), so it and none are one identity.
	Contract *contract.Contract `json:"contract,omitzero"`
}

// ToolAlgebraic is a tool's alg layer: its JSON Schemas as the upstream
// declares them. OutputSchema is nil (JSON null) when the tool declares
// none.
type ToolAlgebraic struct {
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema"`
}

// ToolImplementation is a tool's impl layer: where calls go.
type ToolImplementation struct {
	Upstream string `json:"upstream"`
	Tool     string `json:"tool"`
	// Server is set when the upstream is pinned by version: a new server
	// version is then a new identity.
	Server *ToolServer `json:"server,omitempty"`
}

// ToolServer names an upstream server as its initialize result does.
type ToolServer struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Identity is §2's formula over the three layers.
func (t ToolLayers) Identity() (hashing.Digest, error) {
	return hashing.Identity(t.Sem, t.Alg, t.Impl)
}

// Clone returns a deep copy of t.
func (t ToolLayers) Clone() ToolLayers {
	c := t
	if t.Sem.Contract != nil {
		k := *t.Sem.Contract
		k.Pre, k.Post = append([]contract.Clause(nil), k.Pre...), append([]contract.Clause(nil), k.Post...)
		c.Sem.Contract = &k
	}
	c.Alg.InputSchema = bytes.Clone(t.Alg.InputSchema)
	c.Alg.OutputSchema = bytes.Clone(t.Alg.OutputSchema)
	if t.Impl.Server != nil {
		s := *t.Impl.Server
		c.Impl.Server = &s
	}
	return c
}

// decodeToolLayers decodes the raw sem, alg and impl members of a tool
// entry (parts of a document DecodeStrict accepted), adding a FieldError
// per layer that does not decode.
func decodeToolLayers(sem, alg, impl json.RawMessage, fe *[]FieldError) *ToolLayers {
	t := new(ToolLayers)
	decodeLayer("sem", sem, &t.Sem, fe)
	decodeLayer("alg", alg, &t.Alg, fe)
	decodeLayer("impl", impl, &t.Impl, fe)
	if string(t.Alg.OutputSchema) == "null" {
		t.Alg.OutputSchema = nil
	}
	return t
}

// decodeToolRecord reads a stored tool entry: the record reader reads the
// trading kinds' shape only.
func decodeToolRecord(raw []byte) (Entry, error) {
	var rec rawEntry
	if err := hashing.DecodeStrict(raw, &rec); err != nil {
		return Entry{}, err
	}
	if rec.Kind != KindTool {
		return Entry{}, fmt.Errorf("%w: not a tool record", errRecordSyntax)
	}
	e := Entry{Name: rec.Name, Kind: KindTool}
	var fe []FieldError
	e.Tool = decodeToolLayers(rec.Sem, rec.Alg, rec.Impl, &fe)
	decodeLayer("disc", rec.Disc, &e.Disc, &fe)
	if len(fe) > 0 {
		return Entry{}, &ValidationError{Entry: fmt.Sprintf("%q", rec.Name), Fields: fe}
	}
	return e, nil
}

// validateTool adds the problems of a tool entry's layers. The trading
// layers must be left zero: what they held would be in neither the JSON
// nor the identity. v remembers contract checks across a batch (nil:
// none).
func (e Entry) validateTool(v *validator, add func(field, format string, args ...any)) {
	if e.Sem != (Semantic{}) {
		add("sem", "a tool entry's sem layer is Tool.Sem; the trading layer must be empty")
	}
	if len(e.Alg.Inputs) > 0 || len(e.Alg.Outputs) > 0 || e.Alg.Arity != 0 || e.Alg.Reversible || len(e.Alg.Params) > 0 {
		add("alg", "a tool entry's alg layer is Tool.Alg; the trading layer must be empty")
	}
	if e.Impl != (Implementation{}) {
		add("impl", "a tool entry's impl layer is Tool.Impl; the trading layer must be empty")
	}
	t := e.Tool
	if t == nil {
		add("sem", "layer is missing")
		return
	}
	switch t.Sem.Effect {
	case EffectRead, EffectWrite:
	default:
		add("sem.effect", "unknown effect %q (want %q or %q)", t.Sem.Effect, EffectRead, EffectWrite)
	}
	// sem.contract: every clause compiles against the call's state
	// schema, so a bad clause is refused here, not when a call is judged.
	v.addContractProblems(t.Sem.Contract, KindTool, nil, add)
	checkSchema("alg.input_schema", t.Alg.InputSchema, true, add)
	checkSchema("alg.output_schema", t.Alg.OutputSchema, false, add)
	if !UpstreamNameRE.MatchString(t.Impl.Upstream) {
		add("impl.upstream", "%q must match %s", clipText(t.Impl.Upstream), UpstreamNameRE)
	}
	if !ToolNameRE.MatchString(t.Impl.Tool) {
		add("impl.tool", "%q must match %s", clipText(t.Impl.Tool), ToolNameRE)
	}
	if want := t.Impl.Upstream + "." + t.Impl.Tool; e.Name != want {
		add("name", "a tool entry is named upstream.tool: want %q", clipText(want))
	}
	if s := t.Impl.Server; s != nil {
		for _, f := range []struct{ key, v string }{{"name", s.Name}, {"version", s.Version}} {
			switch {
			case f.v == "":
				add("impl.server."+f.key, "must not be empty")
			case len(f.v) > maxServerText:
				add("impl.server."+f.key, "longer than %d bytes", maxServerText)
			}
		}
	}
}

// checkSchema checks that a tool schema is a JSON object the project's
// codec accepts (no duplicate keys, no two keys differing only in case),
// within MaxToolSchemaBytes. An optional schema may be absent (nil).
func checkSchema(field string, s json.RawMessage, required bool, add func(string, string, ...any)) {
	if len(s) == 0 || string(s) == "null" {
		if required {
			add(field, "must not be empty")
		}
		return
	}
	if len(s) > MaxToolSchemaBytes {
		add(field, "%d bytes, at most %d", len(s), MaxToolSchemaBytes)
		return
	}
	if err := hashing.CheckStrict(s); err != nil {
		add(field, "%v", err)
		return
	}
	if t := bytes.TrimLeft(s, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		add(field, "must be a JSON object")
	}
}

// clipText shortens a value quoted in a problem.
func clipText(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}
