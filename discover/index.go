package discover

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
)

// Fields of a bleve document. There is one document per entry that is not
// deprecated, keyed by the entry's name.
const (
	fieldName = "name" // the name with '_' read as a space: MOM_WZS → "mom wzs"
	fieldHead = "head" // the description's lead clause (see descriptionHead)
	fieldDesc = "desc" // the whole description
)

// Keyword-tier limits (see docs/discovery.md). They shape results, so they
// are constants: evidence must re-derive identically on any server.
const (
	// keywordLeadMax: a term found in the name or description head of more
	// entries than this is too generic to be evidence for any of them.
	keywordLeadMax = 5
	// keywordBodyMax: a term found only deeper in descriptions is evidence
	// only when it singles out this many entries (one).
	keywordBodyMax = 1
	// keywordMinWords: a term needs this many words to be looked up inside
	// names and descriptions (steps 2 and 3); a single word only matches
	// by definition (step 1). The index holds word pairs, so this cannot
	// be lowered without indexing single words too.
	keywordMinWords = 2
	// headMaxWords bounds a description head.
	headMaxWords = 8
	// batchSize is the number of documents per bleve batch.
	batchSize = 2000
	// compactAfter is the number of incremental updates after which the
	// index is rebuilt: each update adds an in-memory segment, and queries
	// visit every segment.
	compactAfter = 64
)

// index is the discovery index of one registry version: a bleve index for
// the keyword tier, a phrase table for the equality tiers and the
// vocabulary, and the expression maps of the inversion rule. An entry is
// known by its position in the snapshot's name order, so the index keeps
// no copy of what the snapshot holds (names, kinds, identities,
// discovery layers). An index is either the Discoverer's current one
// (mutated only under the Discoverer's write lock) or a cached past
// version (never mutated).
type index struct {
	an   *textAnalyzer
	snap *registry.Snapshot
	caps []registry.Capability // snap.Capabilities()

	terms *phraseTable
	vocab *Vocabulary
	// discs holds each entry's registry.Entry.DiscoveryDigest, hashed on
	// first use: most entries are never matched, and hashing every one
	// would slow index builds.
	discs []atomic.Pointer[hashing.Digest]

	// The inversion rule's families (not deprecated, with an expression
	// that parses) by name, and their expressions: canonical expression →
	// names, and expression with one (neg …) removed → names.
	forms   map[string]*family
	exprs   map[string][]string
	unwraps map[string][]string

	updates int // incremental updates since the last build

	text *textIndex // the keyword tier's bleve index
	disk *textDir   // where text lives when it is kept on disk, else nil

	// use guards closing a cached index while a Rederive reads it; closed
	// says it was.
	use    sync.RWMutex
	closed bool
}

// family is what the inversion rule reads of a family.
type family struct {
	familyForm
	orient registry.Orientation
}

// keyList holds the phrase keys described entries are listed under, back
// to back in one buffer, and the family forms of those the inversion rule
// reads.
type keyList struct {
	buf   []byte
	keys  []listedKey
	forms []entryForm
}

type listedKey struct {
	entry  int32
	tr     tier
	lo, hi uint32 // the key is buf[lo:hi]
}

type entryForm struct {
	entry int32
	f     *family
}

func (l *keyList) reset() {
	l.buf, l.keys, l.forms = l.buf[:0], l.keys[:0], l.forms[:0]
}

// each calls f with every key, in order; key is only valid during the call.
func (l *keyList) each(f func(entry int, key []byte, tr tier)) {
	for _, k := range l.keys {
		f(int(k.entry), l.buf[k.lo:k.hi], k.tr)
	}
}

// key appends the key of s (see textAnalyzer.appendKey) for entry e in
// tier tr: once, and only if not empty unless keepEmpty.
func (l *keyList) key(an *textAnalyzer, e int, tr tier, s string, underscores bool, maxWords int, keepEmpty bool) {
	lo := len(l.buf)
	l.buf = an.appendKey(l.buf, s, underscores, maxWords)
	k := listedKey{entry: int32(e), tr: tr, lo: uint32(lo), hi: uint32(len(l.buf))}
	if k.hi == k.lo && !keepEmpty {
		return
	}
	for j := len(l.keys) - 1; j >= 0 && l.keys[j].entry == k.entry; j-- {
		if o := l.keys[j]; o.tr == tr && string(l.buf[o.lo:o.hi]) == string(l.buf[lo:]) {
			l.buf = l.buf[:lo]
			return
		}
	}
	l.keys = append(l.keys, k)
}

// describe adds the keys c, the entry at position e, is listed under: its
// name in the exact tier; unless it is deprecated, its aliases, tags, name
// read as words and description head (the first headMaxWords words of
// descriptionHead), and its family form.
func (l *keyList) describe(an *textAnalyzer, c *registry.Capability, e int) error {
	const all = 1 << 30
	l.key(an, e, tierExact, c.Name, false, all, true)
	if c.Disc.Deprecated {
		return nil
	}
	for _, a := range c.Disc.Aliases {
		l.key(an, e, tierAlias, a, false, all, false)
	}
	for _, t := range c.Disc.Tags {
		l.key(an, e, tierTag, t, false, all, false)
	}
	form, ok, err := familyFormOf(c.Entry)
	if err != nil {
		return fmt.Errorf("discover: shape of %q: %w", c.Name, err)
	}
	if ok {
		l.forms = append(l.forms, entryForm{int32(e), &family{familyForm: form, orient: c.Sem.Orientation}})
	}
	l.key(an, e, tierDefined, c.Name, true, all, false)
	n := len(l.keys)
	l.key(an, e, tierDefined, descriptionHead(c.Disc.Description), false, headMaxWords, false)
	// A head of one word ("Search", "Users") defines nothing: it would
	// make every prompt holding the word a request for the entry.
	if len(l.keys) > n {
		if k := l.keys[n]; !bytes.Contains(l.buf[k.lo:k.hi], []byte{' '}) {
			l.keys, l.buf = l.keys[:n], l.buf[:k.lo]
		}
	}
	return nil
}

// buildIndex indexes every entry of snap in the phrase table, the
// vocabulary and the inversion maps before it returns. The bleve index the
// keyword tier's look-ups inside texts need is made by text, apart (see
// textIndex), so that starting on a large registry is not held up by it.
func buildIndex(ctx context.Context, an *textAnalyzer, snap *registry.Snapshot, text func(*registry.Snapshot) *textIndex) (*index, error) {
	caps := snap.Capabilities()
	if len(caps) >= maxEntries {
		return nil, fmt.Errorf("discover: %d entries, the index holds at most %d", len(caps), maxEntries-1)
	}
	x := &index{
		an:   an,
		snap: snap,
		caps: caps,
		// A name, two aliases, two tags, two defining phrases; tags shared.
		terms:   newPhraseTable(6*len(caps), 7*len(caps), pinnedKeys(an, nil)),
		discs:   make([]atomic.Pointer[hashing.Digest], len(caps)),
		forms:   map[string]*family{},
		exprs:   map[string][]string{},
		unwraps: map[string][]string{},
	}
	err := describeAll(ctx, an, caps, func(l *keyList) {
		l.each(func(e int, key []byte, tr tier) { x.terms.build(key, tr, uint32(e)) })
		for _, f := range l.forms {
			x.addForm(caps[f.entry].Name, f.f)
		}
	})
	if err != nil {
		return nil, err
	}
	x.terms.freeze()
	x.vocab = newVocabulary(an, x.terms)
	x.text = text(snap)
	return x, nil
}

// describeAll describes every entry of caps, on every core, and hands the
// keys to use, in entry order: folding the texts is most of what indexing
// 100,000 entries costs, and describing only reads. Entries are described
// in chunks, a bounded number ahead of use, so that the keys of all
// entries are never in memory at once.
func describeAll(ctx context.Context, an *textAnalyzer, caps []registry.Capability, use func(*keyList)) error {
	const chunk = 512
	type part struct {
		keys keyList
		err  error // of the first entry of the chunk that failed; keys hold those before it
		done chan struct{}
	}
	parts := make([]part, (len(caps)+chunk-1)/chunk)
	for i := range parts {
		parts[i].done = make(chan struct{})
	}
	workers := min(runtime.GOMAXPROCS(0), len(parts))
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	// A token per chunk claimed and not yet used, and the lists of used
	// chunks for reuse.
	ahead := make(chan struct{}, 4*workers)
	spare := make(chan keyList, 4*workers)
	var next atomic.Int64
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case ahead <- struct{}{}:
				case <-ctx.Done():
					return
				}
				// Chunks are claimed in order, so the one use waits for
				// is always claimed: tokens cannot all be held past it.
				c := int(next.Add(1)) - 1
				if c >= len(parts) {
					return
				}
				p := &parts[c]
				select {
				case p.keys = <-spare:
				default:
				}
				for i := c * chunk; i < min((c+1)*chunk, len(caps)) && ctx.Err() == nil; i++ {
					if p.err = p.keys.describe(an, &caps[i], i); p.err != nil {
						break
					}
				}
				close(p.done)
			}
		}()
	}
	for c := range parts {
		p := &parts[c]
		select {
		case <-p.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		use(&p.keys)
		if p.err != nil {
			return p.err
		}
		p.keys.reset()
		select {
		case spare <- p.keys:
		default:
		}
		p.keys = keyList{}
		<-ahead
	}
	return nil
}

func (x *index) close() {
	x.use.Lock()
	defer x.use.Unlock()
	if x.closed {
		return
	}
	x.closed = true
	x.text.close()
	if x.disk != nil && x.text.dir != "" {
		x.disk.release(x.text.dir)
	}
}

// version returns the registry version the index reflects.
func (x *index) version() uint64 { return x.snap.Version() }

// canUpdateTo reports whether next can be reached by re-indexing the names
// its version changed. A change of more names than the index holds (a bulk
// load) is built afresh instead: a build is faster than an update of as
// many documents, and it leaves the tiers that do not need the text index
// answering while it runs.
func (x *index) canUpdateTo(next *registry.Snapshot) bool {
	// An index on disk needs no compaction: scorch merges its segments.
	return next.Info.Parent == x.version() && next.Version() > x.version() && (x.updates < compactAfter || x.disk != nil) &&
		len(next.Info.Change.Names) <= max(batchSize, len(x.caps))
}

// update re-indexes the names next's version changed. On error the index
// is in an unknown state and must be discarded.
func (x *index) update(ctx context.Context, next *registry.Snapshot) error {
	bl, err := x.text.wait(ctx)
	if err != nil {
		return err
	}
	rel, err := x.text.relevance(ctx)
	if err != nil {
		return err
	}
	if x.text.dir != "" {
		// The index on disk no longer holds the stamped version from here
		// on: a crash before the new stamp means a rebuild at next start.
		if err := x.disk.unstamp(); err != nil {
			return err
		}
	}
	nextCaps := next.Capabilities()
	if len(nextCaps) >= maxEntries {
		return fmt.Errorf("discover: %d entries, the index holds at most %d", len(nextCaps), maxEntries-1)
	}
	changed := next.Info.Change.Names
	// In batches of batchSize, as a build indexes: one batch of a bulk
	// load's 100,000 documents took 3.4 GB.
	batch := bl.NewBatch()
	flush := func() error {
		if batch.Size() < batchSize {
			return nil
		}
		if err := bl.Batch(batch); err != nil {
			return fmt.Errorf("discover: index batch: %w", err)
		}
		batch.Reset()
		return nil
	}
	// The old entries out, at their old positions; the new ones in, at
	// theirs. Postings move in between when names came or went.
	var keys keyList
	for _, name := range changed {
		i, ok := x.position(name)
		if !ok {
			continue
		}
		keys.reset()
		if err := keys.describe(x.an, &x.caps[i], i); err != nil {
			return err
		}
		keys.each(func(e int, key []byte, tr tier) { x.terms.remove(string(key), tr, uint32(e)) })
		x.removeForm(name)
		batch.Delete(name)
		rel.Remove(name)
		if err := flush(); err != nil {
			return err
		}
	}
	if to := renumbering(x.caps, nextCaps); to != nil {
		x.terms.renumber(to)
		discs := make([]atomic.Pointer[hashing.Digest], len(nextCaps))
		for i, j := range to {
			if j != maxEntries {
				discs[j].Store(x.discs[i].Load())
			}
		}
		x.discs = discs
	}
	x.snap, x.caps = next, nextCaps
	for _, name := range changed {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := flush(); err != nil {
			return err
		}
		// Get, not the snapshot's array: an entry that fails its own
		// check is not indexed.
		c, ok := next.Get(name)
		if !ok {
			continue
		}
		i, _ := x.position(name)
		keys.reset()
		if err := keys.describe(x.an, &c, i); err != nil {
			return err
		}
		keys.each(func(e int, key []byte, tr tier) { x.terms.add(string(key), tr, uint32(e)) })
		for _, f := range keys.forms {
			x.addForm(name, f.f)
		}
		x.discs[i].Store(nil)
		if !c.Disc.Deprecated {
			if err := batch.Index(name, textDocument(x.an, c)); err != nil {
				return fmt.Errorf("discover: index %q: %w", name, err)
			}
			if err := rel.Add(relevanceDocument(&c)); err != nil {
				return fmt.Errorf("discover: relevance index %q: %w", name, err)
			}
		}
	}
	x.terms.compact()
	if err := bl.Batch(batch); err != nil {
		return fmt.Errorf("discover: index batch: %w", err)
	}
	x.updates++
	if x.text.dir != "" {
		x.disk.restamp(ctx, next, x.text.dir)
	}
	return nil
}

// renumbering maps each position of old to the position of the same name
// in next, maxEntries for a name next does not hold; nil when the names
// are the same (an edit of existing entries: nothing moves).
func renumbering(old, next []registry.Capability) []uint32 {
	if len(old) == len(next) {
		same := true
		for i := range old {
			if old[i].Name != next[i].Name {
				same = false
				break
			}
		}
		if same {
			return nil
		}
	}
	to := make([]uint32, len(old))
	j := 0
	for i := range old {
		for j < len(next) && next[j].Name < old[i].Name {
			j++
		}
		to[i] = maxEntries
		if j < len(next) && next[j].Name == old[i].Name {
			to[i] = uint32(j)
			j++
		}
	}
	return to
}

// position returns where the entry named name is in the snapshot.
func (x *index) position(name string) (int, bool) {
	i := sort.Search(len(x.caps), func(i int) bool { return x.caps[i].Name >= name })
	return i, i < len(x.caps) && x.caps[i].Name == name
}

// textDocument is c's bleve document: its folded name (as words),
// description head and description.
func textDocument(an *textAnalyzer, c registry.Capability) map[string]any {
	return map[string]any{
		fieldName: an.foldText(strings.ReplaceAll(c.Name, "_", " ")),
		fieldHead: strings.Join(firstN(an.foldTokens(descriptionHead(c.Disc.Description)), headMaxWords), " "),
		fieldDesc: an.foldText(c.Disc.Description),
	}
}

// discDigest returns registry.Entry.DiscoveryDigest of entry e.
func (x *index) discDigest(e uint32) (hashing.Digest, error) {
	if d := x.discs[e].Load(); d != nil {
		return *d, nil
	}
	d, err := registry.Entry{Disc: x.caps[e].Disc}.DiscoveryDigest()
	if err != nil {
		return hashing.Digest{}, fmt.Errorf("discover: disc digest of %q: %w", x.caps[e].Name, err)
	}
	x.discs[e].Store(&d)
	return d, nil
}

func withoutOrientation(s registry.Semantic) registry.Semantic {
	s.Orientation = ""
	return s
}

func appendUnique(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// descriptionHead returns the lead clause of a description: the text up to
// its first colon, semicolon, dash, opening parenthesis, or sentence end.
// Descriptions say what a capability is before they say how it works
// ("Log returns: ln x_t − ln x_p …"), so a term found there names it.
func descriptionHead(d string) string {
	cut := len(d)
	for _, sep := range []string{":", ";", " — ", " – ", " - ", "(", ". ", ".\n", "! ", "? "} {
		if i := strings.Index(d, sep); i >= 0 && i < cut {
			cut = i
		}
	}
	return strings.TrimSuffix(d[:cut], ".")
}

// addForm enters a family the inversion rule reads; f may be nil.
func (x *index) addForm(name string, f *family) {
	if f == nil {
		return
	}
	x.forms[name] = f
	x.exprs[f.expr] = insertSorted(x.exprs[f.expr], name)
	for _, u := range f.unwraps {
		x.unwraps[u] = insertSorted(x.unwraps[u], name)
	}
}

func (x *index) removeForm(name string) {
	f := x.forms[name]
	if f == nil {
		return
	}
	delete(x.forms, name)
	removeFrom(x.exprs, f.expr, name)
	for _, u := range f.unwraps {
		removeFrom(x.unwraps, u, name)
	}
}

func insertSorted(s []string, v string) []string {
	i, found := slices.BinarySearch(s, v)
	if found {
		return s
	}
	return slices.Insert(s, i, v)
}

func removeFrom(m map[string][]string, k, v string) {
	s := m[k]
	i, found := slices.BinarySearch(s, v)
	if !found {
		return
	}
	s = slices.Delete(slices.Clone(s), i, i+1)
	if len(s) == 0 {
		delete(m, k)
		return
	}
	m[k] = s
}

// keyword runs the fourth tier for a term listed under the postings
// listed; see docs/discovery.md. It returns the matching entries, sorted. In order, the first step with hits
// decides:
//
//  1. defined: the term is an entry's name read as words (MOM_WZS → "mom
//     wzs") or the whole head of its description ("Log returns: …");
//  2. lead (terms of two or more words): the term occurs in an entry's name
//     or description head;
//  3. body (terms of two or more words): the term occurs in a description.
//
// A step with more hits than its limit (keywordLeadMax, keywordLeadMax,
// keywordBodyMax) ends the tier with no match: the term is too generic to
// be evidence for any one entry.
func (x *index) keyword(ctx context.Context, t folded, listed []uint32) ([]uint32, error) {
	if n := inTier(listed, tierDefined); len(n) > 0 {
		if len(n) > keywordLeadMax {
			return nil, nil
		}
		return n, nil
	}
	if len(t.keys) < keywordMinWords {
		return nil, nil
	}
	bl, err := x.text.wait(ctx)
	if err != nil {
		return nil, err
	}
	lead, total, err := searchText(ctx, bl, query.NewDisjunctionQuery([]query.Query{
		phraseQuery(t.keys, fieldName), phraseQuery(t.keys, fieldHead),
	}), keywordLeadMax)
	if err != nil || total > keywordLeadMax {
		return nil, err
	}
	if total > 0 {
		return x.positions(lead)
	}
	body, total, err := searchText(ctx, bl, phraseQuery(t.keys, fieldDesc), keywordBodyMax)
	if err != nil || total > keywordBodyMax {
		return nil, err
	}
	return x.positions(body)
}

// positions returns the positions of the sorted names the text index
// found, in order.
func (x *index) positions(names []string) ([]uint32, error) {
	out := make([]uint32, len(names))
	for i, n := range names {
		p, ok := x.position(n)
		if !ok {
			return nil, fmt.Errorf("discover: the text index lists %q, which registry version %d does not hold", n, x.version())
		}
		out[i] = uint32(p)
	}
	return out, nil
}

// phraseQuery finds keys (two or more) as consecutive words of a field,
// through the field's indexed word pairs.
func phraseQuery(keys []string, field string) query.Query {
	pairs := make([]string, len(keys)-1)
	for i := range pairs {
		pairs[i] = keys[i] + " " + keys[i+1]
	}
	if len(pairs) == 1 {
		q := query.NewTermQuery(pairs[0])
		q.SetField(field)
		return q
	}
	return query.NewPhraseQuery(pairs, field)
}

// searchText returns the ids of up to limit hits, sorted, and the total
// number of hits. Which hits come back when there are more than limit is
// up to bleve; callers only use them when total <= limit.
func searchText(ctx context.Context, bl bleve.Index, q query.Query, limit int) ([]string, uint64, error) {
	req := bleve.NewSearchRequestOptions(q, limit+1, 0, false)
	req.Score = "none"
	res, err := bl.SearchInContext(ctx, req)
	if err != nil {
		return nil, 0, fmt.Errorf("discover: keyword search: %w", err)
	}
	ids := make([]string, 0, len(res.Hits))
	for _, h := range res.Hits {
		ids = append(ids, h.ID)
	}
	slices.Sort(ids)
	return ids, res.Total, nil
}

// errIndexClosed is returned when a cached index was evicted while in use;
// callers rebuild.
var errIndexClosed = errors.New("discover: index closed")
