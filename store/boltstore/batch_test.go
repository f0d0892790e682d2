package boltstore

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/store"
)

// Batches made while a commit is in progress share the next one: ten
// made while bbolt's writer lock is held take two transactions (the
// first's, then the other nine), and none returns before its commit.
// (What internal/groupcommit's TestGroupCommitShares checked of it.)
func TestBatchShares(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "b.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hold, held := make(chan struct{}), make(chan struct{})
	go s.db.Update(func(*bolt.Tx) error { close(held); <-hold; return nil })
	<-held

	const n = 10
	sp := store.Space{Name: "b"}
	var wg sync.WaitGroup
	errs := make([]error, n)
	returned := make(chan int, n)
	batch := func(i int) {
		wg.Go(func() {
			v := fmt.Appendf(nil, "v%d", i)
			errs[i] = s.Batch(context.Background(), func(tx store.Tx) error { return tx.PutRecord(sp, hashing.SumSHA256(v), v) })
			returned <- i
		})
	}
	waitQueue := func(want int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			s.mu.Lock()
			q, leading := len(s.queue), s.leading
			s.mu.Unlock()
			if q == want && leading {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("queue %d (leading %v), want %d", q, leading, want)
			}
		}
	}
	batch(0)
	waitQueue(0) // the first leads, its function taken for the blocked commit
	for i := 1; i < n; i++ {
		batch(i)
	}
	waitQueue(n - 1)
	select {
	case i := <-returned:
		t.Fatalf("batch %d returned before any commit", i)
	default:
	}
	close(hold)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
	s.mu.Lock()
	commits := s.commits
	s.mu.Unlock()
	if commits != 2 {
		t.Errorf("%d commits for %d batches, want 2", commits, n)
	}
}
