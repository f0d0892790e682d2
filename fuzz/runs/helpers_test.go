package runs

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/fuzz"
	"github.com/groundgate/groundgate/fuzz/runs/runstest"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/registry/registrytest"
)

// Tests that check no run outlives them (runstest.NoRunLeft) are serial;
// the ones with complete runs to wait for call t.Parallel, and Go starts
// those only after every serial test has ended, so they never overlap
// such a check.

// rig is a real registry in a bbolt file in a temp dir, seeded with the
// built-in catalog, and a discoverer over it for reference runs.
type rig struct {
	t     *testing.T
	path  string
	store *registry.Store
	disc  *discover.Discoverer
}

func newRig(t *testing.T) *rig {
	t.Helper()
	return openRig(t, filepath.Join(t.TempDir(), "runs.db"))
}

func openRig(t *testing.T, path string) *rig {
	t.Helper()
	s := registrytest.Seeded(t, path, registry.Options{})
	d, err := discover.New(context.Background(), s, s.Engine(), discover.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return &rig{t: t, path: path, store: s, disc: d}
}

// manager opens a Manager on the rig's file, closed at cleanup. At
// cleanup it also checks that every stored run still reads back, its
// report hashing to its recorded digest.
func (r *rig) manager(opt Options) *Manager {
	r.t.Helper()
	m, err := Open(context.Background(), r.store.Engine(), r.store, opt)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() {
		m.Close()
		checkStored(r.t, m)
	})
	return m
}

func checkStored(t *testing.T, m *Manager) {
	t.Helper()
	list, err := m.List(context.Background())
	if err != nil {
		t.Errorf("cleanup: list: %v", err)
		return
	}
	for _, st := range list {
		got, err := m.Get(context.Background(), st.ID)
		if err != nil {
			t.Errorf("cleanup: run %d: %v", st.ID, err)
			continue
		}
		if (got.ResultDigest == nil) != (got.Result == nil) {
			t.Errorf("cleanup: run %d: digest %v with %d result bytes", st.ID, got.ResultDigest, len(got.Result))
		}
		if got.ResultDigest != nil && hashing.SumSHA256(got.Result) != *got.ResultDigest {
			t.Errorf("cleanup: run %d: result does not hash to its digest", st.ID)
		}
	}
}

// reference is what fuzz.Run gives, encoded as runs stores it, for the
// registry's current version and a seed. A complete run depends on the
// registry's content, its version and the seed alone, so each reference is
// computed once per package (the tests' rigs hold the same seeded
// catalog), on the rig that first asks for it.
func (r *rig) reference(seed uint64) []byte {
	r.t.Helper()
	snap := r.store.Current()
	key := referenceKey{registry: snap.Registry(), version: snap.Version(), seed: seed}
	references.mu.Lock()
	defer references.mu.Unlock()
	if b, ok := references.m[key]; ok {
		return b
	}
	rep, err := fuzz.Run(context.Background(), snap, r.disc, fuzz.Config{Seed: seed})
	if err != nil {
		r.t.Fatal(err)
	}
	if !rep.Complete {
		r.t.Fatal("the reference run did not complete")
	}
	b, err := hashing.Canonical(rep)
	if err != nil {
		r.t.Fatal(err)
	}
	references.m[key] = b
	return b
}

type referenceKey struct {
	registry hashing.Digest
	version  uint64
	seed     uint64
}

// references are the reference reports computed so far.
var references = struct {
	mu sync.Mutex
	m  map[referenceKey][]byte
}{m: map[referenceKey][]byte{}}

// wait polls a run until it is no longer running.
func wait(t *testing.T, m *Manager, id uint64) Status {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, err := m.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if st.State != StateRunning {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %d still running after 60 s: %+v", id, st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// gated gives each run the default pinned prober behind g.
func gated(src discover.Source, r *rig, g *runstest.Gate) ProberFunc {
	pin := PinnedDiscovery(src, r.store.Engine())
	return func(ctx context.Context, snap *registry.Snapshot) (fuzz.Prober, func(), error) {
		pr, release, err := pin(ctx, snap)
		if err != nil {
			return nil, nil, err
		}
		g.Prober = pr
		return g, release, nil
	}
}

// held opens a Manager with opt whose runs' prober holds after `after`
// questions, starts a run on it and returns once the run is held there.
func (r *rig) held(opt Options, after int64) (*Manager, *runstest.Gate, Status) {
	r.t.Helper()
	g := runstest.NewGate(after)
	opt.Prober = gated(r.store, r, g)
	m := r.manager(opt)
	st, err := m.Start(context.Background(), Request{Seconds: 600, Seed: 1})
	if err != nil {
		r.t.Fatal(err)
	}
	g.WaitReached(r.t)
	return m, g, st
}

// crashCopy is the rig's file as a process killed now leaves it (one
// consistent copy), opened as a rig of its own.
func (r *rig) crashCopy() *rig {
	r.t.Helper()
	path := filepath.Join(r.t.TempDir(), "crashed.db")
	if err := r.store.DB().View(func(tx *bolt.Tx) error { return tx.CopyFile(path, 0o600) }); err != nil {
		r.t.Fatal(err)
	}
	return openRig(r.t, path)
}
