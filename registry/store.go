package registry

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/hashing"
)

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
	// Screen, when set, vets every entry Put or Apply writes after it
	// validates (seeding the built-in catalog is not screened): an error
	// refuses the write. The server sets it to refuse discovery text that
	// addresses agents (fuzz.Screen); it should wrap ErrInvalidEntry.
	Screen func(Entry) error
}

// Store is the bbolt-backed registry. It is safe for concurrent use.
type Store struct {
	db      *bolt.DB
	log     *slog.Logger
	now     func() time.Time
	writeMu sync.Mutex // orders commits with snapshot publication
	screen  func(Entry) error
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
	s := &Store{db: db, log: opt.Logger, now: opt.Now, screen: opt.Screen}
	if !opt.ReadOnly {
		err = db.Update(func(tx *bolt.Tx) error {
			for _, b := range [][]byte{bucketMeta, bucketRecords, bucketChunks, bucketVersions, bucketNames, bucketIdentities} {
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
		snap, err = readVersion(ctx, tx, v, nil)
		return err
	})
	if err != nil {
		return fmt.Errorf("registry: load current version: %w", err)
	}
	s.current.Store(snap)
	return nil
}

func emptySnapshot() *Snapshot {
	return newSnapshot(VersionInfo{Registry: hashing.RegistryHash(nil), Change: Change{Names: []string{}}}, nil, &root{})
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
		snap, err = readVersion(ctx, tx, n, s.Current())
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
			d, _, err := decodeVersion(k, v)
			if err != nil {
				return err
			}
			out = append(out, d.VersionInfo)
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
	if err := s.vet(e); err != nil {
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
		if err := s.vet(e); err != nil {
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
//
// The cost is what changed: the changed records, the chunks of the buckets
// they fall in and one root. Unchanged chunks are shared with the parent.
func (s *Store) commit(ctx context.Context, op string, entries []Entry) (*Snapshot, error) {
	if len(entries) == 0 {
		return nil, fmt.Errorf("registry: %s: no entries", op)
	}
	cur := s.Current()

	// Everything that can fail on input fails here, before the transaction.
	type prepared struct {
		it     item
		record []byte
	}
	preps := make([]prepared, 0, len(entries))
	given := make(map[string]bool, len(entries))
	for _, e := range entries {
		if err := e.Validate(); err != nil {
			return nil, err
		}
		if given[e.Name] {
			return nil, fmt.Errorf("registry: %s: entry %q given twice: %w", op, e.Name, ErrInvalidEntry)
		}
		given[e.Name] = true
		id, err := e.Identity()
		if err != nil {
			return nil, fmt.Errorf("registry: identity of %q: %w", e.Name, err)
		}
		rec, err := e.recordBytes()
		if err != nil {
			return nil, fmt.Errorf("registry: encode %q: %w", e.Name, err)
		}
		preps = append(preps, prepared{
			it:     item{cap: Capability{Entry: e, Identity: id}, rec: hashing.SumSHA256(rec), bkt: bucketOf(e.Name)},
			record: rec,
		})
	}
	sort.Slice(preps, func(i, j int) bool { return preps[i].it.cap.Name < preps[j].it.cap.Name })
	changed := make([]string, len(preps))
	caps := make([]Capability, len(preps))
	for i, p := range preps {
		changed[i], caps[i] = p.it.cap.Name, p.it.cap
	}
	if err := checkTwins(cur, caps); err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}

	// The new version: the parent's entries with the changed ones replaced
	// or added. Its registry hash is the parent's when no identity changed
	// (the hash depends on the multiset of identities only).
	changedItems := make([]item, len(preps))
	sameIDs := true
	for i, p := range preps {
		changedItems[i] = p.it
		j, ok := cur.byName[p.it.cap.Name]
		sameIDs = sameIDs && ok && cur.caps[j].Identity == p.it.cap.Identity
	}
	info := VersionInfo{
		Version:  cur.Version() + 1,
		Registry: cur.Info.Registry,
		Parent:   cur.Version(),
		Change:   Change{Op: op, Names: changed},
		Created:  s.now().UTC().Truncate(time.Millisecond),
	}
	snap := cur.with(info, changedItems)
	if !sameIDs {
		snap.Info.Registry = hashing.RegistryHash(snap.Identities())
	}
	info = snap.Info

	// Re-chunk only the buckets the change touched; a parent stored as a
	// legacy manifest has no chunks yet, so every bucket is written once.
	var next root
	var touched [NumBuckets]bool
	if cur.chunks != nil {
		next = *cur.chunks
		for _, p := range preps {
			touched[p.it.bkt] = true
		}
	} else {
		for b := range touched {
			touched[b] = true
		}
	}
	var refs [NumBuckets][]chunkRef
	for i, c := range snap.caps {
		if b := snap.bkts[i]; touched[b] {
			refs[b] = append(refs[b], chunkRef{Name: c.Name, Identity: c.Identity, Record: snap.recs[i]})
		}
	}
	type chunk struct {
		digest hashing.Digest
		raw    []byte
	}
	var chunks []chunk
	for b := range touched {
		if !touched[b] {
			continue
		}
		next[b] = hashing.Digest{}
		if len(refs[b]) == 0 {
			continue
		}
		raw, d, err := encodeChunk(refs[b])
		if err != nil {
			return nil, fmt.Errorf("registry: encode chunk %d: %w", b, err)
		}
		next[b] = d
		chunks = append(chunks, chunk{d, raw})
	}
	snap.chunks = &next
	rootRaw, err := encodeRoot(snap.Info, &next)
	if err != nil {
		return nil, fmt.Errorf("registry: encode version %d: %w", info.Version, err)
	}

	err = s.db.Update(func(tx *bolt.Tx) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if v := currentVersion(tx); v != cur.Version() {
			return fmt.Errorf("%w: database is at version %d, memory at %d (another process wrote it?)", ErrCorrupt, v, cur.Version())
		}
		recs, cb := tx.Bucket(bucketRecords), tx.Bucket(bucketChunks)
		// Content-addressed: bytes already stored are not written again
		// (an entry changed back to an earlier state reuses its record).
		// Keys go in sorted order: bbolt inserts into a sorted node, and
		// a large seed in random order would be quadratic.
		slices.SortFunc(preps, func(a, b prepared) int { return cmpDigest(a.it.rec, b.it.rec) })
		for _, p := range preps {
			if err := putIfChanged(recs, p.it.rec.Key(), p.record); err != nil {
				return err
			}
		}
		slices.SortFunc(chunks, func(a, b chunk) int { return cmpDigest(a.digest, b.digest) })
		for _, c := range chunks {
			if err := putIfChanged(cb, c.digest.Key(), c.raw); err != nil {
				return err
			}
		}
		if err := tx.Bucket(bucketVersions).Put(u64(info.Version), rootRaw); err != nil {
			return err
		}
		// The current-version indexes, for the changed names. Every old
		// identity goes before any new one is written, so that two entries
		// swapping identities in one change keep both.
		nb, ib := tx.Bucket(bucketNames), tx.Bucket(bucketIdentities)
		for _, p := range preps {
			if i, ok := cur.byName[p.it.cap.Name]; ok {
				if err := ib.Delete(cur.caps[i].Identity.Key()); err != nil {
					return err
				}
			}
		}
		for _, it := range changedItems { // sorted by name
			if err := nb.Put([]byte(it.cap.Name), it.cap.Identity.Key()); err != nil {
				return err
			}
		}
		slices.SortFunc(changedItems, func(a, b item) int { return cmpDigest(a.cap.Identity, b.cap.Identity) })
		for _, it := range changedItems {
			if err := ib.Put(it.cap.Identity.Key(), it.rec.Key()); err != nil {
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
		slog.Int("changed", len(changed)), slog.Int("chunks", len(chunks)),
		slog.String("registry", info.Registry.String()))
	return snap, nil
}

// cmpDigest orders digests as their keys sort.
func cmpDigest(a, b hashing.Digest) int { return strings.Compare(a.String(), b.String()) }

// putIfChanged writes v under k unless exactly v is stored there; a stored
// value that differs (one that no longer hashes to its key) is repaired.
func putIfChanged(b *bolt.Bucket, k, v []byte) error {
	if old := b.Get(k); old != nil && bytes.Equal(old, v) {
		return nil
	}
	return b.Put(k, v)
}

// checkTwins refuses a change after which two names share one identity.
// caps are the changed entries, sorted by name. Like a scan of the whole
// new version in name order, it reports the first name that repeats an
// identity, naming the entry that was there before as the existing one.
func checkTwins(cur *Snapshot, caps []Capability) error {
	changed := make(map[string]bool, len(caps))
	groups := make(map[hashing.Digest][]string, len(caps))
	for _, c := range caps {
		changed[c.Name] = true
		groups[c.Identity] = append(groups[c.Identity], c.Name)
	}
	var (
		dup    *DuplicateError
		second string // the repeating name of dup
	)
	for id, names := range groups {
		if i, ok := cur.byIdentity[id]; ok && !changed[cur.caps[i].Name] {
			names = append(names, cur.caps[i].Name) // it keeps its identity
		}
		if len(names) < 2 {
			continue
		}
		sort.Strings(names)
		prev, n := names[0], names[1]
		if dup != nil && n >= second {
			continue
		}
		newName, existing := n, prev
		if changed[prev] && !changed[n] {
			newName, existing = prev, n
		}
		dup, second = &DuplicateError{Name: newName, Existing: existing, Identity: id}, n
	}
	if dup != nil {
		return dup
	}
	return nil
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

// getChunk returns the stored bytes of chunk d, or nil (a database written
// before chunks existed has no chunk bucket).
func getChunk(tx *bolt.Tx, d hashing.Digest) []byte {
	if b := tx.Bucket(bucketChunks); b != nil {
		return b.Get(d.Key())
	}
	return nil
}

// readVersion loads version n and checks, on the way, every chunk and
// record against its digest, every record against the name and identity
// its chunk lists, and the recomputed registry hash and count against the
// recorded ones.
//
// base, when not nil, is a snapshot already loaded and checked (the
// current one): a chunk of version n with the same digest as base's is
// taken from base without reading it, and so is an entry whose record
// digest base holds. Reading an old version then costs what differs
// between it and base.
func readVersion(ctx context.Context, tx *bolt.Tx, n uint64, base *Snapshot) (*Snapshot, error) {
	vb := tx.Bucket(bucketVersions)
	if vb == nil {
		return nil, fmt.Errorf("registry version %d: %w", n, ErrNotFound)
	}
	raw := vb.Get(u64(n))
	if raw == nil {
		return nil, fmt.Errorf("registry version %d: %w", n, ErrNotFound)
	}
	doc, r, err := decodeVersion(u64(n), raw)
	if err != nil {
		return nil, err
	}
	var sh *shareIndex
	if base != nil {
		sh = base.shared()
	}
	recs := tx.Bucket(bucketRecords)
	items := make([]item, 0, min(max(doc.Count, 0), 1<<20)) // a corrupt count must not allocate
	// Entries base does not hold are decoded after the walk, in parallel.
	type pending struct {
		ref chunkRef
		bkt uint8
	}
	var todo []pending
	add := func(refs []chunkRef, bkt func(string) uint8) error {
		for i, ref := range refs {
			if i > 0 && ref.Name <= refs[i-1].Name {
				return fmt.Errorf("%w: version %d: names not strictly sorted at %q", ErrCorrupt, n, ref.Name)
			}
			if sh != nil {
				if j, ok := sh.byRecord[ref.Record]; ok && base.caps[j].Name == ref.Name && base.caps[j].Identity == ref.Identity {
					items = append(items, item{cap: base.caps[j], rec: ref.Record, bkt: base.bkts[j]})
					continue
				}
			}
			todo = append(todo, pending{ref, bkt(ref.Name)})
		}
		return nil
	}
	if r == nil {
		if err := add(doc.Entries, bucketOf); err != nil {
			return nil, err
		}
	} else {
		for b, cd := range r {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if cd.IsZero() {
				continue
			}
			if sh != nil && base.chunks != nil && base.chunks[b] == cd {
				for _, j := range sh.byBucket[b] {
					items = append(items, item{cap: base.caps[j], rec: base.recs[j], bkt: base.bkts[j]})
				}
				continue
			}
			refs, got, err := decodeChunk(cd, getChunk(tx, cd))
			if err != nil {
				return nil, fmt.Errorf("version %d, bucket %d: %w", n, b, err)
			}
			if int(got) != b {
				return nil, fmt.Errorf("%w: version %d lists chunk %s of bucket %d in bucket %d", ErrCorrupt, n, cd, got, b)
			}
			if err := add(refs, func(string) uint8 { return got }); err != nil {
				return nil, err
			}
		}
	}
	ds := make([]hashing.Digest, len(todo))
	raws := make([][]byte, len(todo))
	for i, p := range todo {
		ds[i], raws[i] = p.ref.Record, recs.Get(p.ref.Record.Key())
	}
	dec, err := decodeRecords(ctx, ds, raws)
	if err != nil {
		return nil, err
	}
	for i, p := range todo {
		d := dec[i]
		if d.problem != "" {
			return nil, fmt.Errorf("%w: version %d, entry %q: %s", ErrCorrupt, n, p.ref.Name, d.problem)
		}
		if d.e.Name != p.ref.Name || d.id != p.ref.Identity {
			return nil, fmt.Errorf("%w: version %d lists %q with identity %s, record says %q with identity %s", ErrCorrupt, n, p.ref.Name, p.ref.Identity, d.e.Name, d.id)
		}
		items = append(items, item{cap: Capability{Entry: d.e, Identity: d.id}, rec: p.ref.Record, bkt: p.bkt})
	}
	ids := make([]hashing.Digest, len(items))
	for i, it := range items {
		ids[i] = it.cap.Identity
	}
	if h := hashing.RegistryHash(ids); h != doc.Registry {
		return nil, fmt.Errorf("%w: version %d records registry %s, its entries hash to %s", ErrCorrupt, n, doc.Registry, h)
	}
	if doc.Count != len(items) {
		return nil, fmt.Errorf("%w: version %d records %d entries, holds %d", ErrCorrupt, n, doc.Count, len(items))
	}
	return newSnapshot(doc.VersionInfo, items, r), nil
}

// vet validates an entry a caller writes, then screens it.
func (s *Store) vet(e Entry) error {
	if err := e.Validate(); err != nil {
		return err
	}
	if s.screen != nil {
		return s.screen(e)
	}
	return nil
}
