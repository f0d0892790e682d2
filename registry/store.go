package registry

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/hashing"
)

// Bucket layout. Records are content-addressed; versions are append-only;
// the two indexes describe the current version only.
var (
	bucketMeta       = []byte("registry.meta")       // "current" -> uint64 version
	bucketRecords    = []byte("registry.records")    // record digest -> canonical entry JSON
	bucketVersions   = []byte("registry.versions")   // uint64 big-endian -> canonical manifest JSON
	bucketNames      = []byte("registry.names")      // name -> identity (current version)
	bucketIdentities = []byte("registry.identities") // identity -> record digest (current version)

	keyCurrent = []byte("current")
)

// manifest is the stored form of one version: its header and, for every
// entry, the name, identity and the digest of the full record.
type manifest struct {
	VersionInfo
	Entries []manifestEntry `json:"entries"`
}

type manifestEntry struct {
	Name     string         `json:"name"`
	Identity hashing.Digest `json:"identity"`
	Record   hashing.Digest `json:"record"`
}

// Options configure a Store. The zero value is usable.
type Options struct {
	// Logger receives store events; nil discards them.
	Logger *slog.Logger
	// Now is the clock used for VersionInfo.Created; nil means time.Now.
	Now func() time.Time
	// Timeout bounds the wait for bbolt's file lock; zero means 5s.
	Timeout time.Duration
	// ReadOnly opens the file without write access.
	ReadOnly bool
}

// Store is the bbolt-backed registry. It is safe for concurrent use.
type Store struct {
	db      *bolt.DB
	log     *slog.Logger
	now     func() time.Time
	writeMu sync.Mutex // orders commits with snapshot publication
	current atomic.Pointer[Snapshot]
}

// Open opens (creating if needed) the registry in the bbolt file at path.
// It does not seed anything; see Seed.
func Open(ctx context.Context, path string, opt Options) (*Store, error) {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Timeout == 0 {
		opt.Timeout = 5 * time.Second
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opt.Timeout, ReadOnly: opt.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("registry: open %s: %w", path, err)
	}
	s := &Store{db: db, log: opt.Logger, now: opt.Now}
	if !opt.ReadOnly {
		err = db.Update(func(tx *bolt.Tx) error {
			for _, b := range [][]byte{bucketMeta, bucketRecords, bucketVersions, bucketNames, bucketIdentities} {
				if _, err := tx.CreateBucketIfNotExists(b); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("registry: init %s: %w", path, err)
		}
	}
	if err := s.loadCurrent(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// DB exposes the underlying bbolt handle so other packages can keep their
// own buckets in the same file. They must not touch "registry.*" buckets.
func (s *Store) DB() *bolt.DB { return s.db }

// Close closes the database file.
func (s *Store) Close() error { return s.db.Close() }

// Current returns the current version. It does no I/O.
func (s *Store) Current() *Snapshot { return s.current.Load() }

func (s *Store) loadCurrent(ctx context.Context) error {
	var snap *Snapshot
	err := s.db.View(func(tx *bolt.Tx) error {
		v := currentVersion(tx)
		if v == 0 {
			snap = emptySnapshot()
			return nil
		}
		var err error
		snap, err = readVersion(ctx, tx, v)
		return err
	})
	if err != nil {
		return fmt.Errorf("registry: load current version: %w", err)
	}
	s.current.Store(snap)
	return nil
}

func emptySnapshot() *Snapshot {
	return newSnapshot(VersionInfo{Registry: hashing.RegistryHash(nil), Change: Change{Names: []string{}}}, nil)
}

// Version reads version n. Version 0 is the empty registry.
func (s *Store) Version(ctx context.Context, n uint64) (*Snapshot, error) {
	if cur := s.Current(); n == cur.Version() {
		return cur, nil
	}
	if n == 0 {
		return emptySnapshot(), nil
	}
	var snap *Snapshot
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		snap, err = readVersion(ctx, tx, n)
		return err
	})
	return snap, err
}

// History lists every version's header, newest first.
func (s *Store) History(ctx context.Context) ([]VersionInfo, error) {
	var out []VersionInfo
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketVersions).Cursor()
		for k, v := c.Last(); k != nil; k, v = c.Prev() {
			if err := ctx.Err(); err != nil {
				return err
			}
			m, err := decodeManifest(k, v)
			if err != nil {
				return err
			}
			out = append(out, m.VersionInfo)
		}
		return nil
	})
	return out, err
}

// Seed writes entries as version 1 when the registry is empty and reports
// whether it did. A non-empty registry is left alone.
func (s *Store) Seed(ctx context.Context, entries []Entry) (bool, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.Current().Version() != 0 {
		return false, nil
	}
	_, err := s.commit(ctx, "seed", entries)
	return err == nil, err
}

// PutResult reports the outcome of Put.
type PutResult struct {
	Capability Capability
	Version    uint64 // the version that holds the entry
	Changed    bool   // false when the entry was already stored as given
}

// Put adds or replaces the entry with e's name, creating a new version. An
// entry identical to the stored one creates no version. An entry whose
// identity another name already has is refused with a *DuplicateError.
func (s *Store) Put(ctx context.Context, e Entry) (PutResult, error) {
	if err := e.Validate(); err != nil {
		return PutResult{}, err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	cur := s.Current()
	if old, ok := cur.Get(e.Name); ok && entriesEqual(old.Entry, e) {
		return PutResult{Capability: old, Version: cur.Version()}, nil
	}
	snap, err := s.commit(ctx, "put", []Entry{e})
	if err != nil {
		return PutResult{}, err
	}
	c, _ := snap.Get(e.Name)
	return PutResult{Capability: c, Version: snap.Version(), Changed: true}, nil
}

// Apply adds or replaces several entries as one new version, in one
// transaction: all of them are stored or none is. Entries identical to the
// stored ones are skipped; when nothing changes, no version is created.
func (s *Store) Apply(ctx context.Context, entries []Entry) (uint64, []string, error) {
	for _, e := range entries {
		if err := e.Validate(); err != nil {
			return 0, nil, err
		}
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	cur := s.Current()
	var todo []Entry
	for _, e := range entries {
		if old, ok := cur.Get(e.Name); ok && entriesEqual(old.Entry, e) {
			continue
		}
		todo = append(todo, e)
	}
	if len(todo) == 0 {
		return cur.Version(), []string{}, nil
	}
	snap, err := s.commit(ctx, "put", todo)
	if err != nil {
		return 0, nil, err
	}
	return snap.Version(), snap.Info.Change.Names, nil
}

func entriesEqual(a, b Entry) bool {
	ab, err1 := a.recordBytes()
	bb, err2 := b.recordBytes()
	return err1 == nil && err2 == nil && bytes.Equal(ab, bb)
}

// commit writes entries over the current version as one new version, in
// one transaction, and publishes the new snapshot. Callers hold writeMu.
func (s *Store) commit(ctx context.Context, op string, entries []Entry) (*Snapshot, error) {
	if len(entries) == 0 {
		return nil, fmt.Errorf("registry: %s: no entries", op)
	}
	cur := s.Current()

	// Everything that can fail on input fails here, before the transaction.
	type prepared struct {
		cap    Capability
		record []byte
		digest hashing.Digest
	}
	next := make(map[string]Capability, len(cur.caps)+len(entries))
	for _, c := range cur.caps {
		next[c.Name] = c
	}
	preps := make([]prepared, 0, len(entries))
	changed := make([]string, 0, len(entries))
	for _, e := range entries {
		if err := e.Validate(); err != nil {
			return nil, err
		}
		if slices.Contains(changed, e.Name) {
			return nil, fmt.Errorf("registry: %s: entry %q given twice: %w", op, e.Name, ErrInvalidEntry)
		}
		id, err := e.Identity()
		if err != nil {
			return nil, fmt.Errorf("registry: identity of %q: %w", e.Name, err)
		}
		rec, err := e.recordBytes()
		if err != nil {
			return nil, fmt.Errorf("registry: encode %q: %w", e.Name, err)
		}
		c := Capability{Entry: e, Identity: id}
		next[e.Name] = c
		preps = append(preps, prepared{cap: c, record: rec, digest: hashing.SumSHA256(rec)})
		changed = append(changed, e.Name)
	}
	names := make([]string, 0, len(next))
	for n := range next {
		names = append(names, n)
	}
	sort.Strings(names)
	owner := make(map[hashing.Digest]string, len(names))
	for _, n := range names {
		c := next[n]
		if prev, dup := owner[c.Identity]; dup {
			// Report the name that was there before as the existing one.
			newName, existing := n, prev
			if slices.Contains(changed, prev) && !slices.Contains(changed, n) {
				newName, existing = prev, n
			}
			return nil, fmt.Errorf("registry: %w", &DuplicateError{Name: newName, Existing: existing, Identity: c.Identity})
		}
		owner[c.Identity] = n
	}
	sort.Strings(changed)

	caps := make([]Capability, 0, len(names))
	ids := make([]hashing.Digest, 0, len(names))
	for _, n := range names {
		caps = append(caps, next[n])
		ids = append(ids, next[n].Identity)
	}
	info := VersionInfo{
		Version:  cur.Version() + 1,
		Registry: hashing.RegistryHash(ids),
		Parent:   cur.Version(),
		Change:   Change{Op: op, Names: changed},
		Created:  s.now().UTC().Truncate(time.Millisecond),
		Count:    len(caps),
	}
	snap := newSnapshot(info, caps)

	err := s.db.Update(func(tx *bolt.Tx) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if v := currentVersion(tx); v != cur.Version() {
			return fmt.Errorf("%w: database is at version %d, memory at %d (another process wrote it?)", ErrCorrupt, v, cur.Version())
		}
		recs := tx.Bucket(bucketRecords)
		for _, p := range preps {
			if err := recs.Put(p.digest.Key(), p.record); err != nil {
				return err
			}
		}
		recordOf := make(map[string]hashing.Digest, len(preps))
		for _, p := range preps {
			recordOf[p.cap.Name] = p.digest
		}
		m := manifest{VersionInfo: info, Entries: make([]manifestEntry, len(caps))}
		for i, c := range caps {
			rd, ok := recordOf[c.Name]
			if !ok {
				rd = lookupRecord(tx, c.Identity)
			}
			m.Entries[i] = manifestEntry{Name: c.Name, Identity: c.Identity, Record: rd}
		}
		mb, err := hashing.Canonical(m)
		if err != nil {
			return err
		}
		if err := tx.Bucket(bucketVersions).Put(u64(info.Version), mb); err != nil {
			return err
		}
		// Rebuild the current-version indexes for the changed names.
		nb, ib := tx.Bucket(bucketNames), tx.Bucket(bucketIdentities)
		for _, p := range preps {
			if old, ok := cur.Get(p.cap.Name); ok {
				if err := ib.Delete(old.Identity.Key()); err != nil {
					return err
				}
			}
			if err := nb.Put([]byte(p.cap.Name), p.cap.Identity.Key()); err != nil {
				return err
			}
			if err := ib.Put(p.cap.Identity.Key(), p.digest.Key()); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Put(keyCurrent, u64(info.Version))
	})
	if err != nil {
		return nil, fmt.Errorf("registry: commit version %d: %w", info.Version, err)
	}
	s.current.Store(snap)
	s.log.LogAttrs(ctx, slog.LevelInfo, "registry version committed",
		slog.Uint64("version", info.Version), slog.String("op", op),
		slog.Int("changed", len(changed)), slog.String("registry", info.Registry.String()))
	return snap, nil
}

// lookupRecord finds the record digest of an unchanged entry through the
// identity index of the current version.
func lookupRecord(tx *bolt.Tx, id hashing.Digest) hashing.Digest {
	v := tx.Bucket(bucketIdentities).Get(id.Key())
	d, _ := hashing.Parse(string(v))
	return d
}

func currentVersion(tx *bolt.Tx) uint64 {
	b := tx.Bucket(bucketMeta)
	if b == nil {
		return 0
	}
	v := b.Get(keyCurrent)
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

func decodeManifest(k, v []byte) (manifest, error) {
	var m manifest
	if len(k) != 8 {
		return m, fmt.Errorf("%w: version key %x is not 8 bytes", ErrCorrupt, k)
	}
	if err := hashing.DecodeStrict(v, &m); err != nil {
		return m, fmt.Errorf("%w: version %d manifest: %v", ErrCorrupt, binary.BigEndian.Uint64(k), err)
	}
	if m.Version != binary.BigEndian.Uint64(k) {
		return m, fmt.Errorf("%w: version key %d holds manifest of version %d", ErrCorrupt, binary.BigEndian.Uint64(k), m.Version)
	}
	return m, nil
}

// readVersion loads version n and checks every record against its digest,
// its identity against the manifest, and the registry hash.
func readVersion(ctx context.Context, tx *bolt.Tx, n uint64) (*Snapshot, error) {
	vb := tx.Bucket(bucketVersions)
	if vb == nil {
		return nil, fmt.Errorf("registry version %d: %w", n, ErrNotFound)
	}
	raw := vb.Get(u64(n))
	if raw == nil {
		return nil, fmt.Errorf("registry version %d: %w", n, ErrNotFound)
	}
	m, err := decodeManifest(u64(n), raw)
	if err != nil {
		return nil, err
	}
	recs := tx.Bucket(bucketRecords)
	caps := make([]Capability, 0, len(m.Entries))
	ids := make([]hashing.Digest, 0, len(m.Entries))
	for _, me := range m.Entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		e, err := readRecord(recs, me.Record)
		if err != nil {
			return nil, fmt.Errorf("version %d, entry %q: %w", n, me.Name, err)
		}
		id, err := e.Identity()
		if err != nil {
			return nil, err
		}
		if e.Name != me.Name || id != me.Identity {
			return nil, fmt.Errorf("%w: version %d lists %q with identity %s, record says %q with identity %s", ErrCorrupt, n, me.Name, me.Identity, e.Name, id)
		}
		caps = append(caps, Capability{Entry: e, Identity: id})
		ids = append(ids, id)
	}
	if h := hashing.RegistryHash(ids); h != m.Registry {
		return nil, fmt.Errorf("%w: version %d records registry %s, its entries hash to %s", ErrCorrupt, n, m.Registry, h)
	}
	return newSnapshot(m.VersionInfo, caps), nil
}

// readRecord returns the entry stored under digest d, refusing bytes that
// no longer hash to their key. The bytes are copied out of the mmap by the
// decoder before the transaction closes.
func readRecord(recs *bolt.Bucket, d hashing.Digest) (Entry, error) {
	raw := recs.Get(d.Key())
	if raw == nil {
		return Entry{}, fmt.Errorf("%w: record %s is missing", ErrCorrupt, d)
	}
	if got := hashing.SumSHA256(raw); got != d {
		return Entry{}, fmt.Errorf("%w: record %s hashes to %s", ErrCorrupt, d, got)
	}
	e, err := DecodeEntry(raw, d.String())
	if err != nil {
		return Entry{}, fmt.Errorf("%w: record %s: %v", ErrCorrupt, d, err)
	}
	return e, nil
}

// VerifyReport summarises a full verification.
type VerifyReport struct {
	Versions int            `json:"versions"`
	Records  int            `json:"records"`
	Current  uint64         `json:"current"`
	Registry hashing.Digest `json:"registry"`
	Problems []string       `json:"problems"`
}

// Verify recomputes, from the stored bytes, every record digest, every
// identity, every version's registry hash, and the current indexes. It
// returns an error wrapping ErrCorrupt when anything disagrees; the report
// lists every problem found, not only the first.
func (s *Store) Verify(ctx context.Context) (VerifyReport, error) {
	return verifyDB(ctx, s.db)
}

// VerifyFile verifies the registry in the bbolt file at path without
// loading it first, so that a file whose current version is corrupt (and
// which Open therefore refuses) can still be examined.
func VerifyFile(ctx context.Context, path string) (VerifyReport, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		return VerifyReport{}, fmt.Errorf("registry: open %s: %w", path, err)
	}
	defer db.Close()
	return verifyDB(ctx, db)
}

func verifyDB(ctx context.Context, db *bolt.DB) (VerifyReport, error) {
	rep := VerifyReport{Problems: []string{}}
	err := db.View(func(tx *bolt.Tx) error {
		recs := tx.Bucket(bucketRecords)
		if recs == nil {
			rep.Problems = append(rep.Problems, "registry buckets are missing")
			return nil
		}
		err := recs.ForEach(func(k, v []byte) error {
			rep.Records++
			d, err := hashing.Parse(string(k))
			if err != nil {
				rep.Problems = append(rep.Problems, fmt.Sprintf("record key %q: %v", k, err))
				return nil
			}
			if _, err := readRecord(recs, d); err != nil {
				rep.Problems = append(rep.Problems, err.Error())
			}
			return nil
		})
		if err != nil {
			return err
		}
		cur := currentVersion(tx)
		rep.Current = cur
		var last *Snapshot
		for n := uint64(1); n <= cur; n++ {
			snap, err := readVersion(ctx, tx, n)
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			rep.Versions++
			if err != nil {
				rep.Problems = append(rep.Problems, err.Error())
				continue
			}
			last = snap
		}
		if extra := tx.Bucket(bucketVersions).Stats().KeyN; extra != int(cur) {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%d versions stored, current is %d", extra, cur))
		}
		if last == nil {
			if cur != 0 {
				rep.Problems = append(rep.Problems, "current version unreadable")
			}
			rep.Registry = hashing.RegistryHash(nil)
			return nil
		}
		rep.Registry = last.Info.Registry
		rep.Problems = append(rep.Problems, checkIndexes(tx, last)...)
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("registry: verify: %w", err)
	}
	if len(rep.Problems) > 0 {
		return rep, fmt.Errorf("registry: verify: %d problem(s), first: %s: %w", len(rep.Problems), rep.Problems[0], ErrCorrupt)
	}
	return rep, nil
}

func checkIndexes(tx *bolt.Tx, snap *Snapshot) []string {
	var problems []string
	nb, ib := tx.Bucket(bucketNames), tx.Bucket(bucketIdentities)
	if n := nb.Stats().KeyN; n != len(snap.caps) {
		problems = append(problems, fmt.Sprintf("name index has %d keys, version %d has %d entries", n, snap.Version(), len(snap.caps)))
	}
	if n := ib.Stats().KeyN; n != len(snap.caps) {
		problems = append(problems, fmt.Sprintf("identity index has %d keys, version %d has %d entries", n, snap.Version(), len(snap.caps)))
	}
	for _, c := range snap.caps {
		if got := string(nb.Get([]byte(c.Name))); got != c.Identity.String() {
			problems = append(problems, fmt.Sprintf("name index: %q -> %q, want %s", c.Name, got, c.Identity))
		}
		rd, err := hashing.Parse(string(ib.Get(c.Identity.Key())))
		if err != nil {
			problems = append(problems, fmt.Sprintf("identity index: %s: %v", c.Identity, err))
			continue
		}
		e, err := readRecord(tx.Bucket(bucketRecords), rd)
		if err != nil || e.Name != c.Name {
			problems = append(problems, fmt.Sprintf("identity index: %s does not lead to %q", c.Identity, c.Name))
		}
	}
	return problems
}
