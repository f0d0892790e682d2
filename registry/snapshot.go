package registry

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/hashing"
)

// Capability is a stored entry with its identity, as the REST API and the
// CLI print it.
type Capability struct {
	Entry
	Identity hashing.Digest `json:"identity"`
}

// MarshalJSON writes the entry's JSON (Entry.MarshalJSON) with its
// identity. Without it, Entry's method, promoted, would leave the identity
// out.
func (c Capability) MarshalJSON() ([]byte, error) {
	if w, ok := c.Entry.wire().(toolEntryJSON); ok {
		return json.Marshal(struct {
			toolEntryJSON
			Identity hashing.Digest `json:"identity"`
		}{w, c.Identity})
	}
	return json.Marshal(struct {
		plainEntry
		Identity hashing.Digest `json:"identity"`
	}{plainEntry(c.Entry), c.Identity})
}

// UnmarshalJSON reads what MarshalJSON writes, a tool entry's shape or the
// others', by the project's rules (hashing.DecodePart: exact names,
// unknown members refused; the caller's decoder has checked the document
// as a whole). Without it, encoding/json v2 (which the strict decoder is)
// would refuse to inline an embedded Entry that has a MarshalJSON method.
func (c *Capability) UnmarshalJSON(data []byte) error {
	var k struct {
		Kind Kind `json:"kind"`
	}
	if err := hashing.DecodePartFields(data, &k); err != nil {
		return err
	}
	if k.Kind == KindTool {
		var w struct {
			toolEntryJSON
			Identity hashing.Digest `json:"identity"`
		}
		if err := hashing.DecodePart(data, &w); err != nil {
			return err
		}
		if string(w.Alg.OutputSchema) == "null" {
			w.Alg.OutputSchema = nil
		}
		*c = Capability{Entry: Entry{Name: w.Name, Kind: w.Kind, Disc: w.Disc, Tool: &ToolLayers{Sem: w.Sem, Alg: w.Alg, Impl: w.Impl}}, Identity: w.Identity}
		return nil
	}
	var w struct {
		plainEntry
		Identity hashing.Digest `json:"identity"`
	}
	if err := hashing.DecodePart(data, &w); err != nil {
		return err
	}
	*c = Capability{Entry: Entry(w.plainEntry), Identity: w.Identity}
	return nil
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
	// parallel to caps: each entry's record digest and bucket, the
	// version's chunk digests (nil when it was stored as a legacy
	// manifest) and its group digests (nil unless it was stored in
	// format 3). The empty registry has all-zero ones.
	recs   []hashing.Digest
	bkts   []uint8
	chunks *root
	groups *groupRoot
	share  *shareIndex

	// checks, parallel to caps, holds each entry's own check (decode.go),
	// made on first read by name or identity. Entries shared between
	// versions share it.
	checks    []*entryCheck
	log       *slog.Logger    // told when an entry fails its check; may be nil
	contracts *contract.Cache // compiles contracts for the checks; may be nil
}

// entryCheck is the outcome of one entry's own check.
type entryCheck struct{ state atomic.Uint32 }

const (
	unchecked uint32 = iota
	sound
	unsound
)

// checked returns n checks already passed: the entries a commit writes
// were validated and their identities computed from them.
func checked(n int) []entryCheck {
	cs := make([]entryCheck, n)
	for i := range cs {
		cs[i].state.Store(sound)
	}
	return cs
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
	chk *entryCheck
}

func newSnapshot(info VersionInfo, items []item, chunks *root) *Snapshot {
	// Sort a permutation, not the items: they are large to swap.
	order := make([]int32, len(items))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return strings.Compare(items[a].cap.Name, items[b].cap.Name) })
	caps := make([]Capability, len(items))
	recs := make([]hashing.Digest, len(items))
	bkts := make([]uint8, len(items))
	checks := make([]*entryCheck, len(items))
	for i, o := range order {
		it := &items[o]
		caps[i], recs[i], bkts[i], checks[i] = it.cap, it.rec, it.bkt, it.chk
	}
	return buildSnapshot(info, caps, recs, bkts, checks, chunks)
}

// buildSnapshot makes a snapshot of its arrays, which are in name order
// and parallel, and indexes them.
func buildSnapshot(info VersionInfo, caps []Capability, recs []hashing.Digest, bkts []uint8, checks []*entryCheck, chunks *root) *Snapshot {
	s := &Snapshot{
		Info:       info,
		caps:       caps,
		recs:       recs,
		bkts:       bkts,
		checks:     checks,
		byName:     make(map[string]int, len(caps)),
		byIdentity: make(map[hashing.Digest]int, len(caps)),
		chunks:     chunks,
		share:      &shareIndex{},
	}
	for i := range caps {
		s.byName[caps[i].Name] = i
		s.byIdentity[caps[i].Identity] = i
	}
	s.Info.Count = len(caps)
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
		checks:     slices.Clone(s.checks),
		bkts:       s.bkts,
		log:        s.log,
		contracts:  s.contracts,
		byName:     s.byName,
		byIdentity: s.byIdentity,
		share:      &shareIndex{},
	}
	n.Info.Count = len(n.caps)
	sameIDs := true
	for _, it := range changed {
		i := s.byName[it.cap.Name]
		sameIDs = sameIDs && s.caps[i].Identity == it.cap.Identity
		n.caps[i], n.recs[i], n.checks[i] = it.cap, it.rec, it.chk
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
		out[i] = item{cap: s.caps[i], rec: s.recs[i], bkt: s.bkts[i], chk: s.checks[i]}
	}
	return out
}

// Version returns the snapshot's version number.
func (s *Snapshot) Version() uint64 { return s.Info.Version }

// Registry returns the snapshot's registry hash.
func (s *Snapshot) Registry() hashing.Digest { return s.Info.Registry }

// Capabilities returns the entries sorted by name. The slice is shared:
// callers must not modify it.
//
// Every entry's record was checked against its digest when the version
// was read, so each is the entry that was written; identities are the
// ones the version's chunks list. An entry's own check (that its record
// is canonical, that it validates, that its identity is the listed one)
// is made by Get, ByIdentity and Lookup, and by Verify for all: the
// gate and the executor read every capability they act on by name.
func (s *Snapshot) Capabilities() []Capability { return s.caps }

// Get returns a copy of the capability with the given canonical name. An
// entry that fails its own check is not returned (Lookup says why).
func (s *Snapshot) Get(name string) (Capability, bool) {
	c, err := s.Lookup(name)
	return c, err == nil
}

// Lookup is Get with the reason for a miss: ErrNotFound, or ErrCorrupt
// for an entry whose record does not hold what its version lists.
func (s *Snapshot) Lookup(name string) (Capability, error) {
	c, err := s.LookupShared(name)
	if err != nil {
		return Capability{}, err
	}
	return Capability{Entry: c.Entry.Clone(), Identity: c.Identity}, nil
}

// LookupShared is Lookup without the copy, for readers that only look
// (the gate reads the few entries a request names, on every request): it
// returns the snapshot's own entry, which every other reader shares, so
// the caller must not modify any of it. It is checked as Lookup checks
// it.
func (s *Snapshot) LookupShared(name string) (*Capability, error) {
	i, ok := s.byName[name]
	if !ok {
		return nil, fmt.Errorf("capability %q: %w", name, ErrNotFound)
	}
	if err := s.check(i); err != nil {
		return nil, err
	}
	return &s.caps[i], nil
}

// ByIdentity returns a copy of the capability with the given identity,
// checked as Get checks it.
func (s *Snapshot) ByIdentity(id hashing.Digest) (Capability, bool) {
	i, ok := s.byIdentity[id]
	if !ok || s.check(i) != nil {
		return Capability{}, false
	}
	return s.clone(i), true
}

// check makes entry i's own check once (concurrent first reads may each
// make it; the outcome is the same). A failure is logged once and
// returned on every read.
func (s *Snapshot) check(i int) error {
	chk := s.checks[i]
	st := chk.state.Load()
	if st == sound {
		return nil
	}
	c := s.caps[i]
	var err error
	if id, cerr := checkEntry(c.Entry, s.recs[i], &validator{cache: s.contracts}); cerr != nil {
		err = cerr
	} else if id != c.Identity {
		err = fmt.Errorf("version %d lists %q with identity %s, its record %s has identity %s", s.Info.Version, c.Name, c.Identity, s.recs[i], id)
	}
	if err == nil {
		chk.state.Store(sound)
		return nil
	}
	err = fmt.Errorf("%w: %v", ErrCorrupt, err) // not the validation error: the entry is corrupt, not invalid input
	if chk.state.CompareAndSwap(unchecked, unsound) && s.log != nil {
		s.log.Error("registry entry fails its check: not served; run groundgate registry verify",
			slog.String("name", c.Name), slog.Uint64("version", s.Info.Version), slog.String("problem", err.Error()))
	}
	return err
}

// Has reports whether an entry with the identity exists, without copying
// or checking it (what the gate admits, it reads by name).
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
