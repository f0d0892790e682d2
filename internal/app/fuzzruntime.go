package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/fuzz"
	"github.com/groundgate/groundgate/policy"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/store"
	"github.com/groundgate/groundgate/store/boltstore"
)

// OpenFuzzRuntime builds the stack fuzz.Runtime runs its cases through:
// discovery, the gate and the executor of a scratch copy of src (every
// registry version and the policies in force) in a bbolt file of its own,
// over the data root dataDir ("" for the bundled sample data) with the
// fuzzer's generated frames beside it. The thousands of evidence records,
// groundings and footprints a run makes land in the copy, never in src,
// and the copy skips fsync (it is thrown away). src is the registry's
// bbolt file (copied whole, in one read transaction) or a shared store
// (its registry's and policies' keyspaces copied, from one snapshot: the
// keyspaces hold the same bytes on both engines). The function returned
// releases everything and removes the copy.
func OpenFuzzRuntime(ctx context.Context, src store.Store, dataDir string) (_ *fuzz.Runtime, _ func() error, err error) {
	base, err := OpenDataRoot(dataDir)
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "groundgate-fuzz-")
	if err != nil {
		base.Close()
		return nil, nil, fmt.Errorf("fuzz scratch: %w", err)
	}
	var e *Engines
	cleanup := func() error {
		var errs []error
		if e != nil {
			errs = append(errs, e.Close())
		}
		errs = append(errs, base.Close(), os.RemoveAll(dir))
		return errors.Join(errs...)
	}
	defer func() {
		if err != nil {
			cleanup()
		}
	}()
	path := filepath.Join(dir, "scratch.db")
	if bs, ok := src.(*boltstore.Store); ok {
		err = copyDB(bs.DB(), path)
	} else {
		err = copyKeyspaces(ctx, src, path, append(registry.Keyspaces(), policy.Keyspaces()...))
	}
	if err != nil {
		return nil, nil, err
	}
	root := fuzz.NewDataRoot(base.FS)
	if e, err = openEngines(ctx, path, &DataRoot{FS: root, Name: base.Name + " (with generated frames)"}); err != nil {
		return nil, nil, err
	}
	e.Store.DB().NoSync = true
	arts, err := execution.OpenArtifacts(e.Store.Engine())
	if err != nil {
		return nil, nil, err
	}
	return &fuzz.Runtime{Discover: e.Disc, Gate: e.Gate, Exec: e.Exec, Blobs: arts, Data: root}, cleanup, nil
}

// copyKeyspaces writes the named keyspaces of src, read in one snapshot,
// into a new bbolt file at path, key by key and byte for byte: every
// shape (records, versions, values) is a plain key and value in a bbolt
// bucket, so the file reads as the registry's own.
func copyKeyspaces(ctx context.Context, src store.Store, path string, names []string) error {
	dst, err := boltstore.OpenFile(path, boltstore.FileOptions{})
	if err != nil {
		return fmt.Errorf("fuzz scratch: %w", err)
	}
	dst.DB().NoSync = true
	err = src.View(ctx, func(stx store.Tx) error {
		return dst.Update(ctx, func(dtx store.Tx) error {
			for _, name := range names {
				if err := stx.Scan(name, func(key, raw []byte) error { return dtx.PutValue(name, key, raw) }); err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
			}
			return nil
		})
	})
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fuzz scratch: copy the registry: %w", err)
	}
	return nil
}

// copyDB writes a consistent copy of db (one read transaction) to path.
func copyDB(db *bolt.DB, path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("fuzz scratch: %w", err)
	}
	err = db.View(func(tx *bolt.Tx) error {
		_, err := tx.WriteTo(f)
		return err
	})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fuzz scratch: copy the database: %w", err)
	}
	return nil
}
