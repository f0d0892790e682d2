package boltstore

import (
	"time"

	bolt "go.etcd.io/bbolt"
)

// FileOptions are how OpenFile opens a file: the knobs of a file that
// grows large (the registry's, at 100,000 entries).
type FileOptions struct {
	// Timeout bounds the wait for the file's lock; zero waits forever.
	Timeout time.Duration
	// ReadOnly opens the file without write access.
	ReadOnly bool
	// InitialMmapSize maps that much of the file at once (address space,
	// not memory): bbolt re-maps as the file grows, and each time copies
	// every page the writing transaction holds.
	InitialMmapSize int
	// AllocSize is how far past its last page the file grows when a commit
	// needs room; zero is bbolt's default (16 MB).
	AllocSize int
}

// OpenFile is Open with the file's tuning; Close closes it.
func OpenFile(path string, o FileOptions) (*Store, error) {
	s, err := Open(path, &bolt.Options{Timeout: o.Timeout, ReadOnly: o.ReadOnly, InitialMmapSize: o.InitialMmapSize})
	if err != nil {
		return nil, err
	}
	if o.AllocSize > 0 && !o.ReadOnly {
		s.db.AllocSize = o.AllocSize
	}
	return s, nil
}

// SetFillPercent makes the pages of keyspace name, in this writing
// transaction, fill to pct (0.1–1) before they split, rather than bbolt's
// half: a keyspace written in key order, or only appended to, then takes
// half the pages. It is a tuning of the bbolt engine, which a domain
// package asks for through an interface of its own and other engines
// need not have.
func (t *tx) SetFillPercent(name string, pct float64) error {
	b, err := t.writable(name)
	if err != nil {
		return err
	}
	b.FillPercent = pct
	return nil
}
