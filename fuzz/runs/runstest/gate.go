package runstest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/fuzz"
)

// Gate is a real prober that answers the first `after` questions, then
// holds every further one until it is opened or its context ends: a run
// paused at a known point, to act on while it runs. Set Prober to the
// prober it passes questions to before the run asks.
type Gate struct {
	Prober  fuzz.Prober
	after   atomic.Int64
	asked   atomic.Int64
	reached chan struct{}
	release chan struct{}
	once    sync.Once
	free    sync.Once
}

// NewGate is a gate that lets after questions through.
func NewGate(after int64) *Gate {
	g := &Gate{reached: make(chan struct{}), release: make(chan struct{})}
	g.after.Store(after)
	return g
}

// Hold lets n more questions through, then holds.
func (g *Gate) Hold(n int64) { g.after.Store(g.asked.Load() + n) }

func (g *Gate) Probe(ctx context.Context, q discover.Query) (discover.Result, error) {
	if g.asked.Add(1) > g.after.Load() {
		g.once.Do(func() { close(g.reached) })
		select {
		case <-g.release:
		case <-ctx.Done():
			return discover.Result{}, ctx.Err()
		}
	}
	return g.Prober.Probe(ctx, q)
}

// Open lets every question through from now on.
func (g *Gate) Open() { g.free.Do(func() { close(g.release) }) }

// WaitReached waits until the run is held at the gate.
func (g *Gate) WaitReached(t testing.TB) {
	t.Helper()
	select {
	case <-g.reached:
	case <-time.After(60 * time.Second):
		t.Fatal("the run never reached the gate")
	}
}
