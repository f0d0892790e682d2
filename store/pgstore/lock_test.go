package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/groundgate/groundgate/store"
	"github.com/groundgate/groundgate/store/pgstore"
)

// advisory counts the advisory locks in the place's database, granted or
// waited for.
func (p place) advisory(t *testing.T, granted bool) int {
	t.Helper()
	var n int
	p.Scan(t, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted = $1
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`, []any{granted}, &n)
	return n
}

// settle waits up to 5 s for the place to hold granted and waiting
// advisory locks.
func (p place) settle(t *testing.T, granted, waiting int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		g, w := p.advisory(t, true), p.advisory(t, false)
		if g == granted && w == waiting {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("advisory locks: %d granted, %d waiting; want %d, %d", g, w, granted, waiting)
		}
	}
}

// unlocks are a test's locks, unlocked at its end (unlock twice does
// nothing), so that a test that fails while holding does not leave Close
// waiting for them.
type unlocks struct {
	mu  sync.Mutex
	all []func()
}

func (u *unlocks) add(f func()) func() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.all = append(u.all, f)
	return f
}

func (u *unlocks) run() {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, f := range u.all {
		f()
	}
}

// lockSoon locks key on s in a goroutine: the unlock arrives on the
// channel once it is held.
func lockSoon(t *testing.T, u *unlocks, s *pgstore.Store, key string) <-chan func() {
	got := make(chan func(), 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		unlock, err := s.Lock(ctx, []byte(key))
		if err != nil {
			t.Error(err)
			unlock = func() {}
		}
		got <- u.add(unlock)
	}()
	return got
}

func waits(t *testing.T, got <-chan func(), what string) {
	t.Helper()
	select {
	case unlock := <-got:
		unlock()
		t.Fatalf("%s did not wait", what)
	case <-time.After(150 * time.Millisecond):
	}
}

func takes(t *testing.T, got <-chan func(), what string) func() {
	t.Helper()
	select {
	case unlock := <-got:
		return unlock
	case <-time.After(10 * time.Second):
		t.Fatalf("%s still waits", what)
		return nil
	}
}

// TestLock: a key held by one process (a store) makes another wait,
// another key does not; a wait ends with its context and leaves no
// connection taken and no lock waiting; unlock lets the waiter in; a
// holder whose connection is killed loses the lock to the waiter.
func TestLock(t *testing.T) {
	ctx := context.Background()
	p := newPlace(t)
	a, b := p.open(t), p.open(t)
	defer a.Close()
	defer b.Close()
	u := &unlocks{}
	defer u.run()

	unlockA, err := a.Lock(ctx, []byte("k"))
	if err != nil {
		t.Fatal(err)
	}
	u.add(unlockA)
	p.settle(t, 1, 0)
	other, err := b.Lock(ctx, []byte("other"))
	if err != nil {
		t.Fatal(err)
	}
	other()

	// B gives up with its context: nothing of the wait is left.
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := b.Lock(short, []byte("k")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock of a held key, ctx ending: %v", err)
	}
	if n := b.LockStat().AcquiredConns(); n != 0 {
		t.Errorf("a cancelled wait keeps %d lock connections", n)
	}
	p.settle(t, 1, 0)

	// B waits, in another process and in A's own.
	fromB := lockSoon(t, u, b, "k")
	waits(t, fromB, "B's Lock of A's key")
	p.settle(t, 1, 1)
	fromA := lockSoon(t, u, a, "k")
	waits(t, fromA, "A's second Lock of its own key")
	unlockA()
	unlockA() // a second unlock does nothing
	// One waiter takes it, then the other.
	for waiting := 1; waiting >= 0; waiting-- {
		select {
		case f := <-fromB:
			p.settle(t, 1, waiting)
			f()
		case f := <-fromA:
			p.settle(t, 1, waiting)
			f()
		case <-time.After(10 * time.Second):
			t.Fatal("a waiter did not take the key after unlock")
		}
	}
	p.settle(t, 0, 0)
	if n := a.LockStat().AcquiredConns() + b.LockStat().AcquiredConns(); n != 0 {
		t.Errorf("%d lock connections still taken after every unlock", n)
	}

	// A holder killed: its connection ends, PostgreSQL frees the lock.
	unlockA, err = a.Lock(ctx, []byte("k"))
	if err != nil {
		t.Fatal(err)
	}
	u.add(unlockA)
	fromB = lockSoon(t, u, b, "k")
	waits(t, fromB, "B's Lock of A's key")
	if tag := p.exec(t, `SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`); tag.RowsAffected() != 1 {
		t.Fatalf("terminated %d holders, want 1", tag.RowsAffected())
	}
	unlockB := takes(t, fromB, "B, after A's connection was killed,")
	unlockA() // fails on the dead connection, which is dropped, not pooled
	if n := a.LockStat().AcquiredConns(); n != 0 {
		t.Errorf("A keeps %d lock connections after unlocking on a dead one", n)
	}
	unlockB()
	p.settle(t, 0, 0)
}

// TestLockPoolNoDeadlock: more holders than connections in either pool,
// each running transactions while it holds (as a session's call does),
// over two processes and eight keys shared between them: all finish, and
// no two are ever inside one key at once.
func TestLockPoolNoDeadlock(t *testing.T) {
	const holders, keys = 24, 8
	p := newPlace(t)
	var stores []*pgstore.Store
	for range 2 {
		s, err := pgstore.Open(context.Background(), pgstore.Config{DSN: p.DSN, Blobs: p.blobs(t), MaxConns: 2, LockConns: 2})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores = append(stores, s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var (
		mu     sync.Mutex
		inside = map[int]int{}
		wg     sync.WaitGroup
	)
	for i := range holders {
		wg.Go(func() {
			s, k := stores[i%2], i%keys
			unlock, err := s.Lock(ctx, fmt.Appendf(nil, "key %d", k))
			if err != nil {
				t.Error(err)
				return
			}
			defer unlock()
			mu.Lock()
			inside[k]++
			if inside[k] != 1 {
				t.Errorf("key %d held by %d at once", k, inside[k])
			}
			mu.Unlock()
			err = s.Update(ctx, func(tx store.Tx) error {
				return tx.PutValue("held", fmt.Appendf(nil, "%d", i), []byte("v"))
			})
			if err == nil {
				err = s.View(ctx, func(tx store.Tx) error { _, err := tx.Value("held", fmt.Appendf(nil, "%d", i)); return err })
			}
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			inside[k]--
			mu.Unlock()
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatal("holders did not finish in 60 s")
	}
	p.settle(t, 0, 0)
}
