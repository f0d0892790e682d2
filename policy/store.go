package policy

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/store"
)

// Set is one version of the policies in force: every policy by name, and
// the set's digest, which grounding records and footprints carry.
type Set struct {
	Version  uint64
	Digest   hashing.Digest
	policies map[string]*Compiled
	names    []string
}

// SetDigest is the digest of a policy set: SHA-256 of the RFC 8785 form of
// {"policies": {NAME: ID…}}. The empty set has one too, so every record
// says which rules (possibly none) admitted it.
func SetDigest(ids map[string]hashing.Digest) hashing.Digest {
	if ids == nil {
		ids = map[string]hashing.Digest{}
	}
	d, err := hashing.SHA256Of(struct {
		Policies map[string]hashing.Digest `json:"policies"`
	}{ids})
	if err != nil {
		panic(err) // digests and names always encode
	}
	return d
}

// NewSet makes a set of compiled policies (version 0: not stored).
func NewSet(cs ...*Compiled) *Set {
	s := &Set{policies: map[string]*Compiled{}}
	for _, c := range cs {
		s.policies[c.Name] = c
	}
	s.seal()
	return s
}

func (s *Set) seal() {
	s.names = slices.Sorted(maps.Keys(s.policies))
	s.Digest = SetDigest(s.IDs())
}

// Len is the number of policies.
func (s *Set) Len() int { return len(s.names) }

// Names lists the policies' names, sorted.
func (s *Set) Names() []string { return append([]string(nil), s.names...) }

// Get returns one policy.
func (s *Set) Get(name string) (*Compiled, bool) {
	c, ok := s.policies[name]
	return c, ok
}

// Applicable lists, in name order, the policies that govern a request with
// this family and metric.
func (s *Set) Applicable(family, metric string) []*Compiled {
	var out []*Compiled
	for _, n := range s.names {
		if c := s.policies[n]; c.AppliesTo(family, metric) {
			out = append(out, c)
		}
	}
	return out
}

// Governing returns the policies in force that govern a capability of
// this name and kind as a pipeline names it (Compiled.Governs), in name
// order.
func (s *Set) Governing(name string, kind registry.Kind) []*Compiled {
	var out []*Compiled
	for _, n := range s.names {
		if c := s.policies[n]; c.Governs(name, kind) {
			out = append(out, c)
		}
	}
	return out
}

// ForTool lists, in name order, the policies that govern a call to the
// upstream tool named name (U.T, SPEC §14): those whose applies_to names
// the kind tool or that name and that bind no request field
// (Compiled.GovernsTool). Check decides the call with them, as a Request
// with Tool and Arguments.
func (s *Set) ForTool(name string) []*Compiled {
	var out []*Compiled
	for _, n := range s.names {
		if c := s.policies[n]; c.GovernsTool(name) {
			out = append(out, c)
		}
	}
	return out
}

// IDs maps each name to its policy's id.
func (s *Set) IDs() map[string]hashing.Digest {
	ids := make(map[string]hashing.Digest, len(s.names))
	for n, c := range s.policies {
		ids[n] = c.ID
	}
	return ids
}

// VersionInfo describes a stored version of the set.
type VersionInfo struct {
	Version  uint64                    `json:"version"`
	Digest   hashing.Digest            `json:"digest"`
	Policies map[string]hashing.Digest `json:"policies"`
	Change   Change                    `json:"change"`
	Created  time.Time                 `json:"created"`
}

// Change is what a version changed.
type Change struct {
	Op   string `json:"op"` // "put" or "delete"
	Name string `json:"name"`
}

// The policy store's keyspaces in the storage layer (bbolt buckets of
// these names): each policy's bytes under the SHA-256 id, and the set's
// versions 1, 2, 3….
var (
	spaceBlobs   = store.Space{Name: "policy.blobs", Check: store.SHA256}
	nameVersions = "policy.versions"
)

// Keyspaces are the names of the policy store's keyspaces: what a copy
// of the policies (a fuzz run's scratch registry) must hold.
func Keyspaces() []string { return []string{spaceBlobs.Name, nameVersions} }

// Backend is what the policy store needs of the storage layer.
type Backend interface {
	View(ctx context.Context, fn func(store.Tx) error) error
	Update(ctx context.Context, fn func(store.Tx) error) error
}

// reader is what reading a set needs of a transaction.
type reader interface {
	store.RecordReader
	store.Versions
}

// Store keeps policies in the storage layer: each policy's bytes under its
// id (content-addressed, never rewritten), and each version of the set as
// a map from names to ids. Every version stays readable. It is safe for
// concurrent use; writes are serialised.
type Store struct {
	st      Backend
	now     func() time.Time
	writeMu sync.Mutex
	current atomic.Pointer[Set]
	changed atomic.Pointer[func(*Set)]
}

// OnChange has f called with each new set once it is in force (after a
// Put or a Delete, in the writer's goroutine: f must not block). One f at
// a time; nil removes it.
func (s *Store) OnChange(f func(*Set)) {
	if f == nil {
		s.changed.Store(nil)
		return
	}
	s.changed.Store(&f)
}

// OpenStore opens the policy store in st (the registry's file) and loads
// the current set, verifying and compiling every policy in it. A policy
// whose bytes no longer hash to its id is ErrCorrupt: it is never served.
func OpenStore(ctx context.Context, st Backend, now func() time.Time) (*Store, error) {
	if now == nil {
		now = time.Now
	}
	s := &Store{st: st, now: now}
	var set *Set
	err := st.View(ctx, func(tx store.Tx) error {
		var err error
		set, err = latest(ctx, tx)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.current.Store(set)
	return s, nil
}

// Current is the set in force. It does no I/O.
func (s *Store) Current() *Set { return s.current.Load() }

// LatestIn reads, in tx, the number of the newest version of the set the
// store holds: what a replica compares with Current().Version to learn
// that another replica put or deleted a policy (Refresh).
func LatestIn(tx store.Versions) (uint64, error) {
	n, _, err := tx.LatestVersion(nameVersions)
	if err != nil {
		return 0, fmt.Errorf("policy set: %w", err)
	}
	return n, nil
}

// Refresh puts the store's newest set in force when another process
// sharing the engine (a replica over PostgreSQL) wrote one, and tells
// OnChange's function. It reports whether the set in force changed.
func (s *Store) Refresh(ctx context.Context) (bool, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	return s.refresh(ctx)
}

// refresh is Refresh; callers hold writeMu.
func (s *Store) refresh(ctx context.Context) (bool, error) {
	cur := s.Current()
	var set *Set
	err := s.st.View(ctx, func(tx store.Tx) error {
		n, err := LatestIn(tx)
		if err != nil || n == cur.Version {
			return err
		}
		set, err = readSet(ctx, tx, n)
		return err
	})
	if err != nil || set == nil {
		return false, err
	}
	s.current.Store(set)
	if f := s.changed.Load(); f != nil {
		(*f)(set)
	}
	return true, nil
}

func latest(ctx context.Context, tx reader) (*Set, error) {
	n, _, err := tx.LatestVersion(nameVersions)
	if err != nil {
		return nil, fmt.Errorf("policy set: %w: %w", ErrCorrupt, err)
	}
	if n == 0 {
		return NewSet(), nil
	}
	return readSet(ctx, tx, n)
}

func readInfo(tx store.Versions, n uint64) (VersionInfo, error) {
	var info VersionInfo
	raw, err := tx.Version(nameVersions, n)
	if errors.Is(err, store.ErrNotFound) {
		return info, fmt.Errorf("policy set version %d: %w", n, ErrNotFound)
	}
	if err != nil {
		return info, fmt.Errorf("policy set version %d: %w", n, err)
	}
	if err := hashing.DecodeStrict(raw, &info); err != nil {
		return info, fmt.Errorf("policy set version %d: %v: %w", n, err, ErrCorrupt)
	}
	if got := SetDigest(info.Policies); got != info.Digest || info.Version != n {
		return info, fmt.Errorf("policy set version %d records digest %s, its policies give %s: %w", n, info.Digest, got, ErrCorrupt)
	}
	return info, nil
}

func readSet(ctx context.Context, tx reader, n uint64) (*Set, error) {
	info, err := readInfo(tx, n)
	if err != nil {
		return nil, err
	}
	set := &Set{Version: n, policies: map[string]*Compiled{}}
	for _, name := range slices.Sorted(maps.Keys(info.Policies)) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p, err := readBlob(tx, name, info.Policies[name])
		if err != nil {
			return nil, err
		}
		c, err := Compile(name, p)
		if err != nil {
			// It compiled when it was written; a release that no longer
			// accepts it must not silently drop a rule.
			return nil, fmt.Errorf("stored policy %s no longer compiles (%v): %w", name, err, ErrCorrupt)
		}
		set.policies[name] = c
	}
	set.seal()
	if set.Digest != info.Digest {
		return nil, fmt.Errorf("policy set version %d: %w", n, ErrCorrupt)
	}
	return set, nil
}

// readBlob reads a policy a version names: missing or failing its hash,
// the version is corrupt.
func readBlob(tx store.RecordReader, name string, id hashing.Digest) (Policy, error) {
	raw, err := tx.Record(spaceBlobs, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Policy{}, fmt.Errorf("policy %s (%s) is missing: %w", name, id, ErrCorrupt)
	case errors.Is(err, store.ErrCorrupt):
		return Policy{}, fmt.Errorf("policy %s: %w: %w", name, ErrCorrupt, err)
	case err != nil:
		return Policy{}, fmt.Errorf("policy %s: %w", name, err)
	}
	var p Policy
	if err := hashing.DecodeStrict(raw, &p); err != nil {
		return Policy{}, fmt.Errorf("policy %s: %v: %w", name, err, ErrCorrupt)
	}
	return p, nil
}

// PutResult reports a Put.
type PutResult struct {
	Policy  *Compiled
	Version uint64
	Changed bool // false when the policy was already in force as given
}

// Put stores c under its name as a new version of the set. A policy equal
// to the one in force creates no version. Validate c (Compile and, with a
// solver, Checker.Validate) before putting it.
func (s *Store) Put(ctx context.Context, c *Compiled) (PutResult, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	raw, err := hashing.Canonical(c.Policy)
	if err != nil {
		return PutResult{}, fmt.Errorf("policy: encode %s: %w", c.Name, err)
	}
	for attempt := 1; ; attempt++ {
		cur := s.Current()
		if old, ok := cur.Get(c.Name); ok && old.ID == c.ID {
			return PutResult{Policy: old, Version: cur.Version}, nil
		}
		if _, ok := cur.Get(c.Name); !ok && cur.Len() >= MaxPolicies {
			return PutResult{}, fmt.Errorf("%w: %d policies are in force, at most %d", ErrTooMany, cur.Len(), MaxPolicies)
		}
		next := &Set{policies: map[string]*Compiled{}}
		for n, p := range cur.policies {
			next.policies[n] = p
		}
		next.policies[c.Name] = c
		err := s.commit(ctx, cur, next, Change{Op: "put", Name: c.Name}, c.ID, raw)
		if retryConflict(err, attempt) {
			continue // commit caught up with the set that won: put on it
		}
		if err != nil {
			return PutResult{}, err
		}
		return PutResult{Policy: c, Version: next.Version, Changed: true}, nil
	}
}

// conflictAttempts bounds how often Put and Delete commit when another
// process sharing the store (a replica over PostgreSQL) keeps making the
// version they were about to make: a put or delete names one policy, so
// after a conflict it applies again on the set that won, as the client
// would have sent it a moment later; only a store so busy that it loses
// every time answers ErrConflict.
const conflictAttempts = 8

// retryConflict reports whether a commit that failed with err should be
// tried again.
func retryConflict(err error, attempt int) bool {
	return errors.Is(err, store.ErrConflict) && attempt < conflictAttempts
}

// Delete removes a policy from the set as a new version; its bytes stay
// readable in older versions.
func (s *Store) Delete(ctx context.Context, name string) (uint64, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	for attempt := 1; ; attempt++ {
		cur := s.Current()
		if _, ok := cur.Get(name); !ok {
			return 0, fmt.Errorf("policy %q: %w", clip(name), ErrNotFound)
		}
		next := &Set{policies: map[string]*Compiled{}}
		for n, p := range cur.policies {
			if n != name {
				next.policies[n] = p
			}
		}
		err := s.commit(ctx, cur, next, Change{Op: "delete", Name: name}, hashing.Digest{}, nil)
		if retryConflict(err, attempt) {
			continue
		}
		if err != nil {
			return 0, err
		}
		return next.Version, nil
	}
}

func (s *Store) commit(ctx context.Context, cur, next *Set, ch Change, id hashing.Digest, raw []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	next.Version = cur.Version + 1
	next.seal()
	info := VersionInfo{Version: next.Version, Digest: next.Digest, Policies: next.IDs(), Change: ch, Created: s.now().UTC().Truncate(time.Second)}
	doc, err := hashing.Canonical(info)
	if err != nil {
		return fmt.Errorf("policy: encode version: %w", err)
	}
	err = s.st.Update(ctx, func(tx store.Tx) error {
		if raw != nil {
			if err := tx.PutRecord(spaceBlobs, id, raw); err != nil {
				return err
			}
		}
		return tx.PutVersion(nameVersions, next.Version, doc)
	})
	if err != nil {
		if errors.Is(err, store.ErrConflict) {
			// Another replica made this version first: catch up, so that
			// the writer's next attempt applies on the set that won.
			if _, rerr := s.refresh(ctx); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
		return fmt.Errorf("policy: store version %d: %w", next.Version, err)
	}
	s.current.Store(next)
	if f := s.changed.Load(); f != nil {
		(*f)(next)
	}
	return nil
}

// Version reads a past version of the set (0 is the empty set).
func (s *Store) Version(ctx context.Context, n uint64) (*Set, error) {
	if cur := s.Current(); cur.Version == n {
		return cur, nil
	}
	if n == 0 {
		return NewSet(), nil
	}
	var set *Set
	err := s.st.View(ctx, func(tx store.Tx) error {
		var err error
		set, err = readSet(ctx, tx, n)
		return err
	})
	return set, err
}

// History lists every version's header, newest first.
func (s *Store) History(ctx context.Context) ([]VersionInfo, error) {
	var out []VersionInfo
	err := s.st.View(ctx, func(tx store.Tx) error {
		n, _, err := tx.LatestVersion(nameVersions)
		if err != nil {
			return fmt.Errorf("policy set: %w: %w", ErrCorrupt, err)
		}
		for v := n; v >= 1; v-- {
			if err := ctx.Err(); err != nil {
				return err
			}
			info, err := readInfo(tx, v)
			if errors.Is(err, ErrNotFound) {
				return fmt.Errorf("policy set version %d of %d is missing: %w", v, n, ErrCorrupt)
			}
			if err != nil {
				return err
			}
			out = append(out, info)
		}
		return nil
	})
	return out, err
}

// Verify re-checks every stored policy and version of the set: each
// policy's bytes hash to its id and decode, each version's digest matches
// its names and ids, and every id a version names is stored. It returns
// how many policies and versions it checked and every problem; the error
// wraps ErrCorrupt when there is one.
func Verify(ctx context.Context, st store.Viewer) (int, []string, error) {
	var problems []string
	n := 0
	err := st.View(ctx, func(tx store.Tx) error {
		var err error
		n, problems, err = store.Verify(ctx, tx, spaceBlobs, func(_ hashing.Digest, raw []byte) error {
			var p Policy
			return hashing.DecodeStrict(raw, &p)
		})
		for i, p := range problems {
			problems[i] = "policy " + p
		}
		if err != nil && !errors.Is(err, store.ErrCorrupt) {
			return err
		}
		return tx.Scan(nameVersions, func(k, _ []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			n++
			if len(k) != 8 {
				problems = append(problems, fmt.Sprintf("policy set version key %x is not a version number", k))
				return nil
			}
			v := binary.BigEndian.Uint64(k)
			info, err := readInfo(tx, v)
			if err != nil {
				problems = append(problems, err.Error())
				return nil
			}
			for _, name := range slices.Sorted(maps.Keys(info.Policies)) {
				if _, err := readBlob(tx, name, info.Policies[name]); err != nil {
					problems = append(problems, fmt.Sprintf("policy set version %d: %v", v, err))
				}
			}
			return nil
		})
	})
	if err != nil {
		return n, problems, fmt.Errorf("policy: verify: %w", err)
	}
	if len(problems) > 0 {
		return n, problems, fmt.Errorf("policy: %d problem(s): %w", len(problems), ErrCorrupt)
	}
	return n, problems, nil
}
