package registry

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/hashing"
)

// recordSamples are records as commits write them: the built-in catalog,
// the fixture, a rich entry, every leaf of it mutated, and texts that
// need escapes.
func recordSamples(t testing.TB) [][]byte {
	t.Helper()
	cat, err := BuiltinCatalog()
	if err != nil {
		t.Fatal(err)
	}
	es := append(cat, fixtureEntries(t)...)
	es = append(es, richEntry())
	base := richEntry()
	n := 0
	leaves(reflect.ValueOf(&base), "", func(string, func()) { n++ })
	for i := range n {
		e := cloneEntry(t, base)
		j := 0
		leaves(reflect.ValueOf(&e), "", func(_ string, mutate func()) {
			if j == i {
				mutate()
			}
			j++
		})
		es = append(es, e)
	}
	odd := richEntry()
	odd.Disc.Description = "quote \" backslash \\ tab \t nl \n ctl \x01 del \x7f é 𝄞 <&> \u2028"
	odd.Disc.Aliases = []string{"", "\x00", "a\"b"}
	odd.Sem.Contract.Pre[0].Message = `say "hi"`
	odd.Alg.Params[1].Default = "x\ny"
	es = append(es, odd)
	empty := richEntry()
	empty.Alg.Inputs, empty.Alg.Params, empty.Disc.Examples = []string{}, []Param{}, nil
	empty.Sem.Contract.Pre = nil
	es = append(es, empty, Entry{})
	var out [][]byte
	for _, e := range es {
		raw, err := e.recordBytes()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, raw)
	}
	return out
}

// The record reader gives what encoding/json gives for every record a
// commit writes, and re-encoding it gives the record back.
func TestRecordReaderMatchesJSON(t *testing.T) {
	var rr recordReader
	for _, raw := range recordSamples(t) {
		got, err := rr.readRecord(raw)
		if err != nil {
			t.Fatalf("read %s: %v", raw, err)
		}
		var want Entry
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("record %s\nread  %#v\nwant  %#v", raw, got, want)
		}
		again, err := got.recordBytes()
		if err != nil || !bytes.Equal(again, raw) {
			t.Fatalf("re-encoded %s\nwant %s (%v)", again, raw, err)
		}
	}
}

// What the reader refuses makes an open fail: it must refuse, not
// misread, what is no entry record.
func TestRecordReaderRefuses(t *testing.T) {
	raw, err := richEntry().recordBytes()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, from, to string }{
		{"unknown field", `{"alg":`, `{"bogus":1,"alg":`},
		{"missing layer", `"impl":{`, `"impx":{`},
		{"truncated", `}}`, `}`},
		{"trailing data", `"RICH"`, `"RICH"} {`},
		{"number for a string", `"name":"RICH"`, `"name":1`},
		{"string for a bool", `"pure":true`, `"pure":"true"`},
		{"fractional arity", `"arity":2`, `"arity":2.5`},
		{"plus sign", `"arity":2`, `"arity":+2`},
		{"object default", `"default":20`, `"default":{}`},
		{"huge number", `"default":20`, `"default":1e999`},
		{"bad escape", `"description":"d"`, `"description":"\q"`},
		{"raw control", `"description":"d"`, "\"description\":\"\x01\""},
		{"escaped key", `"alg":`, `"\u0061lg":`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := strings.Replace(string(raw), tc.from, tc.to, 1)
			if bad == string(raw) {
				t.Fatalf("%q is not in %s", tc.from, raw)
			}
			var rr recordReader
			if e, err := rr.readRecord([]byte(bad)); err == nil {
				t.Fatalf("read %s as %+v", bad, e)
			}
		})
	}
}

// FuzzRecordReader: on any input the reader gives either an error or what
// encoding/json gives (for documents with one spelling per key: with
// duplicates the two may merge differently, and the entry's own check
// refuses such a record anyway).
func FuzzRecordReader(f *testing.F) {
	for _, raw := range recordSamples(f) {
		f.Add(raw)
	}
	f.Add([]byte(`{"alg":{},"disc":{},"impl":{},"sem":{}}`))
	f.Add([]byte(` { "alg" : { "arity" : -0 } , "disc":{"tags":null},"impl":{},"sem":{"contract":null}} `))
	f.Fuzz(func(t *testing.T, in []byte) {
		var rr recordReader
		got, err := rr.readRecord(in)
		if err != nil {
			return
		}
		var want Entry
		if json.Unmarshal(in, &want) != nil {
			return // the reader is laxer (e.g. a number with a leading zero); the check refuses it
		}
		if _, err := hashing.CanonicalizeJSON(in); err != nil {
			return // duplicate keys
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s\nread %#v\njson %#v", in, got, want)
		}
	})
}

// FuzzDecodeEntriesFastPath: an element of an array DecodeEntries has
// checked as a whole decodes, through the record reader, exactly as
// DecodeEntry decodes it alone: the same entry or the same error.
func FuzzDecodeEntriesFastPath(f *testing.F) {
	for _, raw := range recordSamples(f) {
		f.Add(raw)
	}
	for _, r := range entryRecords(f) {
		f.Add([]byte(r))
		f.Add(bytes.Replace(r, []byte(`"sem"`), []byte(`"Sem"`), 1))
		f.Add(bytes.Replace(r, []byte(`"disc"`), []byte(`"disk"`), 1))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var whole json.RawMessage
		if hashing.DecodeStrict(in, &whole) != nil {
			return // DecodeEntries refuses the document before any element
		}
		want, werr := DecodeEntry(in, "#0")
		got, gerr := decodeEntry(in, "#0", true, &worker{})
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Fatalf("%s\nalone: %v\nfast:  %v", in, werr, gerr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s\nalone: %#v\nfast:  %#v", in, want, got)
		}
	})
}
