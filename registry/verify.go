package registry

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/store"
	"github.com/groundgate/groundgate/store/boltstore"
)

// VerifyReport summarises a full verification.
type VerifyReport struct {
	Versions int            `json:"versions"`
	Records  int            `json:"records"`
	Chunks   int            `json:"chunks"`
	Groups   int            `json:"groups"`
	Current  uint64         `json:"current"`
	Registry hashing.Digest `json:"registry"`
	Problems []string       `json:"problems"`
}

// Verify recomputes, from the stored bytes, every record digest, every
// identity, every chunk and group, every version's registry hash, and the current
// indexes. It returns an error wrapping ErrCorrupt when anything
// disagrees; the report lists every problem found, not only the first.
func (s *Store) Verify(ctx context.Context) (VerifyReport, error) {
	return VerifyStore(ctx, s.st)
}

// VerifyFile verifies the registry in the bbolt file at path without
// loading it first, so that a file whose current version is corrupt (and
// which Open therefore refuses) can still be examined.
func VerifyFile(ctx context.Context, path string) (VerifyReport, error) {
	bs, err := boltstore.OpenFile(path, boltstore.FileOptions{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		return VerifyReport{}, fmt.Errorf("registry: %w", err)
	}
	defer bs.Close()
	return VerifyStore(ctx, bs)
}

// VerifyStore verifies the registry in st (bbolt or PostgreSQL), read in
// one View.
//
// Its cost is what is stored, not versions × entries: every record is
// hashed and decoded once, every chunk and group once, every version's
// root once.
// Versions are walked in order keeping the name → identity state; a
// version is applied by diffing only the chunks that differ from its
// parent's, and its registry hash is recomputed only when its multiset of
// identities changed (otherwise it is the parent's) — and still compared
// with the recorded hash of every version.
func VerifyStore(ctx context.Context, st store.Viewer) (VerifyReport, error) {
	rep := VerifyReport{Problems: []string{}}
	err := st.View(ctx, func(tx store.Tx) error {
		rep = VerifyReport{Problems: []string{}}
		v := &verifier{tx: tx, rep: &rep}
		return v.run(ctx)
	})
	if err != nil {
		return rep, fmt.Errorf("registry: verify: %w", err)
	}
	if len(rep.Problems) > 0 {
		return rep, fmt.Errorf("registry: verify: %d problem(s), first: %s: %w", len(rep.Problems), rep.Problems[0], ErrCorrupt)
	}
	return rep, nil
}

type verifier struct {
	tx      regTx
	rep     *VerifyReport
	records map[hashing.Digest]*recordInfo
	chunks  map[hashing.Digest]*chunkInfo
	groups  map[hashing.Digest]*groupInfo
	st      state
	bucket  map[string]uint8 // bucketOf, cached across legacy manifests
}

type recordInfo struct {
	name string
	id   hashing.Digest
	ok   bool // hashes to its key and decodes
	used bool // some version refers to it
}

type chunkInfo struct {
	refs []chunkRef
	bkt  uint8
	ok   bool // hashes to its key, decodes and is well formed
	used bool
}

type groupInfo struct {
	chunks *group // nil when it does not hash to its key or decode
	used   bool
}

// state is the registry as of the last version walked: per bucket the
// entries, and the sorted multiset of identities with its registry hash.
type state struct {
	buckets [NumBuckets]bucketState
	unknown int      // buckets whose content could not be read
	ids     []string // identity strings of the known buckets, sorted
	hash    hashing.Digest
	count   int
	// parentBad is set after a version that could not be decoded: the
	// next version's list of changed names cannot be checked.
	parentBad bool
}

type bucketState struct {
	refs    []chunkRef // sorted by name
	unknown bool
	// chunk is the digest of refs when it is known (a chunk, or the zero
	// digest for an empty bucket); false for entries from a legacy
	// manifest, which were never chunked.
	chunk     hashing.Digest
	hasDigest bool
}

func (v *verifier) problem(format string, args ...any) {
	v.rep.Problems = append(v.rep.Problems, fmt.Sprintf(format, args...))
}

// fail records a decoding error as a problem; every problem is a
// corruption, so the sentinel's words are left out.
func (v *verifier) fail(err error) {
	v.problem("%s", strings.TrimPrefix(err.Error(), ErrCorrupt.Error()+": "))
}

func (v *verifier) run(ctx context.Context) error {
	if err := v.checkRecords(ctx); err != nil {
		return err
	}
	if err := v.checkChunks(ctx); err != nil {
		return err
	}
	if err := v.checkGroups(ctx); err != nil {
		return err
	}
	last, err := v.walkVersions(ctx)
	if err != nil {
		return err
	}
	cur, err := currentVersion(v.tx)
	if err != nil {
		return err
	}
	v.rep.Current = cur
	if last != cur {
		v.problem("the last version stored is %d, the current version is %d", last, cur)
	}
	v.checkUnused()
	return v.checkIndexes(ctx)
}

// checkRecords hashes and decodes every stored record, once (on every
// core: at scale this is most of the work).
func (v *verifier) checkRecords(ctx context.Context) error {
	v.records = make(map[hashing.Digest]*recordInfo)
	var (
		ds   []hashing.Digest
		raws [][]byte
	)
	err := v.tx.Scan(spaceRecords.Name, func(k, raw []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		v.rep.Records++
		d, err := hashing.Parse(string(k))
		if err != nil || d.Algorithm() != hashing.SHA256 {
			v.problem("record key %q is not a sha256 digest", clip(k))
			return nil
		}
		ds, raws = append(ds, d), append(raws, raw)
		return nil
	})
	if err != nil {
		return err
	}
	dec, err := readRecords(ctx, ds, raws, true)
	if err != nil {
		return err
	}
	for i, d := range ds {
		v.records[d] = &recordInfo{name: dec[i].e.Name, id: dec[i].id, ok: dec[i].problem == ""}
		if dec[i].problem != "" {
			v.problem("%s", dec[i].problem)
		}
	}
	return nil
}

// eachDigestKeyed calls fn with every value of the named bucket (none if
// the file has no such bucket: it was written before it existed) and its
// key parsed as a sha256 digest, counting the values in *n; a key that is
// no such digest is a problem.
func (v *verifier) eachDigestKeyed(ctx context.Context, name, what string, n *int, fn func(d hashing.Digest, raw []byte)) error {
	return v.tx.Scan(name, func(k, raw []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		*n++
		d, err := hashing.Parse(string(k))
		if err != nil || d.Algorithm() != hashing.SHA256 {
			v.problem("%s key %q is not a sha256 digest", what, clip(k))
			return nil
		}
		fn(d, raw)
		return nil
	})
}

// checkChunks hashes and decodes every stored chunk, once, and checks each
// of its entries against the record it names.
func (v *verifier) checkChunks(ctx context.Context) error {
	v.chunks = make(map[hashing.Digest]*chunkInfo)
	return v.eachDigestKeyed(ctx, spaceChunks.Name, "chunk", &v.rep.Chunks, func(d hashing.Digest, raw []byte) {
		refs, b, err := decodeChunk(d, raw)
		v.chunks[d] = &chunkInfo{refs: refs, bkt: b, ok: err == nil}
		if err != nil {
			v.fail(err)
			return
		}
		for _, ref := range refs {
			if p := v.checkRef(ref); p != "" {
				v.problem("chunk %s: %s", d, p)
			}
		}
	})
}

// checkGroups hashes and decodes every stored group, once. What its
// chunks hold is checked where a version lists the group: that each
// exists, is sound and is of the bucket at its place.
func (v *verifier) checkGroups(ctx context.Context) error {
	v.groups = make(map[hashing.Digest]*groupInfo)
	return v.eachDigestKeyed(ctx, spaceGroups.Name, "group", &v.rep.Groups, func(d hashing.Digest, raw []byte) {
		cs, err := decodeGroup(d, raw)
		if err != nil {
			v.fail(err)
		}
		v.groups[d] = &groupInfo{chunks: cs}
	})
}

// checkRef checks a chunk or manifest entry against its record.
func (v *verifier) checkRef(ref chunkRef) string {
	ri := v.records[ref.Record]
	switch {
	case ri == nil:
		return fmt.Sprintf("entry %q: record %s is missing", ref.Name, ref.Record)
	case !ri.ok:
		return fmt.Sprintf("entry %q: record %s is corrupt", ref.Name, ref.Record)
	case ri.name != ref.Name || ri.id != ref.Identity:
		return fmt.Sprintf("lists %q with identity %s, record %s says %q with identity %s", ref.Name, ref.Identity, ref.Record, ri.name, ri.id)
	}
	return ""
}

// walkVersions applies every version to the state in order and compares
// what it records with what its entries give. It returns the last version
// number stored.
func (v *verifier) walkVersions(ctx context.Context) (uint64, error) {
	v.st.hash = registryHashSorted(nil)
	for b := range v.st.buckets {
		v.st.buckets[b].hasDigest = true // empty, and the zero digest says so
	}
	var last uint64
	err := v.tx.Scan(versionsName, func(k, raw []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		v.rep.Versions++
		if len(k) != 8 {
			v.problem("version key %x is not 8 bytes", k)
			return nil
		}
		n := binary.BigEndian.Uint64(k)
		if n != last+1 {
			v.problem("version %d follows version %d", n, last)
		}
		last = n
		doc, err := decodeVersion(k, raw)
		if err != nil {
			v.fail(err)
			v.st.parentBad = true
			return nil
		}
		v.rep.Registry = doc.Registry
		if doc.Parent != n-1 {
			v.problem("version %d records parent %d, want %d", n, doc.Parent, n-1)
		}
		v.applyVersion(n, doc)
		return nil
	})
	if err != nil {
		return last, err
	}
	if last == 0 {
		v.rep.Registry = hashing.RegistryHash(nil)
	}
	return last, nil
}

// change collects what one version does to the state.
type change struct {
	names    []string
	removed  []string // identities
	added    []string
	complete bool // every touched bucket was diffed against a known parent
}

func (v *verifier) applyVersion(n uint64, doc *versionDoc) {
	ch := change{complete: !v.st.parentBad}
	v.st.parentBad = false
	r, readable := doc.chunks, [NumBuckets]bool{}
	for b := range readable {
		readable[b] = true
	}
	if doc.groups != nil {
		// Format 3: the chunk list is the groups'. A group that cannot be
		// read leaves its buckets unknown.
		r = &root{}
		for g, gd := range doc.groups {
			if gd.IsZero() {
				continue
			}
			gi := v.groups[gd]
			switch {
			case gi == nil:
				v.problem("version %d, group %d: group %s is missing", n, g, gd)
			case gi.chunks == nil:
				v.problem("version %d, group %d: group %s is corrupt", n, g, gd)
			default:
				gi.used = true
				*groupOf(r, g) = *gi.chunks
				continue
			}
			for b := g * groupSize; b < (g+1)*groupSize; b++ {
				readable[b] = false
			}
		}
	}
	if r == nil {
		// A legacy manifest: every entry, checked here, diffed bucket by bucket.
		var groups [NumBuckets][]chunkRef
		for i, ref := range doc.Entries {
			if i > 0 && ref.Name <= doc.Entries[i-1].Name {
				v.problem("version %d: names not strictly sorted at %q", n, ref.Name)
				v.st.parentBad = true
				return
			}
			if p := v.checkRef(ref); p != "" {
				v.problem("version %d: %s", n, p)
			}
			if ri := v.records[ref.Record]; ri != nil {
				ri.used = true
			}
			b := v.bucketOf(ref.Name)
			groups[b] = append(groups[b], ref)
		}
		for b := range groups {
			v.setBucket(b, groups[b], true, hashing.Digest{}, false, &ch)
		}
	} else {
		for b, d := range r {
			bs := &v.st.buckets[b]
			if !readable[b] {
				v.setBucket(b, nil, false, d, false, &ch)
				continue
			}
			if !bs.unknown && bs.hasDigest && bs.chunk == d {
				continue // shared with the parent
			}
			if d.IsZero() {
				v.setBucket(b, nil, true, d, true, &ch)
				continue
			}
			ci := v.chunks[d]
			switch {
			case ci == nil:
				v.problem("version %d, bucket %d: chunk %s is missing", n, b, d)
			case !ci.ok:
				v.problem("version %d, bucket %d: chunk %s is corrupt", n, b, d)
			case int(ci.bkt) != b:
				v.problem("version %d, bucket %d: chunk %s belongs to bucket %d", n, b, d, ci.bkt)
			default:
				ci.used = true
				v.setBucket(b, ci.refs, true, d, true, &ch)
				continue
			}
			v.setBucket(b, nil, false, d, false, &ch)
		}
	}
	v.applyIdentities(n, &ch)

	if v.st.unknown > 0 {
		v.problem("version %d: registry hash not recomputed: %d bucket(s) unreadable", n, v.st.unknown)
		return
	}
	if doc.Registry != v.st.hash {
		v.problem("version %d records registry %s, its entries hash to %s", n, doc.Registry, v.st.hash)
	}
	if doc.Count != v.st.count {
		v.problem("version %d records %d entries, holds %d", n, doc.Count, v.st.count)
	}
	if ch.complete {
		sort.Strings(ch.names)
		if !slices.Equal(ch.names, doc.Change.Names) {
			v.problem("version %d records changed names %s, its entries changed %s", n, clipNames(doc.Change.Names), clipNames(ch.names))
		}
	}
}

// setBucket replaces bucket b's content, recording which names and
// identities changed. ok false means the content could not be read.
func (v *verifier) setBucket(b int, refs []chunkRef, ok bool, d hashing.Digest, hasDigest bool, ch *change) {
	bs := &v.st.buckets[b]
	wasUnknown := bs.unknown
	if !wasUnknown {
		v.st.count -= len(bs.refs)
	}
	switch {
	case !ok:
		ch.complete = false
		if !wasUnknown {
			for _, r := range bs.refs {
				ch.removed = append(ch.removed, r.Identity.String())
			}
			v.st.unknown++
		}
		*bs = bucketState{unknown: true}
		return
	case wasUnknown:
		// The parent's content is not known: nothing to diff against.
		ch.complete = false
		v.st.unknown--
		for _, r := range refs {
			ch.added = append(ch.added, r.Identity.String())
		}
	default:
		diffRefs(bs.refs, refs, ch)
	}
	v.st.count += len(refs)
	*bs = bucketState{refs: refs, chunk: d, hasDigest: hasDigest}
}

// diffRefs merges two name-sorted entry lists, noting names whose identity
// or record differs and the identities that leave and arrive.
func diffRefs(old, new []chunkRef, ch *change) {
	i, j := 0, 0
	for i < len(old) || j < len(new) {
		switch {
		case j == len(new) || i < len(old) && old[i].Name < new[j].Name:
			ch.names = append(ch.names, old[i].Name)
			ch.removed = append(ch.removed, old[i].Identity.String())
			i++
		case i == len(old) || new[j].Name < old[i].Name:
			ch.names = append(ch.names, new[j].Name)
			ch.added = append(ch.added, new[j].Identity.String())
			j++
		default:
			if old[i].Record != new[j].Record || old[i].Identity != new[j].Identity {
				ch.names = append(ch.names, new[j].Name)
			}
			if old[i].Identity != new[j].Identity {
				ch.removed = append(ch.removed, old[i].Identity.String())
				ch.added = append(ch.added, new[j].Identity.String())
			}
			i++
			j++
		}
	}
}

// applyIdentities updates the identity multiset, all removals before any
// addition (two entries may swap identities), refuses an identity held by
// two names, and recomputes the registry hash only when the multiset
// changed.
func (v *verifier) applyIdentities(n uint64, ch *change) {
	if len(ch.removed) == 0 && len(ch.added) == 0 {
		return
	}
	if len(ch.removed)+len(ch.added) > 64 {
		v.bulkIdentities(n, ch) // a seed: inserting one by one would be quadratic
	} else {
		for _, id := range ch.removed {
			if i, ok := slices.BinarySearch(v.st.ids, id); ok {
				v.st.ids = slices.Delete(v.st.ids, i, i+1)
			}
		}
		for _, id := range ch.added {
			i, ok := slices.BinarySearch(v.st.ids, id)
			if ok {
				v.problem("version %d: identity %s is held by two names", n, id)
			}
			v.st.ids = slices.Insert(v.st.ids, i, id)
		}
	}
	v.st.hash = registryHashSorted(v.st.ids)
}

// bulkIdentities is applyIdentities for large changes: filter, append,
// sort once.
func (v *verifier) bulkIdentities(n uint64, ch *change) {
	gone := make(map[string]int, len(ch.removed))
	for _, id := range ch.removed {
		gone[id]++
	}
	kept := v.st.ids[:0]
	for _, id := range v.st.ids {
		if gone[id] > 0 {
			gone[id]--
			continue
		}
		kept = append(kept, id)
	}
	ids := append(kept, ch.added...)
	slices.Sort(ids)
	added := make(map[string]bool, len(ch.added))
	for _, id := range ch.added {
		added[id] = true
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] && added[ids[i]] {
			v.problem("version %d: identity %s is held by two names", n, ids[i])
			added[ids[i]] = false // once per identity
		}
	}
	v.st.ids = ids
}

func (v *verifier) bucketOf(name string) uint8 {
	if v.bucket == nil {
		v.bucket = make(map[string]uint8)
	}
	b, ok := v.bucket[name]
	if !ok {
		b = bucketOf(name)
		v.bucket[name] = b
	}
	return b
}

// checkUnused reports stored groups, chunks and records no version refers to:
// every write stores them in the transaction that references them.
func (v *verifier) checkUnused() {
	for _, ci := range v.chunks {
		if ci.used {
			for _, r := range ci.refs {
				if ri := v.records[r.Record]; ri != nil {
					ri.used = true
				}
			}
		}
	}
	var orphans []string
	for d, gi := range v.groups {
		if !gi.used {
			orphans = append(orphans, "group "+d.String())
		}
	}
	for d, ci := range v.chunks {
		if !ci.used {
			orphans = append(orphans, "chunk "+d.String())
		}
	}
	for d, ri := range v.records {
		if !ri.used {
			orphans = append(orphans, "record "+d.String())
		}
	}
	sort.Strings(orphans)
	for _, o := range orphans {
		v.problem("%s is not referenced by any version", o)
	}
}

// checkIndexes compares the current-version indexes with the state after
// the last version. It reads each index in one scan (one pass over a
// keyspace, which an engine across a network serves in pages, not a
// round trip per entry).
func (v *verifier) checkIndexes(ctx context.Context) error {
	index := func(name string) (map[string]string, error) {
		m := map[string]string{}
		err := v.tx.Scan(name, func(k, raw []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			m[string(k)] = string(raw)
			return nil
		})
		return m, err
	}
	names, err := index(namesName)
	if err != nil {
		return err
	}
	ids, err := index(identitiesName)
	if err != nil {
		return err
	}
	if len(names) == 0 && len(ids) == 0 && v.st.count > 0 {
		v.problem("current-version indexes are missing")
		return nil
	}
	if v.st.unknown == 0 {
		if n := len(names); n != v.st.count {
			v.problem("name index has %d keys, the current version has %d entries", n, v.st.count)
		}
		if n := len(ids); n != v.st.count {
			v.problem("identity index has %d keys, the current version has %d entries", n, v.st.count)
		}
	}
	for _, bs := range v.st.buckets {
		for _, r := range bs.refs {
			if got := names[r.Name]; got != r.Identity.String() {
				v.problem("name index: %q -> %q, want %s", r.Name, got, r.Identity)
			}
			if got := ids[r.Identity.String()]; got != r.Record.String() {
				v.problem("identity index: %s -> %q, want record %s of %q", r.Identity, got, r.Record, r.Name)
			}
		}
	}
	return nil
}

// registryHashSorted is hashing.RegistryHash over identity strings that
// are already sorted: the verifier keeps them sorted as it walks versions
// rather than sorting every version's identities again.
func registryHashSorted(ids []string) hashing.Digest {
	h := sha256.New()
	for _, id := range ids {
		h.Write([]byte(id))
		h.Write([]byte{'\n'})
	}
	return hashing.New(hashing.SHA256, h.Sum(nil))
}

func clip(k []byte) string {
	if len(k) > 80 {
		return string(k[:80]) + "…"
	}
	return string(k)
}

func clipNames(names []string) string {
	if len(names) > 5 {
		return fmt.Sprintf("%q… (%d names)", names[:5], len(names))
	}
	return fmt.Sprintf("%q", names)
}
