package relevance

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"testing"
)

// A snapshot read back scores every prompt as the index written did, holds
// the same documents (digest), and goes on changing like any index; bytes
// that are not a usable snapshot are refused.
func TestSnapshot(t *testing.T) {
	x := newIndex(t, fixture)
	// Holes: a removed document and its terms, and a replaced one.
	_ = x.Add(Document{Name: "gone", Description: "zebra quagga okapi", Group: "zoo"})
	x.Remove("gone")
	changed := fixture[0]
	changed.Description += " Also counts the words."
	_ = x.Add(changed)

	var buf bytes.Buffer
	if err := x.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	y, err := ReadSnapshot(bytes.NewReader(buf.Bytes()), int64(buf.Len()), x.vec, x.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := answers(t, y), answers(t, x); got != want {
		t.Errorf("answers differ:\n%s\nwant\n%s", got, want)
	}
	if y.Digest() != x.Digest() || y.Len() != x.Len() {
		t.Errorf("digest %s (%d docs), want %s (%d)", y.Digest(), y.Len(), x.Digest(), x.Len())
	}
	// Written again, the same bytes.
	var again bytes.Buffer
	if err := y.WriteSnapshot(&again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), buf.Bytes()) {
		t.Error("a snapshot of the snapshot differs")
	}
	// It goes on: a document added is found, one removed is gone.
	d := Document{Name: "Translator__translate", Title: "Translator: translate", Description: "Translate a sentence into another language, such as Japanese."}
	for _, z := range []*Index{x, y} {
		_ = z.Add(d)
		z.Remove(fixture[1].Name)
	}
	if got, want := answers(t, y), answers(t, x); got != want {
		t.Errorf("after changes, answers differ:\n%s\nwant\n%s", got, want)
	}

	other := x.cfg
	other.K1Milli++
	for name, c := range map[string]struct {
		data []byte
		cfg  Config
	}{
		"flipped byte":    {flip(buf.Bytes(), len(buf.Bytes())/2), x.cfg},
		"truncated":       {buf.Bytes()[:buf.Len()-1], x.cfg},
		"empty":           {nil, x.cfg},
		"other constants": {buf.Bytes(), other},
	} {
		if _, err := ReadSnapshot(bytes.NewReader(c.data), int64(len(c.data)), x.vec, c.cfg); !errors.Is(err, ErrSnapshot) {
			t.Errorf("%s: %v, want ErrSnapshot", name, err)
		}
	}
}

func flip(b []byte, i int) []byte {
	out := bytes.Clone(b)
	out[i] ^= 1
	return out
}

// FuzzReadSnapshot: any body (with its checksum appended, so that the
// parser, not the checksum, is what refuses) is a usable snapshot or
// ErrSnapshot, never a panic; a usable one answers queries.
func FuzzReadSnapshot(f *testing.F) {
	x := newIndex(f, fixture)
	var buf bytes.Buffer
	if err := x.WriteSnapshot(&buf); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes()[:buf.Len()-sha256.Size])
	f.Add([]byte(nil))
	f.Fuzz(func(t *testing.T, body []byte) {
		sum := sha256.Sum256(body)
		data := append(bytes.Clone(body), sum[:]...)
		y, err := ReadSnapshot(bytes.NewReader(data), int64(len(data)), x.vec, x.cfg)
		if err != nil {
			if !errors.Is(err, ErrSnapshot) {
				t.Fatalf("%v, want ErrSnapshot", err)
			}
			return
		}
		_ = y.Query(fixturePrompts[0])
	})
}

func BenchmarkReadSnapshot(b *testing.B) {
	x := newIndex(b, fixture)
	var buf bytes.Buffer
	if err := x.WriteSnapshot(&buf); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := ReadSnapshot(bytes.NewReader(buf.Bytes()), int64(buf.Len()), x.vec, x.cfg); err != nil {
			b.Fatal(err)
		}
	}
}
