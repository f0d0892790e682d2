package registry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/internal/buckets"
	"github.com/groundgate/groundgate/store"
	"github.com/groundgate/groundgate/store/boltstore"
)

// initialMmapSize is how much of the file a writable store maps at open.
const initialMmapSize = 1 << 30

// allocSize is how far past its last page bbolt extends the file when a
// commit needs more room (bbolt's default, 16 MB, made a new file 16 MB
// and a few edits grow it 16 MB at a time: with initialMmapSize over the
// default, every growth is last page + AllocSize). Each extension is one
// ftruncate and fsync more in the commit that makes it; at 1 MB that is
// one commit in ~150 alias edits, and one per bulk load.
const allocSize = 1 << 20

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
	// Contracts, when set, compiles the contracts of entries checked on
	// their first read. Given the cache the gate and the executor compile
	// with, a contract's clauses are parsed once per process, not once to
	// check the entry and again to evaluate it. Nil: each check compiles.
	Contracts *contract.Cache
}

// Store is the registry over a storage engine (package store): the bbolt
// file Open opens, or any engine OpenEngine is given. It is safe for
// concurrent use.
type Store struct {
	st        store.Store      // every read and write of the registry
	engine    *boltstore.Store // the file Open opened; nil over another engine
	log       *slog.Logger
	now       func() time.Time
	writeMu   sync.Mutex // orders commits with snapshot publication
	screen    func(Entry) error
	contracts *contract.Cache
	current   atomic.Pointer[Snapshot]
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
	fopt := boltstore.FileOptions{Timeout: opt.Timeout, ReadOnly: opt.ReadOnly}
	if !opt.ReadOnly {
		fopt.AllocSize = allocSize
		if strconv.IntSize == 64 {
			// Map the file at once at a size a large registry reaches. bbolt
			// re-maps as the file grows, and each time copies every page the
			// writing transaction holds: a 100,000-entry load re-mapped a
			// dozen times copied gigabytes. This is address space, not memory.
			fopt.InitialMmapSize = initialMmapSize
		}
	}
	bs, err := boltstore.OpenFile(path, fopt)
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	// The registry's buckets exist from the first open, as they always
	// have, so that a file's bucket list does not depend on its history.
	if err := buckets.Ensure(bs.DB(), bucketMeta, bucketRecords, bucketChunks, bucketGroups, bucketVersions, bucketNames, bucketIdentities); err != nil {
		bs.Close()
		return nil, fmt.Errorf("registry: init %s: %w", path, err)
	}
	s, err := OpenEngine(ctx, bs, opt)
	if err != nil {
		bs.Close()
		return nil, err
	}
	s.engine = bs
	return s, nil
}

// OpenEngine opens the registry kept in st (a PostgreSQL engine, or a
// bbolt one the caller opened): it reads and checks the current version.
// Close does not close st. Options.Timeout and ReadOnly are the file's and
// are not used.
func OpenEngine(ctx context.Context, st store.Store, opt Options) (*Store, error) {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	s := &Store{st: st, log: opt.Logger, now: opt.Now, screen: opt.Screen, contracts: opt.Contracts}
	if err := s.loadCurrent(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// DB exposes the underlying bbolt handle so that tests and tools can
// reach the file; nil when the registry is not over a file Open opened.
// Other packages keep their data through Engine, never in "registry.*"
// buckets.
func (s *Store) DB() *bolt.DB {
	if s.engine == nil {
		return nil
	}
	return s.engine.DB()
}

// Engine is the storage layer over the registry's file (package store):
// the one every other package keeps its records, versions and logs in, so
// that their writers share its group commits. It must not be used for
// "registry.*" keyspaces. Nil when the registry was given its engine
// (OpenEngine).
func (s *Store) Engine() *boltstore.Store { return s.engine }

// Close closes the database file Open opened; over an engine given to
// OpenEngine it does nothing.
func (s *Store) Close() error {
	if s.engine == nil {
		return nil
	}
	return s.engine.Close()
}

// Current returns the current version. It does no I/O.
func (s *Store) Current() *Snapshot { return s.current.Load() }

func (s *Store) loadCurrent(ctx context.Context) error {
	var snap *Snapshot
	err := s.st.View(ctx, func(tx store.Tx) error {
		v, err := currentVersion(tx)
		if err != nil || v == 0 {
			snap = emptySnapshot()
			return err
		}
		snap, err = readVersion(ctx, tx, v, nil)
		if raw, verr := tx.Version(versionsName, v); verr == nil {
			pagesOf(tx).ReleaseAllPages(raw)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("registry: load current version: %w", err)
	}
	snap.log, snap.contracts = s.log, s.contracts
	s.current.Store(snap)
	return nil
}

// reload makes the store's current version the engine's, reading only
// what differs from cur (the snapshot this process had). Callers hold
// writeMu.
func (s *Store) reload(ctx context.Context, cur *Snapshot) error {
	var snap *Snapshot
	err := s.st.View(ctx, func(tx store.Tx) error {
		v, err := currentVersion(tx)
		if err != nil || v == cur.Version() {
			return err
		}
		base := cur
		if cur.Version() == 0 {
			base = nil
		}
		snap, err = readVersion(ctx, tx, v, base)
		return err
	})
	if err != nil {
		return fmt.Errorf("registry: reload current version: %w", err)
	}
	if snap != nil {
		snap.log, snap.contracts = s.log, s.contracts
		s.current.Store(snap)
	}
	return nil
}

// CurrentIn reads, in tx, the number of the current version the store
// holds: what a replica compares with Current().Version() to learn that
// another replica wrote (Refresh). 0 for an empty registry.
func CurrentIn(tx store.Values) (uint64, error) {
	return currentVersion(tx)
}

// Refresh makes Current the store's current version when another process
// sharing the engine (a replica over PostgreSQL) made a newer one, reading
// only what differs. Over a file this process holds alone it finds
// nothing to do. It reports whether the current version changed.
func (s *Store) Refresh(ctx context.Context) (bool, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	cur := s.Current()
	if err := s.reload(ctx, cur); err != nil {
		return false, err
	}
	return s.Current() != cur, nil
}

func emptySnapshot() *Snapshot {
	s := newSnapshot(VersionInfo{Registry: hashing.RegistryHash(nil), Change: Change{Names: []string{}}}, nil, &root{})
	s.groups = &groupRoot{}
	return s
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
	err := s.st.View(ctx, func(tx store.Tx) error {
		var err error
		snap, err = readVersion(ctx, tx, n, s.Current())
		return err
	})
	if err != nil {
		return nil, err
	}
	snap.log, snap.contracts = s.log, s.contracts
	return snap, nil
}

// History lists every version's header, newest first.
func (s *Store) History(ctx context.Context) ([]VersionInfo, error) {
	var out []VersionInfo
	err := s.st.View(ctx, func(tx store.Tx) error {
		out = out[:0]
		err := tx.Scan(versionsName, func(k, v []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			d, err := decodeVersion(k, v)
			if err != nil {
				return err
			}
			out = append(out, d.VersionInfo)
			return nil
		})
		slices.Reverse(out)
		return err
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
	preps, err := prepare(ctx, entries, nil)
	if err != nil {
		return false, err
	}
	_, err = s.commit(ctx, "seed", preps)
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
	preps, err := prepare(ctx, []Entry{e}, s.screen)
	if err != nil {
		return PutResult{}, err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	for attempt := 1; ; attempt++ {
		cur := s.Current()
		if i, ok := cur.stored(preps[0].it); ok {
			return PutResult{Capability: cur.clone(i), Version: cur.Version()}, nil
		}
		snap, err := s.commit(ctx, "put", preps)
		if retryConflict(err, attempt) {
			continue // commit loaded the version that won: put on it
		}
		if err != nil {
			return PutResult{}, err
		}
		c, _ := snap.Get(e.Name)
		return PutResult{Capability: c, Version: snap.Version(), Changed: true}, nil
	}
}

// conflictAttempts bounds how often Put and Apply commit when another
// process sharing the store (a replica over PostgreSQL) keeps making the
// version they were about to make. A put replaces entries whatever the
// version holds, so after a conflict it is applied again on the version
// that won, as the client would have sent it a moment later; only a
// store so busy that it loses every time answers ErrConflict.
const conflictAttempts = 8

// retryConflict reports whether a commit that failed with err should be
// tried again: it lost the version to another process, and attempts
// remain.
func retryConflict(err error, attempt int) bool {
	return errors.Is(err, store.ErrConflict) && attempt < conflictAttempts
}

// Apply adds or replaces several entries as one new version, in one
// transaction: all of them are stored or none is. Entries identical to the
// stored ones are skipped; when nothing changes, no version is created.
func (s *Store) Apply(ctx context.Context, entries []Entry) (uint64, []string, error) {
	preps, err := prepare(ctx, entries, s.screen)
	if err != nil {
		return 0, nil, err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	for attempt := 1; ; attempt++ {
		cur := s.Current()
		var todo []prepared
		for _, p := range preps {
			if _, ok := cur.stored(p.it); ok {
				continue
			}
			todo = append(todo, p)
		}
		if len(todo) == 0 {
			return cur.Version(), []string{}, nil
		}
		snap, err := s.commit(ctx, "put", todo)
		if retryConflict(err, attempt) {
			continue
		}
		if err != nil {
			return 0, nil, err
		}
		return snap.Version(), snap.Info.Change.Names, nil
	}
}

// stored reports whether s holds it as it is (same record, same identity)
// and where. The stored entry then passes its own check: its record is
// the canonical form of its entry, which was just validated, with the
// identity just computed; so it is marked checked.
func (s *Snapshot) stored(it item) (int, bool) {
	i, ok := s.byName[it.cap.Name]
	if !ok || s.recs[i] != it.rec || s.caps[i].Identity != it.cap.Identity {
		return 0, false
	}
	s.checks[i].state.Store(sound)
	return i, true
}

// prepared is an entry ready to commit: its item and its record bytes.
type prepared struct {
	it     item
	record []byte
}

// prepare validates entries, screens them when screen is not nil, and
// computes each one's identity and record, on every core: at 100,000
// entries (a bulk load) this is most of a write's cost. The problem
// returned is the first in the order given: the first invalid entry, or
// the first the screen refuses.
func prepare(ctx context.Context, entries []Entry, screen func(Entry) error) ([]prepared, error) {
	preps := make([]prepared, len(entries))
	invalid := make([]error, len(entries))
	failed := make([]error, len(entries)) // identity or encoding
	checks := checked(len(entries))
	err := forEach(ctx, len(entries), func(w *worker, i int) {
		e := entries[i]
		if invalid[i] = e.validate(entryLabel(e), &w.v); invalid[i] != nil {
			return
		}
		id, err := e.Identity()
		if err != nil {
			failed[i] = fmt.Errorf("registry: identity of %q: %w", e.Name, err)
			return
		}
		rec, err := e.recordBytes()
		if err != nil {
			failed[i] = fmt.Errorf("registry: encode %q: %w", e.Name, err)
			return
		}
		preps[i] = prepared{
			it:     item{cap: Capability{Entry: e, Identity: id}, rec: hashing.SumSHA256(rec), bkt: bucketOf(e.Name), chk: &checks[i]},
			record: rec,
		}
	})
	if err != nil {
		return nil, err
	}
	for i, e := range entries {
		if invalid[i] != nil {
			return nil, invalid[i]
		}
		if screen != nil {
			if err := screen(e); err != nil {
				return nil, err
			}
		}
	}
	for _, err := range failed {
		if err != nil {
			return nil, err
		}
	}
	return preps, nil
}

// commit writes entries over the current version as one new version, in
// one transaction, and publishes the new snapshot. Callers hold writeMu.
//
// The cost is what changed: the changed records, the chunks of the buckets
// they fall in and one root. Unchanged chunks are shared with the parent.
func (s *Store) commit(ctx context.Context, op string, preps []prepared) (*Snapshot, error) {
	if len(preps) == 0 {
		return nil, fmt.Errorf("registry: %s: no entries", op)
	}
	cur := s.Current()

	// Everything that can fail on input fails here, before the transaction.
	given := make(map[string]bool, len(preps))
	for _, p := range preps {
		if given[p.it.cap.Name] {
			return nil, fmt.Errorf("registry: %s: entry %q given twice: %w", op, p.it.cap.Name, ErrInvalidEntry)
		}
		given[p.it.cap.Name] = true
	}
	slices.SortFunc(preps, func(a, b prepared) int { return strings.Compare(a.it.cap.Name, b.it.cap.Name) })
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
	snap.log, snap.contracts = s.log, s.contracts
	if !sameIDs {
		snap.Info.Registry = registryHash(snap.Identities())
	}
	info = snap.Info

	// Re-chunk only the buckets the change touched, and re-group only
	// their groups; a parent stored as a legacy manifest has no chunks
	// yet, so every bucket is written once, and a parent stored in format
	// 2 has no groups, so every group is.
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
	var chunkKVs []keyValue
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
		chunkKVs = append(chunkKVs, keyValue{k: d.Key(), v: raw, d: d})
	}
	var nextGroups groupRoot
	var groupKVs []keyValue
	if cur.groups != nil {
		nextGroups = *cur.groups
	}
	for g := range nextGroups {
		if cur.groups != nil && !slices.Contains(touched[g*groupSize:(g+1)*groupSize], true) {
			continue
		}
		raw, d, err := encodeGroup(groupOf(&next, g))
		if err != nil {
			return nil, fmt.Errorf("registry: encode group %d: %w", g, err)
		}
		nextGroups[g] = d
		if raw != nil {
			groupKVs = append(groupKVs, keyValue{k: d.Key(), v: raw, d: d})
		}
	}
	snap.chunks, snap.groups = &next, &nextGroups
	rootRaw, err := encodeRoot(snap.Info, &nextGroups)
	if err != nil {
		return nil, fmt.Errorf("registry: encode version %d: %w", info.Version, err)
	}

	// What the transaction writes, keys in sorted order: bbolt inserts
	// into sorted nodes, and a large seed in random order would be
	// quadratic.
	recKVs := make([]keyValue, len(preps))
	for i, p := range preps {
		recKVs[i] = keyValue{k: p.it.rec.Key(), v: p.record, d: p.it.rec}
	}
	nameKVs := make([]keyValue, len(changedItems)) // changedItems are sorted by name
	idKVs := make([]keyValue, len(changedItems))
	for i, it := range changedItems {
		id := it.cap.Identity.Key()
		nameKVs[i] = keyValue{k: []byte(it.cap.Name), v: id}
		idKVs[i] = keyValue{k: id, v: it.rec.Key()}
	}
	var goneIDs [][]byte
	for _, it := range changedItems {
		if i, ok := cur.byName[it.cap.Name]; ok {
			goneIDs = append(goneIDs, cur.caps[i].Identity.Key())
		}
	}
	for _, kvs := range [][]keyValue{recKVs, chunkKVs, groupKVs, idKVs} {
		slices.SortFunc(kvs, func(a, b keyValue) int { return bytes.Compare(a.k, b.k) })
	}

	err = s.st.Update(ctx, func(tx store.Tx) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		v, err := currentVersion(tx)
		if err != nil {
			return err
		}
		if v != cur.Version() {
			// Another replica over the same engine made a version since this
			// process read its own (bbolt's file lock keeps a file to one
			// process; a PostgreSQL engine is shared).
			return fmt.Errorf("%w: the store is at version %d, this process at %d (another replica wrote it; apply again)", store.ErrConflict, v, cur.Version())
		}
		// Pages filled before they split (bbolt's default is half): the
		// file of a bulk load is then half the size, and so is what an
		// open reads. Versions only ever append.
		if fs, ok := tx.(fillSetter); ok {
			for _, name := range []string{spaceRecords.Name, spaceChunks.Name, spaceGroups.Name, namesName, identitiesName} {
				if err := fs.SetFillPercent(name, 0.9); err != nil {
					return err
				}
			}
			if err := fs.SetFillPercent(versionsName, 1); err != nil {
				return err
			}
		}
		// Content-addressed: bytes already stored are not written again
		// (an entry changed back to an earlier state reuses its record).
		for _, kvs := range []struct {
			sp  store.Space
			kvs []keyValue
		}{{spaceRecords, recKVs}, {spaceChunks, chunkKVs}, {spaceGroups, groupKVs}} {
			for _, kv := range kvs.kvs {
				if err := putIfChanged(tx, kvs.sp, kv); err != nil {
					return err
				}
			}
		}
		// The one version sequence: PutVersion refuses any number but the
		// next (store.ErrConflict), in every engine and across processes.
		if err := tx.PutVersion(versionsName, info.Version, rootRaw); err != nil {
			return err
		}
		// The current-version indexes, for the changed names. Every old
		// identity goes before any new one is written, so that two entries
		// swapping identities in one change keep both.
		for _, k := range goneIDs {
			if err := tx.DeleteValue(identitiesName, k); err != nil {
				return err
			}
		}
		for _, kvs := range []struct {
			name string
			kvs  []keyValue
		}{{namesName, nameKVs}, {identitiesName, idKVs}} {
			for _, kv := range kvs.kvs {
				if err := tx.PutValue(kvs.name, kv.k, kv.v); err != nil {
					return err
				}
			}
		}
		return tx.PutValue(metaName, keyCurrent, u64(info.Version))
	})
	if err != nil {
		if errors.Is(err, store.ErrConflict) {
			// The version sequence is single (PutVersion): this process lost
			// the race for info.Version. Catch up, so that the caller's next
			// attempt applies on the version that won.
			if rerr := s.reload(ctx, cur); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
		return nil, fmt.Errorf("registry: commit version %d: %w", info.Version, err)
	}
	s.current.Store(snap)
	s.log.LogAttrs(ctx, slog.LevelInfo, "registry version committed",
		slog.Uint64("version", info.Version), slog.String("op", op),
		slog.Int("changed", len(changed)), slog.Int("chunks", len(chunkKVs)), slog.Int("groups", len(groupKVs)),
		slog.String("registry", info.Registry.String()))
	return snap, nil
}

// keyValue is one write of a commit; d is k's digest when k is one.
type keyValue struct {
	k, v []byte
	d    hashing.Digest
}

// putIfChanged writes kv in sp unless exactly its bytes are stored there;
// a stored value that differs (one that no longer hashes to its key) is
// repaired, which PutRecord, trusting what is there, would not do.
func putIfChanged(tx regTx, sp store.Space, kv keyValue) error {
	has, err := tx.HasRecord(sp, kv.d)
	if err != nil {
		return err
	}
	if has {
		old, err := lookup(tx, sp.Name, kv.k)
		if err != nil {
			return err
		}
		if bytes.Equal(old, kv.v) {
			return nil
		}
	}
	return tx.PutValue(sp.Name, kv.k, kv.v)
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

// getChunk returns the stored bytes of chunk d, or nil (a database written
// before chunks existed has no chunk bucket).
func getChunk(tx regTx, d hashing.Digest) ([]byte, error) {
	return lookup(tx, spaceChunks.Name, d.Key())
}

// readVersion loads version n and checks, on the way, every chunk and
// record against its digest, every record against the name its chunk
// lists, and the registry hash and count of the listed identities against
// the recorded ones. Each entry's own check (decode.go) is left to its
// first read.
//
// base, when not nil, is a snapshot already loaded and checked (the
// current one): a chunk of version n with the same digest as base's is
// taken from base without reading it, and so is an entry whose record
// digest base holds. Reading an old version then costs what differs
// between it and base.
func readVersion(ctx context.Context, tx regTx, n uint64, base *Snapshot) (*Snapshot, error) {
	raw, err := tx.Version(versionsName, n)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("registry version %d: %w", n, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("registry version %d: %w", n, err)
	}
	doc, err := decodeVersion(u64(n), raw)
	if err != nil {
		return nil, err
	}
	r := doc.chunks
	if doc.groups != nil {
		if r, err = readGroups(tx, n, doc.groups, base); err != nil {
			return nil, err
		}
	}
	var sh *shareIndex
	if base != nil {
		sh = base.shared()
	}
	pages := pagesOf(tx)

	// The entries as the version lists them; those base holds come from
	// base (from ≥ 0), the others are read below.
	type listed struct {
		ref  chunkRef
		bkt  uint8
		from int32
	}
	all := make([]listed, 0, min(max(doc.Count, 0), 1<<20)) // a corrupt count must not allocate
	add := func(refs []chunkRef, bkt func(string) uint8) error {
		for i, ref := range refs {
			if i > 0 && ref.Name <= refs[i-1].Name {
				return fmt.Errorf("%w: version %d: names not strictly sorted at %q", ErrCorrupt, n, ref.Name)
			}
			from := int32(-1)
			if sh != nil {
				if j, ok := sh.byRecord[ref.Record]; ok && base.caps[j].Name == ref.Name && base.caps[j].Identity == ref.Identity {
					from = int32(j)
				}
			}
			all = append(all, listed{ref, bkt(ref.Name), from})
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
					c := &base.caps[j]
					all = append(all, listed{chunkRef{Name: c.Name, Identity: c.Identity, Record: base.recs[j]}, base.bkts[j], int32(j)})
				}
				continue
			}
			raw, err := getChunk(tx, cd)
			if err != nil {
				return nil, err
			}
			refs, got, err := decodeChunk(cd, raw)
			if err != nil {
				return nil, fmt.Errorf("version %d, bucket %d: %w", n, b, err)
			}
			pages.ReleasePages(raw, raw)
			if int(got) != b {
				return nil, fmt.Errorf("%w: version %d lists chunk %s of bucket %d in bucket %d", ErrCorrupt, n, cd, got, b)
			}
			if err := add(refs, func(string) uint8 { return got }); err != nil {
				return nil, err
			}
		}
	}

	// The snapshot's arrays in name order, filled in place: at 100,000
	// entries a copy of them is 40 MB.
	order := make([]int32, len(all))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return strings.Compare(all[a].ref.Name, all[b].ref.Name) })
	caps := make([]Capability, len(all))
	recs := make([]hashing.Digest, len(all))
	bkts := make([]uint8, len(all))
	checks := make([]*entryCheck, len(all))
	var todo []int32 // positions to read
	for i, o := range order {
		l := &all[o]
		recs[i], bkts[i] = l.ref.Record, l.bkt
		if l.from >= 0 {
			caps[i], checks[i] = base.caps[l.from], base.checks[l.from]
			continue
		}
		caps[i].Identity = l.ref.Identity
		todo = append(todo, int32(i))
	}

	// Read in key order, which is about file order: this goroutine seeks
	// (a transaction is not for sharing), the workers hash and decode,
	// each handing the run of pages it read back to the kernel once read
	// (pageReleaser, boltstore's pages_linux.go), so that the file is never resident all at once.
	keys := make([][]byte, len(caps))
	arena := make([]byte, 0, len(todo)*(len("sha256:")+2*hashing.Size))
	for _, i := range todo {
		from := len(arena)
		arena = appendKey(arena, recs[i])
		keys[i] = arena[from:len(arena):len(arena)]
	}
	slices.SortFunc(todo, func(a, b int32) int { return bytes.Compare(keys[a], keys[b]) })
	problems := make([]string, len(caps))
	raws := make([][]byte, len(caps))
	const run = 64
	runs := make(chan []int32, 2*runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), max(len(todo)/run, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var w worker
			for js := range runs {
				var first, last []byte // the lowest start, the highest end
				for _, i := range js {
					d := w.readRecord(recs[i], raws[i], false)
					caps[i].Entry, problems[i] = d.e, d.problem
					if r := raws[i]; len(r) > 0 {
						if first == nil || addressOf(r) < addressOf(first) {
							first = r
						}
						if last == nil || addressOf(r)+uintptr(len(r)) > addressOf(last)+uintptr(len(last)) {
							last = r
						}
					}
				}
				pages.ReleasePages(first, last)
			}
		}()
	}
	var readErr error
	for lo := 0; lo < len(todo) && ctx.Err() == nil && readErr == nil; lo += run {
		js := todo[lo:min(lo+run, len(todo))]
		for _, i := range js {
			if raws[i], readErr = lookup(tx, spaceRecords.Name, keys[i]); readErr != nil {
				break
			}
		}
		runs <- js
		if lo > 0 && lo%(32*run) == 0 {
			pages.ReleaseAllPages(raws[js[0]]) // see ReleaseAllPages: runs released one by one come back
		}
	}
	close(runs)
	wg.Wait()
	if readErr != nil {
		return nil, fmt.Errorf("registry version %d: %w", n, readErr)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fresh := make([]entryCheck, len(todo))
	slices.Sort(todo) // name order, for the first problem's sake
	for k, i := range todo {
		name := all[order[i]].ref.Name
		if p := problems[i]; p != "" {
			return nil, fmt.Errorf("%w: version %d, entry %q: %s", ErrCorrupt, n, name, p)
		}
		if caps[i].Name != name {
			return nil, fmt.Errorf("%w: version %d lists %q, its record %s holds %q", ErrCorrupt, n, name, recs[i], caps[i].Name)
		}
		checks[i] = &fresh[k]
	}
	ids := make([]hashing.Digest, len(caps))
	for i := range caps {
		ids[i] = caps[i].Identity
	}
	if h := registryHash(ids); h != doc.Registry {
		return nil, fmt.Errorf("%w: version %d records registry %s, its entries hash to %s", ErrCorrupt, n, doc.Registry, h)
	}
	if doc.Count != len(caps) {
		return nil, fmt.Errorf("%w: version %d records %d entries, holds %d", ErrCorrupt, n, doc.Count, len(caps))
	}
	snap := buildSnapshot(doc.VersionInfo, caps, recs, bkts, checks, r)
	snap.groups = doc.groups
	return snap, nil
}

// readGroups is the chunk list of a format-3 version: each group it lists
// read and checked against its digest, or, when base (already loaded and
// checked) has a group with that digest, taken from base.
func readGroups(tx regTx, n uint64, gr *groupRoot, base *Snapshot) (*root, error) {
	var r root
	for g, gd := range gr {
		if gd.IsZero() {
			continue
		}
		if base != nil && base.groups != nil && base.groups[g] == gd {
			*groupOf(&r, g) = *groupOf(base.chunks, g)
			continue
		}
		raw, err := lookup(tx, spaceGroups.Name, gd.Key())
		if err != nil {
			return nil, err
		}
		cs, err := decodeGroup(gd, raw)
		if err != nil {
			return nil, fmt.Errorf("version %d, group %d: %w", n, g, err)
		}
		*groupOf(&r, g) = *cs
	}
	return &r, nil
}
