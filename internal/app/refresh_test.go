package app

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRefreshSharedAfterArrival: a caller that arrives while a refresh
// runs does not take that refresh's answer (it may have read the
// pointers before the write the caller must see): it waits for the next
// one, which every caller that arrived meanwhile shares.
func TestRefreshSharedAfterArrival(t *testing.T) {
	var runs atomic.Int32
	started := make(chan int32, 10)
	release := make(chan struct{})
	r := &refresher{do: func(context.Context) error {
		n := runs.Add(1)
		started <- n
		<-release
		return nil
	}}
	ctx := context.Background()
	first := make(chan error, 1)
	go func() { first <- r.Sync(ctx) }()
	if n := <-started; n != 1 {
		t.Fatalf("run %d started first", n)
	}
	// Five callers arrive while run 1 is under way.
	var wg sync.WaitGroup
	var late atomic.Int32
	for range 5 {
		wg.Go(func() {
			if err := r.Sync(ctx); err != nil {
				t.Error(err)
			}
			late.Add(1)
		})
	}
	time.Sleep(200 * time.Millisecond) // let them queue behind run 1
	release <- struct{}{}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if n := <-started; n != 2 {
		t.Fatalf("run %d started second", n)
	}
	if late.Load() != 0 {
		t.Fatal("a caller that arrived during run 1 returned with run 1's answer")
	}
	close(release) // run 2, and a run 3 for a caller the scheduler held back past run 2's start
	wg.Wait()
	if n := runs.Load(); n > 3 {
		t.Errorf("%d runs for 6 callers, want 2 (the late five share one; 3 on a slow machine)", n)
	}
}
