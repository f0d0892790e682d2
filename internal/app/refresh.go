package app

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/groundgate/groundgate/gateway"
	"github.com/groundgate/groundgate/policy"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/store"
)

// refresher keeps a replica's in-memory views of the shared store — the
// registry's current version (and discovery, which follows it), the policy
// set in force, the running upstreams — as the store has them, so that a
// write another replica acknowledged is seen by the next request this one
// begins (docs/storage.md: read-your-writes across replicas).
//
// Sync reads the three "current" pointers in one View (the registry's
// current version, the policy set's latest, the upstreams' generation)
// and reloads only what changed. Concurrent callers share a refresh, but only one that
// began after they called: a refresh already under way may have read the
// pointers before the write the caller must see.
type refresher struct {
	st        store.Viewer
	reg       *registry.Store
	policies  *policy.Store
	upstreams *gateway.Manager
	log       *slog.Logger
	// do is one refresh: refresh, or a test's stand-in.
	do func(context.Context) error

	mu      sync.Mutex
	running bool
	pending *flight // the next refresh, not begun: callers join it
}

// flight is one refresh and its outcome.
type flight struct {
	done chan struct{}
	err  error
}

// refreshTimeout bounds one refresh: a store that does not answer fails
// the requests waiting for it (503) rather than holding them.
const refreshTimeout = 10 * time.Second

// Sync returns once a refresh that began after the call has ended.
func (r *refresher) Sync(ctx context.Context) error {
	r.mu.Lock()
	f := r.pending
	if f == nil {
		f = &flight{done: make(chan struct{})}
		r.pending = f
	}
	if !r.running {
		r.running = true
		go r.loop()
	}
	r.mu.Unlock()
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// loop runs pending refreshes one after another until none is left.
func (r *refresher) loop() {
	for {
		r.mu.Lock()
		f := r.pending
		r.pending = nil
		if f == nil {
			r.running = false
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), refreshTimeout)
		do := r.do
		if do == nil {
			do = r.refresh
		}
		f.err = do(ctx)
		cancel()
		close(f.done)
	}
}

// refresh reads the pointers in one View and reloads what differs.
func (r *refresher) refresh(ctx context.Context) error {
	var regV, polV, upGen uint64
	err := r.st.View(ctx, func(tx store.Tx) error {
		var err error
		if regV, err = registry.CurrentIn(tx); err != nil {
			return err
		}
		if polV, err = policy.LatestIn(tx); err != nil {
			return err
		}
		upGen, err = gateway.GenerationIn(tx)
		return err
	})
	if err != nil {
		return fmt.Errorf("refresh from the shared store: %w", err)
	}
	if regV != r.reg.Current().Version() {
		if _, err := r.reg.Refresh(ctx); err != nil {
			return err
		}
	}
	if polV != r.policies.Current().Version {
		if _, err := r.policies.Refresh(ctx); err != nil {
			return err
		}
	}
	// After the registry: an upstream's status compares its tools with
	// the entries in force.
	if upGen != r.upstreams.Generation() {
		if _, err := r.upstreams.Refresh(ctx); err != nil {
			return err
		}
	}
	return nil
}

// poll refreshes every interval until ctx ends, so that an idle replica
// keeps the upstreams another one added connected and its views warm.
func (r *refresher) poll(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := r.Sync(ctx); err != nil && ctx.Err() == nil {
				r.log.Warn("refresh from the shared store failed", "error", err)
			}
		}
	}
}

// PollInterval is how often an idle replica refreshes its views.
const PollInterval = time.Second
