package registry

import (
	"crypto/sha256"

	"github.com/groundgate/groundgate/hashing"
)

// ContentDigest is a digest of everything the version holds: each entry's
// name and the digest of its stored record (all four layers, discovery
// included), in name order. Two snapshots with one ContentDigest hold the
// same entries byte for byte. It is no pinned hash and nothing hashed
// depends on it: caches derived from a version (the discovery text index
// kept on disk) compare it to know when they are stale. The registry hash
// cannot serve: it leaves the discovery layer out.
func (s *Snapshot) ContentDigest() hashing.Digest {
	h := sha256.New()
	for i := range s.caps {
		h.Write([]byte(s.caps[i].Name))
		h.Write([]byte{0})
		h.Write([]byte(s.recs[i].String()))
		h.Write([]byte{'\n'})
	}
	var sum [32]byte
	return hashing.New(hashing.SHA256, h.Sum(sum[:0]))
}
