package policy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/groundgate/groundgate/policy/smt"
)

// DiffResult compares two policy sets (groundgate policy diff OLD NEW):
// either they admit exactly the same requests (Equivalent: the solver
// proved there is no request they disagree on), or Witness is a request one
// admits and the other refuses.
type DiffResult struct {
	Equivalent bool     `json:"equivalent"`
	Witness    *Witness `json:"witness,omitempty"`
	// AdmittedBy is "old" or "new": the set that admits the witness.
	AdmittedBy string `json:"admitted_by,omitempty"`
	// RefusedBy lists the policies of the other set that refuse it.
	RefusedBy []string `json:"refused_by,omitempty"`
	// Undecided says why the comparison is open: the solver could not
	// decide it, or its witness did not survive a check. Equivalent is then
	// false; Witness, if any, is the solver's unconfirmed candidate.
	Undecided string `json:"undecided,omitempty"`
}

// Witness is a request, as the policies see it. Only the fields some
// policy binds are given (family and metric also when an applies_to names
// a capability): the others do not change any verdict.
type Witness struct {
	Family *string          `json:"family,omitempty"`
	Metric *string          `json:"metric,omitempty"`
	Data   *string          `json:"data,omitempty"`
	Params map[string]Value `json:"params,omitempty"`
	// GridPoints: the request spans this many morphisms, each with the
	// params above (a list repeating one value is such a grid).
	GridPoints *int `json:"grid_points,omitempty"`
	// Facts are the data source's facts (DataFacts) the policies read.
	Facts map[string]Value `json:"facts,omitempty"`
}

// Request writes the witness as a request Check can decide: each param a
// one-value list; a grid of GridPoints points made by a param no policy
// binds (one not in Params: "grid", "grid_1", …) listing that many values;
// the facts as given; no defaults.
func (w Witness) Request() Request {
	r := Request{Params: map[string][]Value{}, Defaults: map[string]Value{}}
	for _, f := range []struct {
		dst *string
		src *string
	}{{&r.Family, w.Family}, {&r.Metric, w.Metric}, {&r.Data, w.Data}} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	for n, v := range w.Params {
		r.Params[n] = []Value{v}
	}
	if w.GridPoints != nil && *w.GridPoints > 1 {
		// Not a repeated value of a bound param: Check writes a bound
		// param's list into its query, and a long one is a deep term.
		name := "grid"
		for i := 1; r.Params[name] != nil; i++ {
			name = fmt.Sprintf("grid_%d", i)
		}
		vs := make([]Value, min(*w.GridPoints, MaxGridPoints)) // Diff gives no more
		for i := range vs {
			vs[i] = Num(float64(i))
		}
		r.Params[name] = vs
	}
	if w.Facts != nil {
		facts := w.Facts
		r.Facts = func() (map[string]Value, error) { return facts, nil }
	}
	return r
}

// Diff compares two policy sets over every request: a set admits a request
// when every policy of it that governs the request (applies_to) admits it.
// The request is symbolic — one value per pointer some policy binds, the
// family and metric that decide which policies govern it — and the solver
// is asked for one that one set admits and the other refuses. Policies in
// both sets (same id) are placed once. A witness is confirmed by checking
// it with Check against both sets before it is returned.
//
// The requests compared give every field some policy binds (a param left
// out takes its family's default, which is then its value), each value a
// number or a string as some policy binding it reads it (a string where
// every binding wants a number is a malformed request, not a difference),
// the facts any values of their sorts, the grid 1 to 4096 points.
//
// First the solver is asked for a witness with plain values (printable
// ASCII strings without '\', integers and decimals within ±10^9, at most 6
// decimal places), which read back exactly; failing that, whether any
// witness exists (the proof of equivalence when none does); then for one
// with any values. Queries: at most three, plus two checks per witness,
// each bounded by the checker's timeout; what the solver cannot decide
// comes back in Undecided, never as a verdict.
func (k *Checker) Diff(ctx context.Context, old, new []*Compiled) (DiffResult, error) {
	d := newDiffQuery(old, new)
	tried := ""
	// 1. A witness with plain values.
	res, err := k.solver.Check(ctx, d.query(true, k.timeout))
	switch {
	case err != nil:
		if _, ok := undecidedWhy(err); !ok {
			return DiffResult{}, fmt.Errorf("%w: %w", ErrSolver, err)
		}
	case res.Status == smt.Sat:
		out, err := k.confirm(ctx, d, res.Model, old, new)
		if err != nil || out.Undecided == "" {
			return out, err
		}
		tried = out.Undecided
	}
	// 2. Is there any witness?
	q := d.query(false, k.timeout)
	q.Values = []string{}
	res, err = k.solver.Check(ctx, q)
	if err != nil {
		if why, ok := undecidedWhy(err); ok {
			return DiffResult{Undecided: "whether the sets differ: " + why}, nil
		}
		return DiffResult{}, fmt.Errorf("%w: %w", ErrSolver, err)
	}
	switch res.Status {
	case smt.Unsat:
		return DiffResult{Equivalent: true}, nil
	case smt.Unknown:
		return DiffResult{Undecided: "whether the sets differ: the solver answered unknown"}, nil
	}
	// 3. They differ, only on values that are not plain.
	res, err = k.solver.Check(ctx, d.query(false, k.timeout))
	if err != nil || res.Status != smt.Sat {
		if err != nil && !errors.Is(err, smt.ErrTimeout) && !errors.Is(err, smt.ErrBadQuery) && !errors.Is(err, smt.ErrSolver) {
			return DiffResult{}, fmt.Errorf("%w: %w", ErrSolver, err)
		}
		return DiffResult{Undecided: "the sets differ, but the solver gave no witness it can print back"}, nil
	}
	out, err := k.confirm(ctx, d, res.Model, old, new)
	if err == nil && out.Undecided != "" && tried != "" {
		out.Undecided += "; " + tried
	}
	return out, err
}

// diffQuery is the symbolic request and both sets placed over it.
type diffQuery struct {
	base     string // declarations, placements and verdicts
	q        *query
	named    bool            // some applies_to names a capability: family and metric matter
	bound    map[string]bool // pointers some policy binds (family and metric have carriers regardless)
	old, new string
}

func newDiffQuery(old, new []*Compiled) *diffQuery {
	var distinct []*Compiled
	index := map[string]int{} // id → place in distinct
	for _, c := range slices.Concat(old, new) {
		if _, ok := index[c.ID.String()]; !ok {
			index[c.ID.String()] = len(distinct)
			distinct = append(distinct, c)
		}
	}
	d := &diffQuery{q: newQuery(distinct), old: reserved + "old", new: reserved + "new", bound: map[string]bool{}}
	in := make([]int, len(distinct)) // bit 1: in old, bit 2: in new
	for _, c := range old {
		in[index[c.ID.String()]] |= 1
	}
	for _, c := range new {
		in[index[c.ID.String()]] |= 2
	}
	var oldOnly, newOnly []string
	for i, c := range distinct {
		p := d.q.place(c, fmt.Sprintf("%sp%d.", reserved, i))
		// Governs → fits and admits: a value that does not fit is refused.
		ok := expandBool(fmt.Sprintf("(=> %s (and %s %s))", p.applies, p.fits, c.admits(p.ren)))
		switch in[i] {
		case 3:
			// In both sets: a request it refuses both refuse, so a witness
			// must pass it. Asserting that outright spares the solver a case split.
			fmt.Fprintf(&d.q.b, "(assert %s)\n", ok)
		default:
			sym := fmt.Sprintf("%sok.%d", reserved, i)
			fmt.Fprintf(&d.q.b, "(declare-const %s Bool)\n(assert (= %s %s))\n", sym, sym, ok)
			if in[i] == 1 {
				oldOnly = append(oldOnly, sym)
			} else {
				newOnly = append(newOnly, sym)
			}
		}
		d.named = d.named || !governsAll(c)
		for _, bd := range c.bound {
			d.bound[bd.Ptr.Text] = true
		}
	}
	for _, s := range []struct {
		sym   string
		terms []string
	}{{d.old, oldOnly}, {d.new, newOnly}} {
		fmt.Fprintf(&d.q.b, "(declare-const %s Bool)\n(assert (= %s (and true %s)))\n", s.sym, s.sym, strings.Join(s.terms, " "))
	}
	fmt.Fprintf(&d.q.b, "(assert (distinct %s %s))\n", d.old, d.new)
	d.base = d.q.b.String()
	return d
}

// plainString: printable ASCII without '\', which every solver prints back
// unambiguously (z3 4.8 prints '\' and DEL raw).
const plainString = `(re.* (re.union (re.range " " "[") (re.range "]" "~")))`

// query is the diff query; plain restricts the witness to plain values.
// Its values are the carriers and which set admits.
func (d *diffQuery) query(plain bool, timeout time.Duration) smt.Query {
	var b strings.Builder
	b.WriteString(d.base)
	values := []string{d.old}
	for _, cr := range d.q.order {
		values = append(values, cr.sym)
		if cr.sort == "" {
			values = append(values, cr.str, cr.tag)
		}
		if !plain {
			continue
		}
		for _, s := range []string{cr.sym, cr.str} {
			if s != "" && (cr.sort == "String" || s == cr.str) {
				fmt.Fprintf(&b, "(assert (str.in_re %s %s))\n", s, plainString)
			}
		}
		switch cr.numSort() {
		case "Real":
			fmt.Fprintf(&b, "(assert (is_int (* 1000000.0 %s)))\n(assert (<= (- 1000000000.0) %s 1000000000.0))\n", cr.sym, cr.sym)
		case "Int":
			fmt.Fprintf(&b, "(assert (<= (- 1000000000) %s 1000000000))\n", cr.sym)
		}
	}
	return smt.Query{Commands: b.String(), Values: values, Timeout: timeout}
}

// confirm reads the witness from a model and checks it against both sets.
// A witness the checks do not confirm comes back with Undecided set.
func (k *Checker) confirm(ctx context.Context, d *diffQuery, model map[string]string, old, new []*Compiled) (DiffResult, error) {
	w, err := d.witness(model)
	if err != nil {
		return DiffResult{Undecided: "the solver's witness cannot be read: " + err.Error()}, nil
	}
	out := DiffResult{Witness: &w, AdmittedBy: "new", RefusedBy: []string{}}
	admitting, refusing := new, old
	if model[d.old] == "true" {
		out.AdmittedBy = "old"
		admitting, refusing = old, new
	}
	req := w.Request()
	governed := func(cs []*Compiled) []*Compiled {
		var out []*Compiled
		for _, c := range cs {
			if c.AppliesTo(req.Family, req.Metric) {
				out = append(out, c)
			}
		}
		return out
	}
	yes, err := k.Check(ctx, governed(admitting), req)
	if err != nil {
		return DiffResult{}, err
	}
	no, err := k.Check(ctx, governed(refusing), req)
	if err != nil {
		return DiffResult{}, err
	}
	for _, r := range no {
		if r.Reason == ReasonUndecided {
			return DiffResult{Witness: &w, Undecided: "checking the witness: " + r.Detail}, nil
		}
		out.RefusedBy = append(out.RefusedBy, r.Policy)
	}
	switch {
	case len(yes) > 0:
		return DiffResult{Witness: &w, Undecided: fmt.Sprintf("the solver's witness is refused by %s too: %s", yes[0].Policy, yes[0].Detail)}, nil
	case len(no) == 0:
		return DiffResult{Witness: &w, Undecided: "the solver's witness is admitted by both sets"}, nil
	}
	return out, nil
}

// witness reads the request from a model's carrier values.
func (d *diffQuery) witness(model map[string]string) (Witness, error) {
	var w Witness
	for _, cr := range d.q.order {
		text, ok := model[cr.sym]
		if !ok {
			return Witness{}, fmt.Errorf("no value for %s", cr.ptr.Text)
		}
		srt := cr.sort
		if srt == "" {
			srt = cr.num
			if model[cr.tag] == "true" {
				text, srt = model[cr.str], "String"
			}
		}
		v, err := parseValue(text, srt)
		if err != nil {
			return Witness{}, fmt.Errorf("%s: %w", cr.ptr.Text, err)
		}
		switch cr.ptr.Field {
		case "family", "metric":
			if !d.named && !d.bound[cr.ptr.Text] {
				continue
			}
			s := v.Str
			if cr.ptr.Field == "family" {
				w.Family = &s
			} else {
				w.Metric = &s
			}
		case "data":
			s := v.Str
			w.Data = &s
		case "params":
			if w.Params == nil {
				w.Params = map[string]Value{}
			}
			w.Params[cr.ptr.Param] = v
		case "grid/points":
			n := int(v.Num)
			w.GridPoints = &n
		case "facts":
			if w.Facts == nil {
				w.Facts = map[string]Value{}
			}
			w.Facts[cr.ptr.Param] = v
		}
	}
	return w, nil
}

// parseValue reads a solver's value of sort: Int "5", "(- 5)"; Real "2.0",
// "(/ 5 2)", "(- (/ 1 3))", "(/ 5.0 2.0)"; String literals with ""
// and \u{…} escapes; Bool. A number becomes the nearest float64.
func parseValue(text, sort string) (Value, error) {
	xs, err := smt.Parse(text)
	if err != nil || len(xs) != 1 {
		return Value{}, fmt.Errorf("unreadable value %q", clip(text))
	}
	switch sort {
	case "Bool":
		switch text {
		case "true", "false":
			return Boolean(text == "true"), nil
		}
	case "String":
		s, err := parseString(xs[0].Atom)
		if err != nil || xs[0].IsList {
			return Value{}, fmt.Errorf("unreadable string %q", clip(text))
		}
		return Str(s), nil
	case "Int", "Real":
		r, err := parseNumber(xs[0])
		if err != nil {
			return Value{}, fmt.Errorf("unreadable number %q: %w", clip(text), err)
		}
		f, _ := r.Float64()
		if math.IsInf(f, 0) {
			return Value{}, fmt.Errorf("%q is beyond a float64", clip(text))
		}
		return Num(f), nil
	}
	return Value{}, fmt.Errorf("unreadable %s value %q", sort, clip(text))
}

// parseNumber evaluates a numeral, a decimal, (- x) and (/ x y).
func parseNumber(s smt.Sexp) (*big.Rat, error) {
	if !s.IsList {
		r, ok := new(big.Rat).SetString(s.Atom)
		if !ok || s.Atom == "" || s.Atom[0] < '0' || s.Atom[0] > '9' {
			return nil, fmt.Errorf("%q is not a number", s.Atom)
		}
		return r, nil
	}
	switch {
	case s.Head() == "-" && len(s.List) == 2:
		r, err := parseNumber(s.List[1])
		if err != nil {
			return nil, err
		}
		return r.Neg(r), nil
	case s.Head() == "/" && len(s.List) == 3:
		a, err := parseNumber(s.List[1])
		if err != nil {
			return nil, err
		}
		b, err := parseNumber(s.List[2])
		if err != nil {
			return nil, err
		}
		if b.Sign() == 0 {
			return nil, errors.New("division by zero")
		}
		return a.Quo(a, b), nil
	}
	return nil, fmt.Errorf("%s is not a number", s)
}

// parseString reads an SMT-LIB 2.6 string literal: "" is '"', \u{d…}
// (one to five hex digits) and \udddd are code points, any other '\' is
// itself.
func parseString(lit string) (string, error) {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return "", fmt.Errorf("not a string literal")
	}
	s := lit[1 : len(lit)-1]
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case s[i] == '"':
			if i+1 >= len(s) || s[i+1] != '"' {
				return "", fmt.Errorf("lone '\"' in a string literal")
			}
			b.WriteByte('"')
			i += 2
		case strings.HasPrefix(s[i:], `\u{`):
			// \u{d} to \u{ddddd}: the closing brace 4 to 8 bytes on.
			if end := strings.IndexByte(s[i:], '}'); end >= 4 && end <= 8 {
				if n, err := strconv.ParseUint(s[i+3:i+end], 16, 32); err == nil {
					b.WriteRune(rune(n))
					i += end + 1
					continue
				}
			}
			b.WriteByte('\\')
			i++
		case strings.HasPrefix(s[i:], `\u`) && i+6 <= len(s):
			if n, err := strconv.ParseUint(s[i+2:i+6], 16, 32); err == nil {
				b.WriteRune(rune(n))
				i += 6
				continue
			}
			b.WriteByte('\\')
			i++
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String(), nil
}
