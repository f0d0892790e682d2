package policy

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A Pointer is an RFC 6901 JSON pointer into the request as a policy sees
// it: the request's own fields and what the server derives from them.
//
//	/family, /metric, /data   String  the request's fields
//	/params/NAME              Int, Real or String: the parameter's value,
//	                          each listed value at a grid; absent, the
//	                          family's declared default
//	/grid/points              Int     how many morphisms the grid spans
//	/facts/data/NAME          the data source's facts, as contracts read
//	                          them (data.NAME in docs/contracts.md): rows,
//	                          assets, span_days, max_gap_days (Int),
//	                          first_date, last_date (Int: YYYYMMDD, so
//	                          dates compare as integers, which every solver
//	                          decides at once; z3 4.8 takes ~90 ms per string
//	                          comparison inside push/pop),
//	                          min_price (Real), non_positive (Bool)
type Pointer struct {
	Text  string // as written
	Field string // "family", "metric", "data", "params", "grid/points", "facts"
	Param string // for "params": the parameter name; for "facts": the fact
}

// DataFacts are the facts of a data source a policy can bind, with their
// sorts.
var DataFacts = map[string]string{
	"rows": "Int", "assets": "Int", "span_days": "Int", "max_gap_days": "Int",
	"first_date": "Int", "last_date": "Int", "min_price": "Real", "non_positive": "Bool",
}

var paramRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// ParsePointer reads a pointer and checks that it names a field a policy
// can bind.
func ParsePointer(text string) (Pointer, error) {
	if !strings.HasPrefix(text, "/") {
		return Pointer{}, fmt.Errorf("%q is not a JSON pointer (it must start with '/')", clip(text))
	}
	var toks []string
	for _, t := range strings.Split(text[1:], "/") {
		if strings.Contains(strings.ReplaceAll(strings.ReplaceAll(t, "~0", ""), "~1", ""), "~") {
			return Pointer{}, fmt.Errorf("%q: '~' must be escaped as ~0", clip(text))
		}
		toks = append(toks, strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~"))
	}
	p := Pointer{Text: text}
	switch {
	case len(toks) == 1 && (toks[0] == "family" || toks[0] == "metric" || toks[0] == "data"):
		p.Field = toks[0]
	case len(toks) == 2 && toks[0] == "params" && paramRE.MatchString(toks[1]) && len(toks[1]) <= MaxNameLen:
		p.Field, p.Param = "params", toks[1]
	case len(toks) == 2 && toks[0] == "grid" && toks[1] == "points":
		p.Field = "grid/points"
	case len(toks) == 3 && toks[0] == "facts" && toks[1] == "data" && DataFacts[toks[2]] != "":
		p.Field, p.Param = "facts", toks[2]
	default:
		return Pointer{}, fmt.Errorf("%q points to no field a policy can bind (/family, /metric, /data, /params/NAME, /grid/points, /facts/data/NAME)", clip(text))
	}
	return p, nil
}

// Sorts gives the SMT sorts a constant bound to p may have.
func (p Pointer) Sorts() []string {
	switch p.Field {
	case "params":
		return []string{"Int", "Real", "String"}
	case "grid/points":
		return []string{"Int"}
	case "facts":
		return []string{DataFacts[p.Param]}
	}
	return []string{"String"}
}

// Value is one request value: a finite number, a string or (a fact only)
// a boolean.
type Value struct {
	Num    float64
	Str    string
	IsStr  bool
	IsBool bool
	Bool   bool
}

// Num and Str make values.
func Num(v float64) Value { return Value{Num: v} }
func Str(s string) Value  { return Value{Str: s, IsStr: true} }

// Boolean makes a boolean value.
func Boolean(b bool) Value { return Value{IsBool: true, Bool: b} }

func (v Value) String() string {
	if v.IsBool {
		return strconv.FormatBool(v.Bool)
	}
	if v.IsStr {
		return strconv.Quote(v.Str)
	}
	return jsonNumber(v.Num)
}

// jsonNumber writes a number as encoding/json does (ES6 style): no
// exponent between 1e-6 and 1e21, so a date 20250630 or a grid of 1000000
// reads as written.
func jsonNumber(x float64) string {
	b, err := json.Marshal(x)
	if err != nil {
		return strconv.FormatFloat(x, 'g', -1, 64) // not finite: never a request value
	}
	return string(b)
}

// Request is what a policy check reads from a request: its fields, its
// parameters (one value, or the listed values of a grid) and the defaults
// of the family's parameters it leaves out.
type Request struct {
	Family, Metric, Data string
	Params               map[string][]Value
	Defaults             map[string]Value
	// Facts loads the data source's facts (DataFacts), once, only when a
	// policy binds one; nil means the request has none to offer.
	Facts func() (map[string]Value, error)
	// GridPoints, when not zero, is the number of grid points the whole
	// request spans (/grid/points).
	GridPoints int
	// Owner names, in messages, what declares Params when it is not the
	// family (a pipeline's step); empty means Family.
	Owner string
}

// Points is the number of grid points (morphisms) the request spans:
// GridPoints when set (a pipeline spans the lists of all its steps, not
// only those of the parameters in view), else the product of the lists.
func (r Request) Points() int {
	if r.GridPoints > 0 {
		return r.GridPoints
	}
	n := 1
	for _, vs := range r.Params {
		n *= max(len(vs), 1)
	}
	return n
}

// values gives the values a pointer takes in r, or why it has none.
func (r Request) values(p Pointer) ([]Value, error) {
	switch p.Field {
	case "family":
		return []Value{Str(r.Family)}, nil
	case "metric":
		return []Value{Str(r.Metric)}, nil
	case "data":
		return []Value{Str(r.Data)}, nil
	case "grid/points":
		return []Value{Num(float64(r.Points()))}, nil
	}
	if p.Field == "facts" {
		if r.Facts == nil {
			return nil, fmt.Errorf("the data source's facts are not available here")
		}
		facts, err := r.Facts()
		if err != nil {
			return nil, fmt.Errorf("the facts of %s: %w", r.Data, err)
		}
		v, ok := facts[p.Param]
		if !ok {
			return nil, fmt.Errorf("%s has no fact %s", r.Data, p.Param)
		}
		return []Value{v}, nil
	}
	if vs, ok := r.Params[p.Param]; ok && len(vs) > 0 {
		return vs, nil
	}
	if d, ok := r.Defaults[p.Param]; ok {
		return []Value{d}, nil
	}
	owner := r.Owner
	if owner == "" {
		owner = r.Family
	}
	return nil, fmt.Errorf("the request does not set params.%s and %s declares no default for it", p.Param, owner)
}

// literal writes v as an SMT-LIB literal of sort, or says why it cannot be
// one. Numbers are the decimals they are written as (the shortest form that
// reads back as the same float64), so 0.1 is exactly one tenth.
func literal(v Value, sort string) (string, error) {
	if v.IsBool != (sort == "Bool") {
		return "", fmt.Errorf("%s does not fit the policy's %s", v, sort)
	}
	switch sort {
	case "Bool":
		return strconv.FormatBool(v.Bool), nil
	case "String":
		if !v.IsStr {
			return "", fmt.Errorf("%s is a number, the policy binds a String", v)
		}
		return stringLiteral(v.Str)
	case "Int":
		if v.IsStr {
			return "", fmt.Errorf("%s is a string, the policy binds an Int", v)
		}
		if v.Num != math.Trunc(v.Num) || math.Abs(v.Num) > 1<<53 {
			return "", fmt.Errorf("%s is not an integer, the policy binds an Int", v)
		}
		n := int64(v.Num)
		if n < 0 {
			return "(- " + strconv.FormatInt(-n, 10) + ")", nil
		}
		return strconv.FormatInt(n, 10), nil
	case "Real":
		if v.IsStr {
			return "", fmt.Errorf("%s is a string, the policy binds a Real", v)
		}
		s := strconv.FormatFloat(math.Abs(v.Num), 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		if math.Signbit(v.Num) && v.Num != 0 {
			return "(- " + s + ")", nil
		}
		return s, nil
	}
	return "", fmt.Errorf("no request value has sort %s", sort)
}

// stringLiteral writes s as an SMT-LIB 2.6 string literal: printable ASCII
// as itself ('"' doubled), everything else — and '\', which would start an
// escape — as \u{…}. SMT-LIB strings hold code points up to U+2FFFF.
func stringLiteral(s string) (string, error) {
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("the string is not valid UTF-8")
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`""`)
		case r >= 0x20 && r < 0x7f && r != '\\':
			b.WriteRune(r)
		case r <= 0x2FFFF:
			fmt.Fprintf(&b, `\u{%x}`, r)
		default:
			return "", fmt.Errorf("the string holds U+%X, beyond SMT-LIB's strings (U+2FFFF)", r)
		}
	}
	b.WriteByte('"')
	return b.String(), nil
}
