package contract

import (
	"fmt"
	"slices"

	"cel.dev/cel-go/cel"
)

// SchemaVersion names the state schema below. A clause is checked against
// it when its entry is written; a change that removes or retypes a key is
// a new version (docs/contracts.md).
const SchemaVersion = "groundgate.state/v1"

// ToolSchemaVersion names the state schema of clauses on kind-tool
// entries (SPEC §14): an upstream tool's call and its result, ToolKeys.
// It changes apart from SchemaVersion.
const ToolSchemaVersion = "groundgate.call/v1"

// ToolKind is the registry's kind of an upstream MCP tool ("U.T"): its
// clauses read ToolKeys, not Keys.
const ToolKind = "tool"

// Scope says where a key's value comes from, and so which clauses may read
// it: every clause sees request and data facts; result facts exist only
// after a family has run; the score only after the metric has. A tool's
// clauses read the call (request) and, after it, the result.
type Scope string

// The scopes, in the order a morphism's state fills.
const (
	ScopeRequest Scope = "request" // the request and the bound parameters (a tool's call): known at the gate
	ScopeData    Scope = "data"    // facts of the data source, computed when it is read
	ScopeResult  Scope = "result"  // verified outputs of the family step (a tool's result)
	ScopeScore   Scope = "score"   // the metric's value
)

// Key is one declared state key.
type Key struct {
	Name  string `json:"name"`
	Type  string `json:"type"` // the CEL type
	Scope Scope  `json:"scope"`
	Doc   string `json:"doc"`
}

// Keys returns the state schema: every key a clause may name besides the
// capability's own parameters (params.NAME, typed by its alg.params).
func Keys() []Key {
	return []Key{
		{"request.family", "string", ScopeRequest, "the requested family's name"},
		{"request.metric", "string", ScopeRequest, "the requested metric's name"},
		{"request.data", "string", ScopeRequest, "the data source's path, as requested"},

		{"data.rows", "int", ScopeData, "rows (dates) in the source"},
		{"data.columns", "list(string)", ScopeData, "the value columns, in file order"},
		{"data.assets", "int", ScopeData, "the number of value columns"},
		{"data.first_date", "string", ScopeData, "the first date, YYYY-MM-DD (\"\" with no rows)"},
		{"data.last_date", "string", ScopeData, "the last date, YYYY-MM-DD (\"\" with no rows)"},
		{"data.span_days", "int", ScopeData, "calendar days from the first date to the last"},
		{"data.max_gap_days", "int", ScopeData, "the largest gap between consecutive dates, in calendar days"},
		{"data.na_share", "map(string, double)", ScopeData, "per column, the share of rows that are NA"},
		{"data.constant_columns", "list(string)", ScopeData, "columns with defined values, all equal"},
		{"data.tradable_columns", "list(string)", ScopeData, "columns with at least two distinct defined values: something to trade"},
		{"data.min_price", "double", ScopeData, "the smallest defined value in any column (NaN when none is defined)"},
		{"data.non_positive", "bool", ScopeData, "some defined value is zero or negative"},
		{"data.digest", "string", ScopeData, "BLAKE3 of the source bytes"},

		{"result.rows", "int", ScopeResult, "rows of the result (the data's rows)"},
		{"result.assets", "list(string)", ScopeResult, "the traded columns"},
		{"result.unknown_assets", "list(string)", ScopeResult, "traded columns the data does not have (the result does not line up with the state)"},
		{"result.pnl_rows", "int", ScopeResult, "rows with a defined P&L"},
		{"result.finite_share", "double", ScopeResult, "share of the defined P&L and weight values that are finite (1 when none is defined)"},
		{"result.max_abs_weight", "double", ScopeResult, "the largest |weight| (0 when none is defined)"},
		{"result.gross_exposure", "double", ScopeResult, "the largest sum of |weight| over the assets on one row"},
		{"result.turnover", "double", ScopeResult, "mean over rows of the sum of |weight change| (a daily figure)"},
		{"result.signal_min", "double", ScopeResult, "the smallest defined signal value fed to the sizing (the constant itself for a constant signal; NaN when none)"},
		{"result.signal_max", "double", ScopeResult, "the largest defined signal value fed to the sizing"},

		{"result.score", "double", ScopeScore, "the metric's value over the grid's common evaluation window (NaN when undefined)"},
		{"result.evaluation_rows", "int", ScopeScore, "rows of the common evaluation window the score is computed over"},
	}
}

// ToolKeys returns the state schema of a tool's clauses
// (ToolSchemaVersion): the call and, in postconditions, its result. The
// values are JSON as ToolState converts it. A tool entry declares no
// parameters: the arguments are read through the arguments map.
func ToolKeys() []Key {
	return []Key{
		{"tool", "string", ScopeRequest, "the called capability's name, U.T"},
		{"arguments", "map(string, dyn)", ScopeRequest, "the call's arguments object ({} when the call has none)"},
		{"result", "map(string, dyn)", ScopeResult, "the CallToolResult: content (a list; [] when left out), isError (false when left out), structuredContent when present, and any other member as the upstream sent it"},
		{"structured", "map(string, dyn)", ScopeResult, "the result's structuredContent, {} when there is none"},
		{"state", "map(string, dyn)", ScopeRequest, "the session's trusted state, groundgate.session-state/v1 (latest, results, version); {} outside a session. read(tool, arguments) looks a result up in it"},
		{"facts", "map(string, dyn)", ScopeRequest, "the facts the host asserted in the session's turns; {} when none, and outside a session"},
		{"now", "google.protobuf.Timestamp", ScopeRequest, "the time the call is decided; absent outside a session (a clause reading it is then not evaluable)"},
	}
}

// keysFor returns the schema a kind's clauses are checked against.
func keysFor(kind string) []Key {
	if kind == ToolKind {
		return ToolKeys()
	}
	return Keys()
}

// schemaFor names the schema a kind's clauses are checked against.
func schemaFor(kind string) string {
	if kind == ToolKind {
		return ToolSchemaVersion
	}
	return SchemaVersion
}

// Param declares one of the capability's parameters to the schema:
// int → int, float → double, string and column → string.
type Param struct {
	Name string
	Type string // "int", "float", "string" or "column"
}

// scopesFor says which scopes a clause of a capability kind and phase may
// read. Operations and signals run inside a family's plan, before any
// result exists; metrics read the family's verified result before they
// run and their own score after. A tool's preconditions read the call, its
// postconditions the call and the result.
func scopesFor(kind string, ph Phase) ([]Scope, error) {
	switch {
	case kind == ToolKind && ph == Pre:
		return []Scope{ScopeRequest}, nil
	case kind == ToolKind:
		return []Scope{ScopeRequest, ScopeResult}, nil
	case kind == "metric" && ph == Pre:
		return []Scope{ScopeRequest, ScopeData, ScopeResult}, nil
	case kind == "metric":
		return []Scope{ScopeRequest, ScopeData, ScopeResult, ScopeScore}, nil
	case kind == "family" && ph == Pre:
		return []Scope{ScopeRequest, ScopeData}, nil
	case kind == "family":
		return []Scope{ScopeRequest, ScopeData, ScopeResult}, nil
	case ph == Pre:
		return []Scope{ScopeRequest, ScopeData}, nil
	}
	return nil, fmt.Errorf("kind %q has no post-state in %s: postconditions are for families and metrics", kind, SchemaVersion)
}

// ParamKey is the state key of a capability parameter.
func ParamKey(name string) string { return "params." + name }

func celType(t string) (*cel.Type, error) {
	switch t {
	case "int":
		return cel.IntType, nil
	case "double", "float":
		return cel.DoubleType, nil
	case "string", "column":
		return cel.StringType, nil
	case "bool":
		return cel.BoolType, nil
	case "list(string)":
		return cel.ListType(cel.StringType), nil
	case "map(string, double)":
		return cel.MapType(cel.StringType, cel.DoubleType), nil
	case "map(string, dyn)":
		return cel.MapType(cel.StringType, cel.DynType), nil
	case "google.protobuf.Timestamp":
		return cel.TimestampType, nil
	}
	return nil, fmt.Errorf("no CEL type for %q", t)
}

// declarations lists the variables a clause may name: the schema keys of
// its scopes, then the capability's parameters. Parameters are request
// facts, bound per morphism.
func declarations(kind string, scopes []Scope, params []Param) ([]cel.EnvOption, error) {
	if kind == "metric" {
		// A metric's clauses read the family's verified result; the
		// request's parameters are the family's, so a metric has none of
		// its own to read in this schema.
		params = nil
	}
	var out []cel.EnvOption
	for _, k := range keysFor(kind) {
		if !slices.Contains(scopes, k.Scope) {
			continue
		}
		t, err := celType(k.Type)
		if err != nil {
			return nil, err
		}
		out = append(out, cel.Variable(k.Name, t))
	}
	for _, p := range params {
		t, err := celType(p.Type)
		if err != nil {
			return nil, fmt.Errorf("parameter %q: %w", p.Name, err)
		}
		out = append(out, cel.Variable(ParamKey(p.Name), t))
	}
	return out, nil
}

// keyScope returns the scope of a key a kind's clauses declare;
// parameters are request facts.
func keyScope(kind, name string) Scope {
	for _, k := range keysFor(kind) {
		if k.Name == name {
			return k.Scope
		}
	}
	return ScopeRequest
}
