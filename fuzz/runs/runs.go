// Package runs runs registry fuzzing (package fuzz, SPEC §12) in the
// background for the server: one run at a time, pinned to the registry
// version current when it starts, with progress, a time budget and
// cancellation. Every run is kept in the registry's store — its findings
// content-addressed, shared by the runs that find them — and survives a
// restart; the newest Options.Keep runs are kept.
//
// # Several servers
//
// On a bbolt file one process holds the store, and a run left running in
// it when the file is opened is interrupted (its server died). On a
// shared store (Options.Shared, SPEC §17) a run has an owner (a random id
// per Manager) that holds a lease on it, renewed every Options.Renew with
// the run's progress. A running run whose lease has not passed is running
// on every replica; one whose lease has passed is interrupted (its owner
// is dead, or lost the store for longer than the lease), and its owner, if
// alive, stops it and stores nothing. One run at a time holds across the
// replicas: a run tests the registry they share. A replica cancels
// another's run by marking it (cancel_requested); the owner reads the
// mark at its next renewal.
//
// # On workers
//
// With Options.Queue (a server on a shared store) Start stores the run
// queued — running, no owner, progress 0, under a lease its server gives
// it — and enqueues its id; a worker's Manager adopts it (Adopt: becomes
// its owner, in one transaction that fails unless the run still waits)
// and runs it through the same loop Start's runs go through. A run no
// worker takes is failed by the server that queued it. A worker's death
// is a lease that passes, as a server's: the run is interrupted, never
// run again.
package runs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/errkind"
	"github.com/groundgate/groundgate/fuzz"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
)

// State is where a run is.
type State string

const (
	// StateRunning: the run is asking its questions.
	StateRunning State = "running"
	// StateDone: the run ended by itself — complete, or cut short by its
	// time budget (its report says complete: false).
	StateDone State = "done"
	// StateCancelled: cancelled on request or by the server's shutdown;
	// the report holds what it found until then (complete: false).
	StateCancelled State = "cancelled"
	// StateFailed: the run has no report — it failed, or its server
	// stopped while it ran (Detail says which).
	StateFailed State = "failed"
)

// Bounds of a request, and what an absent field means.
const (
	DefaultSeconds = 60
	MaxSeconds     = 600
	DefaultSeed    = 1
	// MaxSeed is the largest integer a JSON number holds exactly; the
	// report records its seed, and must record the one used.
	MaxSeed = 1<<53 - 1
	// DefaultKeep is how many runs are kept when Options.Keep is zero.
	DefaultKeep = 100
)

// A run's lease on a shared store (Options.Shared). The owner renews it
// every DefaultRenew; a run whose lease has not been renewed for
// DefaultLease is interrupted. The margin between them covers a slow
// store and the clocks of two replicas disagreeing by a few seconds.
const (
	DefaultLease = 30 * time.Second
	DefaultRenew = 5 * time.Second
)

// cancelWait bounds how long Cancel waits for a run to stop; a run stops
// within one discovery question of its cancellation.
const cancelWait = 10 * time.Second

// Request asks for a run: a time budget in seconds, the seed of the
// probe order (fuzz.Config.Seed), and whether to run the runtime tests
// too (they need Options.Runtime).
type Request struct {
	Seconds int64
	Seed    int64
	Runtime bool
}

// Status is a run as the API shows it. Result is the report, exactly the
// bytes the run produced (its canonical JSON, whose SHA-256 is
// ResultDigest): present once a run is done or cancelled.
type Status struct {
	Run
	ResultDigest *hashing.Digest `json:"result_digest,omitempty"`
	Result       json.RawMessage `json:"result,omitempty"`
}

// Run is what a run is, shown and stored alike (Status and the stored
// record embed it).
type Run struct {
	ID       uint64         `json:"id"`
	State    State          `json:"state"`
	Registry hashing.Digest `json:"registry"`
	Version  uint64         `json:"version"`
	Seed     uint64         `json:"seed"`
	Seconds  int            `json:"seconds"`
	Runtime  bool           `json:"runtime"`
	Progress fuzz.Progress  `json:"progress"`
	Started  time.Time      `json:"started"`
	Finished *time.Time     `json:"finished,omitempty"`
	// Detail says why a run was cancelled, failed or ran out of time.
	Detail string `json:"detail,omitempty"`
}

// ProberFunc gives the prober a run asks, answering at snap's version,
// and a function releasing it.
type ProberFunc func(ctx context.Context, snap *registry.Snapshot) (fuzz.Prober, func(), error)

// PinnedDiscovery is the default ProberFunc: a discoverer of its own over
// snap, whatever the registry does meanwhile. (The server's discoverer
// follows the current version; a write landing mid-run would move it.)
// Its index is built for the run and released after it.
func PinnedDiscovery(src discover.Source, st Backend) ProberFunc {
	return func(ctx context.Context, snap *registry.Snapshot) (fuzz.Prober, func(), error) {
		d, err := discover.New(ctx, pinned{Source: src, snap: snap}, st, discover.Options{})
		if err != nil {
			return nil, nil, fmt.Errorf("fuzz runs: discovery at version %d: %w", snap.Version(), err)
		}
		return d, func() { d.Close() }, nil
	}
}

// RuntimeFunc gives a run the stack its runtime tests execute through
// (internal/app.OpenFuzzRuntime: engines over a scratch copy of the
// database, taken when it is called) and a function releasing it.
type RuntimeFunc func(ctx context.Context) (*fuzz.Runtime, func() error, error)

// pinned is a registry source whose current version never moves.
type pinned struct {
	discover.Source
	snap *registry.Snapshot
}

func (p pinned) Current() *registry.Snapshot { return p.snap }

// Options configure a Manager. The zero value is usable.
type Options struct {
	// Logger receives run events and failures; nil discards them.
	Logger *slog.Logger
	// Now is the clock (time.Now when nil); it stamps started and
	// finished, which nothing hashes.
	Now func() time.Time
	// Keep is how many runs are stored (DefaultKeep when zero): starting
	// one more drops the oldest, and every finding no kept run lists.
	Keep int
	// Prober gives each run its prober; nil means PinnedDiscovery.
	Prober ProberFunc
	// Runtime, when set, lets a run ask for the runtime tests; nil
	// refuses such requests.
	Runtime RuntimeFunc
	// Shared says other processes share the store (PostgreSQL, SPEC §17):
	// runs carry their owner and a lease, and a running run is
	// interrupted only once its lease has passed. False (a bbolt file, one
	// process) interrupts every run found running at Open.
	Shared bool
	// Lease and Renew are the lease's length and how often the owner
	// renews it (DefaultLease and DefaultRenew when zero). Every replica
	// of a store must use the same Lease.
	Lease, Renew time.Duration
	// Owner names this Manager in its runs' records on a shared store;
	// random when empty.
	Owner string
	// Queue, on a shared store, sends runs to workers: Start stores the
	// run queued (running, no owner, progress 0) and enqueues its id, and
	// a worker's Manager adopts and runs it (Adopt). Nil runs them in
	// this process.
	Queue Queue
	// TakeWithin bounds how long a queued run waits for a worker to take
	// it while one runs against the store (jobs.DefaultTakeWithin when
	// zero); it must stay below Lease, which the queued run holds.
	TakeWithin time.Duration
}

// Queue hands runs to workers (*jobs.Queue over the shared store).
type Queue interface {
	// EnqueueFuzzRun queues run id's job and returns the job's id.
	EnqueueFuzzRun(ctx context.Context, id uint64) (int64, error)
	// AwaitTaken returns nil once a worker has taken job, or an error
	// (no worker runs, none took it within the bound) once it is given
	// up, the job then cancelled.
	AwaitTaken(ctx context.Context, job int64, within time.Duration) error
}

// Manager starts, tracks and keeps fuzz runs. It is safe for concurrent
// use.
type Manager struct {
	st   Backend
	src  discover.Source
	opt  Options
	log  *slog.Logger
	base context.Context
	stop context.CancelCauseFunc
	wg   sync.WaitGroup
	// owner is Options.Owner, or a random id: it names this Manager's
	// runs on a shared store and nothing else (no digest covers it).
	owner string

	mu     sync.Mutex // guards live and closed; never held across a run
	live   *liveRun
	closed bool
}

// liveRun is the run in progress.
type liveRun struct {
	rec    record // as stored when it started; not changed after
	cancel context.CancelCauseFunc
	done   chan struct{}
	// progress is the fuzzer's last report, Done and Total packed in one
	// word so a reader never sees them torn.
	progress atomic.Uint64
}

func (l *liveRun) setProgress(p fuzz.Progress) {
	l.progress.Store(uint64(uint32(p.Done))<<32 | uint64(uint32(p.Total)))
}

func (l *liveRun) getProgress() fuzz.Progress {
	v := l.progress.Load()
	return fuzz.Progress{Done: int(v >> 32), Total: int(uint32(v))}
}

func (l *liveRun) status() Status {
	st := l.rec.status()
	st.Progress = l.getProgress()
	return st
}

func (r record) status() Status {
	return Status{Run: r.Run, ResultDigest: r.ResultDigest}
}

// Causes of a cancellation; their text is the run's detail.
var (
	errCancelled = errors.New("cancelled on request")
	errShutdown  = errors.New("cancelled: the server shut down during the run")
	// errLeaseLost stops a run on a shared store whose lease passed
	// before its owner could renew it (or store its end): the other
	// replicas report it interrupted.
	errLeaseLost = errkind.New(errkind.Conflict, "fuzz runs: the run's lease passed")
)

// errMoved fails a run whose runtime tests' scratch copy may hold a later
// registry version than the run's; its text is the run's detail.
var errMoved = errors.New("the registry changed while the runtime tests' scratch copy was made")

// Open keeps runs in st (the registry's file, whose versions src serves) and marks every run a previous server left running
// as failed: it was interrupted. Close stops the run in progress.
func Open(ctx context.Context, st Backend, src discover.Source, opt Options) (*Manager, error) {
	if st == nil || src == nil {
		return nil, errors.New("fuzz runs: Open needs a database and a registry")
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Keep <= 0 {
		opt.Keep = DefaultKeep
	}
	if opt.Prober == nil {
		opt.Prober = PinnedDiscovery(src, st)
	}
	if opt.Lease <= 0 {
		opt.Lease = DefaultLease
	}
	if opt.Renew <= 0 {
		opt.Renew = DefaultRenew
	}
	if opt.Queue != nil && !opt.Shared {
		return nil, errors.New("fuzz runs: a queue needs a shared store")
	}
	if opt.TakeWithin <= 0 {
		opt.TakeWithin = defaultTakeWithin
	}
	if opt.Owner == "" && opt.Shared {
		var b [8]byte
		rand.Read(b[:]) // never fails (crypto/rand)
		opt.Owner = hex.EncodeToString(b[:])
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m := &Manager{st: st, src: src, opt: opt, log: opt.Logger, owner: opt.Owner}
	// On a bbolt file every running record is a dead server's; on a
	// shared store only those whose lease has passed.
	n, err := markInterrupted(ctx, st, func(rec *record) bool { return !m.alive(rec) })
	if err != nil {
		return nil, err
	}
	if n > 0 {
		opt.Logger.LogAttrs(ctx, slog.LevelWarn, "fuzz runs interrupted by the last shutdown marked failed", slog.Int("runs", n))
	}
	m.base, m.stop = context.WithCancelCause(context.Background())
	return m, nil
}

// alive reports whether a running record is a live run of another
// process: on a shared store, one whose lease has not passed. On a bbolt
// file no other process runs anything.
func (m *Manager) alive(rec *record) bool {
	return m.opt.Shared && rec.State == StateRunning && rec.Owner != m.owner && leased(rec, m.now())
}

// leased reports whether rec's lease runs past now.
func leased(rec *record, now time.Time) bool {
	return rec.Lease != nil && now.Before(*rec.Lease)
}

func (m *Manager) now() time.Time { return m.opt.Now().UTC() }

// Start starts a run in the background at the registry's current version
// and returns its status (state running). While another run is running it
// fails with a *RunningError.
func (m *Manager) Start(ctx context.Context, req Request) (Status, error) {
	if req.Seconds < 1 || req.Seconds > MaxSeconds {
		return Status{}, fmt.Errorf("%w: seconds must be 1 to %d, got %d", ErrInvalid, MaxSeconds, req.Seconds)
	}
	if req.Seed < 0 || req.Seed > MaxSeed {
		return Status{}, fmt.Errorf("%w: seed must be 0 to %d (2^53-1), got %d", ErrInvalid, int64(MaxSeed), req.Seed)
	}
	if req.Runtime && m.opt.Runtime == nil {
		return Status{}, fmt.Errorf("%w: this server does not run the runtime tests", ErrInvalid)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return Status{}, ErrClosed
	}
	if m.live != nil {
		return Status{}, &RunningError{ID: m.live.rec.ID}
	}
	snap := m.src.Current()
	now := m.now()
	rec := record{Run: Run{State: StateRunning, Registry: snap.Registry(), Version: snap.Version(),
		Seed: uint64(req.Seed), Seconds: int(req.Seconds), Runtime: req.Runtime, Started: now}}
	var busy func(*record) bool
	if m.opt.Shared {
		lease := now.Add(m.opt.Lease)
		rec.Owner, rec.Lease = m.owner, &lease
		// One run at a time across the replicas: another's live run
		// refuses this one, in the transaction that would store it.
		busy = m.alive
	}
	if m.opt.Queue != nil {
		// Queued: no owner until a worker adopts it; the lease covers
		// the wait (TakeWithin < Lease), and this Manager fails the run
		// if no worker takes it.
		rec.Owner, rec.Detail = "", detailQueued
	}
	if err := create(ctx, m.st, &rec, m.opt.Keep, busy); err != nil {
		return Status{}, err
	}
	if m.opt.Queue != nil {
		return m.enqueue(ctx, rec)
	}
	rctx, cancel := context.WithCancelCause(m.base)
	lr := &liveRun{rec: rec, cancel: cancel, done: make(chan struct{})}
	m.live = lr
	m.wg.Add(1)
	go m.run(rctx, lr, snap)
	m.log.LogAttrs(ctx, slog.LevelInfo, "fuzz run started", slog.Uint64("run", rec.ID),
		slog.Uint64("version", rec.Version), slog.Uint64("seed", rec.Seed), slog.Int("seconds", rec.Seconds))
	return lr.status(), nil
}

// defaultTakeWithin is jobs.DefaultTakeWithin (runs does not import
// the queue).
const defaultTakeWithin = 15 * time.Second

// Details of a queued run, and of one no worker took.
const (
	detailQueued   = "queued: waiting for a groundgate worker to take the run"
	detailNoWorker = "no groundgate worker took the run: start one (groundgate worker) against this store and start the run again"
)

// enqueue queues the stored run rec for a worker and watches, in the
// background, that one takes it: a run no worker takes is failed with
// detailNoWorker, not left to hang until its lease passes.
func (m *Manager) enqueue(ctx context.Context, rec record) (Status, error) {
	job, err := m.opt.Queue.EnqueueFuzzRun(ctx, rec.ID)
	if err != nil {
		m.failQueued(rec.ID, "the run could not be queued; the cause is in the server's log")
		return Status{}, fmt.Errorf("fuzz run %d: %w", rec.ID, err)
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		err := m.opt.Queue.AwaitTaken(m.base, job, m.opt.TakeWithin)
		if err == nil || m.base.Err() != nil {
			return // taken; or this server stops, and the lease ends the wait
		}
		m.log.LogAttrs(context.Background(), slog.LevelWarn, "fuzz run not taken by a worker", slog.Uint64("run", rec.ID), slog.Any("error", err))
		m.failQueued(rec.ID, detailNoWorker)
	}()
	m.log.LogAttrs(ctx, slog.LevelInfo, "fuzz run queued", slog.Uint64("run", rec.ID), slog.Int64("job", job),
		slog.Uint64("version", rec.Version), slog.Uint64("seed", rec.Seed), slog.Int("seconds", rec.Seconds))
	return rec.status(), nil
}

// failQueued stores run id failed with detail if it is still queued (no
// worker adopted it meanwhile).
func (m *Manager) failQueued(id uint64, detail string) {
	now := m.now()
	err := update(context.Background(), m.st, id, func(rec *record) error {
		if !queued(rec, now) {
			return ErrNotQueued
		}
		rec.State, rec.Detail, rec.Finished = StateFailed, detail, &now
		rec.Lease, rec.CancelRequested = nil, false
		return nil
	})
	if err != nil && !errors.Is(err, ErrNotQueued) {
		m.log.LogAttrs(context.Background(), slog.LevelError, "untaken fuzz run not stored failed", slog.Uint64("run", id), slog.Any("error", err))
	}
}

// queued reports whether rec waits for a worker: running, no owner yet,
// under the lease its server gave it.
func queued(rec *record, now time.Time) bool {
	return rec.State == StateRunning && rec.Owner == "" && leased(rec, now)
}

// Adopt runs the queued run id in this process, on a worker: it becomes
// the run's owner (in one transaction that fails with an error wrapping
// ErrNotQueued unless the run still waits for a worker), then runs it as
// Start would have, renewing its lease and acting on cancel_requested,
// and returns once its end is stored. The run's pinned version is read
// from the Manager's registry; for its runtime tests, that registry's
// current version must be the store's (refresh it first).
func (m *Manager) Adopt(ctx context.Context, id uint64) error {
	if !m.opt.Shared {
		return errors.New("fuzz runs: Adopt needs a shared store")
	}
	rec, _, err := load(ctx, m.st, id, false)
	if err != nil {
		return err
	}
	snap, err := m.src.Version(ctx, rec.Version)
	if err != nil {
		return fmt.Errorf("fuzz run %d: version %d: %w", id, rec.Version, err)
	}
	if rec.Runtime && m.opt.Runtime == nil {
		return fmt.Errorf("%w: this worker does not run the runtime tests", ErrInvalid)
	}
	lr, err := m.adopt(ctx, id, &rec)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithCancelCause(m.base)
	lr.cancel = cancel
	stop := context.AfterFunc(ctx, func() { cancel(errShutdown) }) // the worker stops
	defer stop()
	if rec.CancelRequested { // a DELETE reached it while it was queued
		cancel(errCancelled)
	}
	m.log.LogAttrs(ctx, slog.LevelInfo, "fuzz run adopted", slog.Uint64("run", rec.ID),
		slog.Uint64("version", rec.Version), slog.Uint64("seed", rec.Seed), slog.Int("seconds", rec.Seconds))
	m.run(rctx, lr, snap)
	return nil
}

// adopt makes this Manager the owner of the queued run id and its live
// run; rec receives the record as it was stored (CancelRequested: as it
// was before adopting cleared it).
func (m *Manager) adopt(ctx context.Context, id uint64, rec *record) (*liveRun, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	if m.live != nil {
		return nil, &RunningError{ID: m.live.rec.ID}
	}
	now := m.now()
	err := update(ctx, m.st, id, func(stored *record) error {
		if !queued(stored, now) {
			return fmt.Errorf("%w: stored %s, owner %q", ErrNotQueued, stored.State, stored.Owner)
		}
		lease := now.Add(m.opt.Lease)
		asked := stored.CancelRequested
		stored.Owner, stored.Lease, stored.Detail, stored.CancelRequested = m.owner, &lease, "", false
		*rec = *stored
		rec.CancelRequested = asked
		return nil
	})
	if err != nil {
		return nil, err
	}
	clean := *rec
	clean.CancelRequested = false
	lr := &liveRun{rec: clean, done: make(chan struct{})}
	m.live = lr
	m.wg.Add(1)
	return lr, nil
}

// run runs lr to its end and stores what it produced: the one run loop,
// of a run started here (Start) and of one adopted from the queue (Adopt).
func (m *Manager) run(ctx context.Context, lr *liveRun, snap *registry.Snapshot) {
	defer m.wg.Done()
	defer close(lr.done)
	defer lr.cancel(nil)
	stopRenew := func() {}
	if m.opt.Shared {
		stopRenew = m.renewing(ctx, lr)
	}
	rep, err := m.execute(ctx, lr, snap)
	// No renewal races the final record: the lease it left runs for a
	// whole Lease less one Renew at most.
	stopRenew()
	rec := lr.rec
	rec.Lease, rec.CancelRequested = nil, false
	fin := m.now()
	rec.Finished, rec.Progress = &fin, lr.getProgress()
	var full []byte
	if err == nil {
		// The bytes served for ever after: hashing.Canonical is the one
		// encoding of a report.
		full, err = hashing.Canonical(rep)
	}
	switch {
	case err != nil && ctx.Err() != nil:
		rec.State, rec.Detail, full = StateCancelled, context.Cause(ctx).Error(), nil
	case errors.Is(err, errMoved):
		rec.State, rec.Detail, full = StateFailed, err.Error(), nil
	case err != nil:
		rec.State, rec.Detail, full = StateFailed, "the run failed; the cause is in the server's log", nil
		m.log.LogAttrs(context.Background(), slog.LevelError, "fuzz run failed", slog.Uint64("run", rec.ID), slog.Any("error", err))
	case rep.Complete:
		rec.State = StateDone
	case ctx.Err() != nil:
		rec.State, rec.Detail = StateCancelled, context.Cause(ctx).Error()
	default:
		rec.State = StateDone
		rec.Detail = fmt.Sprintf("the time budget of %d s ran out: %d of %d discovery probes asked", rec.Seconds, rep.Asked, rep.Probes)
	}
	if err := finish(m.st, &rec, full, m.fence()); errors.Is(err, errLeaseLost) {
		// Every replica reports the run interrupted now: so it stays.
		m.log.LogAttrs(context.Background(), slog.LevelError, "fuzz run not stored: its lease passed", slog.Uint64("run", rec.ID), slog.Any("error", err))
	} else if err != nil {
		m.log.LogAttrs(context.Background(), slog.LevelError, "fuzz run not stored", slog.Uint64("run", rec.ID), slog.Any("error", err))
		// Say so without the report. If even that fails, the record stays
		// "running" on disk, which every reader (and the next server)
		// reports as interrupted once its lease, if any, has passed:
		// never lost silently.
		bare := lr.rec
		bare.State, bare.Detail, bare.Finished, bare.Progress = StateFailed, "the run's report could not be stored; the cause is in the server's log", rec.Finished, rec.Progress
		bare.Lease = nil
		if err := finish(m.st, &bare, nil, m.fence()); err != nil {
			m.log.LogAttrs(context.Background(), slog.LevelError, "fuzz run failure not stored", slog.Uint64("run", rec.ID), slog.Any("error", err))
		}
	} else {
		m.log.LogAttrs(context.Background(), slog.LevelInfo, "fuzz run ended", slog.Uint64("run", rec.ID),
			slog.String("state", string(rec.State)), slog.Int("findings", len(rec.Findings)))
	}
	m.mu.Lock()
	m.live = nil
	m.mu.Unlock()
}

func (m *Manager) execute(ctx context.Context, lr *liveRun, snap *registry.Snapshot) (*fuzz.Report, error) {
	pr, release, err := m.opt.Prober(ctx, snap)
	if err != nil {
		return nil, err
	}
	defer release()
	cfg := fuzz.Config{Seed: lr.rec.Seed, Progress: lr.setProgress}
	if lr.rec.Runtime {
		rt, closeRT, err := m.opt.Runtime(ctx)
		if err != nil {
			return nil, fmt.Errorf("fuzz run %d: runtime tests: %w", lr.rec.ID, err)
		}
		defer closeRT()
		// The scratch copy holds the version current when it was taken.
		// Versions only grow: if the current one is still the run's, no
		// write landed before the copy, and the copy is at the run's.
		if v := m.src.Current().Version(); v != snap.Version() {
			return nil, fmt.Errorf("%w (version %d, the run is pinned to %d); start it again", errMoved, v, snap.Version())
		}
		cfg.Runtime = rt
	}
	bctx, cancel := context.WithTimeout(ctx, time.Duration(lr.rec.Seconds)*time.Second)
	defer cancel()
	return fuzz.Run(bctx, snap, pr, cfg)
}

// Get returns a run's status; a run that has ended carries its report.
func (m *Manager) Get(ctx context.Context, id uint64) (Status, error) {
	if lr := m.running(); lr != nil && lr.rec.ID == id {
		return lr.status(), nil
	}
	rec, result, err := load(ctx, m.st, id, true)
	if err != nil {
		return Status{}, err
	}
	m.settle(&rec)
	st := rec.status()
	st.Result = result
	return st, nil
}

// List returns the stored runs, newest first, without their reports.
func (m *Manager) List(ctx context.Context) ([]Status, error) {
	lr := m.running()
	recs, err := list(ctx, m.st, m.opt.Keep)
	if err != nil {
		return nil, err
	}
	out := make([]Status, len(recs))
	for i := range recs {
		if lr != nil && recs[i].ID == lr.rec.ID {
			out[i] = lr.status()
			continue
		}
		m.settle(&recs[i])
		out[i] = recs[i].status()
	}
	return out, nil
}

// settle reports a record left running by a run that is not this
// process's, nor (on a shared store) another's under a live lease, as what
// it is: interrupted. (Open and, on a shared store, Start rewrite them;
// this covers a run whose final record could not be written, and a lease
// that passed since.) Another replica's live run is shown as last stored:
// its progress as of its owner's last renewal.
func (m *Manager) settle(rec *record) {
	if rec.State != StateRunning || m.alive(rec) {
		return
	}
	if lr := m.running(); lr != nil && lr.rec.ID == rec.ID {
		return
	}
	interrupted(rec)
}

// fence is what finish and each renewal check of the stored record on a
// shared store before writing it: the run is still running, this
// Manager's, under a lease that has not passed. Otherwise another replica
// has reported it interrupted (or stored it so), and that stays its end.
// Nil on a bbolt file: one process writes it.
func (m *Manager) fence() func(*record) error {
	if !m.opt.Shared {
		return nil
	}
	return func(stored *record) error {
		now := m.now()
		switch {
		case stored.State != StateRunning:
			return fmt.Errorf("%w: the run is stored as %s", errLeaseLost, stored.State)
		case stored.Owner != m.owner:
			return fmt.Errorf("%w: the run is owned by %q", errLeaseLost, stored.Owner)
		case !leased(stored, now):
			return fmt.Errorf("%w: it ended at %s", errLeaseLost, stored.Lease)
		}
		return nil
	}
}

// renewing renews lr's lease every Renew until the function it returns is
// called (which waits for the renewer to stop). Each renewal stores the
// run's progress with the new lease, and reads what other replicas asked:
// a cancellation (cancel_requested) cancels the run as a local Cancel
// does. A lease that could not be renewed in time stops the run: the other
// replicas report it interrupted, and its end is not stored.
func (m *Manager) renewing(ctx context.Context, lr *liveRun) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(m.opt.Renew)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			cancelled, err := renew(ctx, m.st, lr.rec.ID, lr.getProgress(), m.now().Add(m.opt.Lease), m.fence())
			switch {
			case errors.Is(err, errLeaseLost):
				m.log.LogAttrs(ctx, slog.LevelError, "fuzz run stopped: its lease passed", slog.Uint64("run", lr.rec.ID), slog.Any("error", err))
				lr.cancel(err)
				return
			case err != nil:
				// The next renewal may succeed; the fence says when it is
				// too late.
				m.log.LogAttrs(ctx, slog.LevelWarn, "fuzz run lease not renewed", slog.Uint64("run", lr.rec.ID), slog.Any("error", err))
			case cancelled:
				lr.cancel(errCancelled)
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

func (m *Manager) running() *liveRun {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.live
}

// Cancel cancels a running run and waits (briefly) for it to stop; its
// partial report is kept. A run that has already ended is returned
// unchanged. If the run has not stopped in time its status still says
// running.
//
// On a shared store a run of another replica is marked cancel_requested;
// its owner cancels it at its next renewal (within Renew), and Cancel
// polls the store for its end.
func (m *Manager) Cancel(ctx context.Context, id uint64) (Status, error) {
	t := time.NewTimer(cancelWait)
	defer t.Stop()
	if lr := m.running(); lr != nil && lr.rec.ID == id {
		lr.cancel(errCancelled)
		select {
		case <-lr.done:
		case <-t.C:
			return lr.status(), nil
		case <-ctx.Done():
			return Status{}, ctx.Err()
		}
		return m.Get(ctx, id)
	}
	if !m.opt.Shared {
		return m.Get(ctx, id)
	}
	asked, err := requestCancel(ctx, m.st, id, m.alive)
	if err != nil || !asked {
		return m.Get(ctx, id) // unknown, ended, or interrupted: as it is
	}
	tick := time.NewTicker(cancelPoll)
	defer tick.Stop()
	for {
		st, err := m.Get(ctx, id)
		if err != nil || st.State != StateRunning {
			return st, err
		}
		select {
		case <-tick.C:
		case <-t.C:
			return st, nil
		case <-ctx.Done():
			return Status{}, ctx.Err()
		}
	}
}

// cancelPoll is how often Cancel reads another replica's run it has asked
// to stop.
const cancelPoll = 100 * time.Millisecond

// Close cancels the run in progress (it is stored as cancelled, with its
// partial report) and waits for it. Start fails afterwards. The database
// is not closed.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.stop(errShutdown)
	m.wg.Wait()
	return nil
}
