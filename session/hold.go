package session

import (
	"context"
	"sync"

	"github.com/groundgate/groundgate/hashing"
)

// Hold waits until no one else holds the session and holds it: the
// caller's read of the state, its decision, the forwarded call and
// AppendCall then see no other call of the session in between, so the
// state a decision read is the state the call's result is filed on. It
// returns the release (to call once), or ctx's error while waiting. Hold
// is in memory, per Store: one process serves a session.
func (s *Store) Hold(ctx context.Context, id hashing.Digest) (release func(), err error) {
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
