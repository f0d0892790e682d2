package runs

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/groundgate/groundgate/fuzz/runs/runstest"
)

// Replicas of a shared store are Managers with Options.Shared over one
// store: here one bbolt store in one process, which gives the
// transactions PostgreSQL gives several (internal/app's TestReplicasFuzz*
// run the same over PostgreSQL). Renewals are fast so that a test
// watches several.

// clock is a Now that a test moves forward.
type clock struct{ skip atomic.Int64 }

func (c *clock) now() time.Time          { return time.Now().Add(time.Duration(c.skip.Load())) }
func (c *clock) advance(d time.Duration) { c.skip.Add(int64(d)) }

func sharedOptions(owner string) Options {
	return Options{Shared: true, Owner: owner, Renew: 20 * time.Millisecond}
}

// A run on replica A is running on every replica, with the progress A
// last stored; a replica opened while it runs leaves it running; starting
// another run on B is refused naming A's (one run at a time across the
// replicas); B's cancel reaches A's run, which stores its partial report.
func TestSharedRunIsEveryReplicas(t *testing.T) {
	r := newRig(t)
	// Past the templates' own questions: into the probes progress counts.
	a, _, st := r.held(sharedOptions("a"), 300)
	b := r.manager(sharedOptions("b"))

	// A replica (re)starting now does not touch it.
	r.manager(sharedOptions("c"))
	rec, _, err := load(context.Background(), r.store.Engine(), st.ID, false)
	if err != nil || rec.State != StateRunning || rec.Owner != "a" || rec.Lease == nil {
		t.Fatalf("stored after a replica opened: %+v, %v", rec, err)
	}

	// B sees it running, and its progress once A has renewed.
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := b.Get(context.Background(), st.ID)
		if err != nil || got.State != StateRunning {
			t.Fatalf("A's run on B: %+v, %v", got, err)
		}
		if own, _ := a.Get(context.Background(), st.ID); got.Progress.Done > 0 && got.Progress == own.Progress {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B never saw A's progress: %+v", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	list, err := b.List(context.Background())
	if err != nil || len(list) != 1 || list[0].State != StateRunning {
		t.Fatalf("B's list: %+v, %v", list, err)
	}

	_, err = b.Start(context.Background(), Request{Seconds: 1, Seed: 2})
	var re *RunningError
	if !errors.As(err, &re) || re.ID != st.ID {
		t.Fatalf("a start on B while A runs: %v", err)
	}

	got, err := b.Cancel(context.Background(), st.ID)
	if err != nil || got.State != StateCancelled || got.Detail != errCancelled.Error() || got.Result == nil {
		t.Fatalf("B cancels A's run: %+v, %v", got, err)
	}
	if a.running() != nil {
		t.Fatal("A still holds the run B cancelled")
	}
	stored, _, err := load(context.Background(), r.store.Engine(), st.ID, false)
	if err != nil || stored.Owner != "a" || stored.Lease != nil || stored.CancelRequested {
		t.Fatalf("the ended run as stored: %+v, %v", stored, err)
	}

	next, err := b.Start(context.Background(), Request{Seconds: 60, Seed: 2})
	if err != nil {
		t.Fatalf("B starts after A's run ended: %v", err)
	}
	if got, err := a.Cancel(context.Background(), next.ID); err != nil || got.State != StateCancelled {
		t.Fatalf("A cancels B's run: %+v, %v", got, err)
	}
	if n, problems, err := Verify(context.Background(), r.store.Engine()); err != nil || n == 0 {
		t.Fatalf("verify: %d checked, %v, %v", n, problems, err)
	}
}

// A run whose owner died (the file is what it leaves: copied while the
// run was held) is running for another replica until its lease passes,
// then interrupted; a replica opened after that stores it so, and so does
// the next start.
func TestSharedLeaseExpires(t *testing.T) {
	r := newRig(t)
	_, g, st := r.held(sharedOptions("a"), 20)
	r2 := r.crashCopy()
	g.Open()
	var c clock
	bOpt := sharedOptions("b")
	bOpt.Now = c.now
	b := r2.manager(bOpt)
	if got, err := b.Get(context.Background(), st.ID); err != nil || got.State != StateRunning {
		t.Fatalf("within the lease: %+v, %v", got, err)
	}
	c.advance(DefaultLease + time.Second)
	got, err := b.Get(context.Background(), st.ID)
	if err != nil || got.State != StateFailed || got.Detail != detailLeasePassed || got.Result != nil {
		t.Fatalf("after the lease: %+v, %v", got, err)
	}
	if rec, _, err := load(context.Background(), r2.store.Engine(), st.ID, false); err != nil || rec.State != StateRunning {
		t.Fatalf("reading stores nothing: %+v, %v", rec, err)
	}

	// A replica opened now stores it interrupted.
	cOpt := sharedOptions("c")
	cOpt.Now = c.now
	r2.manager(cOpt)
	rec, _, err := load(context.Background(), r2.store.Engine(), st.ID, false)
	if err != nil || rec.State != StateFailed || rec.Detail != detailLeasePassed || rec.Lease != nil {
		t.Fatalf("stored after a replica opened past the lease: %+v, %v", rec, err)
	}
	next, err := b.Start(context.Background(), Request{Seconds: 60, Seed: 1})
	if err != nil || next.ID != st.ID+1 {
		t.Fatalf("start after the owner died: %+v, %v", next, err)
	}
	b.Cancel(context.Background(), next.ID)
}

// An owner that could not renew its lease in time (here: another replica
// whose clock is past the lease took the store) stops its run and stores
// nothing over the interrupted record; the other replica's run goes on.
func TestSharedLeaseLost(t *testing.T) {
	r := newRig(t)
	a, _, st := r.held(sharedOptions("a"), 10)
	var c clock
	c.advance(DefaultLease + time.Second)
	bOpt := sharedOptions("b")
	bOpt.Now = c.now
	bg := runstest.NewGate(10)
	bOpt.Prober = gated(r.store, r, bg)
	b := r.manager(bOpt)
	next, err := b.Start(context.Background(), Request{Seconds: 600, Seed: 2})
	if err != nil {
		t.Fatalf("B starts past A's lease: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for a.running() != nil {
		if time.Now().After(deadline) {
			t.Fatal("A's run did not stop when its lease was lost")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, m := range []*Manager{a, b} {
		got, err := m.Get(context.Background(), st.ID)
		if err != nil || got.State != StateFailed || got.Detail != detailLeasePassed || got.Result != nil {
			t.Fatalf("A's run after its lease was lost: %+v, %v", got, err)
		}
	}
	if got, err := a.Get(context.Background(), next.ID); err != nil || got.State != StateRunning {
		t.Fatalf("B's run on A: %+v, %v", got, err)
	}
	b.Cancel(context.Background(), next.ID)
}
