package experiments

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/internal/app"
)

// Env is one in-process groundgate: a bbolt file seeded with the built-in
// catalog, discovery, the gate Γ and the executor over a data root — the
// wiring of `groundgate serve` itself (internal/app).
type Env struct {
	*app.Engines
}

// Open opens (creating and seeding it when new) the bbolt file at dbPath
// and wires the stack over the data root data; nil means the bundled
// sample data (sampledata.FS).
func Open(ctx context.Context, dbPath string, data fs.FS) (*Env, error) {
	e, err := app.OpenEnginesFS(ctx, dbPath, data)
	if err != nil {
		return nil, err
	}
	return &Env{e}, nil
}

// OpenDir is Open over a data directory, opened with os.OpenRoot as the
// server opens --data.
func OpenDir(ctx context.Context, dbPath, dataDir string) (*Env, error) {
	e, err := app.OpenEngines(ctx, dbPath, dataDir)
	if err != nil {
		return nil, err
	}
	return &Env{e}, nil
}

// Close checks that every stored footprint and blob still hashes to its
// key (as a store helper should at the end of a run), then releases
// everything. Closing twice is harmless.
func (e *Env) Close() error {
	if e.Engines == nil {
		return nil
	}
	var errs []error
	if e.Exec != nil && e.Store != nil {
		if _, problems, err := e.Exec.Verify(context.Background()); err != nil {
			errs = append(errs, fmt.Errorf("footprints at close: %w %q", err, problems))
		}
	}
	errs = append(errs, e.Engines.Close())
	e.Engines = nil
	return errors.Join(errs...)
}

// discoverTerms runs discovery over explicit terms.
func (e *Env) discoverTerms(ctx context.Context, terms ...string) (discover.Result, error) {
	return e.Disc.Discover(ctx, discover.Query{Terms: terms})
}
