package airline

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Num is a JSON number as Python holds it: an int, or a float when its
// literal had a fraction or an exponent (or it was computed from one).
// τ-bench's outputs print ints as 50 and floats as 50.0, so the
// distinction is kept.
type Num struct {
	I     int64
	F     float64
	Float bool
}

// Int is the int n.
func Int(n int64) Num { return Num{I: n} }

// Float64 is the value as a float.
func (n Num) Float64() float64 {
	if n.Float {
		return n.F
	}
	return float64(n.I)
}

// Add is n + m with Python's int/float promotion.
func (n Num) Add(m Num) Num {
	if !n.Float && !m.Float {
		return Num{I: n.I + m.I}
	}
	return Num{F: n.Float64() + m.Float64(), Float: true}
}

// Sub is n - m with Python's int/float promotion.
func (n Num) Sub(m Num) Num { return n.Add(m.Neg()) }

// Neg is -n.
func (n Num) Neg() Num {
	if n.Float {
		return Num{F: -n.F, Float: true}
	}
	return Num{I: -n.I}
}

// Less is n < m.
func (n Num) Less(m Num) bool {
	if !n.Float && !m.Float {
		return n.I < m.I
	}
	return n.Float64() < m.Float64()
}

// Equal is n == m as Python compares an int and a float.
func (n Num) Equal(m Num) bool {
	if !n.Float && !m.Float {
		return n.I == m.I
	}
	return n.Float64() == m.Float64()
}

// String is Python's str(n).
func (n Num) String() string {
	if n.Float {
		return pyFloat(n.F)
	}
	return strconv.FormatInt(n.I, 10)
}

// UnmarshalJSON reads a number literal, a float when it has a fraction
// or an exponent, as Python's json module does.
func (n *Num) UnmarshalJSON(b []byte) error {
	s := string(b)
	if strings.ContainsAny(s, ".eE") {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return err
		}
		*n = Num{F: f, Float: true}
		return nil
	}
	i, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		// beyond int64 (Python would keep a big int): a float
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil {
			return err
		}
		*n = Num{F: f, Float: true}
		return nil
	}
	*n = Num{I: i}
	return nil
}

// MarshalJSON writes n as Python's json module does.
func (n Num) MarshalJSON() ([]byte, error) { return []byte(pyJSONNum(n)), nil }

// pyFloat is Python's repr of a float: the shortest digits that read
// back, positional for exponents -4..15, else d.ddde±XX; always with a
// fraction or an exponent.
func pyFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // -d.dddde±XX
	neg := strings.HasPrefix(e, "-")
	e = strings.TrimPrefix(e, "-")
	mant, expS, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expS)
	digits := strings.Replace(mant, ".", "", 1)
	var out string
	if exp >= -4 && exp < 16 {
		if exp >= 0 {
			if len(digits) <= exp+1 {
				out = digits + strings.Repeat("0", exp+1-len(digits)) + ".0"
			} else {
				out = digits[:exp+1] + "." + digits[exp+1:]
			}
		} else {
			out = "0." + strings.Repeat("0", -exp-1) + digits
		}
	} else {
		out = digits[:1]
		if len(digits) > 1 {
			out += "." + digits[1:]
		}
		sign := "+"
		if exp < 0 {
			sign, exp = "-", -exp
		}
		out += "e" + sign + fmt.Sprintf("%02d", exp)
	}
	if neg {
		out = "-" + out
	}
	return out
}

// pyJSONNum is a number as json.dumps writes it (floats as repr, with
// Infinity and NaN for the values JSON lacks).
func pyJSONNum(n Num) string {
	if n.Float {
		switch {
		case math.IsInf(n.F, 1):
			return "Infinity"
		case math.IsInf(n.F, -1):
			return "-Infinity"
		case math.IsNaN(n.F):
			return "NaN"
		}
	}
	return n.String()
}

// Obj is a JSON object whose member order is kept, as a Python dict
// keeps its insertion order.
type Obj []Member

// Member is one member of an Obj.
type Member struct {
	Key   string
	Value any // string, int, Num, bool, nil, Obj, []any
}

// Dumps is Python's json.dumps(v): separators ", " and ": ", member
// order kept, non-ASCII escaped. It is how τ-bench's tools answer.
func Dumps(v any) string {
	var b []byte
	b = appendPy(b, v, false)
	return string(b)
}

// DumpsSorted is json.dumps(v, sort_keys=True, separators=(",", ":"),
// ensure_ascii=False): the form oracle.json's digests hash.
func DumpsSorted(v any) []byte { return appendPy(nil, v, true) }

func appendPy(b []byte, v any, canon bool) []byte {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		if v {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case string:
		return appendPyString(b, v, !canon)
	case int:
		return strconv.AppendInt(b, int64(v), 10)
	case int64:
		return strconv.AppendInt(b, v, 10)
	case Num:
		return append(b, pyJSONNum(v)...)
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = appendSep(b, ',', canon)
			}
			b = appendPy(b, e, canon)
		}
		return append(b, ']')
	case Obj:
		ms := v
		if canon {
			ms = slices.Clone(v)
			slices.SortStableFunc(ms, func(x, y Member) int { return strings.Compare(x.Key, y.Key) })
		}
		b = append(b, '{')
		for i, m := range ms {
			if i > 0 {
				b = appendSep(b, ',', canon)
			}
			b = appendPyString(b, m.Key, !canon)
			b = appendSep(b, ':', canon)
			b = appendPy(b, m.Value, canon)
		}
		return append(b, '}')
	}
	panic("airline: no Python JSON form for a value of this type")
}

func appendSep(b []byte, c byte, canon bool) []byte {
	b = append(b, c)
	if !canon {
		b = append(b, ' ')
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendPyString writes s as json.dumps does: ", \ and the control
// characters escaped (\n, \r, \t, \b, \f by name), and with ascii every
// non-ASCII character as \uXXXX (a surrogate pair beyond the BMP).
func appendPyString(b []byte, s string, ascii bool) []byte {
	b = append(b, '"')
	u4 := func(b []byte, r rune) []byte {
		return append(b, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
	}
	for _, r := range s {
		switch {
		case r == '"':
			b = append(b, '\\', '"')
		case r == '\\':
			b = append(b, '\\', '\\')
		case r == '\n':
			b = append(b, '\\', 'n')
		case r == '\r':
			b = append(b, '\\', 'r')
		case r == '\t':
			b = append(b, '\\', 't')
		case r == '\b':
			b = append(b, '\\', 'b')
		case r == '\f':
			b = append(b, '\\', 'f')
		case r < 0x20:
			b = u4(b, r)
		case r < utf8.RuneSelf || !ascii:
			b = utf8.AppendRune(b, r)
		case r > 0xffff:
			r -= 0x10000
			b = u4(b, 0xd800+(r>>10))
			b = u4(b, 0xdc00+(r&0x3ff))
		default:
			b = u4(b, r)
		}
	}
	return append(b, '"')
}
