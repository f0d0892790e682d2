package hashing

import (
	"math"
	"strconv"
)

// The response side of the codec: plain values appended exactly as
// encoding/json writes them (with its default HTML escaping), for encoders
// that write a hot type's JSON without reflection and fall back to
// encoding/json where these report false. They are not canonical forms:
// nothing hashed is written with them.

// AppendPlainString appends s quoted, and reports whether s is plain:
// printable ASCII without the characters encoding/json escapes ('"', '\\',
// and for HTML '<', '>' and '&'). For any other s it appends nothing.
func AppendPlainString(b []byte, s string) ([]byte, bool) {
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

// AppendPlainFloat appends f as encoding/json writes a float64: the
// shortest digits that read back as f, in ES6's plain or exponent form,
// "e-07" written "e-7". It reports false, appending nothing, for NaN and
// the infinities, which encoding/json refuses.
func AppendPlainFloat(b []byte, f float64) ([]byte, bool) {
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
