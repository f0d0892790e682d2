package artifacts

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/series"
	"github.com/groundgate/groundgate/store/boltstore"
)

// stored returns the raw value under d.
func stored(t *testing.T, db *bolt.DB, d hashing.Digest) []byte {
	t.Helper()
	var v []byte
	_ = db.View(func(tx *bolt.Tx) error { v = bytes.Clone(tx.Bucket(Bucket).Get(d.Key())); return nil })
	return v
}

func table(t testing.TB, rows, cols int, seed float64) []byte {
	t.Helper()
	tb := &series.Table{}
	for i := range rows {
		tb.Dates = append(tb.Dates, int32(i*2))
	}
	for j := range cols {
		tb.Names = append(tb.Names, fmt.Sprint("c", j))
		c := make([]float64, rows)
		for i := range c {
			switch {
			case i%7 == 0:
				c[i] = math.NaN()
			case i%3 == 0:
				c[i] = 1
			default:
				c[i] = math.Sin(seed + float64(i*cols+j))
			}
		}
		tb.Cols = append(tb.Cols, c)
	}
	b, err := series.Encode(nil, tb)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Each kind of content is stored in the form that suits it, and read back
// exactly: series tables packed, compressible bytes zstd, incompressible
// bytes raw.
func TestCodecs(t *testing.T) {
	ctx := context.Background()
	s, db, _ := mustOpen(t)
	noise := make([]byte, 4096)
	rand.Read(noise)
	for _, c := range []struct {
		name  string
		data  []byte
		codec byte
	}{
		{"table", table(t, 2000, 5, 0), codecTable},
		{"csv", bytes.Repeat([]byte("2020-01-02,1.25\n"), 2000), codecZstd},
		{"noise", noise, codecRaw},
	} {
		d, err := s.Put(ctx, c.data)
		if err != nil {
			t.Fatal(err)
		}
		v := stored(t, db, d)
		if string(v[:len(envelope)]) != envelope || v[len(envelope)] != c.codec {
			t.Errorf("%s: stored with codec %d, want %d", c.name, v[len(envelope)], c.codec)
		}
		if c.codec != codecRaw && len(v) >= len(c.data)/2 {
			t.Errorf("%s: stored %d bytes for %d", c.name, len(v), len(c.data))
		}
		if got, err := s.Get(ctx, d); err != nil || !bytes.Equal(got, c.data) {
			t.Errorf("%s: Get: %v", c.name, err)
		}
	}
	if _, problems, err := s.Verify(ctx); err != nil {
		t.Fatal(problems, err)
	}
}

// A value written by the previous release (the content itself, no
// envelope) is still read, verified and not rewritten by a Put.
func TestPreviousReleaseValues(t *testing.T) {
	ctx := context.Background()
	s, db, _ := mustOpen(t)
	old := []byte("date,pnl\n2020-01-02,0.25\n")
	d := hashing.SumBLAKE3(old)
	corrupt(t, db, d, old) // write raw, as the old store did
	if got, err := s.Get(ctx, d); err != nil || !bytes.Equal(got, old) {
		t.Fatalf("Get old value: %q %v", got, err)
	}
	before := txid(t, db)
	if _, err := s.Put(ctx, old); err != nil || txid(t, db) != before {
		t.Fatalf("Put over an intact old value wrote (%v)", err)
	}
	if n, _, err := s.Verify(ctx); err != nil || n != 1 {
		t.Fatal(n, err)
	}
}

// Corrupt stored forms are reported, never served: a broken zstd frame, a
// packed table that does not unpack, an unknown codec.
func TestCorruptEnvelopes(t *testing.T) {
	ctx := context.Background()
	s, db, _ := mustOpen(t)
	for name, data := range map[string][]byte{
		"zstd":  bytes.Repeat([]byte("abc,"), 5000),
		"table": table(t, 500, 3, 1),
	} {
		d, err := s.Put(ctx, data)
		if err != nil {
			t.Fatal(err)
		}
		v := stored(t, db, d)
		for what, bad := range map[string][]byte{
			"truncated": v[:len(v)-7],
			"codec":     append(append([]byte(envelope), 9), v[len(envelope)+1:]...),
			"flipped":   append(bytes.Clone(v[:len(v)-1]), v[len(v)-1]^0xff),
		} {
			corrupt(t, db, d, bad)
			if got, err := s.Get(ctx, d); !errors.Is(err, ErrCorrupt) || got != nil {
				t.Errorf("%s %s: Get = %d bytes, %v", name, what, len(got), err)
			}
			if _, problems, err := s.Verify(ctx); !errors.Is(err, ErrCorrupt) || !strings.Contains(strings.Join(problems, "\n"), d.String()) {
				t.Errorf("%s %s: Verify = %v %v", name, what, problems, err)
			}
		}
		corrupt(t, db, d, v)
	}
}

// concat derives the table whose columns are those of the tables its
// recipe names (one digest per line), over the first one's dates: a
// stand-in for the executor's weights deriver.
type concat struct{}

func (concat) Derive(recipe []byte, get func(hashing.Digest) (*series.Table, error)) ([]byte, error) {
	out := &series.Table{}
	for i, line := range strings.Fields(string(recipe)) {
		d, err := hashing.Parse(line)
		if err != nil {
			return nil, err
		}
		t, err := get(d)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			out.Dates = t.Dates
		}
		out.Names = append(out.Names, t.Names...)
		out.Cols = append(out.Cols, t.Cols...)
	}
	return series.Encode(nil, out)
}

// openDerived opens a store with the concat deriver in a fresh file.
func openDerived(t *testing.T) (*Store, *bolt.DB) {
	t.Helper()
	db, err := bolt.Open(t.TempDir()+"/d.db", 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, err := Open(boltstore.Wrap(db), WithDeriver(concat{}))
	if err != nil {
		t.Fatal(err)
	}
	return s, db
}

// concatenated is what concat derives from the tables a and b (canonical
// encodings), and the recipe naming them.
func concatenated(t *testing.T, a, b []byte) (content, recipe []byte) {
	t.Helper()
	ta, err := series.Decode(a)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := series.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	content, err = series.Encode(nil, &series.Table{Dates: ta.Dates, Names: append(slices.Clone(ta.Names), tb.Names...), Cols: append(slices.Clone(ta.Cols), tb.Cols...)})
	if err != nil {
		t.Fatal(err)
	}
	return content, []byte(hashing.SumBLAKE3(a).String() + "\n" + hashing.SumBLAKE3(b).String())
}

// A derived blob is read by re-deriving and re-hashing it; a recipe whose
// inputs went missing or changed, or that names a derived input, makes it
// corrupt, never served.
func TestDerived(t *testing.T) {
	ctx := context.Background()
	s, db := openDerived(t)
	a, b := table(t, 300, 2, 3), table(t, 300, 1, 4)
	da, _ := s.Put(ctx, a)
	db_, _ := s.Put(ctx, b)
	content, recipe := concatenated(t, a, b)
	blob, err := s.PrepareDerived(content, recipe)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutBlobs(ctx, []Blob{blob}); err != nil {
		t.Fatal(err)
	}
	if blob.StoredSize() > 200 {
		t.Fatalf("a recipe takes %d bytes", blob.StoredSize())
	}
	if got, err := s.Get(ctx, blob.Digest); err != nil || !bytes.Equal(got, content) {
		t.Fatalf("Get derived: %v", err)
	}
	if n, _, err := s.Verify(ctx); err != nil || n != 3 {
		t.Fatal(n, err)
	}

	// A derived blob as another's input is refused.
	nested, _ := s.PrepareDerived(append(bytes.Clone(content), 0), []byte(blob.Digest.String()+"\n"+da.String()))
	s.PutBlobs(ctx, []Blob{nested})
	if _, err := s.Get(ctx, nested.Digest); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("nested derivation: %v", err)
	}
	corrupt(t, db, nested.Digest, nil)
	db.Update(func(tx *bolt.Tx) error { return tx.Bucket(Bucket).Delete(nested.Digest.Key()) })

	// An input that changed (or is gone) breaks the derived blob.
	corrupt(t, db, db_, table(t, 300, 1, 5))
	if _, err := s.Get(ctx, blob.Digest); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("changed input: %v", err)
	}
	if _, problems, err := s.Verify(ctx); !errors.Is(err, ErrCorrupt) || len(problems) != 2 {
		t.Fatalf("Verify: %q %v", problems, err)
	}
	db.Update(func(tx *bolt.Tx) error { return tx.Bucket(Bucket).Delete(db_.Key()) })
	if _, err := s.Get(ctx, blob.Digest); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("missing input: %v", err)
	}

	// Without a deriver, derived blobs cannot be read, nor written.
	plain, err := Open(boltstore.Wrap(db))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Get(ctx, blob.Digest); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("no deriver: %v", err)
	}
	if _, err := plain.PrepareDerived(content, recipe); err == nil {
		t.Fatal("PrepareDerived without a deriver")
	}
}

// Verify's workers share one cache of decoded inputs; with a cache that
// holds one table and recipes that share inputs, concurrent misses and
// evictions must neither crash nor report a false problem.
func TestVerifyConcurrentInputCache(t *testing.T) {
	ctx := context.Background()
	s, _ := openDerived(t)
	var inputs [][]byte
	const k = 8
	for i := range k {
		b := table(t, 3000, 2, float64(i))
		if _, err := s.Put(ctx, b); err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, b)
	}
	var blobs []Blob
	for i := range k {
		for j := range k {
			blob, err := s.PrepareDerived(concatenated(t, inputs[i], inputs[j]))
			if err != nil {
				t.Fatal(err)
			}
			blobs = append(blobs, blob)
		}
	}
	if _, err := s.PutBlobs(ctx, blobs); err != nil {
		t.Fatal(err)
	}
	s.verifyCache = 3 * 8 * 3000 * 3 // three tables: misses, evictions and concurrent puts of one key
	for range 10 {
		if n, problems, err := s.Verify(ctx); err != nil || n != k+k*k {
			t.Fatalf("Verify = %d, %q, %v", n, problems, err)
		}
	}
}

// Content stored as a recipe is rewritten as itself when it comes again
// as a plain blob: recipes' inputs are never recipes.
func TestPlainBlobReplacesRecipe(t *testing.T) {
	ctx := context.Background()
	s, db := openDerived(t)
	a, b := table(t, 100, 1, 7), table(t, 100, 1, 8)
	s.Put(ctx, a)
	s.Put(ctx, b)
	k, r := concatenated(t, a, b)
	recipe, err := s.PrepareDerived(k, r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutBlobs(ctx, []Blob{recipe}); err != nil {
		t.Fatal(err)
	}
	if v := stored(t, db, recipe.Digest); !isDerived(v) {
		t.Fatal("setup: not stored as a recipe")
	}
	// The same content now comes as a plain blob (another recipe's input).
	if _, err := s.Put(ctx, k); err != nil {
		t.Fatal(err)
	}
	if v := stored(t, db, recipe.Digest); isDerived(v) {
		t.Fatal("the plain blob did not replace the recipe")
	}
}
