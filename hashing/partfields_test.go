package hashing

import (
	"errors"
	"testing"
)

// DecodePartFields reads the members v declares with exact names and
// skips the others, leaving the whole-document checks to its caller; a
// name twice is still refused (the decoder's own check).
func TestDecodePartFields(t *testing.T) {
	var v struct {
		Name string `json:"name"`
		N    int    `json:"n"`
	}
	if err := DecodePartFields([]byte(`{"name":"a","Name":"b","other":{"x":[1,2]},"n":3}`), &v); err != nil || v.Name != "a" || v.N != 3 {
		t.Fatalf("%+v %v", v, err)
	}
	for _, doc := range []string{`{"name":"a","name":"b"}`, `{"n":"3"}`, `{"name":"a"`} {
		if err := DecodePartFields([]byte(doc), &v); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", doc, err)
		}
	}
}
