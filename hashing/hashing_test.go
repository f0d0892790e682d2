package hashing

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseRoundTrip(t *testing.T) {
	sha := SumSHA256([]byte("abc"))
	b3 := SumBLAKE3([]byte("abc"))
	for _, d := range []Digest{sha, b3} {
		p, err := Parse(d.String())
		if err != nil || p != d {
			t.Fatalf("Parse(%s) = %v, %v", d, p, err)
		}
		txt, err := d.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		if string(txt) != d.String() || string(d.Key()) != d.String() {
			t.Fatalf("MarshalText %q and Key %q, String %q", txt, d.Key(), d)
		}
		if app, err := d.AppendText([]byte("x")); err != nil || string(app) != "x"+d.String() {
			t.Fatalf("AppendText %q, %v", app, err)
		}
		var u Digest
		if err := u.UnmarshalText(txt); err != nil || u != d {
			t.Fatalf("text round trip of %s: %v %v", d, u, err)
		}
	}
	// Known answers: SHA-256("abc") and BLAKE3("abc").
	if got, want := sha.String(), "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"; got != want {
		t.Errorf("sha256(abc) = %s, want %s", got, want)
	}
	if got, want := b3.String(), "blake3:6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85"; got != want {
		t.Errorf("blake3(abc) = %s, want %s", got, want)
	}
	if sha == b3 {
		t.Error("digests of different algorithms compare equal")
	}
}

func TestParseRejects(t *testing.T) {
	good := strings.Repeat("ab", 32)
	for _, s := range []string{
		"", "sha256", "sha256:", "md5:" + good, "SHA256:" + good,
		"sha256:" + strings.ToUpper(good), "sha256:" + good[:62], "sha256:" + good + "00",
		"sha256:" + good[:63] + "g", " sha256:" + good,
	} {
		if _, err := Parse(s); !errors.Is(err, ErrMalformed) {
			t.Errorf("Parse(%q) error = %v, want ErrMalformed", s, err)
		}
	}
	if _, err := (Digest{}).MarshalText(); err == nil {
		t.Error("zero digest marshalled")
	}
	if b, err := (Digest{}).AppendText([]byte("x")); err == nil || string(b) != "x" {
		t.Errorf("zero digest appended: %q, %v", b, err)
	}
	if s, k := (Digest{}).String(), (Digest{}).Key(); s != "" || k == nil || len(k) != 0 {
		t.Errorf("zero digest: String %q, Key %#v; want empty text", s, k)
	}
}

func TestDigestJSON(t *testing.T) {
	type doc struct {
		D Digest            `json:"d"`
		M map[Digest]string `json:"m"`
	}
	d := SumSHA256(nil)
	in := doc{D: d, M: map[Digest]string{d: "empty"}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"d":"` + d.String() + `","m":{"` + d.String() + `":"empty"}}`
	if string(b) != want {
		t.Fatalf("got %s, want %s", b, want)
	}
	var out doc
	if err := json.Unmarshal(b, &out); err != nil || out.D != d || out.M[d] != "empty" {
		t.Fatalf("round trip: %+v %v", out, err)
	}
}

// RFC 8785 examples and edge cases (values from the RFC and its test data).
func TestCanonicalizeJSON(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"b":2,"a":1}`, `{"a":1,"b":2}`},
		{`[1.0, 1e2, -0, 0.1, 1e-7, 1e21, 123456789012345680000]`, `[1,100,0,0.1,1e-7,1e+21,123456789012345680000]`},
		{`{"\u20ac":"Euro","\r":"CR","1":"One","\u00e9":"e"}`, `{"\r":"CR","1":"One","é":"e","€":"Euro"}`},
		{`"\u000f\u001f/\u0041"`, `"\u000f\u001f/A"`},
		{` { "a" : [ true , false , null ] } `, `{"a":[true,false,null]}`},
	} {
		got, err := CanonicalizeJSON([]byte(tc.in))
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if string(got) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{`{"a":1,"a":2}`, `{"a":1} x`, `1e400`, `{"a":NaN}`, `{`, ``} {
		if _, err := CanonicalizeJSON([]byte(bad)); !errors.Is(err, ErrMalformed) {
			t.Errorf("CanonicalizeJSON(%q) err = %v, want ErrMalformed", bad, err)
		}
	}
}

func TestDecodeStrict(t *testing.T) {
	type T struct {
		A int `json:"a"`
	}
	var v T
	if err := DecodeStrict([]byte(`{"a":1}`), &v); err != nil || v.A != 1 {
		t.Fatalf("good input: %v %v", v, err)
	}
	for _, bad := range []string{`{"a":1,"b":2}`, `{"a":1,"a":2}`, `{"a":1}{}`, `{"a":"x"}`, `[]`} {
		if err := DecodeStrict([]byte(bad), &v); !errors.Is(err, ErrMalformed) {
			t.Errorf("DecodeStrict(%s) = %v, want ErrMalformed", bad, err)
		}
	}
}

// The pinned registry hash equals `sort ids.txt | sha256sum`.
func TestRegistryHashPinned(t *testing.T) {
	ids := []Digest{SumSHA256([]byte("b")), SumSHA256([]byte("a")), SumSHA256([]byte("c"))}
	lines := []string{ids[0].String(), ids[1].String(), ids[2].String()}
	// Sort by hand, as sort(1) would in the C locale.
	for i := range lines {
		for j := i + 1; j < len(lines); j++ {
			if lines[j] < lines[i] {
				lines[i], lines[j] = lines[j], lines[i]
			}
		}
	}
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n") + "\n"))
	want := "sha256:" + hex.EncodeToString(sum[:])
	if got := RegistryHash(ids).String(); got != want {
		t.Fatalf("RegistryHash = %s, want %s", got, want)
	}
	// Order of the input does not matter.
	if RegistryHash([]Digest{ids[2], ids[0], ids[1]}) != RegistryHash(ids) {
		t.Fatal("RegistryHash depends on input order")
	}
	// The empty registry hashes the empty string.
	if got := RegistryHash(nil).String(); got != "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Fatalf("empty registry hash = %s", got)
	}
}

func TestIdentityPinned(t *testing.T) {
	sem := map[string]any{"pure": true}
	alg := map[string]any{"arity": 1}
	impl := map[string]any{"expr": "(neg x)"}
	got, err := Identity(sem, alg, impl)
	if err != nil {
		t.Fatal(err)
	}
	want := SumSHA256([]byte(`{"alg":{"arity":1},"impl":{"expr":"(neg x)"},"sem":{"pure":true}}`))
	if got != want {
		t.Fatalf("Identity = %s, want %s", got, want)
	}
}

func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{`{"b":2,"a":1}`, `[1.0,1e2,-0,0.1]`, `"\u00e9"`, `{"a":{"c":[null,true]},"b":"x"}`, `1e-7`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		c1, err := CanonicalizeJSON(in)
		if err != nil {
			return
		}
		c2, err := CanonicalizeJSON(c1)
		if err != nil {
			t.Fatalf("canonical form %q does not re-canonicalise: %v", c1, err)
		}
		if !bytes.Equal(c1, c2) {
			t.Fatalf("not idempotent:\n%q\n%q", c1, c2)
		}
		// The canonical form is valid JSON that decodes to the same value.
		var a, b any
		if json.Unmarshal(in, &a) == nil {
			if err := json.Unmarshal(c1, &b); err != nil {
				t.Fatalf("canonical form is not JSON: %v", err)
			}
		}
	})
}

func FuzzParseDigest(f *testing.F) {
	f.Add(SumSHA256(nil).String())
	f.Add(SumBLAKE3(nil).String())
	f.Add("sha256:xyz")
	f.Fuzz(func(t *testing.T, s string) {
		d, err := Parse(s)
		if err != nil {
			return
		}
		if d.String() != s {
			t.Fatalf("Parse(%q).String() = %q: two spellings of one digest", s, d.String())
		}
	})
}
