package smt

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxDepth bounds list nesting so that a hostile or broken text cannot make
// the printer recurse without limit; real policies nest a few levels deep.
const maxDepth = 200

// Sexp is one SMT-LIB s-expression. An atom keeps its source text verbatim
// (a string literal keeps its quotes and "" escapes, a quoted symbol its
// bars), so printing it back gives the solver exactly what the author wrote.
type Sexp struct {
	Atom   string
	List   []Sexp
	IsList bool
	Pos    Pos
}

// Pos is where an s-expression starts: 1-based line and byte column.
type Pos struct {
	Line, Col int
}

func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// String prints s in a canonical one-line form: no comments, single spaces.
func (s Sexp) String() string {
	var b strings.Builder
	s.write(&b)
	return b.String()
}

func (s Sexp) write(b *strings.Builder) {
	if !s.IsList {
		b.WriteString(s.Atom)
		return
	}
	b.WriteByte('(')
	for i, c := range s.List {
		if i > 0 {
			b.WriteByte(' ')
		}
		c.write(b)
	}
	b.WriteByte(')')
}

// head returns the first element's atom text of a list, or "".
func (s Sexp) head() string {
	if !s.IsList || len(s.List) == 0 || s.List[0].IsList {
		return ""
	}
	return s.List[0].Atom
}

// SyntaxError is a malformed s-expression text.
type SyntaxError struct {
	Pos Pos
	Msg string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("%s: %s", e.Pos, e.Msg) }

// Parse reads every top-level s-expression of src: balanced parentheses,
// string literals "…" with "" escapes, quoted symbols |…|, comments ;… to
// the end of the line. It is iterative (no recursion on input depth) and
// refuses control characters and invalid UTF-8, so that what is printed back
// to a solver is exactly what was checked here.
func Parse(src string) ([]Sexp, error) {
	p := parser{src: src, line: 1, col: 1}
	if !utf8.ValidString(src) {
		return nil, &SyntaxError{Pos{1, 1}, "text is not valid UTF-8"}
	}
	var (
		top    []Sexp
		stack  [][]Sexp
		starts []Pos
	)
	emit := func(s Sexp) {
		if n := len(stack); n > 0 {
			stack[n-1] = append(stack[n-1], s)
		} else {
			top = append(top, s)
		}
	}
	for {
		if err := p.skipSpace(); err != nil {
			return nil, err
		}
		if p.i >= len(src) {
			if n := len(starts); n > 0 {
				return nil, &SyntaxError{starts[n-1], "unclosed '('"}
			}
			return top, nil
		}
		pos := p.pos()
		switch c := src[p.i]; c {
		case '(':
			if len(stack) >= maxDepth {
				return nil, &SyntaxError{pos, fmt.Sprintf("nesting deeper than %d", maxDepth)}
			}
			p.advance(1)
			stack = append(stack, []Sexp{})
			starts = append(starts, pos)
		case ')':
			n := len(stack)
			if n == 0 {
				return nil, &SyntaxError{pos, "unexpected ')'"}
			}
			p.advance(1)
			node := Sexp{IsList: true, List: stack[n-1], Pos: starts[n-1]}
			stack, starts = stack[:n-1], starts[:n-1]
			emit(node)
		case '"':
			atom, err := p.delimited('"', true)
			if err != nil {
				return nil, err
			}
			emit(Sexp{Atom: atom, Pos: pos})
		case '|':
			atom, err := p.delimited('|', false)
			if err != nil {
				return nil, err
			}
			emit(Sexp{Atom: atom, Pos: pos})
		default:
			start := p.i
			for p.i < len(src) && isAtomByte(src[p.i]) {
				p.advance(1)
			}
			if p.i == start {
				return nil, &SyntaxError{pos, fmt.Sprintf("unexpected character %q", c)}
			}
			emit(Sexp{Atom: src[start:p.i], Pos: pos})
		}
	}
}

type parser struct {
	src       string
	i         int
	line, col int
}

func (p *parser) pos() Pos { return Pos{p.line, p.col} }

func (p *parser) advance(n int) {
	for ; n > 0 && p.i < len(p.src); n-- {
		if p.src[p.i] == '\n' {
			p.line, p.col = p.line+1, 1
		} else {
			p.col++
		}
		p.i++
	}
}

func (p *parser) skipSpace() error {
	for p.i < len(p.src) {
		c := p.src[p.i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.advance(1)
		case c == ';':
			for p.i < len(p.src) && p.src[p.i] != '\n' {
				if !textByte(p.src[p.i]) {
					return &SyntaxError{p.pos(), fmt.Sprintf("control character %q in comment", p.src[p.i])}
				}
				p.advance(1)
			}
		default:
			return nil
		}
	}
	return nil
}

// delimited reads a string literal (quote '"', doubled to escape) or a
// quoted symbol (quote '|', no escapes; '\' is not allowed inside).
func (p *parser) delimited(quote byte, doubling bool) (string, error) {
	pos := p.pos()
	start := p.i
	p.advance(1)
	for p.i < len(p.src) {
		c := p.src[p.i]
		switch {
		case c == quote:
			if doubling && p.i+1 < len(p.src) && p.src[p.i+1] == quote {
				p.advance(2)
				continue
			}
			p.advance(1)
			return p.src[start:p.i], nil
		case !doubling && c == '\\':
			return "", &SyntaxError{p.pos(), "'\\' inside a quoted symbol"}
		case !textByte(c):
			return "", &SyntaxError{p.pos(), fmt.Sprintf("control character %q", c)}
		}
		p.advance(1)
	}
	what := "string literal"
	if !doubling {
		what = "quoted symbol"
	}
	return "", &SyntaxError{pos, "unterminated " + what}
}

// textByte: printable text or whitespace (bytes ≥ 0x80 are parts of valid
// UTF-8, checked once up front).
func textByte(c byte) bool {
	return c >= 0x20 && c != 0x7f || c == '\t' || c == '\n' || c == '\r'
}

// isAtomByte: the characters of SMT-LIB simple symbols, keywords, numerals,
// decimals and #x/#b literals.
func isAtomByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("~!@$%^&*_-+=<>.?/:#", c) >= 0
}

// isSimpleSymbol reports whether s is an SMT-LIB simple symbol (not a
// numeral, keyword or literal).
func isSimpleSymbol(s string) bool {
	if s == "" || ('0' <= s[0] && s[0] <= '9') || s[0] == ':' || s[0] == '#' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isAtomByte(s[i]) || s[i] == ':' && i == 0 {
			return false
		}
	}
	return true
}

// isSymbol reports whether the atom names a symbol, simple or |quoted|.
func isSymbol(s Sexp) bool {
	if s.IsList {
		return false
	}
	a := s.Atom
	return isSimpleSymbol(a) || len(a) >= 2 && a[0] == '|' && a[len(a)-1] == '|'
}

// normSymbol gives a symbol one spelling: |x| and x are the same symbol in
// SMT-LIB, and solvers print whichever they like.
func normSymbol(a string) string {
	if len(a) >= 2 && a[0] == '|' && a[len(a)-1] == '|' && isSimpleSymbol(a[1:len(a)-1]) {
		return a[1 : len(a)-1]
	}
	return a
}

// Symbol returns the symbol an atom names, in one spelling (|x| and x are
// the same symbol), and whether s is a symbol at all.
func (s Sexp) Symbol() (string, bool) {
	if !isSymbol(s) {
		return "", false
	}
	return normSymbol(s.Atom), true
}

// Head returns the atom that starts a list ("" for atoms and other lists).
func (s Sexp) Head() string { return s.head() }

// Rename returns s with every symbol in names replaced by rename(symbol),
// written simple when it can be and |quoted| otherwise. Renaming is
// textual and consistent (binders and their uses alike), so it keeps the
// meaning of a term whose symbols do not collide with the new names.
func (s Sexp) Rename(names map[string]bool, rename func(string) string) Sexp {
	if !s.IsList {
		if sym, ok := s.Symbol(); ok && names[sym] {
			s.Atom = SymbolText(rename(sym))
		}
		return s
	}
	out := s
	out.List = make([]Sexp, len(s.List))
	for i, c := range s.List {
		out.List[i] = c.Rename(names, rename)
	}
	return out
}

// SymbolText writes a symbol as SMT-LIB text: simple when it can be,
// |quoted| otherwise (the symbol must not contain '|' or '\').
func SymbolText(sym string) string {
	if isSimpleSymbol(sym) {
		return sym
	}
	return "|" + sym + "|"
}
