package execution

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/groundgate/groundgate/artifacts"
	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/policy"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/store"
)

// Registry is what the executor needs from the capability registry: the
// current version to run against, and past versions to replay against.
type Registry interface {
	Current() *registry.Snapshot
	Version(ctx context.Context, n uint64) (*registry.Snapshot, error)
}

var _ Registry = (*registry.Store)(nil)

// Bucket holds the footprints: key = execution hash string, value = the
// footprint's canonical JSON.
var Bucket = []byte("execution.footprints")

// DigestBucket holds, per footprint, SHA-256 of the bytes stored in Bucket
// when they were written. The execution hash covers what was computed, not
// what was recorded beside it (the grounding id, the policy set, the risk
// policy, the evaluation window, the data path); this digest covers every
// byte, so a record altered after it was written is refused as corrupt —
// and never attested. Footprints written before it existed have none and
// are checked by their layers alone.
var DigestBucket = []byte("execution.record_digests")

// The two keyspaces in the storage layer: values under the execution hash
// (a footprint found corrupt is replaced, so it is not an immutable
// record; what checks it is checkStored, which reads both).
var (
	nameFootprints = string(Bucket)
	nameDigests    = string(DigestBucket)
)

// Backend is what the executor needs of the storage layer
// (registry.Store.Engine()).
type Backend interface {
	View(ctx context.Context, fn func(store.Tx) error) error
	Update(ctx context.Context, fn func(store.Tx) error) error
}

// value is the bytes under key in name, nil when there are none.
func value(tx store.Values, name string, key []byte) ([]byte, error) {
	v, err := tx.Value(name, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return v, err
}

// Defaults for Options. docs/execution.md gives the measurements behind
// the bounds.
const (
	DefaultMaxLeverage  = 10
	DefaultMaxDataBytes = 256 << 20
	// DefaultMaxCells bounds an execution's work: admissible morphisms ×
	// data rows × data columns. 2^28 cells run in about 30 s on one
	// 2-core machine.
	DefaultMaxCells = 1 << 28
	// DefaultMaxHeldBytes bounds the series an execution holds until it
	// scores: 8 bytes per row per admissible morphism (twice that when
	// the metric needs turnover too).
	DefaultMaxHeldBytes = 256 << 20
	// DefaultMaxConcurrent executions run at once; each already uses
	// every core, so more would only add memory.
	DefaultMaxConcurrent = 1
	// DefaultMaxQueued executions may wait for a slot, each for at most
	// DefaultQueueWait; beyond either, Execute and Replay return ErrBusy.
	DefaultMaxQueued = 8
	DefaultQueueWait = 30 * time.Second
)

// Options configure an Executor. The zero value is usable.
type Options struct {
	// Contracts compiles the capabilities' contracts; nil: the executor
	// keeps its own cache. Shared with the gate and the registry, a
	// contract is parsed once per process.
	Contracts *contract.Cache
	// Workers is how many morphisms run at once; zero means
	// runtime.GOMAXPROCS(0). It changes no result, only the wall time.
	Workers int
	// MaxLeverage is the bound of the "leverage" predicate; zero means
	// DefaultMaxLeverage. It is recorded in every footprint, and replay
	// uses the recorded bound.
	MaxLeverage float64
	// MaxDataBytes bounds a data file (and a .gz file's decompressed
	// size); zero means DefaultMaxDataBytes.
	MaxDataBytes int64
	// MaxCells and MaxHeldBytes are the per-execution budget (see the
	// defaults); an execution over either is refused with ErrOverBudget
	// before any morphism runs.
	MaxCells     int64
	MaxHeldBytes int64
	// MaxConcurrent, MaxQueued and QueueWait bound the executions (and
	// replays) in flight and waiting; zero means the default.
	MaxConcurrent int
	MaxQueued     int
	QueueWait     time.Duration
	// Logger receives execution events; nil discards them.
	Logger *slog.Logger
}

// Executor runs grounded requests and keeps their footprints. It is safe
// for concurrent use.
type Executor struct {
	reg   Registry
	arts  *artifacts.Store
	st    Backend
	data  fs.FS
	opt   Options
	log   *slog.Logger
	slots chan struct{} // one token per running execution
	// contracts compiles each capability's contract once, by identity.
	contracts *contract.Cache
	waiting   atomic.Int64 // executions waiting for a slot
	// facts keeps policy facts by the BLAKE3 of the source bytes, so a
	// source is parsed once while its bytes stay the same.
	factsMu    sync.Mutex
	facts      map[hashing.Digest]map[string]policy.Value
	factsToken chan struct{} // one source read for policy facts at a time
}

// New returns an executor that reads data from the data root, keeps blobs
// in arts and footprints in st (normally all one bbolt file, the
// registry's: registry.Store.Engine()). The data root is an fs.FS: an embedded FS, or the FS of an
// os.Root, which refuses ".." and links that leave the root; the executor
// checks paths lexically too.
func New(reg Registry, arts *artifacts.Store, st Backend, data fs.FS, opt Options) (*Executor, error) {
	if reg == nil || arts == nil || st == nil || data == nil {
		return nil, errors.New("execution: New needs a registry, an artifact store, a database and a data root")
	}
	if opt.Workers <= 0 {
		opt.Workers = runtime.GOMAXPROCS(0)
	}
	if opt.MaxLeverage == 0 {
		opt.MaxLeverage = DefaultMaxLeverage
	}
	if !(opt.MaxLeverage > 0) || math.IsInf(opt.MaxLeverage, 0) {
		return nil, fmt.Errorf("execution: MaxLeverage %v must be finite and > 0", opt.MaxLeverage)
	}
	if opt.MaxDataBytes <= 0 {
		opt.MaxDataBytes = DefaultMaxDataBytes
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	opt.MaxCells = cmp.Or(max(opt.MaxCells, 0), DefaultMaxCells)
	opt.MaxHeldBytes = cmp.Or(max(opt.MaxHeldBytes, 0), DefaultMaxHeldBytes)
	opt.MaxConcurrent = cmp.Or(max(opt.MaxConcurrent, 0), DefaultMaxConcurrent)
	opt.MaxQueued = cmp.Or(max(opt.MaxQueued, 0), DefaultMaxQueued)
	opt.QueueWait = cmp.Or(max(opt.QueueWait, 0), DefaultQueueWait)
	contracts := opt.Contracts
	if contracts == nil {
		contracts = contract.NewCache(1024)
	}
	return &Executor{contracts: contracts, facts: map[hashing.Digest]map[string]policy.Value{}, factsToken: make(chan struct{}, 1), reg: reg, arts: arts, st: st, data: data, opt: opt, log: opt.Logger,
		slots: make(chan struct{}, opt.MaxConcurrent)}, nil
}

func (x *Executor) runOptions() runOptions {
	return runOptions{workers: x.opt.Workers, share: true, artifacts: true}
}

func (x *Executor) budget() Budget {
	return Budget{MaxCells: x.opt.MaxCells, MaxHeldBytes: x.opt.MaxHeldBytes}
}

// admit waits for an execution slot and returns its release. It refuses
// at once (ErrBusy) when MaxQueued executions already wait, and after
// QueueWait when no slot came free: a client is told to come back rather
// than left hanging, and the server never holds more than MaxConcurrent
// executions' memory.
func (x *Executor) admit(ctx context.Context) (func(), error) {
	release := func() { <-x.slots }
	select {
	case x.slots <- struct{}{}:
		return release, nil
	default:
	}
	if x.waiting.Add(1) > int64(x.opt.MaxQueued) {
		x.waiting.Add(-1)
		return nil, fmt.Errorf("%w: %d executions running and %d waiting", ErrBusy, x.opt.MaxConcurrent, x.opt.MaxQueued)
	}
	defer x.waiting.Add(-1)
	t := time.NewTimer(x.opt.QueueWait)
	defer t.Stop()
	select {
	case x.slots <- struct{}{}:
		return release, nil
	case <-t.C:
		return nil, fmt.Errorf("%w: no execution slot came free in %s", ErrBusy, x.opt.QueueWait)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// snapshotAt returns registry version n and checks that it is the one
// whose hash was recorded: what the gate checked is what runs.
func (x *Executor) snapshotAt(ctx context.Context, n uint64, want hashing.Digest) (*registry.Snapshot, error) {
	snap, err := x.reg.Version(ctx, n)
	if errors.Is(err, registry.ErrNotFound) {
		return nil, fmt.Errorf("registry version %d: %w", n, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("registry version %d: %w", n, err)
	}
	if got := snap.Registry(); got != want {
		return nil, fmt.Errorf("registry version %d hashes to %s, %s was recorded: %w", n, got, want, ErrCorrupt)
	}
	return snap, nil
}

func (x *Executor) policy() RiskPolicy {
	return RiskPolicy{MaxLeverage: x.opt.MaxLeverage, Predicates: Predicates()}
}

// Execute runs a grounded request at the registry version the grounding
// was decided against — never whatever its names mean today — so one
// grounding on unchanged data always gives one execution hash. The source
// data bytes and every artifact are stored as the grid runs (blobs are
// content-addressed, so a run that fails part-way leaves only unreferenced
// blobs behind), and the footprint last, once everything it names is
// durable. An identical execution (same hash) returns the stored footprint.
//
// Errors: ErrNotGrounded for a nil or zero Grounded; ErrOverBudget when
// the grid is larger than the budget; ErrBusy when too many executions
// are in flight; ErrDrift when the family or metric does not resolve;
// ErrNotRunnable when the engine cannot run the metric;
// ErrBadData for a data file that cannot be parsed (nothing is stored). A
// missing data file, or a path that leaves the data root, is not an
// error: every morphism is rejected by the "data" predicate and the
// footprint records why.
func (x *Executor) Execute(ctx context.Context, g *ground.Grounded) (*Footprint, error) {
	if !g.Valid() {
		return nil, ErrNotGrounded
	}
	began := time.Now()
	// Admission first: even reading an old registry version costs memory
	// and time, so it belongs inside the bound on executions in flight.
	release, err := x.admit(ctx)
	if err != nil {
		return nil, fmt.Errorf("execution: %w", err)
	}
	defer release()
	snap, err := x.snapshotAt(ctx, g.RegistryVersion(), g.Registry())
	if err != nil {
		return nil, fmt.Errorf("execution: grounding %s: %w", g.ID(), err)
	}
	req := g.Request()
	src, err := readSource(x.data, req.Data, x.opt.MaxDataBytes)
	if err != nil {
		return nil, err
	}
	// A policy that read the source's facts admitted these bytes only.
	if want, ok := g.DataDigest(); ok && (src.missing != "" || hashing.SumBLAKE3(src.raw) != want) {
		return nil, fmt.Errorf("%w: %s is not the source the policies checked when %s was grounded (BLAKE3 %s): ground the request again",
			ErrDataChanged, req.Data, g.ID(), want)
	}
	ro := x.runOptions()
	ro.sink = newBlobSink(x.arts)
	out, err := compute(ctx, input{
		snap: snap, req: req, grounding: g.ID(), policies: policiesOf(g), src: src,
		risk: x.policy(), maxBytes: x.opt.MaxDataBytes, budget: x.budget(), contracts: x.contracts,
	}, ro)
	if err == nil {
		err = ro.sink.flush(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("execution: %w", err)
	}
	fp, stored, err := x.store(ctx, out)
	if err != nil {
		return nil, err
	}
	fp.keepRunErrors(out.fp)
	x.log.LogAttrs(ctx, slog.LevelInfo, "execution",
		slog.String("hash", fp.Hash.String()), slog.String("grounding", g.ID().String()),
		slog.Int("morphisms", len(fp.Morphisms)), slog.Bool("new", stored),
		slog.Duration("took", time.Since(began)))
	return fp, nil
}

// store writes an outcome's footprint; its blobs are already stored. If a
// footprint with the same hash is stored and intact, nothing is written
// and the stored one is returned; a corrupt one is replaced.
func (x *Executor) store(ctx context.Context, out *outcome) (*Footprint, bool, error) {
	raw, err := hashing.Canonical(out.fp)
	if err != nil {
		return nil, false, fmt.Errorf("execution: encode footprint: %w", err)
	}
	key := out.fp.Hash.Key()
	if fp, err := x.Get(ctx, out.fp.Hash); err == nil {
		return fp, false, nil
	}
	var kept *Footprint
	err = x.st.Update(ctx, func(tx store.Tx) error {
		kept = nil // an engine may run fn again (store.Updater)
		old, err := value(tx, nameFootprints, key)
		if err != nil {
			return err
		}
		if old != nil {
			sum, err := value(tx, nameDigests, key)
			if err != nil {
				return err
			}
			if fp, err := checkStored(out.fp.Hash, old, sum); err == nil {
				kept = fp // first writer wins; its blobs are now intact too
				return nil
			}
		}
		sum := sha256.Sum256(raw)
		if err := tx.PutValue(nameDigests, key, sum[:]); err != nil {
			return err
		}
		return tx.PutValue(nameFootprints, key, raw)
	})
	if err != nil {
		return nil, false, fmt.Errorf("execution: store %s: %w", out.fp.Hash, err)
	}
	if kept != nil {
		return kept, false, nil
	}
	return out.fp, true, nil
}

// Get returns the footprint stored under an execution hash: ErrNotFound
// when there is none, ErrCorrupt when its bytes no longer agree with its
// hash and layers.
func (x *Executor) Get(ctx context.Context, hash hashing.Digest) (*Footprint, error) {
	var raw, sum []byte
	err := x.st.View(ctx, func(tx store.Tx) error {
		v, err := value(tx, nameFootprints, hash.Key())
		if err != nil {
			return err
		}
		raw = bytes.Clone(v)
		v, err = value(tx, nameDigests, hash.Key())
		sum = bytes.Clone(v)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("execution: read %s: %w", hash, err)
	}
	if raw == nil {
		return nil, fmt.Errorf("execution %s: %w", hash, ErrNotFound)
	}
	return checkStored(hash, raw, sum)
}

// CheckFootprint decodes footprint bytes and checks them as Get checks a
// stored record: against hash, against themselves (every layer recomputed
// from the body) and for canonical form. Errors wrap ErrCorrupt.
func CheckFootprint(hash hashing.Digest, raw []byte) (*Footprint, error) {
	return decodeFootprint(hash, raw)
}

// checkStored is decodeFootprint, and when the record has a digest
// (DigestBucket), that its bytes are the ones written.
func checkStored(hash hashing.Digest, raw, sum []byte) (*Footprint, error) {
	fp, err := decodeFootprint(hash, raw)
	if err != nil {
		return nil, err
	}
	if sum != nil {
		if got := sha256.Sum256(raw); !bytes.Equal(got[:], sum) {
			return nil, fmt.Errorf("execution %s: the stored bytes are not the ones written (their SHA-256 is %x, %x was recorded): %w", hash, got, sum, ErrCorrupt)
		}
	}
	return fp, nil
}

// decodeFootprint decodes stored bytes and checks them against the key and
// against themselves (every layer recomputed from the body).
func decodeFootprint(hash hashing.Digest, raw []byte) (*Footprint, error) {
	var fp Footprint
	if err := hashing.DecodeStrict(raw, &fp); err != nil {
		return nil, fmt.Errorf("execution %s: %v: %w", hash, err, ErrCorrupt)
	}
	if fp.Hash != hash {
		return nil, fmt.Errorf("execution %s: the record is for %s: %w", hash, fp.Hash, ErrCorrupt)
	}
	if err := fp.check(); err != nil {
		return nil, fmt.Errorf("execution %s: %v: %w", hash, err, ErrCorrupt)
	}
	canon, err := hashing.Canonical(&fp)
	if err != nil || !bytes.Equal(canon, raw) {
		return nil, fmt.Errorf("execution %s: the stored bytes are not the record's canonical form: %w", hash, ErrCorrupt)
	}
	return &fp, nil
}

// Verify re-checks every stored footprint (its bytes against its hash and
// its layers, as Get does) and that the data blob and every artifact it
// refers to is stored. That the stored blobs are intact is the artifact
// store's Verify: together they hash every record once. It returns how
// many footprints it checked and one line per problem; err wraps
// ErrCorrupt when there is a problem.
func (x *Executor) Verify(ctx context.Context) (n int, problems []string, err error) {
	problems = []string{}
	type rec struct {
		key      string
		raw, sum []byte
	}
	var recs []rec
	err = x.st.View(ctx, func(tx store.Tx) error {
		return tx.Scan(nameFootprints, func(k, v []byte) error {
			sum, err := value(tx, nameDigests, k)
			if err != nil {
				return err
			}
			recs = append(recs, rec{key: string(k), raw: bytes.Clone(v), sum: bytes.Clone(sum)})
			return nil
		})
	})
	if err != nil {
		return 0, problems, fmt.Errorf("execution: verify: %w", err)
	}
	for _, r := range recs {
		if err := ctx.Err(); err != nil {
			return n, problems, err
		}
		n++
		h, err := hashing.Parse(r.key)
		if err != nil {
			problems = append(problems, fmt.Sprintf("key %q: %v", clipText(r.key), err))
			continue
		}
		fp, err := checkStored(h, r.raw, r.sum)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		var need []hashing.Digest
		if fp.Data.Missing == "" {
			need = append(need, fp.Data.Digest)
		}
		for _, m := range fp.Morphisms {
			for _, a := range m.Artifacts {
				need = append(need, a.Digest)
			}
		}
		missing, err := x.arts.Missing(ctx, need)
		if err != nil {
			return n, problems, fmt.Errorf("execution: verify: %w", err)
		}
		for _, d := range missing {
			problems = append(problems, fmt.Sprintf("execution %s: blob %s is missing", h, d))
		}
	}
	if len(problems) > 0 {
		return n, problems, fmt.Errorf("execution: verify: %d problem(s), first: %s: %w", len(problems), problems[0], ErrCorrupt)
	}
	return n, problems, nil
}

// policiesOf is the policy-set digest a footprint records: the grounding's.
func policiesOf(g *ground.Grounded) *hashing.Digest {
	d := g.Policies()
	if d.IsZero() {
		return nil
	}
	return &d
}
