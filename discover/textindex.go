package discover

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"

	"github.com/groundgate/groundgate/discover/relevance"
	"github.com/groundgate/groundgate/registry"
)

// textIndex is the keyword tier's bleve index of one registry version and
// the relevance tier's index of it. Only look-ups of terms of two or more
// words inside names and descriptions and the relevance tier read them, so
// they are made apart from the equality tiers' maps:
// at most once, in the background, either as soon as the version is
// indexed (a server, so that it is ready before a request needs it) or on
// the first look-up that needs it (one-shot commands, which usually never
// do). Made means built from the snapshot, or opened from a textDir when
// one holds it.
type textIndex struct {
	build    func(ctx context.Context) (bleve.Index, string, error)
	buildRel func(ctx context.Context) (*relevance.Index, error)
	ctx      context.Context
	stop     context.CancelFunc
	textOnce sync.Once     // starts the bleve index's build
	relOnce  sync.Once     // starts the relevance index's build
	ready    chan struct{} // closed when bl, dir and err are set
	relReady chan struct{} // closed when rel and relErr are set

	bl  bleve.Index
	dir string // the textDir subdirectory holding bl; "" in memory
	err error

	// The relevance tier's index, made beside the bleve index (not after
	// it: a keyword look-up does not wait for it).
	rel    *relevance.Index
	relErr error

	// building counts the eager builds not finished; the last one returns
	// the memory the builds freed to the OS (releaseBuild).
	building atomic.Int32
}

// newTextIndex returns the text index build makes (returning the index,
// the textDir subdirectory it lives in or "", or an error) and the
// relevance index buildRel makes; eager starts making them now.
func newTextIndex(build func(context.Context) (bleve.Index, string, error), buildRel func(context.Context) (*relevance.Index, error), eager bool) *textIndex {
	// Detached from any request: a build outlives the request that started
	// it, and only close stops it.
	ctx, stop := context.WithCancel(context.Background())
	t := &textIndex{build: build, buildRel: buildRel, ctx: ctx, stop: stop, ready: make(chan struct{}), relReady: make(chan struct{})}
	if eager {
		t.building.Store(2)
		t.start()
	}
	return t
}

// start starts making both indexes (those not started yet).
func (t *textIndex) start() {
	t.startText()
	t.startRel()
}

// startText and startRel start one index each: a look-up starts only the
// one it reads, so a one-shot command whose prompt needs the relevance
// tier does not make the bleve index too, nor the other way round.
func (t *textIndex) startText() {
	t.textOnce.Do(func() {
		go func() {
			defer close(t.ready)
			t.bl, t.dir, t.err = t.build(t.ctx)
			t.releaseBuild()
		}()
	})
}

func (t *textIndex) startRel() {
	t.relOnce.Do(func() {
		go func() {
			defer close(t.relReady)
			t.rel, t.relErr = t.buildRel(t.ctx)
			t.releaseBuild()
		}()
	})
}

// releaseMinDocs is the smallest relevance index after whose eager build
// releaseBuild returns memory: below it the garbage is a few megabytes,
// not worth a forced collection and the page faults that follow.
const releaseMinDocs = 50_000

// releaseBuild, at the end of the second of the eager builds (a server's,
// before it reports ready), returns to the OS the memory the builds used
// and no longer do: analysing 100,000 entries leaves as much garbage as
// the indexes hold, which the runtime would otherwise keep resident for
// minutes (issue 27: RSS at 100,000 entries). It costs one collection.
func (t *textIndex) releaseBuild() {
	// The Add orders the other build's writes before this read.
	if t.building.Add(-1) == 0 && t.rel != nil && t.rel.Len() >= releaseMinDocs {
		debug.FreeOSMemory()
	}
}

// wait returns the bleve index, making it first if nobody has asked yet.
func (t *textIndex) wait(ctx context.Context) (bleve.Index, error) {
	t.startText()
	select {
	case <-t.ready:
		return t.bl, t.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// relevance returns the relevance index, making it first if nobody has
// asked yet.
func (t *textIndex) relevance(ctx context.Context) (*relevance.Index, error) {
	t.startRel()
	select {
	case <-t.relReady:
		return t.rel, t.relErr
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// state reports, without waiting, nil once both indexes are made,
// ErrStarting while one is being made (starting them if they were not),
// or why one failed.
func (t *textIndex) state() error {
	t.start()
	for _, c := range []struct {
		ready <-chan struct{}
		err   *error
	}{{t.ready, &t.err}, {t.relReady, &t.relErr}} {
		select {
		case <-c.ready:
			if *c.err != nil {
				return *c.err
			}
		default:
			return ErrStarting
		}
	}
	return nil
}

// close stops a build in progress, waits for it and closes the index.
func (t *textIndex) close() {
	t.stop()
	t.textOnce.Do(func() { // never started: nothing to wait for
		t.err = errIndexClosed
		close(t.ready)
	})
	t.relOnce.Do(func() {
		t.relErr = errIndexClosed
		close(t.relReady)
	})
	<-t.ready
	<-t.relReady
	if t.bl != nil {
		t.bl.Close()
		t.bl = nil
	}
	t.rel = nil
	if t.err == nil {
		t.err = errIndexClosed
	}
	if t.relErr == nil {
		t.relErr = errIndexClosed
	}
}

// buildText makes a bleve index of every entry of caps that is not
// deprecated, at path ("" keeps it in memory).
func buildText(ctx context.Context, im mapping.IndexMapping, an *textAnalyzer, path string, caps []registry.Capability) (bleve.Index, error) {
	bl, err := bleve.NewUsing(path, im, scorch.Name, scorch.Name, nil)
	if err != nil {
		return nil, fmt.Errorf("discover: create text index: %w", err)
	}
	if err := fillText(ctx, bl, an, caps); err != nil {
		return nil, errors.Join(err, bl.Close())
	}
	return bl, nil
}

// fillText adds every entry of caps that is not deprecated to bl, in
// batches of batchSize.
func fillText(ctx context.Context, bl bleve.Index, an *textAnalyzer, caps []registry.Capability) error {
	batch := bl.NewBatch()
	for i := range caps {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if caps[i].Disc.Deprecated {
			continue
		}
		if err := batch.Index(caps[i].Name, textDocument(an, caps[i])); err != nil {
			return fmt.Errorf("discover: index %q: %w", caps[i].Name, err)
		}
		if batch.Size() >= batchSize {
			if err := bl.Batch(batch); err != nil {
				return fmt.Errorf("discover: index batch: %w", err)
			}
			batch = bl.NewBatch()
		}
	}
	if batch.Size() > 0 {
		if err := bl.Batch(batch); err != nil {
			return fmt.Errorf("discover: index batch: %w", err)
		}
	}
	return nil
}
