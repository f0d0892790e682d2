package execution

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Limits on an s-expression, so that a hostile registry entry cannot make
// the planner recurse or allocate without bound.
const (
	maxExprBytes = 1 << 16
	maxExprDepth = 64
)

// errSyntax is wrapped by every parse error.
var errSyntax = errors.New("s-expression syntax")

// exprKind says what an expression node is.
type exprKind uint8

const (
	exprList   exprKind = iota + 1 // (head arg ...)
	exprSymbol                     // an input (x, y) or a kernel name in head position
	exprParam                      // $name: a bound parameter
	exprNumber                     // a finite decimal literal
)

// expr is a parsed s-expression: a list whose first element is the kernel
// symbol, a symbol, a $parameter or a number.
type expr struct {
	kind exprKind
	name string  // symbol, or parameter name without the $
	num  float64 // number
	list []*expr // list: head first
}

// parseExpr parses one s-expression. The grammar, written for the
// registry's impl.expr:
//
//	expr   = list | atom
//	list   = "(" symbol { expr } ")"
//	atom   = number | "$" name | symbol
//	number = ["-" | "+"] digits ["." digits] [("e"|"E") ["-"|"+"] digits]   (also ".5", "5.")
//	symbol = a run of letters, digits and _ . - + * / < > = ! ? not starting
//	         with a digit and not a number
//
// Whitespace (space, tab, CR, LF) separates atoms; nothing else is
// accepted. A number must be finite.
func parseExpr(s string) (*expr, error) {
	if len(s) > maxExprBytes {
		return nil, fmt.Errorf("%w: expression of %d bytes (at most %d)", errSyntax, len(s), maxExprBytes)
	}
	p := &exprParser{s: s}
	p.space()
	e, err := p.parse(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i != len(p.s) {
		return nil, p.errorf("trailing text %q", clipText(p.s[p.i:]))
	}
	return e, nil
}

type exprParser struct {
	s string
	i int
}

func (p *exprParser) errorf(format string, a ...any) error {
	return fmt.Errorf("%w at byte %d: %s", errSyntax, p.i, fmt.Sprintf(format, a...))
}

func (p *exprParser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *exprParser) parse(depth int) (*expr, error) {
	if depth > maxExprDepth {
		return nil, p.errorf("nested deeper than %d", maxExprDepth)
	}
	if p.i >= len(p.s) {
		return nil, p.errorf("unexpected end of expression")
	}
	switch p.s[p.i] {
	case ')':
		return nil, p.errorf("unexpected )")
	case '(':
		p.i++
		p.space()
		e := &expr{kind: exprList}
		for {
			if p.i >= len(p.s) {
				return nil, p.errorf("missing )")
			}
			if p.s[p.i] == ')' {
				p.i++
				break
			}
			arg, err := p.parse(depth + 1)
			if err != nil {
				return nil, err
			}
			if len(e.list) == 0 && arg.kind != exprSymbol {
				return nil, p.errorf("a list must start with a kernel name, not %s", arg)
			}
			e.list = append(e.list, arg)
			p.space()
		}
		if len(e.list) == 0 {
			return nil, p.errorf("empty list")
		}
		return e, nil
	}
	start := p.i
	for p.i < len(p.s) && atomByte(p.s[p.i]) {
		p.i++
	}
	tok := p.s[start:p.i]
	if tok == "" {
		return nil, p.errorf("unexpected character %q", p.s[p.i])
	}
	if p.i < len(p.s) && !separator(p.s[p.i]) {
		return nil, p.errorf("unexpected character %q after %q", p.s[p.i], clipText(tok))
	}
	switch {
	case tok[0] == '$':
		name := tok[1:]
		if !validName(name) {
			return nil, p.errorf("invalid parameter name %q", clipText(tok))
		}
		return &expr{kind: exprParam, name: name}, nil
	case isNumber(tok):
		v, err := strconv.ParseFloat(tok, 64)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, p.errorf("number %q out of range", clipText(tok))
		}
		return &expr{kind: exprNumber, num: v}, nil
	case tok[0] >= '0' && tok[0] <= '9':
		return nil, p.errorf("malformed number %q", clipText(tok))
	}
	return &expr{kind: exprSymbol, name: tok}, nil
}

func atomByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("_.-+*/<>=!?$", c) >= 0
}

func separator(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '(' || c == ')'
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// isNumber reports whether tok is a decimal literal: optional sign, digits
// with an optional point (at least one digit), optional exponent.
func isNumber(tok string) bool {
	i := 0
	if i < len(tok) && (tok[i] == '-' || tok[i] == '+') {
		i++
	}
	digits := 0
	for i < len(tok) && '0' <= tok[i] && tok[i] <= '9' {
		i++
		digits++
	}
	if i < len(tok) && tok[i] == '.' {
		i++
		for i < len(tok) && '0' <= tok[i] && tok[i] <= '9' {
			i++
			digits++
		}
	}
	if digits == 0 {
		return false
	}
	if i < len(tok) && (tok[i] == 'e' || tok[i] == 'E') {
		i++
		if i < len(tok) && (tok[i] == '-' || tok[i] == '+') {
			i++
		}
		ed := 0
		for i < len(tok) && '0' <= tok[i] && tok[i] <= '9' {
			i++
			ed++
		}
		if ed == 0 {
			return false
		}
	}
	return i == len(tok)
}

// String returns the canonical form: single spaces, numbers in Go's
// shortest round-trip form (strconv 'g', -1). Parsing it gives back the
// same tree, and it is its own canonical form.
func (e *expr) String() string {
	var b strings.Builder
	e.write(&b)
	return b.String()
}

func (e *expr) write(b *strings.Builder) {
	switch e.kind {
	case exprList:
		b.WriteByte('(')
		for i, a := range e.list {
			if i > 0 {
				b.WriteByte(' ')
			}
			a.write(b)
		}
		b.WriteByte(')')
	case exprParam:
		b.WriteByte('$')
		b.WriteString(e.name)
	case exprNumber:
		b.WriteString(formatNumber(e.num))
	default:
		b.WriteString(e.name)
	}
}

// formatNumber writes v in its shortest round-trip decimal form; -0 is
// written "-0" so that it survives a round trip.
func formatNumber(v float64) string {
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// head returns the kernel symbol of a list.
func (e *expr) head() string { return e.list[0].name }

// args returns a list's arguments.
func (e *expr) args() []*expr { return e.list[1:] }

func clipText(s string) string {
	const max = 40
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
