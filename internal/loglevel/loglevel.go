// Package loglevel passes on a library's log lines from a level up: the
// libraries groundgate embeds (the MCP SDK, River) log their routine at
// info, which groundgate's own logs already say better.
package loglevel

import (
	"context"
	"log/slog"
)

// AtLeast is l passing on only the records of level min and above; a nil
// l discards.
func AtLeast(l *slog.Logger, min slog.Level) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(handler{l.Handler(), min})
}

type handler struct {
	slog.Handler
	min slog.Level
}

func (h handler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h handler) WithAttrs(as []slog.Attr) slog.Handler {
	return handler{h.Handler.WithAttrs(as), h.min}
}

func (h handler) WithGroup(g string) slog.Handler { return handler{h.Handler.WithGroup(g), h.min} }
