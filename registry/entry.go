// Package registry stores groundgate's capability entries through the
// storage layer (package store): a bbolt file, or PostgreSQL.
//
// An entry has a canonical name, a kind and four layers. Three of them —
// semantic (sem), algebraic (alg) and implementation (impl) — say what the
// capability does and make up its identity; the fourth, discovery (disc),
// says how people talk about it and is left out of the identity, so that
// aliases, tags and descriptions can evolve without invalidating evidence or
// execution hashes. See docs/hashing.md for the pinned constructions.
//
// Every mutation of the store is one store transaction and creates a new
// numbered version; every version stays readable forever.
package registry

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/hashing"
)

// Kind classifies an entry. The gate relies on KindFamily and KindMetric.
type Kind string

// The kinds the registry accepts.
const (
	KindOperation Kind = "operation"
	KindFamily    Kind = "family"
	KindMetric    Kind = "metric"
	KindSignal    Kind = "signal"
	KindRecipe    Kind = "recipe"
	// KindTool is an upstream MCP server's tool (SPEC §14). Its sem, alg
	// and impl layers are not the other kinds': they are held in
	// Entry.Tool (see tool.go).
	KindTool Kind = "tool"
)

// Kinds lists every valid kind in a fixed order.
var kinds = []Kind{KindOperation, KindFamily, KindMetric, KindSignal, KindRecipe, KindTool}

// Entry is one capability: a name, a kind and its four layers.
//
// An entry of kind tool keeps its three behavioural layers in Tool and
// leaves Sem, Alg and Impl zero; its JSON (MarshalJSON) writes Tool's
// layers under the keys "sem", "alg" and "impl", as every entry does.
type Entry struct {
	Name string         `json:"name"`
	Kind Kind           `json:"kind"`
	Sem  Semantic       `json:"sem"`
	Alg  Algebraic      `json:"alg"`
	Impl Implementation `json:"impl"`
	Disc Discovery      `json:"disc"`
	// Tool holds the sem, alg and impl layers of a kind-tool entry; nil
	// for every other kind.
	Tool *ToolLayers `json:"-"`
}

// plainEntry is an Entry without its MarshalJSON method: the JSON of every
// kind but tool (Tool is left out by its tag).
type plainEntry Entry

// toolEntryJSON is the JSON of a kind-tool entry: Tool's layers under the
// keys every entry uses.
type toolEntryJSON struct {
	Name string             `json:"name"`
	Kind Kind               `json:"kind"`
	Sem  ToolSemantic       `json:"sem"`
	Alg  ToolAlgebraic      `json:"alg"`
	Impl ToolImplementation `json:"impl"`
	Disc Discovery          `json:"disc"`
}

// wire is the value whose JSON is e's: the entry as declared for the
// trading kinds, or its tool layers for a tool.
func (e Entry) wire() any {
	if e.Kind == KindTool && e.Tool != nil {
		return toolEntryJSON{Name: e.Name, Kind: e.Kind, Sem: e.Tool.Sem, Alg: e.Tool.Alg, Impl: e.Tool.Impl, Disc: e.Disc}
	}
	return plainEntry(e)
}

// MarshalJSON writes the entry's JSON: encoding/json's of the declared
// fields, as before kind tool existed (byte for byte), and for a tool
// entry its Tool layers as "sem", "alg" and "impl". The registry's own
// canonical bytes (recordBytes, Identity) do not go through it.
func (e Entry) MarshalJSON() ([]byte, error) {
	return json.Marshal(e.wire())
}

// Semantic is the behavioural contract of a capability.
type Semantic struct {
	Pure          bool `json:"pure"`
	Deterministic bool `json:"deterministic"`
	Commutative   bool `json:"commutative"`
	Associative   bool `json:"associative"`
	Idempotent    bool `json:"idempotent"`
	// Orientation is the direction of the output: for families "positive"
	// (bets with the signal) or "negative" (against it); for metrics
	// "maximize" or "minimize" (which score is better); "none" elsewhere.
	Orientation Orientation `json:"orientation"`
	Stateful    bool        `json:"stateful"`
	// Contract holds the capability's Hoare clauses (SPEC §9). It is
	// behaviour, so it is inside the identity; absent, it adds nothing to
	// the canonical form.
	Contract *contract.Contract `json:"contract,omitzero"`
}

// Orientation is the direction a capability's output points.
type Orientation string

// The orientations the registry accepts.
const (
	OrientNone     Orientation = "none"
	OrientPositive Orientation = "positive"
	OrientNegative Orientation = "negative"
	OrientMaximize Orientation = "maximize"
	OrientMinimize Orientation = "minimize"
)

// Algebraic is the type signature of a capability.
type Algebraic struct {
	Inputs     []string `json:"inputs"`
	Outputs    []string `json:"outputs"`
	Arity      int      `json:"arity"`
	Reversible bool     `json:"reversible"`
	Params     []Param  `json:"params,omitempty"`
}

// Value types that may appear in Algebraic.Inputs and Outputs.
var valueTypes = []string{"series", "frame", "scalar", "pnl", "weights", "score"}

// Param is one entry of a parameter schema.
type Param struct {
	Name string    `json:"name"`
	Type ParamType `json:"type"`
	// Default is bound when a request leaves the parameter out: a number
	// for int and float, a string for string and column. A parameter with
	// no default is required.
	Default any      `json:"default,omitempty"`
	Min     *float64 `json:"min,omitempty"`
	Max     *float64 `json:"max,omitempty"`
	Doc     string   `json:"doc,omitempty"`
}

// ParamType is the type of a parameter value.
type ParamType string

// The parameter types the registry accepts.
const (
	ParamInt    ParamType = "int"
	ParamFloat  ParamType = "float"
	ParamString ParamType = "string"
	ParamColumn ParamType = "column"
)

// Implementation says how the engine runs a capability.
type Implementation struct {
	Engine string `json:"engine"`
	// IR is the intermediate-representation variant the planner uses.
	IR      IR   `json:"ir"`
	Fusable bool `json:"fusable"`
	// Expr is the canonical s-expression the capability evaluates, over
	// engine kernels, its inputs x and y, and its parameters $name.
	Expr string `json:"expr"`
}

// IR is an intermediate-representation variant.
type IR string

// The IR variants the planner knows.
const (
	IRElementwise IR = "elementwise"
	IRBinary      IR = "binary"
	IRScan        IR = "scan"
	IRRolling     IR = "rolling"
	IRShift       IR = "shift"
	IRCalendar    IR = "calendar"
	IRPipeline    IR = "pipeline"
	IRStrategy    IR = "strategy"
	IRReduce      IR = "reduce"
)

var irs = []IR{IRElementwise, IRBinary, IRScan, IRRolling, IRShift, IRCalendar, IRPipeline, IRStrategy, IRReduce}

// Discovery is how people find a capability. It is outside the identity.
type Discovery struct {
	Aliases     []string `json:"aliases,omitempty"`
	Description string   `json:"description"`
	Tags        []string `json:"tags,omitempty"`
	Examples    []string `json:"examples,omitempty"`
	Deprecated  bool     `json:"deprecated,omitempty"`
	// Title is a short human name (an MCP tool's title); absent when
	// empty, so entries without one keep their bytes.
	Title string `json:"title,omitempty"`
}

// Identity returns the entry's pinned capability identity, computed over
// sem, alg and impl only (a tool's from its Tool layers).
func (e Entry) Identity() (hashing.Digest, error) {
	if e.Kind == KindTool {
		if e.Tool == nil {
			return hashing.Digest{}, fmt.Errorf("%w: tool entry %q has no tool layers", ErrInvalidEntry, e.Name)
		}
		return e.Tool.Identity()
	}
	return hashing.Identity(e.Sem, e.Alg, e.Impl)
}

// DiscoveryDigest returns the SHA-256 of the canonical discovery layer, so
// evidence can record which description and aliases a match was made on.
func (e Entry) DiscoveryDigest() (hashing.Digest, error) {
	return hashing.SHA256Of(e.Disc)
}

// recordDigest keys the full stored entry (name, kind and all four
// layers): it changes whenever anything about the entry changes.
func (e Entry) recordBytes() ([]byte, error) {
	return hashing.Canonical(e.wire())
}

// Clone returns a deep copy of e: nothing in it aliases e's slices or
// pointers, so callers may edit it freely.
func (e Entry) Clone() Entry {
	c := e
	if e.Sem.Contract != nil {
		k := contract.Contract{Pre: slices.Clone(e.Sem.Contract.Pre), Post: slices.Clone(e.Sem.Contract.Post)}
		c.Sem.Contract = &k
	}
	c.Alg.Inputs = slices.Clone(e.Alg.Inputs)
	c.Alg.Outputs = slices.Clone(e.Alg.Outputs)
	if e.Alg.Params != nil {
		c.Alg.Params = make([]Param, len(e.Alg.Params))
		for i, p := range e.Alg.Params {
			if p.Min != nil {
				v := *p.Min
				p.Min = &v
			}
			if p.Max != nil {
				v := *p.Max
				p.Max = &v
			}
			c.Alg.Params[i] = p // Default holds a float64 or a string: immutable
		}
	}
	c.Disc.Aliases = slices.Clone(e.Disc.Aliases)
	c.Disc.Tags = slices.Clone(e.Disc.Tags)
	c.Disc.Examples = slices.Clone(e.Disc.Examples)
	if e.Tool != nil {
		t := e.Tool.Clone()
		c.Tool = &t
	}
	return c
}

// ContractParams declares the entry's parameters to its contract's state
// schema.
func (e Entry) ContractParams() []contract.Param {
	out := make([]contract.Param, len(e.Alg.Params))
	for i, p := range e.Alg.Params {
		out[i] = contract.Param{Name: p.Name, Type: string(p.Type)}
	}
	return out
}

// StateValue converts a well-typed parameter value to the Go value a
// contract's state holds for it (int64, float64 or string: the CEL types
// contract.Param declares), or reports false when it does not fit t. The
// gate and the executor both bind parameters through it.
func (t ParamType) StateValue(isString bool, num float64, str string) (any, bool) {
	if t.Mismatch(isString, num) != "" {
		return nil, false
	}
	switch t {
	case ParamInt:
		return int64(num), true
	case ParamFloat:
		return num, true
	}
	return str, true
}

// Mismatch says why a parameter value does not fit the type, or "" when
// it does: int wants an integral number (exact in a float64), float any
// number, string and column a string. The gate and the executor both ask
// it, so they agree on what a well-typed parameter is.
func (t ParamType) Mismatch(isString bool, num float64) string {
	switch t {
	case ParamInt:
		if isString || num != math.Trunc(num) || math.Abs(num) > 1<<53 {
			return "want an integer"
		}
	case ParamFloat:
		if isString {
			return "want a number"
		}
	case ParamString, ParamColumn:
		if !isString {
			return "want a string"
		}
	default:
		return fmt.Sprintf("unknown parameter type %q", t)
	}
	return ""
}
