package session

import (
	"context"
	"sync/atomic"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/hashing"
)

// Watched is a Service that tells a watcher of each turn it adds: a
// session's MCP clients learn that its tools changed (SPEC §15; package
// mcp's Sessions.Changed) whoever added the turn.
type Watched struct {
	*Service
	onTurn atomic.Pointer[func(context.Context, hashing.Digest)]
}

// Watch returns s, watched.
func Watch(s *Service) *Watched { return &Watched{Service: s} }

// OnTurn sets the watcher: f is called after each turn Turn adds, with
// the session's id (nil: none).
func (w *Watched) OnTurn(f func(ctx context.Context, id hashing.Digest)) {
	if f == nil {
		w.onTurn.Store(nil)
		return
	}
	w.onTurn.Store(&f)
}

// Turn is Service.Turn, then the watcher.
func (w *Watched) Turn(ctx context.Context, id hashing.Digest, words Words) (*Session, discover.Result, error) {
	sess, res, err := w.Service.Turn(ctx, id, words)
	if err == nil {
		if f := w.onTurn.Load(); f != nil {
			(*f)(ctx, id)
		}
	}
	return sess, res, err
}
