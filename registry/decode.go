package registry

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/groundgate/groundgate/hashing"
)

// Reading records: what an open checks, and what it leaves for later.
//
// An open checks, for every record of the version it reads, what is cheap
// and catches any change to the stored bytes: the record hashes to the
// digest its chunk lists (and the chunk to the digest the root lists), it
// decodes, and it holds the name the chunk lists. The record is then the
// one that was written, byte for byte.
//
// The entry's own check — the record is the canonical form of the entry
// it decodes to (the strict decoding of a written entry), the entry
// validates, and its identity is the one its chunk lists — costs a
// hundred times more (validation compiles contract clauses) and only
// tells a forged chunk or record, one re-hashed to look intact. It is
// made once per entry, on its first read by name or identity
// (Snapshot.Get, ByIdentity, Lookup), and for every record by Verify.
// docs/hashing.md, "What an open checks", says what that guarantees.

// decoded is one record read from the file: the entry (and, after a full
// check, its identity), or the problem that makes it corrupt.
type decoded struct {
	e       Entry
	id      hashing.Digest
	problem string
}

// readRecords hashes and decodes stored records on every core, and with
// full also makes each entry's own check. raws[i] is the stored value
// under ds[i] (nil when missing); the slices may point into the memory
// map, so the caller's transaction must outlive the call.
func readRecords(ctx context.Context, ds []hashing.Digest, raws [][]byte, full bool) ([]decoded, error) {
	out := make([]decoded, len(ds))
	err := forEach(ctx, len(ds), func(w *worker, i int) {
		out[i] = w.readRecord(ds[i], raws[i], full)
	})
	return out, err
}

// worker is one goroutine's state in forEach: its record reader (with its
// intern table) and its validator (with its contract checks).
type worker struct {
	rr recordReader
	v  validator
}

// forEach calls fn for 0 ≤ i < n on every core, each goroutine with its
// own worker. It stops early when ctx ends, and says so.
func forEach(ctx context.Context, n int, fn func(w *worker, i int)) error {
	const batch = 64 // indexes taken at a time
	var next atomic.Int64
	var wg sync.WaitGroup
	workers := min(runtime.GOMAXPROCS(0), max(n/batch, 1))
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var w worker
			for ctx.Err() == nil {
				lo := int(next.Add(batch) - batch)
				if lo >= n {
					return
				}
				for i := lo; i < min(lo+batch, n); i++ {
					fn(&w, i)
				}
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}

// readRecord returns the entry stored as raw under digest d, refusing
// bytes that no longer hash to their key. The entry holds no reference to
// raw.
func (w *worker) readRecord(d hashing.Digest, raw []byte, full bool) decoded {
	if raw == nil {
		return decoded{problem: fmt.Sprintf("record %s is missing", d)}
	}
	if got := hashing.SumSHA256(raw); got != d {
		return decoded{problem: fmt.Sprintf("record %s hashes to %s", d, got)}
	}
	e, err := w.rr.readRecord(raw)
	if err != nil {
		// The record reader reads the trading kinds; a tool entry's
		// layers are read by the strict decoder.
		if t, terr := decodeToolRecord(raw); terr == nil {
			e, err = t, nil
		}
	}
	if err != nil {
		return decoded{problem: fmt.Sprintf("record %s: %v", d, err)}
	}
	if !full {
		return decoded{e: e}
	}
	id, err := checkEntry(e, d, &w.v)
	if err != nil {
		return decoded{e: e, problem: err.Error()}
	}
	return decoded{e: e, id: id}
}

// checkEntry is an entry's own check (see above) against the digest of
// the record it was read from. It returns the entry's identity. v may be
// nil.
func checkEntry(e Entry, rec hashing.Digest, v *validator) (hashing.Digest, error) {
	raw, err := e.recordBytes()
	if err != nil {
		return hashing.Digest{}, fmt.Errorf("record %s: %w", rec, err)
	}
	// raw and the stored bytes hash alike, so they are the same bytes:
	// the stored record is canonical and held exactly this entry.
	if hashing.SumSHA256(raw) != rec {
		return hashing.Digest{}, fmt.Errorf("record %s is not the canonical form of the entry it holds", rec)
	}
	if err := e.validate(entryLabel(e), v); err != nil {
		return hashing.Digest{}, fmt.Errorf("record %s: %w", rec, err)
	}
	id, err := e.Identity()
	if err != nil {
		return hashing.Digest{}, fmt.Errorf("record %s: identity: %w", rec, err)
	}
	return id, nil
}
