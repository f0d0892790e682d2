package session

import (
	"context"
	"fmt"
	"sync"

	"github.com/groundgate/groundgate/hashing"
)

// locker is an engine's lock across processes (pgstore.Store.Lock: a
// PostgreSQL advisory lock): held, key is no other holder's in any
// process sharing the engine, until unlock. An engine one process owns
// (bbolt) has none: the in-memory hold is enough there.
type locker interface {
	Lock(ctx context.Context, key []byte) (unlock func(), err error)
}

// lockKey is the key a session is locked under: "session/" and its id
// (pgstore.LockID hashes "groundgate/session/sha256:…").
func lockKey(id hashing.Digest) []byte { return []byte("session/" + id.String()) }

// Hold waits until no one else holds the session and holds it: the
// caller's read of the state, its decision, the forwarded call and
// AppendCall then see no other call of the session in between, so the
// state a decision read is the state the call's result is filed on. It
// returns the release (to call once), or ctx's error while waiting.
//
// Held in memory first (the calls of one process take turns there),
// then, when the engine is shared by several processes (store.Open of a
// locker), by the engine's lock as well: only a process's current holder
// of a session occupies one of the engine's lock connections, and a call
// of the session on another server waits for it.
func (s *Store) Hold(ctx context.Context, id hashing.Digest) (release func(), err error) {
	here, err := s.holdHere(ctx, id)
	if err != nil || s.lock == nil {
		return here, err
	}
	unlock, err := s.lock.Lock(ctx, lockKey(id))
	if err != nil {
		here()
		return nil, fmt.Errorf("session %s: hold: %w", id, err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			unlock()
			here()
		})
	}, nil
}

// holdHere is Hold within this process.
func (s *Store) holdHere(ctx context.Context, id hashing.Digest) (release func(), err error) {
	s.holds.mu.Lock()
	if s.holds.m == nil {
		s.holds.m = make(map[hashing.Digest]*hold)
	}
	h := s.holds.m[id]
	if h == nil {
		h = &hold{turn: make(chan struct{}, 1)}
		s.holds.m[id] = h
	}
	h.users++
	s.holds.mu.Unlock()
	select {
	case h.turn <- struct{}{}:
	case <-ctx.Done():
		s.holds.leave(id, h)
		return nil, ctx.Err()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			<-h.turn
			s.holds.leave(id, h)
		})
	}, nil
}

// holds are the sessions held or waited for.
type holds struct {
	mu sync.Mutex
	m  map[hashing.Digest]*hold
}

// hold is one session's: a token in turn while held, users counting
// holders and waiters (the entry goes when none is left).
type hold struct {
	turn  chan struct{}
	users int
}

func (hs *holds) leave(id hashing.Digest, h *hold) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if h.users--; h.users == 0 {
		delete(hs.m, id)
	}
}
