package registry

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/groundgate/groundgate/hashing"
)

// decoded is one record read from the file: the entry and its identity,
// or the problem that makes it corrupt.
type decoded struct {
	e       Entry
	id      hashing.Digest
	problem string
}

// decodeRecords checks and decodes stored records on every core: at
// 100,000 entries decoding them (hash, strict JSON, validation, identity)
// is what a cold read of a version and a verification cost. raws[i] is
// the stored value under ds[i] (nil when missing); the slices may point
// into the memory map, so the caller's transaction must outlive the call.
func decodeRecords(ctx context.Context, ds []hashing.Digest, raws [][]byte) ([]decoded, error) {
	out := make([]decoded, len(ds))
	var next atomic.Int64
	var wg sync.WaitGroup
	workers := min(runtime.GOMAXPROCS(0), max(len(ds)/64, 1))
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(ds) || ctx.Err() != nil {
					return
				}
				out[i] = decodeRecord(ds[i], raws[i])
			}
		}()
	}
	wg.Wait()
	return out, ctx.Err()
}

// decodeRecord returns the entry stored as raw under digest d, refusing
// bytes that no longer hash to their key. The decoder copies what it
// keeps out of raw.
func decodeRecord(d hashing.Digest, raw []byte) decoded {
	if raw == nil {
		return decoded{problem: fmt.Sprintf("record %s is missing", d)}
	}
	if got := hashing.SumSHA256(raw); got != d {
		return decoded{problem: fmt.Sprintf("record %s hashes to %s", d, got)}
	}
	e, err := DecodeEntry(raw, d.String())
	if err != nil {
		return decoded{problem: fmt.Sprintf("record %s: %v", d, err)}
	}
	id, err := e.Identity()
	if err != nil {
		return decoded{problem: fmt.Sprintf("record %s: identity: %v", d, err)}
	}
	return decoded{e: e, id: id}
}
