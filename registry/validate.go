package registry

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/hashing"
)

// FieldError names one thing wrong with one field of an entry.
type FieldError struct {
	Field   string `json:"field"` // JSON path inside the entry, e.g. "alg.params[1].default"
	Problem string `json:"problem"`
}

// ValidationError lists everything wrong with one entry. It wraps
// ErrInvalidEntry.
type ValidationError struct {
	Entry  string // the entry's name, or "#index" when it has none
	Fields []FieldError
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "entry %s: ", e.Entry)
	for i, f := range e.Fields {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: %s", f.Field, f.Problem)
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrInvalidEntry) true.
func (e *ValidationError) Unwrap() error { return ErrInvalidEntry }

// MaxNameLen bounds a capability name; names travel in URL paths.
const MaxNameLen = 64

var (
	nameRE  = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.+-]*$`)
	paramRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
)

// DecodeEntry strictly decodes and validates one entry. label names the
// entry in errors when the document has no usable name (e.g. "#12").
func DecodeEntry(data []byte, label string) (Entry, error) {
	return decodeEntry(data, label, false, nil)
}

// decodeEntry is DecodeEntry; checked says that data is part of a document
// DecodeStrict has already accepted as a whole (an element of an array),
// so the per-document checks are not repeated. w, when not nil, is the
// calling goroutine's worker (forEach).
func decodeEntry(data []byte, label string, checked bool, w *worker) (Entry, error) {
	var v *validator
	if w != nil {
		v = &w.v
	}
	if w != nil && checked {
		// The record reader gives what encoding/json gives, ten times
		// faster, for a document already checked as a whole (no duplicate
		// keys, valid JSON). It refuses unknown and misspelt fields, a
		// missing layer, a wrong type: then the decoding below says what
		// is wrong, as it always has.
		if e, err := w.rr.readRecord(data); err == nil {
			if e.Name != "" {
				label = fmt.Sprintf("%q", e.Name)
			}
			if err := e.validate(label, v); err != nil {
				return Entry{}, err
			}
			return e, nil
		}
	}
	// Decode the layers as raw messages first so a missing layer is
	// reported as missing rather than silently zero.
	var raw rawEntry
	decode := hashing.DecodeStrict
	if checked {
		decode = hashing.DecodePart
	}
	if err := decode(data, &raw); err != nil {
		return Entry{}, &ValidationError{Entry: label, Fields: []FieldError{{"", err.Error()}}}
	}
	if raw.Name != "" {
		label = fmt.Sprintf("%q", raw.Name)
	}
	e := Entry{Name: raw.Name, Kind: raw.Kind}
	var fe []FieldError
	if raw.Kind == KindTool {
		e.Tool = decodeToolLayers(raw.Sem, raw.Alg, raw.Impl, &fe)
	} else {
		decodeLayer("sem", raw.Sem, &e.Sem, &fe)
		decodeLayer("alg", raw.Alg, &e.Alg, &fe)
		decodeLayer("impl", raw.Impl, &e.Impl, &fe)
	}
	decodeLayer("disc", raw.Disc, &e.Disc, &fe)
	if len(fe) > 0 {
		return Entry{}, &ValidationError{Entry: label, Fields: fe}
	}
	if err := e.validate(label, v); err != nil {
		return Entry{}, err
	}
	return e, nil
}

// rawEntry is an entry with its layers undecoded: their shape depends on
// the kind.
type rawEntry struct {
	Name string          `json:"name"`
	Kind Kind            `json:"kind"`
	Sem  json.RawMessage `json:"sem"`
	Alg  json.RawMessage `json:"alg"`
	Impl json.RawMessage `json:"impl"`
	Disc json.RawMessage `json:"disc"`
}

// decodeLayer decodes the layer key (a part of a document DecodeStrict
// accepted as a whole) into into, adding a FieldError when it is missing
// or does not decode, so a missing layer is reported as missing rather
// than silently zero.
func decodeLayer(key string, msg json.RawMessage, into any, fe *[]FieldError) {
	if len(msg) == 0 || string(msg) == "null" {
		*fe = append(*fe, FieldError{key, "layer is missing"})
		return
	}
	if err := hashing.DecodePart(msg, into); err != nil {
		*fe = append(*fe, FieldError{key, err.Error()})
	}
}

// Validate reports every problem with e, or nil. It does not check the
// entry against others (duplicate identities are the store's job).
func (e Entry) Validate() error {
	return e.validate(entryLabel(e), nil)
}

// entryLabel names an entry in Validate's errors.
func entryLabel(e Entry) string {
	if e.Name == "" {
		return "(unnamed)"
	}
	return fmt.Sprintf("%q", e.Name)
}

// validator remembers contract checks across the entries of one batch
// (a bulk write, a verification): compiling a contract's CEL clauses is
// most of validating an entry, and entries often share a contract (every
// metric the same clauses). The zero value is ready; it is not safe for
// concurrent use (forEach gives each goroutine its own).
type validator struct {
	contracts map[string][]contract.Problem
	// cache, when set, compiles the clauses instead (it remembers them
	// across batches and is safe for concurrent use).
	cache *contract.Cache
}

// contractProblems is contract.Check of a contract of an entry of the
// given kind and parameters, remembered by everything the check depends
// on: the clauses, the kind and the parameters' names and types.
func (v *validator) contractProblems(con *contract.Contract, kind Kind, params []contract.Param) []contract.Problem {
	if con == nil || v == nil {
		return contract.Check(con, string(kind), params)
	}
	if v.cache != nil {
		return v.cache.Check(con, string(kind), params)
	}
	var k []byte
	str := func(s string) { k = append(strconv.AppendInt(k, int64(len(s)), 10), ':'); k = append(k, s...) }
	str(string(kind))
	for _, p := range params {
		str(p.Name)
		str(p.Type)
	}
	for _, cls := range [][]contract.Clause{con.Pre, con.Post} {
		k = append(k, '|')
		for _, cl := range cls {
			str(cl.Name)
			str(cl.Expr)
			str(cl.Message)
		}
	}
	if ps, ok := v.contracts[string(k)]; ok {
		return ps
	}
	ps := contract.Check(con, string(kind), params)
	if v.contracts == nil {
		v.contracts = make(map[string][]contract.Problem)
	}
	v.contracts[string(k)] = ps
	return ps
}

// addContractProblems adds a FieldError under sem.contract per problem of
// a contract, naming the clause: sem.contract.pre[2].expr.
func (v *validator) addContractProblems(con *contract.Contract, kind Kind, params []contract.Param, add func(field, format string, args ...any)) {
	for _, p := range v.contractProblems(con, kind, params) {
		msg := p.Problem
		if p.Clause != "" {
			msg = fmt.Sprintf("clause %q: %s", p.Clause, p.Problem)
		}
		add("sem.contract."+p.Field, "%s", msg)
	}
}

func (e Entry) validate(label string, v *validator) error {
	var fe []FieldError
	add := func(field, format string, args ...any) {
		fe = append(fe, FieldError{field, fmt.Sprintf(format, args...)})
	}
	maxName := MaxNameLen
	if e.Kind == KindTool {
		maxName = MaxToolNameLen
	}
	switch {
	case e.Name == "":
		add("name", "must not be empty")
	case len(e.Name) > maxName:
		add("name", "longer than %d characters", maxName)
	case !nameRE.MatchString(e.Name):
		add("name", "%q must start with a letter and hold only letters, digits and _ . + -", e.Name)
	}
	if !slices.Contains(kinds, e.Kind) {
		add("kind", "unknown kind %q (want one of %s)", e.Kind, joinQuoted(kinds))
	}
	if e.Kind == KindTool {
		e.validateTool(v, add)
		e.validateDisc(true, add)
		if len(fe) == 0 {
			return nil
		}
		return &ValidationError{Entry: label, Fields: fe}
	}
	if e.Tool != nil {
		add("kind", "only a tool entry has tool layers")
	}

	// sem
	switch e.Sem.Orientation {
	case OrientNone, OrientPositive, OrientNegative:
		if e.Kind == KindMetric {
			add("sem.orientation", "a metric must be %q or %q", OrientMaximize, OrientMinimize)
		}
	case OrientMaximize, OrientMinimize:
		if e.Kind != KindMetric {
			add("sem.orientation", "%q is only for metrics", e.Sem.Orientation)
		}
	default:
		add("sem.orientation", "unknown orientation %q", e.Sem.Orientation)
	}
	if e.Kind == KindFamily && e.Sem.Orientation != OrientPositive && e.Sem.Orientation != OrientNegative {
		add("sem.orientation", "a family must be %q or %q", OrientPositive, OrientNegative)
	}

	// alg
	if len(e.Alg.Inputs) == 0 {
		add("alg.inputs", "must list at least one input type")
	}
	if len(e.Alg.Outputs) == 0 {
		add("alg.outputs", "must list at least one output type")
	}
	for i, t := range e.Alg.Inputs {
		if !slices.Contains(valueTypes, t) {
			add(fmt.Sprintf("alg.inputs[%d]", i), "unknown type %q (want one of %s)", t, joinQuoted(valueTypes))
		}
	}
	for i, t := range e.Alg.Outputs {
		if !slices.Contains(valueTypes, t) {
			add(fmt.Sprintf("alg.outputs[%d]", i), "unknown type %q (want one of %s)", t, joinQuoted(valueTypes))
		}
	}
	if e.Alg.Arity != len(e.Alg.Inputs) {
		add("alg.arity", "is %d but %d inputs are listed", e.Alg.Arity, len(e.Alg.Inputs))
	}
	seen := map[string]bool{}
	for i, p := range e.Alg.Params {
		validateParam(fmt.Sprintf("alg.params[%d]", i), p, seen, add)
	}

	// sem.contract: every clause compiles against the state schema and the
	// parameters above, so a bad clause is refused here, not at run time.
	if slices.Contains(kinds, e.Kind) {
		v.addContractProblems(e.Sem.Contract, e.Kind, e.ContractParams(), add)
	}

	// impl
	if strings.TrimSpace(e.Impl.Engine) == "" {
		add("impl.engine", "must not be empty")
	}
	if !slices.Contains(irs, e.Impl.IR) {
		add("impl.ir", "unknown IR variant %q (want one of %s)", e.Impl.IR, joinQuoted(irs))
	}
	if err := checkExpr(e.Impl.Expr); err != nil {
		add("impl.expr", "%v", err)
	}

	e.validateDisc(false, add)

	if len(fe) == 0 {
		return nil
	}
	return &ValidationError{Entry: label, Fields: fe}
}

// validateDisc adds the problems of the disc layer. A tool may have no
// description: its upstream may declare none.
func (e Entry) validateDisc(tool bool, add func(string, string, ...any)) {
	if !tool && strings.TrimSpace(e.Disc.Description) == "" {
		add("disc.description", "must not be empty")
	}
	checkTerms("disc.aliases", e.Disc.Aliases, add)
	checkTerms("disc.tags", e.Disc.Tags, add)
	for i, x := range e.Disc.Examples {
		if strings.TrimSpace(x) == "" {
			add(fmt.Sprintf("disc.examples[%d]", i), "must not be empty")
		}
	}
}

func validateParam(field string, p Param, seen map[string]bool, add func(string, string, ...any)) {
	switch {
	case !paramRE.MatchString(p.Name):
		add(field+".name", "%q must be lower-case letters, digits and _, starting with a letter", p.Name)
	case seen[p.Name]:
		add(field+".name", "duplicate parameter %q", p.Name)
	}
	seen[p.Name] = true
	numeric := p.Type == ParamInt || p.Type == ParamFloat
	switch p.Type {
	case ParamInt, ParamFloat, ParamString, ParamColumn:
	default:
		add(field+".type", "unknown parameter type %q (want int, float, string or column)", p.Type)
		return
	}
	if !numeric && (p.Min != nil || p.Max != nil) {
		add(field, "min and max apply only to int and float parameters")
	}
	for _, b := range []struct {
		key string
		v   *float64
	}{{"min", p.Min}, {"max", p.Max}} {
		if b.v != nil && p.Type == ParamInt && *b.v != math.Trunc(*b.v) {
			add(field+"."+b.key, "%v is not an integer", *b.v)
		}
	}
	if p.Min != nil && p.Max != nil && *p.Min > *p.Max {
		add(field, "min %v is greater than max %v", *p.Min, *p.Max)
	}
	if p.Default == nil {
		return
	}
	switch d := p.Default.(type) {
	case float64:
		if !numeric {
			add(field+".default", "a %s parameter needs a string default, got %v", p.Type, d)
			return
		}
		if p.Type == ParamInt && (d != math.Trunc(d) || math.Abs(d) > 1<<53) {
			add(field+".default", "%v is not an integer", d)
		}
		if p.Min != nil && d < *p.Min {
			add(field+".default", "%v is below min %v", d, *p.Min)
		}
		if p.Max != nil && d > *p.Max {
			add(field+".default", "%v is above max %v", d, *p.Max)
		}
	case string:
		if numeric {
			add(field+".default", "a %s parameter needs a numeric default, got %q", p.Type, d)
		} else if d == "" {
			add(field+".default", "must not be empty")
		}
	default:
		add(field+".default", "must be a number or a string, got %T", p.Default)
	}
}

func checkTerms(field string, terms []string, add func(string, string, ...any)) {
	seen := make(map[string]bool, len(terms))
	for i, t := range terms {
		f := func() string { return fmt.Sprintf("%s[%d]", field, i) }
		switch {
		case strings.TrimSpace(t) == "":
			add(f(), "must not be empty")
		case t != strings.TrimSpace(t):
			add(f(), "%q has leading or trailing space", t)
		case seen[strings.ToLower(t)]:
			add(f(), "duplicate %q", t)
		}
		seen[strings.ToLower(t)] = true
	}
}

// checkExpr checks that an s-expression is non-empty and balanced. The
// planner parses it fully; the registry only refuses what cannot be one.
func checkExpr(s string) error {
	if strings.TrimSpace(s) == "" {
		return fmt.Errorf("must not be empty")
	}
	depth := 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
			if depth < 0 {
				return fmt.Errorf("unbalanced ')' at byte %d", i)
			}
		}
	}
	if depth != 0 {
		return fmt.Errorf("%d unclosed '('", depth)
	}
	return nil
}

func joinQuoted[T ~string](xs []T) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, ", ")
}

// ValidName reports whether s is spelt like a capability name: a letter,
// then letters, digits and _ . + -.
func ValidName(s string) bool { return nameRE.MatchString(s) }
