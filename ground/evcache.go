package ground

import (
	"context"
	"sync"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/hashing"
)

// evidenceCache keeps recently verified stored evidence by id. Records are
// content-addressed and never change, so a hit is exactly what a fresh,
// verified Lookup would return; it saves a bbolt read, a hash and a strict
// decode on every grounding of the same discovery. Eviction is FIFO over a
// fixed ring, so memory is bounded.
type evidenceCache struct {
	mu   sync.Mutex
	byID map[hashing.Digest]discover.Result
	ring []hashing.Digest
	next int
}

const evidenceCacheSize = 4096

func newEvidenceCache() *evidenceCache {
	return &evidenceCache{byID: make(map[hashing.Digest]discover.Result), ring: make([]hashing.Digest, evidenceCacheSize)}
}

func (c *evidenceCache) lookup(ctx context.Context, ev Evidence, id hashing.Digest) (discover.Result, error) {
	c.mu.Lock()
	r, ok := c.byID[id]
	c.mu.Unlock()
	if ok {
		return r, nil
	}
	r, err := ev.Lookup(ctx, id)
	if err != nil {
		return r, err
	}
	c.mu.Lock()
	if _, ok := c.byID[id]; !ok {
		if old := c.ring[c.next]; !old.IsZero() {
			delete(c.byID, old)
		}
		c.ring[c.next] = id
		c.next = (c.next + 1) % len(c.ring)
		c.byID[id] = r
	}
	c.mu.Unlock()
	return r, nil
}
