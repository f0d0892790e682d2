package session

import (
	"context"
	"sync/atomic"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/hashing"
)

// Watched is a Service that tells a watcher of each turn it adds and of
// each session it closes: a session's MCP clients learn that its tools
// changed (SPEC §15; package mcp's Sessions.Changed), whoever changed it.
type Watched struct {
	*Service
	onChange atomic.Pointer[func(context.Context, hashing.Digest)]
}

// Watch returns s, watched.
func Watch(s *Service) *Watched { return &Watched{Service: s} }

// OnChange sets the watcher: f is called after each turn Turn adds and
// each session Close closes, with the session's id (nil: none).
func (w *Watched) OnChange(f func(ctx context.Context, id hashing.Digest)) {
	if f == nil {
		w.onChange.Store(nil)
		return
	}
	w.onChange.Store(&f)
}

// Turn is Service.Turn, then the watcher.
func (w *Watched) Turn(ctx context.Context, id hashing.Digest, words Words) (*Session, discover.Result, error) {
	sess, res, err := w.Service.Turn(ctx, id, words)
	if err == nil {
		w.changed(ctx, id)
	}
	return sess, res, err
}

// Close is Service.Close, then the watcher.
func (w *Watched) Close(ctx context.Context, id hashing.Digest) (*Session, error) {
	sess, err := w.Service.Close(ctx, id)
	if err == nil {
		w.changed(ctx, id)
	}
	return sess, err
}

func (w *Watched) changed(ctx context.Context, id hashing.Digest) {
	if f := w.onChange.Load(); f != nil {
		(*f)(ctx, id)
	}
}
