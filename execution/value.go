package execution

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
)

// Value is one bound parameter value: a finite number or a string. It
// marshals to a JSON number or string, like ground.Scalar, and (unlike it)
// unmarshals too, so stored footprints decode.
type Value struct {
	num   float64
	str   string
	isStr bool
}

// Num returns a numeric Value.
func Num(v float64) Value { return Value{num: v} }

// Str returns a string Value.
func Str(s string) Value { return Value{str: s, isStr: true} }

func fromScalar(s ground.Scalar) Value {
	if s.IsString() {
		return Str(s.Text())
	}
	return Num(s.Float())
}

// IsString reports whether v holds a string.
func (v Value) IsString() bool { return v.isStr }

// Float returns the number (0 for a string).
func (v Value) Float() float64 { return v.num }

// Text returns the string ("" for a number).
func (v Value) Text() string { return v.str }

func (v Value) String() string {
	if v.isStr {
		return fmt.Sprintf("%q", v.str)
	}
	return formatNumber(v.num)
}

// MarshalJSON writes a number or a string.
func (v Value) MarshalJSON() ([]byte, error) {
	if v.isStr {
		return json.Marshal(v.str)
	}
	if math.IsNaN(v.num) || math.IsInf(v.num, 0) {
		return nil, fmt.Errorf("execution: parameter value %v is not finite", v.num)
	}
	return json.Marshal(v.num)
}

// UnmarshalJSON reads a finite number or a string.
func (v *Value) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := hashing.DecodePart(b, &s); err != nil {
			return errors.New(hashing.Reason(err))
		}
		*v = Str(s)
		return nil
	}
	var f float64
	if err := hashing.DecodePart(b, &f); err != nil {
		return fmt.Errorf("execution: a parameter value is a number or a string: %s", hashing.Reason(err))
	}
	*v = Num(f)
	return nil
}

// Score is a metric value: a number, or null in JSON when the morphism did
// not run or its score is NA (NaN or infinite).
type Score struct {
	v  float64
	ok bool
}

// ScoreOf wraps v; NaN and ±Inf become the null score.
func ScoreOf(v float64) Score {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return Score{}
	}
	return Score{v: v, ok: true}
}

// Value returns the score and whether it is a number.
func (s Score) Value() (float64, bool) { return s.v, s.ok }

// Float returns the score, NaN for null.
func (s Score) Float() float64 {
	if !s.ok {
		return math.NaN()
	}
	return s.v
}

// MarshalJSON writes the number in shortest round-trip form, or null.
func (s Score) MarshalJSON() ([]byte, error) {
	if !s.ok {
		return []byte("null"), nil
	}
	return json.Marshal(s.v)
}

// UnmarshalJSON reads a number or null.
func (s *Score) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		*s = Score{}
		return nil
	}
	var f float64
	if err := hashing.DecodePart(b, &f); err != nil {
		return errors.New(hashing.Reason(err))
	}
	*s = ScoreOf(f)
	return nil
}
