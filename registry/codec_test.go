package registry

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/groundgate/groundgate/hashing"
)

var codecStrings = []string{
	"", "MOM_WZS", "edge.case", `quote " backslash \ slash /`, "tab\tnl\ncr\rff\fbs\b",
	"\x00\x01\x1f\x7f", "<html>&amp;", "é€😀", "\u2028\u2029", "ascii~!@#$%^&*()",
}

// The direct encoders give exactly hashing.Canonical's bytes (RFC 8785).
func TestCodecMatchesJCS(t *testing.T) {
	d1, d2 := hashing.SumSHA256([]byte("a")), hashing.SumSHA256([]byte("b"))
	for _, s := range codecStrings {
		checkCodec(t, s, d1, d2, time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC), 7)
	}
	checkCodec(t, "x", d1, d2, time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("", 3600)), 0)
	checkCodec(t, "x", d1, d2, time.Time{}, -3)
}

func checkCodec(t *testing.T, s string, d1, d2 hashing.Digest, created time.Time, n int) {
	t.Helper()
	refs := []chunkRef{{Name: s, Identity: d1, Record: d2}, {Name: s + "z", Identity: d2, Record: d1}}
	got, err := marshalChunk(refs)
	if err != nil {
		t.Fatal(err)
	}
	want, err := hashing.Canonical(chunkDoc{Entries: refs})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("chunk %q:\n got %s\nwant %s", s, got, want)
	}
	info := VersionInfo{Version: 9, Registry: d1, Parent: 8, Change: Change{Op: s, Names: []string{s, "b"}}, Created: created, Count: n}
	for _, doc := range []versionDoc{
		{VersionInfo: info, Format: formatChunks, Chunks: []string{"", d1.String(), s}},
		{VersionInfo: info, Format: formatGroups, Groups: []string{d2.String(), "", s}},
		{VersionInfo: info, Entries: refs},
		{VersionInfo: VersionInfo{Registry: d2, Created: created}},
	} {
		got, err := marshalVersion(&doc)
		if err != nil {
			t.Fatal(err)
		}
		want, err := hashing.Canonical(&doc)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("version doc %q:\n got %s\nwant %s", s, got, want)
		}
		var back versionDoc
		if err := decodeCanonical(got, &back, marshalVersion); err != nil {
			t.Errorf("decode own bytes: %v", err)
		}
	}
	g := groupDoc{Chunks: []string{"", d1.String(), s}}
	got, err = marshalGroup(&g)
	if err != nil {
		t.Fatal(err)
	}
	if want, err := hashing.Canonical(&g); err != nil || !bytes.Equal(got, want) {
		t.Errorf("group %q:\n got %s\nwant %s (%v)", s, got, want, err)
	}
}

// Parse → encode gives back the same bytes; anything the decoder accepts
// is canonical (RFC 8785 bytes), so no second spelling of a chunk exists.
func FuzzCodecMatchesJCS(f *testing.F) {
	d := hashing.SumSHA256(nil).String()
	f.Add([]byte(`{"entries":[{"identity":"` + d + `","name":"a","record":"` + d + `"}]}`))
	f.Add([]byte(`{"entries":[{"identity":"` + d + `","name":"a\u0001\"é","record":"` + d + `"}]}`))
	f.Add([]byte(`{"entries":[{"Identity":"` + d + `","name":"a","record":"` + d + `"}]}`))
	f.Add([]byte(`{"entries":null}`))
	for _, s := range codecStrings {
		raw, _ := hashing.Canonical(chunkDoc{Entries: []chunkRef{{Name: s, Identity: hashing.SumSHA256(nil), Record: hashing.SumSHA256(nil)}}})
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var doc chunkDoc
		err := decodeCanonical(raw, &doc, func(c *chunkDoc) ([]byte, error) { return marshalChunk(c.Entries) })
		// The fast reader an open uses accepts exactly the same chunks
		// (a chunk has at least one entry) and reads them alike.
		refs, perr := parseChunk(raw)
		if (perr == nil) != (err == nil && doc.Entries != nil && len(doc.Entries) > 0) || perr == nil && !reflect.DeepEqual(refs, doc.Entries) {
			t.Fatalf("%q: parseChunk %v, %v; decodeCanonical %v, %v", raw, refs, perr, doc.Entries, err)
		}
		if err != nil {
			return
		}
		canon, err := hashing.CanonicalizeJSON(raw)
		if err != nil || !bytes.Equal(canon, raw) {
			t.Fatalf("accepted %q, which is not RFC 8785 (%q, %v)", raw, canon, err)
		}
		want, err := hashing.Canonical(doc)
		if err != nil || !bytes.Equal(want, raw) {
			t.Fatalf("accepted %q, hashing.Canonical gives %q (%v)", raw, want, err)
		}
	})
}
