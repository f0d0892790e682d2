package registry

import (
	"sort"
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
}

func newSnapshot(info VersionInfo, caps []Capability) *Snapshot {
	sort.Slice(caps, func(i, j int) bool { return caps[i].Name < caps[j].Name })
	s := &Snapshot{
		Info:       info,
		caps:       caps,
		byName:     make(map[string]int, len(caps)),
		byIdentity: make(map[hashing.Digest]int, len(caps)),
	}
	for i, c := range caps {
		s.byName[c.Name] = i
		s.byIdentity[c.Identity] = i
	}
	s.Info.Count = len(caps)
	return s
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
	if caps == nil {
		caps = []Capability{}
	}
	return Export{Version: s.Info.Version, Registry: s.Info.Registry, Capabilities: caps}
}
