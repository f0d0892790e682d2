package session

import (
	"sync"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/store"
)

// maxCached bounds the sessions whose state is kept decoded.
const maxCached = 1024

// stateCache keeps each recently used session's state decoded, so that a
// call does not decode and re-encode the whole state it grows. A state is
// taken from it only when the bytes stored now hash to the digest the
// header records and to the cached state's: the stored bytes are still
// checked on every read, only their decoding is saved.
type stateCache struct {
	mu sync.Mutex
	m  map[hashing.Digest]*State // session id → its state
}

// read returns the session's state now (readState, from the cache when
// the stored bytes are the cached state's).
func (c *stateCache) read(tx store.Values, h header) (*State, error) {
	raw, err := stateBytes(tx, h)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	st := c.m[h.ID]
	c.mu.Unlock()
	if st != nil && st.Digest() == h.State && st.Len() == h.Results {
		return st, nil
	}
	if st, err = decodeStored(h, raw); err != nil {
		return nil, err
	}
	c.put(h.ID, st)
	return st, nil
}

// put remembers a session's state (one committed, or read and checked).
func (c *stateCache) put(id hashing.Digest, st *State) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCached {
		c.m = make(map[hashing.Digest]*State)
	}
	c.m[id] = st
}
