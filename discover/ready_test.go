package discover

import (
	"context"
	"errors"
	"testing"

	"github.com/blevesearch/bleve/v2"

	"github.com/groundgate/groundgate/discover/relevance"
)

// Ready follows the text index of the current version without waiting
// for it: starting while it is built, its error if the build failed, nil
// once built, an error once the discoverer is closed.
func TestReady(t *testing.T) {
	s, _ := mustOpenStore(t)
	d := mustNew(t, s)
	x := d.cur
	// Ready waits for both indexes: the relevance one may finish after the
	// text one on a loaded machine.
	if _, err := x.text.wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := x.text.relevance(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := d.Ready(); err != nil {
		t.Fatalf("built: %v", err)
	}

	// An index whose text index is being built, then fails to build.
	failed := errors.New("disk full")
	release := make(chan struct{})
	building := &index{text: newTextIndex(func(context.Context) (bleve.Index, string, error) {
		<-release
		return nil, "", failed
	}, func(context.Context) (*relevance.Index, error) { return nil, nil }, false)}
	d.mu.Lock()
	d.cur = building
	d.mu.Unlock()
	if err := d.Ready(); !errors.Is(err, ErrStarting) {
		t.Fatalf("building: %v, want ErrStarting", err)
	}
	close(release)
	if _, err := building.text.wait(context.Background()); !errors.Is(err, failed) {
		t.Fatalf("wait: %v", err)
	}
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
