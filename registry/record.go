package registry

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/hashing"
)

// recordReader decodes the stored records of an open without reflection:
// at 100,000 entries encoding/json alone costs a second. It reads the
// shape encoding/json writes for an Entry and gives what json.Unmarshal
// would give for it (FuzzRecordReader holds it to that), refusing
// unknown fields and wrong types. What it does not check — canonical
// form, validity, identity — is the entry's own check (checkEntry), made
// on first read by name or identity and by Verify.
//
// It also interns strings: entries share much of their text (value types,
// engines, tags, contract clauses), and an open registry keeps every
// entry in memory. The table is bounded so that a registry of unique
// texts does not pay for it twice.
type recordReader struct {
	b       []byte
	i       int
	intern  map[string]string
	strings []string // scratch for strs
}

// maxInterned bounds a reader's intern table.
const maxInterned = 1 << 16

var errRecordSyntax = errors.New("not an entry record")

// readRecord decodes one record. The result holds no reference to raw.
func (r *recordReader) readRecord(raw []byte) (Entry, error) {
	r.b, r.i = raw, 0
	var e Entry
	seen := 0
	err := r.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "alg":
			seen |= 1
			err = r.alg(&e.Alg)
		case "disc":
			seen |= 2
			err = r.disc(&e.Disc)
		case "impl":
			seen |= 4
			err = r.impl(&e.Impl)
		case "kind":
			var s string
			s, err = r.str(true)
			e.Kind = Kind(s)
		case "name":
			e.Name, err = r.str(false)
		case "sem":
			seen |= 8
			err = r.sem(&e.Sem)
		default:
			return fmt.Errorf("%w: unknown field %q", errRecordSyntax, key)
		}
		return err
	})
	if err == nil && seen != 15 {
		err = fmt.Errorf("%w: a layer is missing", errRecordSyntax)
	}
	if err == nil && r.skipSpace() < len(r.b) {
		err = fmt.Errorf("%w: trailing data at byte %d", errRecordSyntax, r.i)
	}
	r.b = nil
	if err != nil {
		return Entry{}, err
	}
	return e, nil
}

func (r *recordReader) sem(s *Semantic) error {
	return r.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "associative":
			s.Associative, err = r.boolean()
		case "commutative":
			s.Commutative, err = r.boolean()
		case "contract":
			s.Contract, err = r.contract()
		case "deterministic":
			s.Deterministic, err = r.boolean()
		case "idempotent":
			s.Idempotent, err = r.boolean()
		case "orientation":
			var o string
			o, err = r.str(true)
			s.Orientation = Orientation(o)
		case "pure":
			s.Pure, err = r.boolean()
		case "stateful":
			s.Stateful, err = r.boolean()
		default:
			return fmt.Errorf("%w: unknown field %q in sem", errRecordSyntax, key)
		}
		return err
	})
}

func (r *recordReader) contract() (*contract.Contract, error) {
	if r.null() {
		return nil, nil
	}
	c := &contract.Contract{}
	err := r.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "post":
			c.Post, err = r.clauses()
		case "pre":
			c.Pre, err = r.clauses()
		default:
			return fmt.Errorf("%w: unknown field %q in sem.contract", errRecordSyntax, key)
		}
		return err
	})
	return c, err
}

func (r *recordReader) clauses() ([]contract.Clause, error) {
	if r.null() {
		return nil, nil
	}
	out := []contract.Clause{}
	err := r.array(func() error {
		var cl contract.Clause
		err := r.object(func(key []byte) error {
			var err error
			switch string(key) {
			case "expr":
				cl.Expr, err = r.str(true)
			case "message":
				cl.Message, err = r.str(true)
			case "name":
				cl.Name, err = r.str(true)
			default:
				return fmt.Errorf("%w: unknown field in a clause: %q", errRecordSyntax, key)
			}
			return err
		})
		out = append(out, cl)
		return err
	})
	return out, err
}

func (r *recordReader) alg(a *Algebraic) error {
	return r.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "arity":
			a.Arity, err = r.integer()
		case "inputs":
			a.Inputs, err = r.strs()
		case "outputs":
			a.Outputs, err = r.strs()
		case "params":
			a.Params, err = r.params()
		case "reversible":
			a.Reversible, err = r.boolean()
		default:
			return fmt.Errorf("%w: unknown field %q in alg", errRecordSyntax, key)
		}
		return err
	})
}

func (r *recordReader) params() ([]Param, error) {
	if r.null() {
		return nil, nil
	}
	out := []Param{}
	err := r.array(func() error {
		var p Param
		err := r.object(func(key []byte) error {
			var err error
			switch string(key) {
			case "default":
				p.Default, err = r.scalar()
			case "doc":
				p.Doc, err = r.str(true)
			case "max":
				p.Max, err = r.optNumber()
			case "min":
				p.Min, err = r.optNumber()
			case "name":
				p.Name, err = r.str(true)
			case "type":
				var t string
				t, err = r.str(true)
				p.Type = ParamType(t)
			default:
				return fmt.Errorf("%w: unknown field in a parameter: %q", errRecordSyntax, key)
			}
			return err
		})
		out = append(out, p)
		return err
	})
	return out, err
}

func (r *recordReader) impl(m *Implementation) error {
	return r.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "engine":
			m.Engine, err = r.str(true)
		case "expr":
			m.Expr, err = r.str(false)
		case "fusable":
			m.Fusable, err = r.boolean()
		case "ir":
			var s string
			s, err = r.str(true)
			m.IR = IR(s)
		default:
			return fmt.Errorf("%w: unknown field %q in impl", errRecordSyntax, key)
		}
		return err
	})
}

func (r *recordReader) disc(d *Discovery) error {
	return r.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "aliases":
			d.Aliases, err = r.strs()
		case "deprecated":
			d.Deprecated, err = r.boolean()
		case "description":
			d.Description, err = r.str(true)
		case "examples":
			d.Examples, err = r.strs()
		case "tags":
			d.Tags, err = r.strs()
		case "title":
			d.Title, err = r.str(false)
		default:
			return fmt.Errorf("%w: unknown field %q in disc", errRecordSyntax, key)
		}
		return err
	})
}

// The JSON grammar, as far as records need it.

func (r *recordReader) skipSpace() int {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return r.i
		}
	}
	return r.i
}

func (r *recordReader) peek() byte {
	if r.skipSpace() < len(r.b) {
		return r.b[r.i]
	}
	return 0
}

func (r *recordReader) expect(c byte) error {
	if r.peek() != c {
		return fmt.Errorf("%w: want %q at byte %d", errRecordSyntax, c, r.i)
	}
	r.i++
	return nil
}

func (r *recordReader) literal(word string) bool {
	if r.peek() == word[0] && len(r.b)-r.i >= len(word) && string(r.b[r.i:r.i+len(word)]) == word {
		r.i += len(word)
		return true
	}
	return false
}

func (r *recordReader) null() bool { return r.literal("null") }

// object reads an object, calling member for each key with the reader
// at the key's value.
func (r *recordReader) object(member func(key []byte) error) error {
	if err := r.expect('{'); err != nil {
		return err
	}
	if r.peek() == '}' {
		r.i++
		return nil
	}
	for {
		key, err := r.key()
		if err != nil {
			return err
		}
		if err := r.expect(':'); err != nil {
			return err
		}
		if err := member(key); err != nil {
			return err
		}
		switch r.peek() {
		case ',':
			r.i++
		case '}':
			r.i++
			return nil
		default:
			return fmt.Errorf("%w: want ',' or '}' at byte %d", errRecordSyntax, r.i)
		}
	}
}

// key reads an object key. Keys are the fields' ASCII names, never
// escaped; members switch on string(key), which does not allocate.
func (r *recordReader) key() ([]byte, error) {
	if err := r.expect('"'); err != nil {
		return nil, err
	}
	start := r.i
	for r.i < len(r.b) && r.b[r.i] != '"' && r.b[r.i] != '\\' {
		r.i++
	}
	if r.i == len(r.b) || r.b[r.i] != '"' {
		return nil, fmt.Errorf("%w: escaped or unterminated key at byte %d", errRecordSyntax, start)
	}
	r.i++
	return r.b[start : r.i-1], nil
}

func (r *recordReader) array(elem func() error) error {
	if err := r.expect('['); err != nil {
		return err
	}
	if r.peek() == ']' {
		r.i++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		switch r.peek() {
		case ',':
			r.i++
		case ']':
			r.i++
			return nil
		default:
			return fmt.Errorf("%w: want ',' or ']' at byte %d", errRecordSyntax, r.i)
		}
	}
}

// strs reads an array of strings; null is a nil slice and [] an empty one,
// as with encoding/json.
func (r *recordReader) strs() ([]string, error) {
	if r.null() {
		return nil, nil
	}
	r.strings = r.strings[:0]
	err := r.array(func() error {
		s, err := r.str(true)
		r.strings = append(r.strings, s)
		return err
	})
	// Exactly sized: an open keeps every entry's lists. [] is an empty
	// slice, not nil, as with encoding/json.
	out := make([]string, len(r.strings))
	copy(out, r.strings)
	return out, err
}

// str reads a string (null is ""). Strings without escapes are copied
// (or interned); the rare escaped one is handed to encoding/json, which
// also decides what invalid UTF-8 becomes.
func (r *recordReader) str(intern bool) (string, error) {
	if r.null() {
		return "", nil
	}
	if err := r.expect('"'); err != nil {
		return "", err
	}
	start := r.i
	for r.i < len(r.b) {
		c := r.b[r.i]
		if c == '"' {
			raw := r.b[start:r.i]
			r.i++
			if !utf8.Valid(raw) {
				return r.slowString(start-1, r.i)
			}
			return r.keep(raw, intern), nil
		}
		if c == '\\' || c < 0x20 {
			return r.slowString(start-1, r.endOfString(start))
		}
		r.i++
	}
	return "", fmt.Errorf("%w: unterminated string at byte %d", errRecordSyntax, start)
}

// endOfString finds the end of the string token whose contents start at
// start (the byte after its closing quote), skipping escapes.
func (r *recordReader) endOfString(start int) int {
	for i := start; i < len(r.b); i++ {
		switch r.b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(r.b)
}

func (r *recordReader) slowString(from, to int) (string, error) {
	var s string
	if err := hashing.DecodePart(r.b[from:to], &s); err != nil {
		return "", fmt.Errorf("%w: string at byte %d: %v", errRecordSyntax, from, err)
	}
	r.i = to
	return r.keep([]byte(s), true), nil
}

func (r *recordReader) keep(b []byte, intern bool) string {
	if !intern || len(b) == 0 {
		return string(b)
	}
	if s, ok := r.intern[string(b)]; ok {
		return s
	}
	s := string(b)
	if r.intern == nil {
		r.intern = make(map[string]string)
	}
	if len(r.intern) < maxInterned {
		r.intern[s] = s
	}
	return s
}

func (r *recordReader) boolean() (bool, error) {
	switch {
	case r.literal("true"):
		return true, nil
	case r.literal("false"), r.null():
		return false, nil
	}
	return false, fmt.Errorf("%w: want a boolean at byte %d", errRecordSyntax, r.i)
}

// numberToken returns the text of the number at the reader; strconv
// judges it.
func (r *recordReader) numberToken() []byte {
	start := r.skipSpace()
	if r.i < len(r.b) && r.b[r.i] == '-' {
		r.i++
	}
	if r.i == len(r.b) || r.b[r.i] < '0' || r.b[r.i] > '9' {
		return nil // JSON has no '+', '.' or 'e' first
	}
	for r.i < len(r.b) {
		c := r.b[r.i]
		if c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			r.i++
			continue
		}
		break
	}
	return r.b[start:r.i]
}

func (r *recordReader) number() (float64, error) {
	tok := r.numberToken()
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil || len(tok) == 0 {
		return 0, fmt.Errorf("%w: number %q", errRecordSyntax, tok)
	}
	return f, nil
}

func (r *recordReader) optNumber() (*float64, error) {
	if r.null() {
		return nil, nil
	}
	f, err := r.number()
	if err != nil {
		return nil, err
	}
	return &f, nil
}

func (r *recordReader) integer() (int, error) {
	if r.null() {
		return 0, nil
	}
	tok := r.numberToken()
	n, err := strconv.ParseInt(string(tok), 10, 0)
	if err != nil {
		return 0, fmt.Errorf("%w: integer %q", errRecordSyntax, tok)
	}
	return int(n), nil
}

// scalar reads a parameter default: a number, a string or null, the only
// values a written entry holds there.
func (r *recordReader) scalar() (any, error) {
	switch c := r.peek(); {
	case c == '"':
		return r.str(true)
	case r.null():
		return nil, nil
	case c == '-' || c >= '0' && c <= '9':
		return r.number()
	}
	return nil, fmt.Errorf("%w: a default that is no number or string at byte %d", errRecordSyntax, r.i)
}
