package boltstore

import (
	"context"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/store"
)

// pending is one Batch call waiting for its commit.
type pending struct {
	fn   func(store.Tx) error
	done chan error
}

// Batch implements store.Updater: the function waits for the commit in
// progress, if any, and then runs in one transaction with every function
// that arrived meanwhile — one fsync for all of them. It returns once its
// own writes are committed, or with the error that kept them out.
func (s *Store) Batch(ctx context.Context, fn func(store.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p := &pending{fn: fn, done: make(chan error, 1)}
	s.mu.Lock()
	s.queue = append(s.queue, p)
	lead := !s.leading
	s.leading = true
	s.mu.Unlock()
	if lead {
		s.lead()
	}
	return <-p.done
}

// lead commits what is queued, its caller's function among it; if more
// arrived meanwhile, a new goroutine leads the next commit, so that no
// caller commits others' writes for longer than its own took.
func (s *Store) lead() {
	s.mu.Lock()
	batch := s.queue
	s.queue = nil
	s.commits++
	s.mu.Unlock()
	s.commit(batch)
	s.mu.Lock()
	more := len(s.queue) > 0
	s.leading = more
	s.mu.Unlock()
	if more {
		go s.lead()
	}
}

// commit runs batch in one transaction; if that fails, each function
// alone, so that one writer's failure is not the others'.
func (s *Store) commit(batch []*pending) {
	run := func(batch []*pending) error {
		return engineErr(s.db.Update(func(btx *bolt.Tx) error {
			t := &tx{tx: btx}
			for _, p := range batch {
				if err := p.fn(t); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	err := run(batch)
	if err != nil && len(batch) > 1 {
		for _, p := range batch {
			p.done <- run([]*pending{p})
		}
		return
	}
	for _, p := range batch {
		p.done <- err
	}
}
