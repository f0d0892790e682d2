package hashing

import (
	"reflect"
	"testing"
)

// Hooks for the external test package (realtypes_test.go), which checks
// the one-pass encoder on the project's own hashed types.

// CheckOnePass compares the one-pass encoder with the two-step path on v.
func CheckOnePass(t *testing.T, label string, v any) { checkOnePass(t, label, v) }

// FillValue returns a value of type t (and, half the time, a pointer to
// it) with every field, exported or not, set from data.
func FillValue(t reflect.Type, data []byte) any {
	e := &entropy{b: data}
	p := reflect.New(t)
	fill(p.Elem(), e, 0)
	if e.byte()%2 == 0 {
		return p.Interface()
	}
	return p.Elem().Interface()
}
