package plainjson_test

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/internal/plainjson"
)

// decodeAny reads a plain document into the values encoding/json makes
// of it (map[string]any, []any, string, float64, bool, nil), with the
// Scanner's typed methods.
func decodeAny(s *plainjson.Scanner) (any, bool) {
	switch c := s.Peek(); {
	case c == '{':
		m := map[string]any{}
		ok := s.Object(func(k []byte) bool {
			v, ok := decodeAny(s)
			m[string(k)] = v
			return ok
		})
		return m, ok
	case c == '[':
		l := []any{}
		ok := s.Array(func() bool {
			v, ok := decodeAny(s)
			l = append(l, v)
			return ok
		})
		return l, ok
	case c == '"':
		return s.String()
	case c == '-' || '0' <= c && c <= '9':
		return s.Number()
	}
	raw, ok := s.Raw()
	var v any
	return v, ok && json.Unmarshal(raw, &v) == nil
}

// check: a document the Scanner reads as plain is one DecodeStrict
// accepts, decoded to the same values, and Raw spans exactly the value.
func check(t *testing.T, doc []byte) bool {
	t.Helper()
	s := plainjson.New(doc)
	raw, ok := s.Raw()
	if !ok || !s.End() {
		return false
	}
	if want := bytes.TrimSpace(doc); !bytes.Equal(raw, want) {
		t.Errorf("Raw of %q is %q", doc, raw)
	}
	var strict any
	if err := hashing.DecodeStrict(doc, &strict); err != nil {
		t.Fatalf("plain %q refused by DecodeStrict: %v", doc, err)
	}
	got, ok := decodeAny(plainjson.New(doc))
	if !ok || !reflect.DeepEqual(got, strict) {
		t.Errorf("%q: plain %#v (%v), DecodeStrict %#v", doc, got, ok, strict)
	}
	return true
}

func TestPlain(t *testing.T) {
	for _, doc := range []string{
		`{"family":"MOM_WZS","metric":"SRP","params":{"window":[25,50,100]},"data":"oil/wti.csv"}`,
		` { "prompt" : "Run a momentum strategy on WTI crude and score it by Sharpe ratio" } `,
		"{\n\t\"a\": [1, -2.5, 0, -0, 0.125, 123456789012345678901234],\r\n \"b\": {\"c\": [true, false, null, {}]}, \"d\": []}",
		`"just a string"`, `12`, `null`, `[]`, `{}`,
		`{"a":{"a":{"a":1}},"b":{"a":2}}`,               // a key again, in another object
		`{"a":{"b":1,"c":[{"d":1}]},"b":2,"c":3,"d":4}`, // an inner object's keys, then the outer one's
	} {
		if !check(t, []byte(doc)) {
			t.Errorf("not plain: %s", doc)
		}
	}
}

// What the strict decoder must settle: the Scanner declines it.
func TestNotPlain(t *testing.T) {
	for _, doc := range []string{
		``, ` `, `{`, `{"a":1,}`, `[1,]`, `{"a" 1}`, `{"a":1 "b":2}`, `{a:1}`, `{"a":1}x`, `{"a":1}{}`,
		`{"a":1,"a":2}`, `{"a":{"b":1,"b":1}}`, // duplicate keys
		`"a\"b"`, `"a\u0041"`, `"tab	"`, "\"\x7f\"", `"é"`, "\"\xff\"", // escapes, controls, non-ASCII
		`1e3`, `1E3`, `1.5e-7`, `01`, `-`, `1.`, `.5`, `+1`, `- 1`, `1234567890123456789012345`, // numbers
		`tru`, `nul`, `True`, `[truex]`, `[1"a"]`,
		strings.Repeat("[", 17) + strings.Repeat("]", 17), // too deep
		"{" + strings.Repeat(`"k":1,`, 0) + manyKeys(65) + "}",
	} {
		if check(t, []byte(doc)) {
			t.Errorf("plain: %q", doc)
		}
	}
	if !check(t, []byte(strings.Repeat("[", 16)+strings.Repeat("]", 16))) || !check(t, []byte("{"+manyKeys(64)+"}")) {
		t.Error("the limits themselves are not plain")
	}
	// Siblings each as deep as the limit: the depth is back after each.
	deep := strings.Repeat(`{"k":[`, 7) + "1" + strings.Repeat("]}", 7)
	if doc := "[" + deep + "," + deep + "," + deep + "]"; !check(t, []byte(doc)) {
		t.Errorf("not plain: %s", doc)
	}
}

func manyKeys(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k` + strings.Repeat("x", i) + `":1`)
	}
	return b.String()
}

func FuzzPlain(f *testing.F) {
	for _, s := range []string{
		`{"family":"MOM_WZS","metric":"SRP","params":{"window":[25,50,100],"leverage":0.5,"col":"close"},"data":"oil/wti.csv"}`,
		`{"request":{"family":"F","metric":"M","params":{},"data":"d"},"discovery":"sha256:00","repair":"none"}`,
		`{"terms":["momentum","sharpe ratio"]}`, `[1,-0.5,"x",true,null]`, `{"a":{"a":1},"a":2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) { check(t, doc) })
}

// checkAppend: AppendString and AppendFloat write what json.Marshal
// writes, where they write anything; and they take every plain string.
func checkAppend(t *testing.T, s string, f float64) {
	t.Helper()
	want, _ := json.Marshal(s)
	got, ok := plainjson.AppendString([]byte("x"), s)
	plain := true
	for _, c := range []byte(s) {
		plain = plain && c >= 0x20 && c <= 0x7e && !strings.ContainsRune(`"\<>&`, rune(c))
	}
	if ok != plain || ok && string(got) != "x"+string(want) || !ok && string(got) != "x" {
		t.Errorf("AppendString(%q) = %q, %v; json.Marshal %s", s, got, ok, want)
	}
	want, err := json.Marshal(f)
	got, ok = plainjson.AppendFloat([]byte("x"), f)
	if ok != (err == nil) || ok && string(got) != "x"+string(want) || !ok && string(got) != "x" {
		t.Errorf("AppendFloat(%v) = %q, %v; json.Marshal %s, %v", f, got, ok, want, err)
	}
}

var appendSeeds = []struct {
	s string
	f float64
}{
	{"", 0}, {"MOM_WZS", 1}, {"a<b", 0.9}, {"a>b", -2.5}, {"R&D", 1e-6}, {`"`, 1e-7}, {`\`, 1e20}, {"\t", 1e21},
	{"\x7f", 5e-324}, {"é", 1.5e300}, {"\u2028", math.Inf(1)}, {"\xff", math.NaN()}, {" ~", math.Copysign(0, -1)},
}

func TestAppend(t *testing.T) {
	for _, c := range appendSeeds {
		checkAppend(t, c.s, c.f)
	}
}

func FuzzAppend(f *testing.F) {
	for _, c := range appendSeeds {
		f.Add(c.s, c.f)
	}
	f.Fuzz(checkAppend)
}
