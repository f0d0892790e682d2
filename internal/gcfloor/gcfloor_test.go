package gcfloor_test

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/groundgate/groundgate/internal/gcfloor"
)

var sink []byte

// churn allocates n bytes of garbage, 8 KiB at a time.
func churn(n int) {
	for range n / 8192 {
		sink = make([]byte, 8192)
	}
	sink = nil
}

// cycles counts the collections churning n bytes takes.
func cycles(n int) uint32 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	before := m.NumGC
	churn(n)
	runtime.ReadMemStats(&m)
	return m.NumGC - before
}

// gogc is GOGC now.
func gogc() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// With a floor far above this test's live heap (a few MB), churning 64 MB
// takes a few collections instead of dozens; stop puts GOGC back. With a
// floor below the live heap, GOGC stays 100. (Not parallel: GOGC is the
// process's.)
func TestFloor(t *testing.T) {
	runtime.GC()
	without := cycles(64 << 20)
	if gogc() != 100 {
		t.Fatalf("GOGC %d before Start", gogc())
	}

	stop := gcfloor.Start(256 << 20)
	runtime.GC() // a collection tunes: the first one after Start
	runtime.GC()
	if p := gogc(); p <= 100 {
		t.Errorf("GOGC %d under a 256 MB floor, want it raised", p)
	}
	with := cycles(64 << 20)
	stop()
	if p := gogc(); p != 100 {
		t.Errorf("GOGC %d after stop, want 100", p)
	}
	t.Logf("collections churning 64 MB: %d without a floor, %d with", without, with)
	if with*4 > without {
		t.Errorf("%d collections with the floor, %d without: want at most a quarter", with, without)
	}

	// A live heap above the floor: GOGC stays 100.
	live := make([]byte, 8<<20)
	for i := range live {
		live[i] = 1
	}
	stop = gcfloor.Start(1 << 20)
	runtime.GC()
	runtime.GC()
	if p := gogc(); p != 100 {
		t.Errorf("GOGC %d with the live heap above the floor, want 100", p)
	}
	stop()
	runtime.KeepAlive(live)
}

// GOGC follows the live heap, collection after collection: raised while
// it is below the floor, 100 once it is above, raised again when it
// shrinks.
func TestFollowsLiveHeap(t *testing.T) {
	runtime.GC()
	stop := gcfloor.Start(16 << 20)
	defer stop()
	until := func(what string, ok func(int) bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(gogc()); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("GOGC %d: never %s", gogc(), what)
			}
			runtime.GC() // the cleanup that tunes runs after a collection
		}
	}
	until("raised at start", func(p int) bool { return p > 100 })
	live := make([]byte, 24<<20)
	for i := range live {
		live[i] = 1
	}
	until("100 with 24 MB live", func(p int) bool { return p == 100 })
	runtime.KeepAlive(live)
	live = nil
	until("raised again", func(p int) bool { return p > 100 })
}
