package registry

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/groundgate/groundgate/hashing"
)

// Capability is a stored entry with its identity, as the REST API and the
// CLI print it.
type Capability struct {
	Entry
	Identity hashing.Digest `json:"identity"`
}

// Change describes the mutation that produced a version.
type Change struct {
	// Op is "seed" for the catalog a new database starts with, "put" for an
	// added or changed entry.
	Op string `json:"op"`
	// Names lists the entries the mutation added or changed, sorted.
	Names []string `json:"names"`
}

// VersionInfo is the header of one registry version.
type VersionInfo struct {
	Version  uint64         `json:"version"`
	Registry hashing.Digest `json:"registry"`
	Parent   uint64         `json:"parent"`
	Change   Change         `json:"change"`
	// Created is informational only: nothing hashed depends on it.
	Created time.Time `json:"created"`
	Count   int       `json:"count"`
}

// Snapshot is one registry version, immutable once built. The current
// snapshot is held in memory; past ones are read from the database.
type Snapshot struct {
	Info       VersionInfo
	caps       []Capability // sorted by name
	byName     map[string]int
	byIdentity map[hashing.Digest]int

	// What the next commit needs to share structure with this version,
	// parallel to caps: each entry's record digest and bucket, and the
	// version's chunk digests (nil when it was stored as a legacy
	// manifest, or for the empty registry before its first commit).
	recs   []hashing.Digest
	bkts   []uint8
	chunks *root
	share  *shareIndex
}

// shareIndex finds, in a snapshot, what another version shares with it:
// the entries of a bucket, and an entry by record digest. It is built on
// first use: commits never need it, reading an old version does.
type shareIndex struct {
	once     sync.Once
	byRecord map[hashing.Digest]int
	byBucket [NumBuckets][]int
}

func (s *Snapshot) shared() *shareIndex {
	x := s.share
	x.once.Do(func() {
		x.byRecord = make(map[hashing.Digest]int, len(s.recs))
		for i, d := range s.recs {
			x.byRecord[d] = i
			x.byBucket[s.bkts[i]] = append(x.byBucket[s.bkts[i]], i)
		}
	})
	return x
}

// item is one entry as a snapshot is built from it.
type item struct {
	cap Capability
	rec hashing.Digest
	bkt uint8
}

func newSnapshot(info VersionInfo, items []item, chunks *root) *Snapshot {
	// Sort a permutation, not the items: they are large to swap.
	order := make([]int32, len(items))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return strings.Compare(items[a].cap.Name, items[b].cap.Name) })
	s := &Snapshot{
		Info:       info,
		caps:       make([]Capability, len(items)),
		recs:       make([]hashing.Digest, len(items)),
		bkts:       make([]uint8, len(items)),
		byName:     make(map[string]int, len(items)),
		byIdentity: make(map[hashing.Digest]int, len(items)),
		chunks:     chunks,
		share:      &shareIndex{},
	}
	for i, o := range order {
		it := &items[o]
		s.caps[i], s.recs[i], s.bkts[i] = it.cap, it.rec, it.bkt
		s.byName[it.cap.Name] = i
		s.byIdentity[it.cap.Identity] = i
	}
	s.Info.Count = len(items)
	return s
}

// with returns the snapshot that follows s when the changed entries are
// put over it. When every changed name already exists (the usual edit),
// positions do not move: the name index and the bucket list are shared
// with s, and the identity index too when no identity changed; otherwise
// everything is rebuilt.
func (s *Snapshot) with(info VersionInfo, changed []item) *Snapshot {
	for _, it := range changed {
		if _, ok := s.byName[it.cap.Name]; !ok {
			items := s.items()
			for _, it := range changed {
				if i, ok := s.byName[it.cap.Name]; ok {
					items[i] = it
				} else {
					items = append(items, it)
				}
			}
			return newSnapshot(info, items, nil)
		}
	}
	n := &Snapshot{
		Info:       info,
		caps:       slices.Clone(s.caps),
		recs:       slices.Clone(s.recs),
		bkts:       s.bkts,
		byName:     s.byName,
		byIdentity: s.byIdentity,
		share:      &shareIndex{},
	}
	n.Info.Count = len(n.caps)
	sameIDs := true
	for _, it := range changed {
		i := s.byName[it.cap.Name]
		sameIDs = sameIDs && s.caps[i].Identity == it.cap.Identity
		n.caps[i], n.recs[i] = it.cap, it.rec
	}
	if !sameIDs {
		// Every old identity out before any new one in: two entries may
		// swap identities.
		n.byIdentity = maps.Clone(s.byIdentity)
		for _, it := range changed {
			delete(n.byIdentity, s.caps[s.byName[it.cap.Name]].Identity)
		}
		for _, it := range changed {
			n.byIdentity[it.cap.Identity] = s.byName[it.cap.Name]
		}
	}
	return n
}

// items returns the snapshot's entries in name order, as a fresh slice.
func (s *Snapshot) items() []item {
	out := make([]item, len(s.caps))
	for i := range s.caps {
		out[i] = item{cap: s.caps[i], rec: s.recs[i], bkt: s.bkts[i]}
	}
	return out
}

// Version returns the snapshot's version number.
func (s *Snapshot) Version() uint64 { return s.Info.Version }

// Registry returns the snapshot's registry hash.
func (s *Snapshot) Registry() hashing.Digest { return s.Info.Registry }

// Capabilities returns the entries sorted by name. The slice is shared:
// callers must not modify it.
func (s *Snapshot) Capabilities() []Capability { return s.caps }

// Get returns a copy of the capability with the given canonical name.
func (s *Snapshot) Get(name string) (Capability, bool) {
	i, ok := s.byName[name]
	if !ok {
		return Capability{}, false
	}
	return s.clone(i), true
}

// ByIdentity returns a copy of the capability with the given identity.
func (s *Snapshot) ByIdentity(id hashing.Digest) (Capability, bool) {
	i, ok := s.byIdentity[id]
	if !ok {
		return Capability{}, false
	}
	return s.clone(i), true
}

// Has reports whether an entry with the identity exists, without copying.
func (s *Snapshot) Has(id hashing.Digest) bool {
	_, ok := s.byIdentity[id]
	return ok
}

// clone keeps the snapshot immutable: callers get entries they may edit.
func (s *Snapshot) clone(i int) Capability {
	return Capability{Entry: s.caps[i].Entry.Clone(), Identity: s.caps[i].Identity}
}

// Identities returns every identity, in name order.
func (s *Snapshot) Identities() []hashing.Digest {
	ids := make([]hashing.Digest, len(s.caps))
	for i, c := range s.caps {
		ids[i] = c.Identity
	}
	return ids
}

// Export is the body of GET /v1/registry and `groundgate registry export`.
type Export struct {
	Version      uint64         `json:"version"`
	Registry     hashing.Digest `json:"registry"`
	Capabilities []Capability   `json:"capabilities"`
}

// Export returns the snapshot in its published shape.
func (s *Snapshot) Export() Export {
	caps := s.caps
	if len(caps) == 0 {
		caps = []Capability{}
	}
	return Export{Version: s.Info.Version, Registry: s.Info.Registry, Capabilities: caps}
}
