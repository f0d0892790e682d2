// Package plainjson reads plain JSON without reflection: the subset of
// JSON that request bodies almost always are, where strict decoding
// (hashing.DecodeStrict) has nothing to refuse and nothing to interpret.
// Handlers use it as a fast path in front of their strict decoder: where
// a Scanner reports false, the caller decodes the document the strict way
// instead, so every error, and every value outside the subset, is exactly
// what the strict decoder makes of it.
//
// Plain JSON is JSON with
//
//   - strings of printable ASCII (0x20–0x7E) without escapes: their
//     bytes are their value;
//   - numbers -?(0|[1-9][0-9]*)(.[0-9]+)? of at most 24 bytes: no
//     exponent, so strconv.ParseFloat, which encoding/json uses, reads
//     each as the one float64 it denotes, never out of range;
//   - objects whose keys are plain strings, each once, at most maxKeys;
//   - nesting at most maxDepth deep.
//
// Every plain document is one hashing.DecodeStrict accepts (the package's
// tests check it against DecodeStrict, and by fuzzing).
package plainjson

import (
	"math"
	"strconv"
)

// Limits beyond which a document is not plain: the strict decoder takes
// it instead.
const (
	maxDepth  = 16
	maxKeys   = 64
	maxNumber = 24
)

// Scanner reads one document. Its methods report false, and leave the
// Scanner unusable, at the first thing that is not plain.
type Scanner struct {
	b     []byte
	i     int
	depth int
	// keys holds the keys of the open objects, outermost first: each
	// object's own from where it began.
	keys  [][]byte
	keys0 [16][]byte // keys' first backing array
}

// New returns a Scanner at the start of b.
func New(b []byte) *Scanner {
	s := &Scanner{b: b}
	s.keys = s.keys0[:0]
	return s
}

// ws skips JSON whitespace.
func (s *Scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// Peek returns the first byte of the next value ('{', '[', '"', a digit,
// '-', 't', 'f' or 'n'), or 0 at the end of the input.
func (s *Scanner) Peek() byte {
	s.ws()
	if s.i == len(s.b) {
		return 0
	}
	return s.b[s.i]
}

// End reports whether only whitespace is left.
func (s *Scanner) End() bool {
	s.ws()
	return s.i == len(s.b)
}

// str reads a plain string and returns its bytes, unquoted.
func (s *Scanner) str() ([]byte, bool) {
	s.ws()
	if s.i == len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	start := s.i + 1
	for j := start; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			s.i = j + 1
			return s.b[start:j], true
		case c < 0x20 || c > 0x7e || c == '\\':
			return nil, false
		}
	}
	return nil, false
}

// String reads a plain string.
func (s *Scanner) String() (string, bool) {
	b, ok := s.str()
	return string(b), ok
}

// Number reads a plain number.
func (s *Scanner) Number() (float64, bool) {
	tok, ok := s.number()
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	return f, err == nil
}

func (s *Scanner) number() ([]byte, bool) {
	s.ws()
	b, start := s.b, s.i
	j := start
	if j < len(b) && b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case j < len(b) && '1' <= b[j] && b[j] <= '9':
		for j++; j < len(b) && isDigit(b[j]); j++ {
		}
	default:
		return nil, false
	}
	if j < len(b) && b[j] == '.' {
		j++
		if j == len(b) || !isDigit(b[j]) {
			return nil, false
		}
		for ; j < len(b) && isDigit(b[j]); j++ {
		}
	}
	if j-start > maxNumber {
		return nil, false
	}
	s.i = j
	return b[start:j], true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// Object reads an object, calling member with each key (valid until
// member returns); member reads the value (with the Scanner's methods)
// and reports whether it was plain and wanted.
func (s *Scanner) Object(member func(key []byte) bool) bool {
	s.ws()
	if s.i == len(s.b) || s.b[s.i] != '{' || s.depth == maxDepth {
		return false
	}
	s.i++
	s.depth++
	first := len(s.keys) // this object's keys are s.keys[first:]
	// A Scanner that reported false is not used again: only the ways out
	// that report true restore the depth and the keys.
	if s.Peek() == '}' {
		s.i++
		s.depth--
		return true
	}
	for {
		key, ok := s.str()
		if !ok || len(s.keys)-first == maxKeys || contains(s.keys[first:], key) {
			return false
		}
		s.keys = append(s.keys, key)
		if s.Peek() != ':' {
			return false
		}
		s.i++
		if !member(key) {
			return false
		}
		switch s.Peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			s.depth--
			s.keys = s.keys[:first]
			return true
		default:
			return false
		}
	}
}

func contains(keys [][]byte, key []byte) bool {
	for _, k := range keys {
		if string(k) == string(key) {
			return true
		}
	}
	return false
}

// Array reads an array, calling elem for each element; elem reads it and
// reports whether it was plain and wanted.
func (s *Scanner) Array(elem func() bool) bool {
	s.ws()
	if s.i == len(s.b) || s.b[s.i] != '[' || s.depth == maxDepth {
		return false
	}
	s.i++
	s.depth++
	if s.Peek() == ']' {
		s.i++
		s.depth--
		return true
	}
	for {
		if !elem() {
			return false
		}
		switch s.Peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			s.depth--
			return true
		default:
			return false
		}
	}
}

// Raw reads any plain value and returns its bytes, as encoding/json hands
// them to a json.RawMessage: from its first byte to its last.
func (s *Scanner) Raw() ([]byte, bool) {
	c := s.Peek()
	start := s.i
	var ok bool
	switch {
	case c == '{':
		ok = s.Object(func([]byte) bool { _, ok := s.Raw(); return ok })
	case c == '[':
		ok = s.Array(func() bool { _, ok := s.Raw(); return ok })
	case c == '"':
		_, ok = s.str()
	case c == '-' || isDigit(c):
		_, ok = s.number()
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
				s.i += len(lit)
				ok = true
				break
			}
		}
	}
	if !ok {
		return nil, false
	}
	return s.b[start:s.i], true
}

// The writing side: plain values appended exactly as encoding/json writes
// them (with its default HTML escaping), for encoders that write a type's
// JSON without reflection and fall back to encoding/json where these
// report false.

// AppendString appends s quoted, and reports whether s is plain: printable
// ASCII without the characters encoding/json escapes ('"', '\\', and for
// HTML '<', '>' and '&'). For any other s it appends nothing.
func AppendString(b []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return b, false
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
}

// AppendFloat appends f as encoding/json writes a float64: the shortest
// digits that read back as f, in ES6's plain or exponent form, "e-07"
// written "e-7". It reports false, appending nothing, for NaN and the
// infinities, which encoding/json refuses.
func AppendFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}
