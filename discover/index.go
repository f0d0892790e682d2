package discover

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
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

// entryInfo is what the index keeps about one entry.
type entryInfo struct {
	name       string
	kind       registry.Kind
	deprecated bool
	capability hashing.Digest
	orient     registry.Orientation

	// discLayer is hashed into disc on first use: most entries are never
	// matched, and hashing every one would slow index builds.
	discLayer registry.Discovery
	discOnce  sync.Once
	disc      hashing.Digest
	discErr   error

	exactKey string
	defKeys  []string // keys of the name read as words and of the description head
	aliases  []string // keys
	tags     []string // keys

	// Inversion (families only): the canonical expression, the expressions
	// obtained by removing one (neg …), and a digest of the other layers
	// that must be equal between opposites.
	expr    string
	unwraps []string
	shape   hashing.Digest
}

// index is the discovery index of one registry version: a bleve index for
// the keyword tier, lookup maps for the equality tiers, the vocabulary, and
// the expression maps of the inversion rule. An index is either the
// Discoverer's current one (mutated only under the Discoverer's write lock)
// or a cached past version (never mutated).
type index struct {
	an   *textAnalyzer
	snap *registry.Snapshot
	bl   bleve.Index

	entries map[string]*entryInfo
	exact   map[string][]string // key → sorted names
	alias   map[string][]string
	tag     map[string][]string
	defined map[string][]string // name-as-words or description head → sorted names
	vocab   *Vocabulary

	exprs   map[string][]string // canonical expr → family names
	unwraps map[string][]string // unwrapped expr → family names

	updates int // incremental updates since the last build

	text *textIndex // the keyword tier's bleve index
	disk *textDir   // where text lives when it is kept on disk, else nil

	// use guards closing a cached index while a Rederive reads it; closed
	// says it was.
	use    sync.RWMutex
	closed bool
}

// buildIndex indexes every entry of snap in the maps of the equality
// tiers, the vocabulary and the inversion rule before it returns. The
// bleve index the keyword tier's look-ups inside texts need is made by
// text, apart (see textIndex), so that starting on a large registry is not
// held up by it.
func buildIndex(ctx context.Context, an *textAnalyzer, snap *registry.Snapshot, text func(*registry.Snapshot) *textIndex) (*index, error) {
	caps := snap.Capabilities()
	x := &index{
		an:      an,
		snap:    snap,
		entries: make(map[string]*entryInfo, len(caps)),
		exact:   make(map[string][]string, len(caps)),
		alias:   make(map[string][]string, len(caps)),
		tag:     make(map[string][]string, len(caps)),
		defined: make(map[string][]string, 2*len(caps)),
		vocab:   sizedVocabulary(an, nil, 4*len(caps)),
		exprs:   map[string][]string{},
		unwraps: map[string][]string{},
	}
	infos, err := describeAll(ctx, x, caps)
	if err != nil {
		return nil, err
	}
	for _, info := range infos {
		x.add(info)
	}
	x.text = text(snap)
	return x, nil
}

// describeAll describes every entry of caps, on every core: folding the
// texts is most of what indexing 100,000 entries costs, and describe only
// reads. Adding to the maps stays sequential, in order.
func describeAll(ctx context.Context, x *index, caps []registry.Capability) ([]*entryInfo, error) {
	infos := make([]*entryInfo, len(caps))
	workers := min(runtime.GOMAXPROCS(0), max(len(caps)/512, 1))
	const chunk = 256
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		errMu    sync.Mutex
		first    error
		firstIdx = len(caps)
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				lo := int(next.Add(chunk)) - chunk
				if lo >= len(caps) || ctx.Err() != nil {
					return
				}
				for i := lo; i < min(lo+chunk, len(caps)); i++ {
					info, err := x.describe(caps[i])
					if err != nil { // the first entry in order that fails is reported
						errMu.Lock()
						if i < firstIdx {
							first, firstIdx = err, i
						}
						errMu.Unlock()
						return
					}
					infos[i] = info
				}
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return infos, first
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
		len(next.Info.Change.Names) <= max(batchSize, len(x.entries))
}

// update re-indexes the names next's version changed. On error the index
// is in an unknown state and must be discarded.
func (x *index) update(ctx context.Context, next *registry.Snapshot) error {
	bl, err := x.text.wait(ctx)
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
	// In batches of batchSize, as a build indexes: one batch of a bulk
	// load's 100,000 documents took 3.4 GB.
	batch := bl.NewBatch()
	for _, name := range next.Info.Change.Names {
		if err := ctx.Err(); err != nil {
			return err
		}
		if batch.Size() >= batchSize {
			if err := bl.Batch(batch); err != nil {
				return fmt.Errorf("discover: index batch: %w", err)
			}
			batch.Reset()
		}
		if old, ok := x.entries[name]; ok {
			x.remove(old)
			batch.Delete(name)
		}
		c, ok := next.Get(name)
		if !ok {
			continue
		}
		info, err := x.describe(c)
		if err != nil {
			return err
		}
		x.add(info)
		if !info.deprecated {
			if err := batch.Index(name, textDocument(x.an, c)); err != nil {
				return fmt.Errorf("discover: index %q: %w", name, err)
			}
		}
	}
	if err := bl.Batch(batch); err != nil {
		return fmt.Errorf("discover: index batch: %w", err)
	}
	x.snap = next
	x.updates++
	if x.text.dir != "" {
		x.disk.restamp(ctx, next, x.text.dir)
	}
	return nil
}

// describe computes what the index keeps about c in its maps.
func (x *index) describe(c registry.Capability) (*entryInfo, error) {
	an := x.an
	info := &entryInfo{
		name:       c.Name,
		kind:       c.Kind,
		deprecated: c.Disc.Deprecated,
		capability: c.Identity,
		orient:     c.Sem.Orientation,
		discLayer:  c.Disc,
	}
	nameF := an.foldTerm(c.Name)
	info.exactKey = nameF.key()
	if !info.deprecated {
		for _, a := range c.Disc.Aliases {
			if k := an.foldTerm(a).key(); k != "" {
				info.aliases = appendUnique(info.aliases, k)
			}
		}
		for _, t := range c.Disc.Tags {
			if k := an.foldTerm(t).key(); k != "" {
				info.tags = appendUnique(info.tags, k)
			}
		}
	}
	if !info.deprecated {
		form, ok, err := familyFormOf(c.Entry)
		if err != nil {
			return nil, fmt.Errorf("discover: shape of %q: %w", c.Name, err)
		}
		if ok {
			info.expr, info.unwraps, info.shape = form.expr, form.unwraps, form.shape
		}
	}
	if info.deprecated {
		return info, nil
	}
	parts := an.foldTerm(strings.ReplaceAll(c.Name, "_", " "))
	head := an.foldTerm(descriptionHead(c.Disc.Description))
	head.keys = firstN(head.keys, headMaxWords)
	for _, f := range []folded{parts, head} {
		if k := f.key(); k != "" {
			info.defKeys = appendUnique(info.defKeys, k)
		}
	}
	return info, nil
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

// discDigest returns registry.Entry.DiscoveryDigest of the entry.
func (e *entryInfo) discDigest() (hashing.Digest, error) {
	e.discOnce.Do(func() {
		e.disc, e.discErr = registry.Entry{Disc: e.discLayer}.DiscoveryDigest()
		if e.discErr != nil {
			e.discErr = fmt.Errorf("discover: disc digest of %q: %w", e.name, e.discErr)
		}
	})
	return e.disc, e.discErr
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

func (x *index) add(e *entryInfo) {
	x.entries[e.name] = e
	x.exact[e.exactKey] = insertSorted(x.exact[e.exactKey], e.name)
	for _, k := range e.aliases {
		x.alias[k] = insertSorted(x.alias[k], e.name)
	}
	for _, k := range e.tags {
		x.tag[k] = insertSorted(x.tag[k], e.name)
	}
	for _, k := range e.defKeys {
		x.defined[k] = insertSorted(x.defined[k], e.name)
	}
	e.eachPhrase(x.vocab.addKey)
	if e.expr != "" {
		x.exprs[e.expr] = insertSorted(x.exprs[e.expr], e.name)
		for _, u := range e.unwraps {
			x.unwraps[u] = insertSorted(x.unwraps[u], e.name)
		}
	}
}

// eachPhrase calls f with every key e adds to the vocabulary, as often as
// e holds it: the same calls undo what add did in remove.
func (e *entryInfo) eachPhrase(f func(string)) {
	f(e.exactKey)
	for _, ks := range [][]string{e.aliases, e.tags, e.defKeys} {
		for _, k := range ks {
			f(k)
		}
	}
}

func (x *index) remove(e *entryInfo) {
	delete(x.entries, e.name)
	removeFrom(x.exact, e.exactKey, e.name)
	for _, k := range e.aliases {
		removeFrom(x.alias, k, e.name)
	}
	for _, k := range e.tags {
		removeFrom(x.tag, k, e.name)
	}
	for _, k := range e.defKeys {
		removeFrom(x.defined, k, e.name)
	}
	e.eachPhrase(x.vocab.removeKey)
	if e.expr != "" {
		removeFrom(x.exprs, e.expr, e.name)
		for _, u := range e.unwraps {
			removeFrom(x.unwraps, u, e.name)
		}
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

// keyword runs the fourth tier for a term; see docs/discovery.md. It
// returns the matching names, sorted. In order, the first step with hits
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
func (x *index) keyword(ctx context.Context, t folded) ([]string, error) {
	if n := x.defined[t.key()]; len(n) > 0 {
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
		return lead, nil
	}
	body, total, err := searchText(ctx, bl, phraseQuery(t.keys, fieldDesc), keywordBodyMax)
	if err != nil || total > keywordBodyMax {
		return nil, err
	}
	return body, nil
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
