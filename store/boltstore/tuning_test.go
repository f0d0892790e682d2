package boltstore_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/groundgate/groundgate/store"
	"github.com/groundgate/groundgate/store/boltstore"
)

// A read-only transaction seeks every read with one cursor per keyspace:
// reads in any order, absent keys between present ones, and reads made
// from inside a Scan of the same keyspace all answer as bolt's Get.
func TestReadCursorReuse(t *testing.T) {
	ctx := context.Background()
	s, err := boltstore.OpenFile(filepath.Join(t.TempDir(), "r.db"), boltstore.FileOptions{AllocSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key := func(i int) []byte { return fmt.Appendf(nil, "k%04d", i) }
	err = s.Update(ctx, func(tx store.Tx) error {
		// The fill percent is the engine's own, asked for by what writes.
		if err := tx.(interface {
			SetFillPercent(string, float64) error
		}).SetFillPercent("v", 1); err != nil {
			return err
		}
		for i := 0; i < 2000; i += 2 { // even keys only
			if err := tx.PutValue("v", key(i), key(i)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.View(ctx, func(tx store.Tx) error {
		for _, i := range []int{1998, 0, 1001, 1000, 3, 4, 1999, 2500, 2} {
			v, err := tx.Value("v", key(i))
			switch {
			case i%2 == 0 && i < 2000 && (err != nil || !bytes.Equal(v, key(i))):
				t.Errorf("key %d: %q %v", i, v, err)
			case (i%2 == 1 || i >= 2000) && err == nil:
				t.Errorf("absent key %d read as %q", i, v)
			}
		}
		n := 0
		err := tx.Scan("v", func(k, raw []byte) error {
			n++
			if v, err := tx.Value("v", k); err != nil || !bytes.Equal(v, raw) {
				t.Errorf("inside the scan, %s: %q %v", k, v, err)
			}
			return nil
		})
		if n != 1000 {
			t.Errorf("scanned %d keys, want 1000", n)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
