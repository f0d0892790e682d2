package airline

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

// Calculate is calculate: the expression, of digits, + - * / ( ) . and
// spaces, evaluated as Python evaluates it (ints and floats, / true
// division, // floor division, ** power), then str(round(float(v), 2)).
// Errors read "Error: " and Python's message for the common cases (a
// syntax error, a division by zero); an int beyond 64 bits becomes a
// float where Python would keep it exact.
func (w *World) Calculate(expression string) string {
	for _, c := range expression {
		if !strings.ContainsRune("0123456789+-*/(). ", c) {
			return "Error: invalid characters in expression"
		}
	}
	p := &calcParser{s: expression}
	v, err := p.parse()
	if err != nil {
		return "Error: " + err.Error()
	}
	f := v.Float64()
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return pyFloat(f)
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'f', 2, 64), 64)
	if r == 0 {
		r = math.Copysign(0, f)
	}
	return pyFloat(r)
}

var errSyntax = errors.New("invalid syntax (<string>, line 1)")

type calcParser struct {
	s   string
	pos int
}

func (p *calcParser) skip() {
	for p.pos < len(p.s) && p.s[p.pos] == ' ' {
		p.pos++
	}
}

func (p *calcParser) peek(op string) bool {
	p.skip()
	return strings.HasPrefix(p.s[p.pos:], op)
}

func (p *calcParser) parse() (Num, error) {
	v, err := p.sum()
	if err != nil {
		return v, err
	}
	p.skip()
	if p.pos != len(p.s) {
		return v, errSyntax
	}
	return v, nil
}

func (p *calcParser) sum() (Num, error) {
	v, err := p.term()
	for err == nil {
		switch {
		case p.peek("+"):
			p.pos++
			var r Num
			if r, err = p.term(); err == nil {
				v = arith('+', v, r)
			}
		case p.peek("-"):
			p.pos++
			var r Num
			if r, err = p.term(); err == nil {
				v = arith('-', v, r)
			}
		default:
			return v, nil
		}
	}
	return v, err
}

func (p *calcParser) term() (Num, error) {
	v, err := p.unary()
	for err == nil {
		var op string
		switch {
		case p.peek("**"):
			return v, nil // only after a unary, handled in power
		case p.peek("//"):
			op = "//"
		case p.peek("*"):
			op = "*"
		case p.peek("/"):
			op = "/"
		default:
			return v, nil
		}
		p.pos += len(op)
		var r Num
		if r, err = p.unary(); err != nil {
			break
		}
		v, err = mulDiv(op, v, r)
	}
	return v, err
}

func (p *calcParser) unary() (Num, error) {
	switch {
	case p.peek("-"):
		p.pos++
		v, err := p.unary()
		return v.Neg(), err
	case p.peek("+"):
		p.pos++
		return p.unary()
	}
	return p.power()
}

func (p *calcParser) power() (Num, error) {
	base, err := p.atom()
	if err != nil || !p.peek("**") {
		return base, err
	}
	p.pos += 2
	exp, err := p.unary() // right-associative, binds a unary minus
	if err != nil {
		return base, err
	}
	return pow(base, exp)
}

func (p *calcParser) atom() (Num, error) {
	p.skip()
	if p.pos >= len(p.s) {
		return Num{}, errSyntax
	}
	if p.s[p.pos] == '(' {
		p.pos++
		v, err := p.sum()
		if err != nil {
			return v, err
		}
		if !p.peek(")") {
			return v, errSyntax
		}
		p.pos++
		return v, nil
	}
	start := p.pos
	for p.pos < len(p.s) && (p.s[p.pos] >= '0' && p.s[p.pos] <= '9' || p.s[p.pos] == '.') {
		p.pos++
	}
	lit := p.s[start:p.pos]
	if lit == "" || lit == "." || strings.Count(lit, ".") > 1 {
		return Num{}, errSyntax
	}
	if strings.Contains(lit, ".") {
		f, err := strconv.ParseFloat(lit, 64)
		if err != nil {
			return Num{}, errSyntax
		}
		return Num{F: f, Float: true}, nil
	}
	if len(lit) > 1 && lit[0] == '0' && strings.Trim(lit, "0") != "" {
		return Num{}, errors.New("leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers (<string>, line 1)")
	}
	var n Num
	if err := n.UnmarshalJSON([]byte(lit)); err != nil {
		return Num{}, errSyntax
	}
	return n, nil
}

// arith is + or - with int overflow carried into a float.
func arith(op byte, a, b Num) Num {
	if op == '-' {
		b = b.Neg()
	}
	if !a.Float && !b.Float {
		s := a.I + b.I
		if (s > a.I) == (b.I > 0) {
			return Num{I: s}
		}
	}
	return Num{F: a.Float64() + b.Float64(), Float: true}
}

func mulDiv(op string, a, b Num) (Num, error) {
	ints := !a.Float && !b.Float
	switch op {
	case "*":
		if ints {
			if a.I == 0 || b.I == 0 {
				return Num{}, nil
			}
			if p := a.I * b.I; p/b.I == a.I && !(a.I == -1 && b.I == math.MinInt64) && !(b.I == -1 && a.I == math.MinInt64) {
				return Num{I: p}, nil
			}
		}
		return Num{F: a.Float64() * b.Float64(), Float: true}, nil
	case "/":
		if b.Float64() == 0 {
			if ints {
				return Num{}, errors.New("division by zero")
			}
			return Num{}, errors.New("float division by zero")
		}
		return Num{F: a.Float64() / b.Float64(), Float: true}, nil
	default: // "//"
		if b.Float64() == 0 {
			if ints {
				return Num{}, errors.New("integer division or modulo by zero")
			}
			return Num{}, errors.New("float floor division by zero")
		}
		if ints {
			q := a.I / b.I
			if (a.I%b.I != 0) && ((a.I < 0) != (b.I < 0)) {
				q--
			}
			return Num{I: q}, nil
		}
		return Num{F: math.Floor(a.Float64() / b.Float64()), Float: true}, nil
	}
}

func pow(a, b Num) (Num, error) {
	if !a.Float && !b.Float && b.I >= 0 {
		r, base, e := int64(1), a.I, b.I
		ok := true
		for e > 0 && ok {
			if e&1 == 1 {
				if n := r * base; base != 0 && n/base != r {
					ok = false
				} else {
					r = n
				}
			}
			e >>= 1
			if e > 0 {
				if n := base * base; base != 0 && n/base != base {
					ok = false
				} else {
					base = n
				}
			}
		}
		if ok {
			return Num{I: r}, nil
		}
	}
	if a.Float64() == 0 && b.Float64() < 0 {
		return Num{}, errors.New("0.0 cannot be raised to a negative power")
	}
	if a.Float64() < 0 && b.Float64() != math.Trunc(b.Float64()) {
		return Num{}, errors.New("can't convert complex to float")
	}
	return Num{F: math.Pow(a.Float64(), b.Float64()), Float: true}, nil
}
