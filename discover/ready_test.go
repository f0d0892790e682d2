package discover

import (
	"context"
	"errors"
	"testing"
)

// Ready follows the text index of the current version without waiting
// for it: starting while it is built, its error if the build failed, nil
// once built, an error once the discoverer is closed.
func TestReady(t *testing.T) {
	s, _ := mustOpenStore(t)
	d := mustNew(t, s)
	x := d.cur
	if err := x.waitText(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := d.Ready(); err != nil {
		t.Fatalf("built: %v", err)
	}

	// The same index as it was before its text index was built, and as
	// it is when building it failed.
	building := &index{ready: make(chan struct{})}
	d.mu.Lock()
	d.cur = building
	d.mu.Unlock()
	if err := d.Ready(); !errors.Is(err, ErrStarting) {
		t.Fatalf("building: %v, want ErrStarting", err)
	}
	failed := errors.New("disk full")
	building.textErr = failed
	close(building.ready)
	if err := d.Ready(); !errors.Is(err, failed) {
		t.Fatalf("failed build: %v", err)
	}

	d.mu.Lock()
	d.cur = x
	d.mu.Unlock()
	d.Close()
	if err := d.Ready(); err == nil {
		t.Fatal("a closed discoverer is ready")
	}
}
