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
	"github.com/groundgate/groundgate/registry"
)

// OpenFuzzRuntime builds the stack fuzz.Runtime runs its cases through:
// discovery, the gate and the executor of a scratch copy of src's
// database (every registry version and the policies in force), over the
// data root dataDir ("" for the bundled sample data) with the fuzzer's
// generated frames beside it. The thousands of evidence records,
// groundings and footprints a run makes land in the copy, never in src,
// and the copy skips fsync (it is thrown away). The function returned
// releases everything and removes the copy.
func OpenFuzzRuntime(ctx context.Context, src *registry.Store, dataDir string) (_ *fuzz.Runtime, _ func() error, err error) {
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
	if err := copyDB(src.DB(), path); err != nil {
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
