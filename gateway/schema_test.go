package gateway

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/groundgate/groundgate/gateway/upstreamtest"
)

const itemSchema = `{"type":"object","properties":{"id":{"type":"string","minLength":1},"count":{"type":"integer","minimum":0},
 "tags":{"type":"array","items":{"type":"string"}}},"required":["id"],"additionalProperties":false}`

func TestSchemaValidate(t *testing.T) {
	s, err := CompileSchema([]byte(itemSchema))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		value string
		want  []string // "pointer: a word of the detail"
	}{
		{`{"id":"a"}`, nil},
		{`{"id":"a","count":3,"tags":["x"]}`, nil},
		{`{}`, []string{": id"}},
		{`{"id":""}`, []string{"/id: 1"}},
		{`{"id":"a","count":-1}`, []string{"/count: 0"}},
		{`{"id":"a","count":1.5}`, []string{"/count: integer"}},
		{`{"id":"a","tags":[1]}`, []string{"/tags/0: string"}},
		{`{"id":"a","extra":1}`, []string{": extra"}},
		{`{"id":1,"count":"x"}`, []string{"/count: integer", "/id: string"}},
		{`{"id":"a","ID":"b"}`, []string{": only in case"}},
		{`{"id":"a"} x`, []string{": "}},
	} {
		got := s.Validate([]byte(c.value))
		if len(got) != len(c.want) {
			t.Errorf("%s: %+v, want %d problems %v", c.value, got, len(c.want), c.want)
			continue
		}
		for i, w := range c.want {
			ptr, word, _ := strings.Cut(w, ": ")
			if got[i].Pointer != ptr || !strings.Contains(got[i].Detail, word) {
				t.Errorf("%s: problem %d %+v, want at %q mentioning %q", c.value, i, got[i], ptr, word)
			}
		}
	}
}

// Schemas a hostile upstream may serve: refused at compile, quickly, and
// never fetched or recursed into without end.
func TestSchemaRefused(t *testing.T) {
	for _, c := range []struct{ name, schema, want string }{
		{"ref loop (the test upstream's)", string(upstreamtest.RefLoopSchema), "cycle"},
		{"self ref", `{"$ref":"#"}`, "cycle"},
		{"allOf loop", `{"$defs":{"a":{"allOf":[{"$ref":"#/$defs/b"}]},"b":{"anyOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`, "cycle"},
		{"not loop", `{"$defs":{"a":{"not":{"$ref":"#/$defs/a"}}},"type":"object","properties":{"x":{"$ref":"#/$defs/a"}}}`, "cycle"},
		{"if loop", `{"if":{"$ref":"#"},"then":true}`, "cycle"},
		{"remote ref", `{"$ref":"https://example.com/schema.json"}`, "outside the schema"},
		{"file ref", `{"$ref":"file:///etc/passwd"}`, "outside the schema"},
		{"dynamic ref", `{"$dynamicAnchor":"n","type":"object","properties":{"x":{"$dynamicRef":"#n"}}}`, "dynamic reference"},
		{"not an object", `[1]`, "JSON object"},
		{"duplicate key", `{"type":"object","Type":"string"}`, "only in case"},
		{"bad keyword value", `{"type":7}`, ""},
	} {
		start := time.Now()
		_, err := CompileSchema([]byte(c.schema))
		if !errors.Is(err, ErrInvalidSchema) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrInvalidSchema mentioning %q", c.name, err, c.want)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: %v to refuse", c.name, d)
		}
	}
}

// Recursion that descends into the value ends with it: allowed.
func TestSchemaDescendingRecursion(t *testing.T) {
	tree := `{"$defs":{"node":{"type":"object","properties":{"v":{"type":"number"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"]}},"$ref":"#/$defs/node"}`
	s, err := CompileSchema([]byte(tree))
	if err != nil {
		t.Fatal(err)
	}
	if p := s.Validate([]byte(`{"v":1,"kids":[{"v":2,"kids":[{"v":3}]}]}`)); p != nil {
		t.Errorf("valid tree: %+v", p)
	}
	if p := s.Validate([]byte(`{"v":1,"kids":[{"kids":[]}]}`)); len(p) != 1 || p[0].Pointer != "/kids/0" {
		t.Errorf("a node without v: %+v", p)
	}
}

func FuzzCompileSchema(f *testing.F) {
	for _, s := range []string{itemSchema, string(upstreamtest.RefLoopSchema), `{"$ref":"#"}`, `{"type":"object"}`,
		`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"properties":{"x":{"$ref":"#/$defs/a"}}}},"$ref":"#/$defs/a"}`} {
		f.Add([]byte(s), []byte(`{"x":{"x":{}}}`))
	}
	f.Fuzz(func(t *testing.T, schema, value []byte) {
		s, err := CompileSchema(schema)
		if err != nil {
			return
		}
		s.Validate(value) // must end, without a panic
	})
}
