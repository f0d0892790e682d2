package logbuf_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/groundgate/groundgate/internal/logbuf"
)

// sink is a concurrency-safe buffer that counts the writes it receives.
type sink struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (s *sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return s.b.Write(p)
}

func (s *sink) state() (string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String(), s.writes
}

// Lines wait in the Writer (an hour's interval: the timer never fires in
// this test) until Flush or Close, then leave in one write, in order;
// after Close, writes go straight through.
func TestHoldsUntilFlushOrClose(t *testing.T) {
	var s sink
	w := logbuf.New(&s, time.Hour)
	for i := range 3 {
		fmt.Fprintf(w, "line %d\n", i)
	}
	if got, n := s.state(); got != "" || n != 0 {
		t.Fatalf("before Flush: %d writes of %q, want none", n, got)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, n := s.state(); got != "line 0\nline 1\nline 2\n" || n != 1 {
		t.Fatalf("after Flush: %d writes of %q, want the three lines in one", n, got)
	}
	fmt.Fprintf(w, "line 3\n")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, n := s.state(); !strings.HasSuffix(got, "line 3\n") || n != 2 {
		t.Fatalf("after Close: %d writes, %q", n, got)
	}
	fmt.Fprintf(w, "line 4\n")
	if got, n := s.state(); !strings.HasSuffix(got, "line 4\n") || n != 3 {
		t.Fatalf("a write after Close was held: %d writes, %q", n, got)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// The timer writes a held line out by itself.
func TestTimerFlushes(t *testing.T) {
	var s sink
	w := logbuf.New(&s, time.Millisecond)
	defer w.Close()
	fmt.Fprintf(w, "soon\n")
	waitFor(t, &s, "soon\n")
	// It is armed again by the next line.
	fmt.Fprintf(w, "later\n")
	waitFor(t, &s, "soon\nlater\n")
}

// waitFor polls s until it holds want.
func waitFor(t *testing.T, s *sink, want string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if got, _ := s.state(); got == want {
			return
		}
		if time.Now().After(deadline) {
			got, _ := s.state()
			t.Fatalf("the timer never wrote the lines out: %q, want %q", got, want)
		}
	}
}

// A full buffer is written out without waiting, in order, and a line
// larger than the buffer goes straight through after what was held.
func TestFullBuffer(t *testing.T) {
	var s sink
	w := logbuf.New(&s, time.Hour)
	line := strings.Repeat("x", 1000) + "\n"
	var want strings.Builder
	for range logbuf.MaxBuffered/len(line) + 1 {
		w.Write([]byte(line))
		want.WriteString(line)
	}
	if got, n := s.state(); n != 1 || !strings.HasPrefix(want.String(), got) || len(got) > logbuf.MaxBuffered {
		t.Fatalf("after %d bytes: %d writes, %d bytes out", want.Len(), n, len(got))
	}
	big := strings.Repeat("y", logbuf.MaxBuffered+1) + "\n"
	w.Write([]byte(big))
	want.WriteString(big)
	if got, _ := s.state(); got != want.String() {
		t.Fatalf("a line larger than the buffer: %d bytes out, want %d", len(got), want.Len())
	}
	w.Close()
}

// Through Handler, an Info record waits; a Warn record is written at once
// with everything before it.
func TestHandlerWritesWarningsThrough(t *testing.T) {
	var s sink
	w := logbuf.New(&s, time.Hour)
	log := slog.New(logbuf.Handler(slog.NewTextHandler(w, nil), w)).With("server", "test")
	log.Info("request")
	if got, _ := s.state(); got != "" {
		t.Fatalf("an Info record was written at once: %q", got)
	}
	log.WithGroup("g").Warn("busy", "n", 1)
	got, _ := s.state()
	if !strings.Contains(got, "msg=request server=test\n") || !strings.HasSuffix(got, "msg=busy server=test g.n=1\n") {
		t.Fatalf("after a Warn record: %q", got)
	}
	log.LogAttrs(context.Background(), slog.LevelError, "failed")
	if got, _ := s.state(); !strings.HasSuffix(got, "msg=failed server=test\n") {
		t.Fatalf("an Error record was held: %q", got)
	}
	w.Close()
}

// Concurrent writers: every line arrives whole, once, and each writer's
// lines in the order it wrote them.
func TestConcurrentLines(t *testing.T) {
	var s sink
	w := logbuf.New(&s, time.Millisecond)
	const writers, lines = 8, 2000
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range lines {
				fmt.Fprintf(w, "writer %d line %d %s\n", g, i, strings.Repeat("z", i%100))
			}
		})
	}
	wg.Wait()
	w.Close()
	got, _ := s.state()
	seen := map[string]bool{}
	next := make([]int, writers)
	for l := range strings.SplitSeq(strings.TrimSuffix(got, "\n"), "\n") {
		var g, i int
		var pad string
		if _, err := fmt.Sscanf(l, "writer %d line %d %s", &g, &i, &pad); err != nil && i%100 != 0 {
			t.Fatalf("torn line %q: %v", l, err)
		}
		if len(pad) != i%100 || seen[l] {
			t.Fatalf("line %q torn or repeated", l)
		}
		if next[g] != i {
			t.Fatalf("writer %d: line %d arrived where line %d should", g, i, next[g])
		}
		next[g]++
		seen[l] = true
	}
	if len(seen) != writers*lines {
		t.Fatalf("%d lines arrived, want %d", len(seen), writers*lines)
	}
}
