package experiments

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/groundgate/groundgate/artifacts"
	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/sampledata"
)

// Env is one in-process groundgate: a bbolt file seeded with the built-in
// catalog, discovery, the gate Γ, the artifact store and the executor over
// a data root — the same parts, wired the same way, as `groundgate serve`
// (cmd/internal/app, which code outside cmd/ cannot import).
type Env struct {
	Store *registry.Store
	Disc  *discover.Discoverer
	Gate  *ground.Gate
	Arts  *artifacts.Store
	Exec  *execution.Executor
	root  *os.Root
}

// Open opens (creating and seeding it when new) the bbolt file at dbPath
// and wires the stack over the data root data; nil means the bundled
// sample data (sampledata.FS).
func Open(ctx context.Context, dbPath string, data fs.FS) (e *Env, err error) {
	if data == nil {
		data = sampledata.FS()
	}
	e = &Env{}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	if e.Store, err = registry.Open(ctx, dbPath, registry.Options{}); err != nil {
		return nil, err
	}
	if e.Store.Current().Version() == 0 {
		cat, err := registry.BuiltinCatalog()
		if err != nil {
			return nil, fmt.Errorf("built-in catalog: %w", err)
		}
		if _, err := e.Store.Seed(ctx, cat); err != nil {
			return nil, fmt.Errorf("seed: %w", err)
		}
	}
	if e.Disc, err = discover.New(ctx, e.Store, e.Store.DB(), discover.Options{}); err != nil {
		return nil, err
	}
	if e.Gate, err = ground.New(e.Store, e.Disc, e.Store.DB()); err != nil {
		return nil, err
	}
	if e.Arts, err = artifacts.Open(e.Store.DB()); err != nil {
		return nil, err
	}
	if e.Exec, err = execution.New(e.Store, e.Arts, e.Store.DB(), data, execution.Options{}); err != nil {
		return nil, err
	}
	return e, nil
}

// OpenDir is Open over a data directory, opened with os.OpenRoot as the
// server opens --data.
func OpenDir(ctx context.Context, dbPath, dataDir string) (*Env, error) {
	root, err := os.OpenRoot(dataDir)
	if err != nil {
		return nil, fmt.Errorf("data root: %w", err)
	}
	e, err := Open(ctx, dbPath, root.FS())
	if err != nil {
		root.Close()
		return nil, err
	}
	e.root = root
	return e, nil
}

// Close checks that every stored footprint and blob still hashes to its
// key (as a store helper should at the end of a run), then releases
// everything. Closing twice is harmless.
func (e *Env) Close() error {
	var errs []error
	if e.Exec != nil && e.Store != nil {
		if _, problems, err := e.Exec.Verify(context.Background()); err != nil {
			errs = append(errs, fmt.Errorf("footprints at close: %w %q", err, problems))
		}
	}
	if e.Disc != nil {
		errs = append(errs, e.Disc.Close())
	}
	if e.root != nil {
		errs = append(errs, e.root.Close())
	}
	if e.Store != nil {
		errs = append(errs, e.Store.Close())
	}
	*e = Env{} // a second Close does nothing
	return errors.Join(errs...)
}

// discoverTerms runs discovery over explicit terms.
func (e *Env) discoverTerms(ctx context.Context, terms ...string) (discover.Result, error) {
	return e.Disc.Discover(ctx, discover.Query{Terms: terms})
}
