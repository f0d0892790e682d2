package loglevel

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestAtLeast(t *testing.T) {
	var b bytes.Buffer
	l := AtLeast(slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug})), slog.LevelWarn)
	l.Info("routine")
	l.With("k", "v").WithGroup("g").Warn("kept", "x", 1)
	l.Error("kept too")
	if got := b.String(); strings.Contains(got, "routine") || !strings.Contains(got, "kept") || !strings.Contains(got, "k=v") ||
		!strings.Contains(got, "g.x=1") || !strings.Contains(got, "kept too") {
		t.Fatalf("logged:\n%s", got)
	}
	AtLeast(nil, slog.LevelWarn).Error("discarded") // no panic
}
