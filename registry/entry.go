// Package registry stores groundgate's capability entries in bbolt.
//
// An entry has a canonical name, a kind and four layers. Three of them —
// semantic (sem), algebraic (alg) and implementation (impl) — say what the
// capability does and make up its identity; the fourth, discovery (disc),
// says how people talk about it and is left out of the identity, so that
// aliases, tags and descriptions can evolve without invalidating evidence or
// execution hashes. See docs/hashing.md for the pinned constructions.
//
// Every mutation of the store is one bbolt transaction and creates a new
// numbered version; every version stays readable forever.
package registry

import (
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
)

// Kinds lists every valid kind in a fixed order.
var kinds = []Kind{KindOperation, KindFamily, KindMetric, KindSignal, KindRecipe}

// Entry is one capability: a name, a kind and its four layers.
type Entry struct {
	Name string         `json:"name"`
	Kind Kind           `json:"kind"`
	Sem  Semantic       `json:"sem"`
	Alg  Algebraic      `json:"alg"`
	Impl Implementation `json:"impl"`
	Disc Discovery      `json:"disc"`
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
}

// Identity returns the entry's pinned capability identity, computed over
// sem, alg and impl only.
func (e Entry) Identity() (hashing.Digest, error) {
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
	return hashing.Canonical(e)
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
