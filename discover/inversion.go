package discover

import (
	"errors"
	"slices"
	"strings"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
)

// The inversion rule (docs/discovery.md). Two families are opposites when
// everything but the sign of their bet is the same:
//
//   - both are families, neither deprecated, with opposite orientations
//     (one "positive", the other "negative");
//   - their other semantic properties, algebraic layers (inputs, outputs,
//     parameter schema), engines and IR variants are equal;
//   - one's expression is the other's with exactly one sub-expression S
//     replaced by (neg S).
//
// The rule reads only the behavioural layers, never names or descriptions,
// so it holds for any domain whose families negate a signal with the
// engine's neg kernel.

// negOp is the engine kernel that flips the sign of its argument.
const negOp = "neg"

// Bounds on the expressions the rule parses; larger ones are left out of
// the rule (they are never opposites of anything).
const (
	maxExprBytes = 8 << 10
	maxExprDepth = 64
	maxNegs      = 16
)

// sexpr is a parsed s-expression: an atom, or a list.
type sexpr struct {
	atom string
	list []*sexpr
	leaf bool
}

var errExpr = errors.New("bad expression")

// parseExpr parses one s-expression: atoms separated by white space,
// lists in parentheses.
func parseExpr(s string) (*sexpr, error) {
	if len(s) > maxExprBytes {
		return nil, errExpr
	}
	p := &exprParser{src: s}
	e, err := p.parse(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos != len(p.src) {
		return nil, errExpr
	}
	return e, nil
}

type exprParser struct {
	src string
	pos int
}

func (p *exprParser) space() {
	for p.pos < len(p.src) && strings.ContainsRune(" \t\r\n", rune(p.src[p.pos])) {
		p.pos++
	}
}

func (p *exprParser) parse(depth int) (*sexpr, error) {
	if depth > maxExprDepth {
		return nil, errExpr
	}
	p.space()
	if p.pos >= len(p.src) {
		return nil, errExpr
	}
	switch p.src[p.pos] {
	case ')':
		return nil, errExpr
	case '(':
		p.pos++
		e := &sexpr{}
		for {
			p.space()
			if p.pos >= len(p.src) {
				return nil, errExpr
			}
			if p.src[p.pos] == ')' {
				p.pos++
				return e, nil
			}
			c, err := p.parse(depth + 1)
			if err != nil {
				return nil, err
			}
			e.list = append(e.list, c)
		}
	}
	start := p.pos
	for p.pos < len(p.src) && !strings.ContainsRune(" \t\r\n()", rune(p.src[p.pos])) {
		p.pos++
	}
	return &sexpr{atom: p.src[start:p.pos], leaf: true}, nil
}

// String writes e canonically: single spaces, no padding.
func (e *sexpr) String() string {
	var b strings.Builder
	e.write(&b)
	return b.String()
}

func (e *sexpr) write(b *strings.Builder) {
	if e.leaf {
		b.WriteString(e.atom)
		return
	}
	b.WriteByte('(')
	for i, c := range e.list {
		if i > 0 {
			b.WriteByte(' ')
		}
		c.write(b)
	}
	b.WriteByte(')')
}

func (e *sexpr) isNeg() bool {
	return !e.leaf && len(e.list) == 2 && e.list[0].leaf && e.list[0].atom == negOp
}

// unwrapNeg returns, sorted and without duplicates, every expression that
// is e with one (neg S) replaced by S.
func unwrapNeg(e *sexpr) []string {
	var out []string
	var walk func(n *sexpr)
	walk = func(n *sexpr) {
		if n.leaf || len(out) >= maxNegs {
			return
		}
		if n.isNeg() {
			// Replace n by its argument in place, print, restore.
			saved := *n
			*n = *saved.list[1]
			out = append(out, e.String())
			*n = saved
		}
		for _, c := range n.list {
			walk(c)
		}
	}
	walk(e)
	slices.Sort(out)
	return slices.Compact(out)
}

// familyForm is what the inversion rule compares of a family: its canonical
// expression, that expression with each single (neg …) removed, and its
// shape — every behavioural field but the orientation and the expression.
type familyForm struct {
	expr    string
	unwraps []string
	shape   hashing.Digest
}

// familyFormOf returns e's form; ok is false when e is not a family or its
// expression does not parse (such an entry has no opposite).
func familyFormOf(e registry.Entry) (form familyForm, ok bool, err error) {
	if e.Kind != registry.KindFamily {
		return form, false, nil
	}
	tree, perr := parseExpr(e.Impl.Expr)
	if perr != nil {
		return form, false, nil
	}
	form.expr, form.unwraps = tree.String(), unwrapNeg(tree)
	form.shape, err = hashing.SHA256Of(struct {
		Kind   registry.Kind      `json:"kind"`
		Alg    registry.Algebraic `json:"alg"`
		Engine string             `json:"engine"`
		IR     registry.IR        `json:"ir"`
		Sem    registry.Semantic  `json:"sem"`
	}{e.Kind, e.Alg, e.Impl.Engine, e.Impl.IR, withoutOrientation(e.Sem)})
	return form, err == nil, err
}

// Opposite reports whether a and b are semantic inversions of each other
// by discovery's inversion rule: two families that are not deprecated,
// with opposite orientations ("positive" and "negative"), the same shape,
// and expressions that differ by exactly one (neg …) wrapper. It reads no
// names or descriptions. The index precomputes the same forms (describe)
// to find opposites quickly; this is the rule for a single pair.
func Opposite(a, b registry.Entry) bool {
	if a.Disc.Deprecated || b.Disc.Deprecated || !oppositeOrientation(a.Sem.Orientation, b.Sem.Orientation) {
		return false
	}
	fa, okA, _ := familyFormOf(a)
	fb, okB, _ := familyFormOf(b)
	return okA && okB && fa.shape == fb.shape &&
		(slices.Contains(fa.unwraps, fb.expr) || slices.Contains(fb.unwraps, fa.expr))
}

func oppositeOrientation(a, b registry.Orientation) bool {
	return a == registry.OrientPositive && b == registry.OrientNegative ||
		a == registry.OrientNegative && b == registry.OrientPositive
}

// opposites returns, sorted, the families the rule pairs with the entry
// named name.
func (x *index) opposites(name string) []string {
	f := x.forms[name]
	if f == nil {
		return nil
	}
	var cands []string
	for _, u := range f.unwraps {
		cands = append(cands, x.exprs[u]...) // f = (neg …) of them
	}
	cands = append(cands, x.unwraps[f.expr]...) // they = (neg …) of f
	slices.Sort(cands)
	cands = slices.Compact(cands)
	out := cands[:0]
	for _, n := range cands {
		g := x.forms[n]
		if g == nil || n == name || !oppositeOrientation(f.orient, g.orient) || g.shape != f.shape {
			continue
		}
		out = append(out, n)
	}
	return out
}
