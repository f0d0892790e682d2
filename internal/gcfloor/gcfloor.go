// Package gcfloor keeps a process's heap goal at least a floor above its
// live heap. The Go collector starts a cycle when the heap has grown by
// GOGC percent (100) of the live heap: a server whose live heap is a few
// megabytes (the built-in catalog's is about 3 MB) collects every few
// hundred requests, and on two cores each cycle costs milliseconds of
// CPU — measured, a sixth of a grounding's CPU. Start raises GOGC while
// the live heap is below the floor, so that a cycle starts only once
// about floor bytes were allocated, and leaves it at 100 once the live
// heap is above the floor (a registry of 100,000 entries): what it costs
// is memory, at most floor bytes of garbage more between cycles, never
// more than GOMEMLIMIT allows.
package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// DefaultFloor is the floor a server uses.
const DefaultFloor = 32 << 20

// maxPercent bounds GOGC while the live heap is tiny (at start).
const maxPercent = 10000

// Start keeps the heap goal at least floor bytes above the live heap,
// adjusting GOGC after every collection, until stop is called; stop
// leaves GOGC as Start found it. Start assumes nothing else sets GOGC
// meanwhile: a process started with GOGC set in its environment should
// not call it.
func Start(floor uint64) (stop func()) {
	t := &tuner{floor: floor, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	t.orig = debug.SetGCPercent(100)
	debug.SetGCPercent(t.orig)
	t.tune()
	t.arm()
	return func() {
		t.stopped.Store(true)
		debug.SetGCPercent(t.orig)
	}
}

type tuner struct {
	floor   uint64
	orig    int
	sample  []metrics.Sample
	stopped atomic.Bool
	last    int // the GOGC last set
}

// sentinel is what each cycle collects: large enough not to share a
// tiny-allocator block, whose cleanup could then wait for its neighbours.
type sentinel struct {
	_ [32]byte
	_ *int
}

// arm makes a sentinel that nothing references: the next collection frees
// it and runs its cleanup, which tunes and arms the next one.
func (t *tuner) arm() {
	runtime.AddCleanup(new(sentinel), func(t *tuner) {
		if t.stopped.Load() {
			return
		}
		t.tune()
		t.arm()
	}, t)
}

// tune sets GOGC so that the goal is max(2 × live, live + floor).
func (t *tuner) tune() {
	metrics.Read(t.sample)
	live := t.sample[0].Value.Uint64()
	pct := 100
	if live < t.floor {
		pct = maxPercent
		if live > 0 {
			pct = int(min(t.floor*100/live, maxPercent))
		}
		pct = max(pct, 100)
	}
	if pct != t.last && !t.stopped.Load() {
		debug.SetGCPercent(pct)
		t.last = pct
	}
}
