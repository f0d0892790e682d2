package registry

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/store"
)

// The registry's keyspaces in package store (docs/storage.md, "The
// registry"): the bbolt buckets every release has written, same names,
// same keys, same bytes.
var (
	// Records, chunks and groups are content-addressed: the SHA-256 of
	// their canonical bytes. The registry checks what it reads itself, on
	// every core (readRecord, decodeChunk, decodeGroup), so it reads them
	// as plain values; the Spaces serve HasRecord and other readers.
	spaceRecords = store.Space{Name: string(bucketRecords), Check: store.SHA256}
	spaceChunks  = store.Space{Name: string(bucketChunks), Check: store.SHA256}
	spaceGroups  = store.Space{Name: string(bucketGroups), Check: store.SHA256}
)

var (
	// versionsName is the version sequence: each root (or legacy
	// manifest) under its number (store.Versions).
	versionsName = string(bucketVersions)
	// metaName holds "current", the current version number; namesName and
	// identitiesName the current version's indexes. All three are values,
	// rewritten in the Update that makes a version.
	metaName       = string(bucketMeta)
	namesName      = string(bucketNames)
	identitiesName = string(bucketIdentities)
)

// Keyspaces are the names of the registry's keyspaces: what a copy of
// the registry (a fuzz run's scratch registry) must hold.
func Keyspaces() []string {
	return []string{string(bucketMeta), string(bucketRecords), string(bucketChunks), string(bucketGroups),
		string(bucketVersions), string(bucketNames), string(bucketIdentities)}
}

// regTx is the part of a store.Tx the registry reads and writes through.
type regTx interface {
	store.Scanner
	store.Values
	store.Versions
	HasRecord(sp store.Space, key hashing.Digest) (bool, error)
}

var _ regTx = store.Tx(nil)

// pageReleaser is what an engine over a memory-mapped file offers (the
// bbolt engine's transactions): handing the pages a read went through back
// to the kernel, so that an open of 100,000 entries does not keep the file
// resident besides the entries it decoded. Engines without a map have
// nothing to hand back.
type pageReleaser interface {
	ReleasePages(first, last []byte)
	ReleaseAllPages(anchor []byte)
}

// pagesOf is tx's page hand-back, or one that does nothing.
func pagesOf(tx regTx) pageReleaser {
	if p, ok := tx.(pageReleaser); ok {
		return p
	}
	return noPages{}
}

type noPages struct{}

func (noPages) ReleasePages(first, last []byte) {}
func (noPages) ReleaseAllPages(anchor []byte)   {}

// fillSetter is the bbolt engine's page fill (boltstore's SetFillPercent).
type fillSetter interface {
	SetFillPercent(name string, pct float64) error
}

// lookup is the value under key in name, nil when there is none.
func lookup(tx store.Values, name string, key []byte) ([]byte, error) {
	v, err := tx.Value(name, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return v, err
}

// currentVersion is the current version number; 0 when none is recorded.
func currentVersion(tx store.Values) (uint64, error) {
	v, err := lookup(tx, metaName, keyCurrent)
	if err != nil {
		return 0, fmt.Errorf("registry: read current version: %w", err)
	}
	if len(v) != 8 {
		return 0, nil
	}
	return binary.BigEndian.Uint64(v), nil
}
