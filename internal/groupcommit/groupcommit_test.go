package groupcommit

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

var bucket = []byte("records")

func openCommitDB(t *testing.T) (*bolt.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket(bucket); return err }); err != nil {
		t.Fatal(err)
	}
	return db, path
}

// Records put while a commit is in progress share the next one: ten puts
// made while the writer lock is held take two transactions (the first
// put's, then the other nine), every put returns only after its record
// is committed, and each is there after the file is reopened.
func TestGroupCommitShares(t *testing.T) {
	db, path := openCommitDB(t)
	g := New(db, bucket)

	// Hold bbolt's writer lock: the first put's commit waits for it.
	hold, held := make(chan struct{}), make(chan struct{})
	go db.Update(func(*bolt.Tx) error { close(held); <-hold; return nil })
	<-held

	const n = 10
	var wg sync.WaitGroup
	errs := make([]error, n)
	returned := make(chan int, n)
	put := func(i int) {
		wg.Go(func() {
			errs[i] = g.Put(fmt.Appendf(nil, "k%d", i), fmt.Appendf(nil, "v%d", i))
			returned <- i
		})
	}
	put(0)
	waitQueue := func(want int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			g.mu.Lock()
			q, leading := len(g.queue), g.leading
			g.mu.Unlock()
			if q == want && leading {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("queue %d (leading %v), want %d", q, leading, want)
			}
		}
	}
	waitQueue(0) // the first put leads, its record taken for the blocked commit
	for i := 1; i < n; i++ {
		put(i)
	}
	waitQueue(n - 1)
	select {
	case i := <-returned:
		t.Fatalf("put %d returned before any commit", i)
	default:
	}
	close(hold)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	g.mu.Lock()
	commits := g.commits
	g.mu.Unlock()
	if commits != 2 {
		t.Errorf("%d commits for %d puts, want 2", commits, n)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *bolt.Tx) error {
		for i := range n {
			if v := tx.Bucket(bucket).Get(fmt.Appendf(nil, "k%d", i)); !bytes.Equal(v, fmt.Appendf(nil, "v%d", i)) {
				t.Errorf("k%d holds %q after reopening", i, v)
			}
		}
		return nil
	})
}

// One record that cannot be written fails alone: the others of its
// commit are stored, and a key already there keeps its bytes.
func TestGroupCommitIsolatesFailure(t *testing.T) {
	db, _ := openCommitDB(t)
	defer db.Close()
	g := New(db, bucket)
	if err := g.Put([]byte("old"), []byte("first")); err != nil {
		t.Fatal(err)
	}
	batch := []*pendingPut{
		{key: []byte("a"), val: []byte("1"), done: make(chan error, 1)},
		{key: nil, val: []byte("no key"), done: make(chan error, 1)}, // bbolt refuses an empty key
		{key: []byte("old"), val: []byte("second"), done: make(chan error, 1)},
		{key: []byte("b"), val: []byte("2"), done: make(chan error, 1)},
	}
	g.commit(batch)
	for i, want := range []error{nil, berrors.ErrKeyRequired, nil, nil} {
		if err := <-batch[i].done; !errors.Is(err, want) {
			t.Errorf("put %d: %v, want %v", i, err, want)
		}
	}
	db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		for k, want := range map[string]string{"a": "1", "b": "2", "old": "first"} {
			if v := b.Get([]byte(k)); string(v) != want {
				t.Errorf("%s holds %q, want %q", k, v, want)
			}
		}
		return nil
	})
}
