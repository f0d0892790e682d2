package policy

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/hashing"
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
//
// A call to an upstream tool (SPEC §14) is the request {"tool", "arguments"}:
//
//	/tool                     String  the called capability's name, U.T
//	/arguments/TOKEN/…        Int, Real, String or Bool: the value at that
//	                          RFC 6901 pointer into the call's arguments
//	                          object (member names unescaped: ~1 is '/',
//	                          ~0 is '~'; an array's items by index)
//	/grounding/mode           String  how the evidence the call cites
//	                          grounded the tool: the mode of its match
//	                          (GroundingModes), "exempt" for an exempt
//	                          read (SPEC §14: no evidence needed)
//	/grounding/confidence     Real    that match's confidence, the exact
//	                          decimal the evidence writes (0.7 is seven
//	                          tenths); 0 for an exempt read
//	/now                      Int     the time the call is decided, Unix
//	                          seconds (UTC); a call outside a session has
//	                          none (missing)
//
// When several matches of the evidence name the tool (two terms found
// it), the one with the highest confidence grounds it (see Grounding).
type Pointer struct {
	Text  string // as written
	Field string // "family", "metric", "data", "params", "grid/points", "facts", "tool", "arguments", "grounding"
	// Param is, for "params", the parameter name; for "facts", the fact;
	// for "arguments", the pointer into the arguments object as written
	// ("/options/depth", escapes kept); for "grounding", "mode" or
	// "confidence".
	Param string
}

// Bounds on a pointer: a policy names a few values, not a path through
// an arbitrarily deep document.
const (
	MaxPointerLen   = 256 // bytes of a pointer's text
	MaxPointerDepth = 16  // tokens of a pointer into a call's arguments
)

// ForCall reports whether the pointer reads a tool call (/tool,
// /arguments/…, /grounding/…) rather than a request's family, metric,
// data, params, grid or facts.
func (p Pointer) ForCall() bool {
	return p.Field == "tool" || p.Field == "arguments" || p.Field == "grounding" || p.Field == "now"
}

// GroundingExempt is /grounding/mode of an exempt read: a read-only tool
// of an upstream that grounds only writes, called without a match.
const GroundingExempt = "exempt"

// GroundingModes are the values /grounding/mode can take: the discovery
// modes (discover.Mode: SPEC §4's four, groundgate's inversion, SPEC §16's
// relevance) in the cascade's tier order, and GroundingExempt. Lint ranges
// /grounding/mode over them (and /grounding/confidence over [0, 1]).
var GroundingModes = []string{"exact", "alias", "tag", "keyword", "inversion", "relevance", GroundingExempt}

// Grounding is how a call was grounded (/grounding/…): the mode and
// confidence of the evidence's match for the tool, or GroundingExempt
// and 0 for an exempt read.
type Grounding struct {
	Mode string
	// Confidence is the match's confidence: Num of the evidence's float64,
	// whose shortest decimal is what the evidence's JSON writes (0.7,
	// 0.499), so a policy compares the decimal an auditor reads.
	Confidence Value
}

// ExemptGrounding is the grounding of an exempt read: mode "exempt",
// confidence 0 (no words grounded it; every match's confidence is above).
func ExemptGrounding() Grounding { return Grounding{Mode: GroundingExempt, Confidence: Num(0)} }

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
	if len(text) > MaxPointerLen {
		return Pointer{}, fmt.Errorf("%q: a pointer is at most %d bytes", clip(text), MaxPointerLen)
	}
	if !utf8.ValidString(text) {
		return Pointer{}, fmt.Errorf("%q is not valid UTF-8", clip(text))
	}
	toks, err := pointerTokens(text)
	if err != nil {
		return Pointer{}, err
	}
	p := Pointer{Text: text}
	switch {
	case len(toks) == 1 && (toks[0] == "tool" || toks[0] == "now"):
		p.Field = toks[0]
	case len(toks) >= 2 && toks[0] == "arguments":
		if len(toks)-1 > MaxPointerDepth {
			return Pointer{}, fmt.Errorf("%q: a pointer into the arguments is at most %d tokens deep", clip(text), MaxPointerDepth)
		}
		p.Field, p.Param = "arguments", text[len("/arguments"):]
	case len(toks) == 1 && (toks[0] == "family" || toks[0] == "metric" || toks[0] == "data"):
		p.Field = toks[0]
	case len(toks) == 2 && toks[0] == "params" && paramRE.MatchString(toks[1]) && len(toks[1]) <= MaxNameLen:
		p.Field, p.Param = "params", toks[1]
	case len(toks) == 2 && toks[0] == "grid" && toks[1] == "points":
		p.Field = "grid/points"
	case len(toks) == 3 && toks[0] == "facts" && toks[1] == "data" && DataFacts[toks[2]] != "":
		p.Field, p.Param = "facts", toks[2]
	case len(toks) == 2 && toks[0] == "grounding" && (toks[1] == "mode" || toks[1] == "confidence"):
		p.Field, p.Param = "grounding", toks[1]
	default:
		return Pointer{}, fmt.Errorf("%q points to no field a policy can bind (/family, /metric, /data, /params/NAME, /grid/points, /facts/data/NAME; of a tool call /tool, /arguments/…, /grounding/mode, /grounding/confidence, /now)", clip(text))
	}
	return p, nil
}

// pointerTokens splits an RFC 6901 pointer ("" or "/…") into its tokens,
// unescaped: ~1 is '/', ~0 is '~', and any other '~' is refused.
func pointerTokens(text string) ([]string, error) {
	if text == "" {
		return nil, nil
	}
	var toks []string
	for _, t := range strings.Split(text[1:], "/") {
		if strings.Contains(strings.ReplaceAll(strings.ReplaceAll(t, "~0", ""), "~1", ""), "~") {
			return nil, fmt.Errorf("%q: '~' must be escaped as ~0", clip(text))
		}
		toks = append(toks, strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~"))
	}
	return toks, nil
}

// Sorts gives the SMT sorts a constant bound to p may have.
func (p Pointer) Sorts() []string {
	switch p.Field {
	case "params":
		return []string{"Int", "Real", "String"}
	case "grid/points", "now":
		return []string{"Int"}
	case "facts":
		return []string{DataFacts[p.Param]}
	case "arguments":
		return []string{"Int", "Real", "String", "Bool"}
	case "grounding":
		if p.Param == "confidence" {
			return []string{"Real"}
		}
	}
	return []string{"String"}
}

// Value is one request value: a finite number, a string or (a fact, or a
// call's argument) a boolean.
type Value struct {
	Num    float64
	Str    string
	IsStr  bool
	IsBool bool
	Bool   bool
	// Exact is a number's exact value, as a plain decimal ("-0.5",
	// "0.10000000000000000001": digits, '-' and '.', no exponent), when
	// Num does not hold it: when the shortest decimal that reads back as
	// Num is another number (a call's argument written with more digits
	// than a float64 keeps, or beyond its range of integers). Empty
	// otherwise: Num's shortest decimal is then the value.
	Exact string
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
	if v.Exact != "" {
		return v.Exact
	}
	return jsonNumber(v.Num)
}

// maxDecimal bounds the plain decimal a number is written as: every
// finite float64 fits (309 integer digits; 1e-323 has 324 after the
// point), and so does a little more precision than that.
const maxDecimal = 512

// NumberValue reads a JSON number's text (RFC 8259 grammar) as a value
// that keeps its exact decimal: 0.10000000000000000001 is not 0.1, though
// both read as the same float64. A number beyond float64's range, or one
// whose plain decimal would exceed maxDecimal bytes, is refused.
func NumberValue(text string) (Value, error) {
	dec, ok := plainDecimal(text)
	if !ok {
		return Value{}, fmt.Errorf("%s is not a JSON number a policy can read (at most %d decimal digits)", clip(text), maxDecimal)
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return Value{}, fmt.Errorf("%s is not a finite number", clip(text))
	}
	if short, _ := plainDecimal(strconv.FormatFloat(f, 'g', -1, 64)); short == dec {
		return Num(f), nil
	}
	return Value{Num: f, Exact: dec}, nil
}

var jsonNumberRE = regexp.MustCompile(`^(-?)(0|[1-9][0-9]*)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$`)

// plainDecimal writes a JSON number as the shortest plain decimal of the
// same value: no exponent, no leading or trailing zeros ("1.50e2" →
// "150", "-0.0" → "0"), or reports that it is not a number or too long.
func plainDecimal(text string) (string, bool) {
	m := jsonNumberRE.FindStringSubmatch(text)
	if m == nil || len(text) > maxDecimal {
		return "", false
	}
	exp := 0
	if m[4] != "" {
		e, err := strconv.Atoi(m[4])
		if err != nil || e > maxDecimal || e < -maxDecimal {
			return "", false
		}
		exp = e
	}
	digits := m[2] + m[3]
	point := len(m[2]) + exp // the value is 0.digits × 10^point
	trimmed := strings.TrimLeft(digits, "0")
	point -= len(digits) - len(trimmed)
	digits = strings.TrimRight(trimmed, "0")
	if digits == "" {
		return "0", true
	}
	var b strings.Builder
	if m[1] == "-" {
		b.WriteByte('-')
	}
	switch {
	case point <= 0:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", -point))
		b.WriteString(digits)
	case point >= len(digits):
		b.WriteString(digits)
		b.WriteString(strings.Repeat("0", point-len(digits)))
	default:
		b.WriteString(digits[:point])
		b.WriteByte('.')
		b.WriteString(digits[point:])
	}
	if b.Len() > maxDecimal {
		return "", false
	}
	return b.String(), true
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

	// Tool, when not empty, makes this a call to the upstream tool of
	// that name (U.T, SPEC §14): /tool reads it, and /arguments/… read
	// Arguments, the call's arguments object (nil means {}), which the
	// caller has already checked (hashing.CheckStrict, and the tool's
	// input schema). A call spans no grid: it is one point.
	Tool      string
	Arguments json.RawMessage
	// Grounding is how the call was grounded (/grounding/…); nil when the
	// evidence did not match the tool and the call is no exempt read (it
	// is refused F3 anyway), and a policy reading it refuses as missing.
	Grounding *Grounding
	// Session is the session the call is decided in (SPEC §15): its
	// state, the host's facts and the decision's time, decoded once and
	// shared with the contract phase. Derived constants read them with
	// the call (contract.ToolStateIn), /now reads Session.Now. Nil outside
	// a session: the state and the facts are {}, and there is no now.
	Session *contract.Session
}

// valueError is a pointer's value that no bound constant can hold: an
// object, an array, null, a number beyond reach. Check refuses it as
// ReasonType, where any other error of values is ReasonMissing.
type valueError struct{ msg string }

func (e *valueError) Error() string { return e.msg }

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
	case "tool":
		if r.Tool == "" {
			return nil, fmt.Errorf("the request is not a tool call")
		}
		return []Value{Str(r.Tool)}, nil
	case "arguments":
		v, err := r.argument(p.Param)
		if err != nil {
			return nil, err
		}
		return []Value{v}, nil
	case "now":
		switch {
		case r.Tool == "":
			return nil, fmt.Errorf("the request is not a tool call: it has no now")
		case r.Session == nil || r.Session.Now.IsZero():
			return nil, fmt.Errorf("the call is decided outside a session: it has no now")
		}
		return []Value{Num(float64(r.Session.Now.Unix()))}, nil
	case "grounding":
		switch {
		case r.Tool == "":
			return nil, fmt.Errorf("the request is not a tool call: it has no grounding")
		case r.Grounding == nil:
			return nil, fmt.Errorf("the evidence did not discover %s, and it is no exempt read", r.Tool)
		case p.Param == "mode":
			return []Value{Str(r.Grounding.Mode)}, nil
		}
		return []Value{r.Grounding.Confidence}, nil
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

// argument reads the value at ptr ("/a/0/b", RFC 6901) in the call's
// arguments: a number (its exact decimal kept), a string or a boolean.
func (r Request) argument(ptr string) (Value, error) {
	if r.Tool == "" {
		return Value{}, fmt.Errorf("the request is not a tool call: it has no arguments")
	}
	raw := []byte(r.Arguments)
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	if err := hashing.CheckStrict(raw); err != nil {
		return Value{}, fmt.Errorf("the call's arguments cannot be read: %v", err)
	}
	toks, err := pointerTokens(ptr)
	if err != nil {
		return Value{}, err
	}
	esc := strings.Split(ptr, "/")[1:] // the tokens as written, for messages
	cur := jsontext.Value(raw)
	for i, tok := range toks {
		at := "/" + strings.Join(esc[:i], "/")
		switch cur.Kind() {
		case '{':
			var m map[string]jsontext.Value
			if err := hashing.DecodePart(cur, &m); err != nil {
				return Value{}, fmt.Errorf("the call's arguments cannot be read at %s: %v", at, err)
			}
			next, ok := m[tok]
			if !ok {
				return Value{}, fmt.Errorf("the call's arguments have no %s", ptr)
			}
			cur = next
		case '[':
			var a []jsontext.Value
			if err := hashing.DecodePart(cur, &a); err != nil {
				return Value{}, fmt.Errorf("the call's arguments cannot be read at %s: %v", at, err)
			}
			n, ok := arrayIndex(tok)
			if !ok || n >= len(a) {
				return Value{}, fmt.Errorf("the call's arguments have no %s (%s is an array of %d)", ptr, at, len(a))
			}
			cur = a[n]
		default:
			if i == 0 {
				return Value{}, fmt.Errorf("the call's arguments are %s, not an object", kindWords(cur.Kind()))
			}
			return Value{}, fmt.Errorf("the call's arguments have no %s (%s is %s)", ptr, at, kindWords(cur.Kind()))
		}
	}
	switch k := cur.Kind(); k {
	case '0':
		v, err := NumberValue(strings.TrimSpace(string(cur)))
		if err != nil {
			return Value{}, &valueError{fmt.Sprintf("the call's arguments hold %s at %s", err, ptr)}
		}
		return v, nil
	case '"':
		var s string
		if err := hashing.DecodePart(cur, &s); err != nil {
			return Value{}, fmt.Errorf("the call's arguments cannot be read at %s: %v", ptr, err)
		}
		return Str(s), nil
	case 't', 'f':
		return Boolean(k == 't'), nil
	default:
		return Value{}, &valueError{fmt.Sprintf("the call's arguments hold %s at %s: a policy reads a number, a string or a boolean", kindWords(k), ptr)}
	}
}

// arrayIndex reads an RFC 6901 array index: 0, or digits without a
// leading zero.
func arrayIndex(tok string) (int, bool) {
	if tok == "" || len(tok) > 9 || (len(tok) > 1 && tok[0] == '0') {
		return 0, false
	}
	n := 0
	for i := 0; i < len(tok); i++ {
		if tok[i] < '0' || tok[i] > '9' {
			return 0, false
		}
		n = n*10 + int(tok[i]-'0')
	}
	return n, true
}

func kindWords(k jsontext.Kind) string {
	switch k {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 'n':
		return "null"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't', 'f':
		return "a boolean"
	}
	return "nothing"
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
		// An exact decimal Num does not hold has a fraction, or is an
		// integer beyond 2^53 (a float64 holds every integer up to it).
		if v.Exact != "" || v.Num != math.Trunc(v.Num) || math.Abs(v.Num) > 1<<53 {
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
		neg := math.Signbit(v.Num) && v.Num != 0
		if v.Exact != "" {
			s, neg = strings.TrimPrefix(v.Exact, "-"), strings.HasPrefix(v.Exact, "-")
		}
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		if neg {
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
