package runs

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"
)

// handoff is a Queue within one process: EnqueueFuzzRun hands the run id
// to the test (a worker's place), and AwaitTaken answers what the test
// says (nil once "taken", or the queue's giving up).
type handoff struct {
	ids   chan uint64
	taken chan error
}

func newHandoff() *handoff {
	return &handoff{ids: make(chan uint64, 1), taken: make(chan error, 1)}
}

func (h *handoff) EnqueueFuzzRun(_ context.Context, id uint64) (int64, error) {
	h.ids <- id
	return int64(id), nil
}

func (h *handoff) AwaitTaken(ctx context.Context, _ int64, _ time.Duration) error {
	select {
	case err := <-h.taken:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// queuedRig is a rig with a server's Manager that queues its runs on a
// handoff.
func queuedRig(t *testing.T) (*rig, *handoff, *Manager) {
	t.Helper()
	r, q := newRig(t), newHandoff()
	opt := sharedOptions("server")
	opt.Queue = q
	return r, q, r.manager(opt)
}

// A queued run is stored running with no owner and progress 0, shown so
// by every replica; a worker's Manager adopts it and runs it through the
// same loop as Start (the report is the reference's, byte for byte); a
// second adoption is refused, the run no longer waiting.
func TestQueuedRunAdopted(t *testing.T) {
	t.Parallel()
	r, q, srv := queuedRig(t)
	worker := r.manager(sharedOptions("worker"))

	st, err := srv.Start(context.Background(), Request{Seconds: 600, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if st.State != StateRunning || st.Detail != detailQueued || st.Progress.Total != 0 || <-q.ids != st.ID {
		t.Fatalf("queued: %+v", st)
	}
	rec, _, err := load(context.Background(), r.store.Engine(), st.ID, false)
	if err != nil || rec.Owner != "" || rec.Lease == nil {
		t.Fatalf("stored queued: %+v, %v", rec, err)
	}
	if got, err := worker.Get(context.Background(), st.ID); err != nil || got.State != StateRunning {
		t.Fatalf("the queued run on another replica: %+v, %v", got, err)
	}
	q.taken <- nil
	if err := worker.Adopt(context.Background(), st.ID); err != nil {
		t.Fatal(err)
	}
	got, err := srv.Get(context.Background(), st.ID)
	if err != nil || got.State != StateDone || got.Detail != "" || !bytes.Equal(got.Result, r.reference(3)) {
		t.Fatalf("the adopted run, read on the server: %+v, %v", got.Run, err)
	}
	rec, _, _ = load(context.Background(), r.store.Engine(), st.ID, false)
	if rec.Owner != "worker" || rec.Lease != nil {
		t.Fatalf("stored after the worker ran it: owner %q, lease %v", rec.Owner, rec.Lease)
	}
	if err := worker.Adopt(context.Background(), st.ID); !errors.Is(err, ErrNotQueued) {
		t.Fatalf("adopting an ended run: %v", err)
	}
}

// A run no worker takes is failed with detailNoWorker, and a worker that
// turns up later cannot adopt it; a run cancelled while queued is
// adopted cancelled.
func TestQueuedRunNotTaken(t *testing.T) {
	r, q, srv := queuedRig(t)
	other := r.manager(sharedOptions("other"))
	worker := r.manager(sharedOptions("worker"))

	st, err := srv.Start(context.Background(), Request{Seconds: 600, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	<-q.ids
	q.taken <- errors.New("no worker")
	got := wait(t, srv, st.ID)
	if got.State != StateFailed || got.Detail != detailNoWorker || got.Finished == nil {
		t.Fatalf("an untaken run: %+v", got)
	}
	if err := worker.Adopt(context.Background(), st.ID); !errors.Is(err, ErrNotQueued) {
		t.Fatalf("adopting an untaken run: %v", err)
	}

	st, err = srv.Start(context.Background(), Request{Seconds: 600, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	<-q.ids
	// Cancel polls until the run ends; the worker adopts it meanwhile.
	done := make(chan Status, 1)
	go func() {
		st, err := other.Cancel(context.Background(), st.ID)
		if err != nil {
			t.Error(err)
		}
		done <- st
	}()
	for {
		rec, _, err := load(context.Background(), r.store.Engine(), st.ID, false)
		if err != nil {
			t.Fatal(err)
		}
		if rec.CancelRequested {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	q.taken <- nil
	if err := worker.Adopt(context.Background(), st.ID); err != nil {
		t.Fatal(err)
	}
	if got := <-done; got.State != StateCancelled || got.Detail != errCancelled.Error() {
		t.Fatalf("a run cancelled while queued: %+v", got.Run)
	}
}
