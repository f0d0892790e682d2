package discover

import (
	"bytes"
	"hash/maphash"
	"math/bits"
	"slices"
)

// tier is an equality tier of the cascade, or the name-as-words and
// description-head step of the keyword tier: the lists a phrase key can
// be in.
type tier uint32

const (
	tierExact   tier = iota // canonical names
	tierAlias               // aliases
	tierTag                 // tags
	tierDefined             // names read as words, description heads
)

// A posting is an entry of a phrase's list: the tier in its top bits, the
// entry (its position in the snapshot's name order) below them. Sorted
// postings are grouped by tier and, within a tier, in name order.
const (
	tierShift  = 30
	entryMask  = 1<<tierShift - 1
	maxEntries = entryMask + 1
)

func posting(t tier, entry uint32) uint32 { return uint32(t)<<tierShift | entry }

// phraseTable holds the keys of the equality tiers and the entries each
// tier lists under each key, compactly: at 100,000 entries a map of string
// slices per tier and a vocabulary map cost 140 MB, this about 30. Keys
// are stored once, back to back in one slab, and found through an
// open-addressing table of phrase numbers; postings are one array of
// uint32, each phrase's a slice of it (first), sorted. A table is built
// once (add during build, then freeze) and edited by the incremental
// updates of the current index: a changed phrase's postings move to over,
// copied, and freeze folds them back when they are many.
//
// A phrase whose postings are all removed stays in the slab with none:
// for every tier and for the vocabulary it is absent.
type phraseTable struct {
	seed  maphash.Seed
	slab  []byte   // every phrase's key
	off   []uint32 // phrase p's key is slab[off[p]:off[p+1]]
	slots []uint32 // open addressing: 0 is empty, else a phrase + 1
	tags  []uint8  // the top byte of each slot's key's hash: most misses compare no key

	first []uint32            // postings of phrase p < len(first)-1: post[first[p]:first[p+1]]
	post  []uint32            //
	over  map[uint32][]uint32 // phrases edited since freeze: their postings, replacing post's
	pend  []uint64            // during build: phrase<<32 | posting, in entry order

	// maxLen is the most words of any key added with at most
	// MaxPhraseWords words (term extraction's bound). It only grows, so
	// extraction does not depend on what was removed.
	maxLen int
	pinned uint32 // phrases below this are in the vocabulary whatever they list
}

// newPhraseTable returns a table of the pinned keys, with room for about
// keys keys and postings postings added by build: growing the arrays of a
// large table by appending would make twice their size in garbage. Pinned
// keys are phrases of the vocabulary whatever the tiers list (the
// inversion cues; NewVocabulary's phrases).
func newPhraseTable(keys, postings int, pinned [][]byte) *phraseTable {
	keys += len(pinned)
	t := &phraseTable{
		seed:  maphash.MakeSeed(),
		slab:  make([]byte, 0, 16*keys),
		off:   make([]uint32, 1, keys+1),
		slots: make([]uint32, slotsFor(keys)),
		tags:  make([]uint8, slotsFor(keys)),
		pend:  make([]uint64, 0, postings),
		over:  map[uint32][]uint32{},
	}
	for _, k := range pinned {
		t.intern(k)
	}
	// Phrases are never renumbered: the pinned ones stay the first.
	t.pinned = uint32(t.phrases())
	return t
}

// slotsFor is a power of two that holds n keys at most 3/4 full.
func slotsFor(n int) int {
	return 1 << bits.Len(uint(max(n*4/3, 8)))
}

func (t *phraseTable) phrases() int { return len(t.off) - 1 }

func (t *phraseTable) key(p uint32) []byte { return t.slab[t.off[p]:t.off[p+1]] }

// find returns the phrase number of key.
func (t *phraseTable) find(key string) (uint32, bool) {
	h := maphash.String(t.seed, key)
	mask, tag := uint64(len(t.slots)-1), uint8(h>>56)
	for i := h & mask; ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			return 0, false
		}
		if t.tags[i] == tag && string(t.key(s-1)) == key {
			return s - 1, true
		}
	}
}

// findBytes is find for a key held in bytes (maphash.Bytes and
// maphash.String hash equal contents alike).
func (t *phraseTable) findBytes(key []byte) (uint32, bool) {
	h := maphash.Bytes(t.seed, key)
	mask, tag := uint64(len(t.slots)-1), uint8(h>>56)
	for i := h & mask; ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			return 0, false
		}
		if t.tags[i] == tag && bytes.Equal(t.key(s-1), key) {
			return s - 1, true
		}
	}
}

// intern returns the phrase number of key, adding the key if it is new.
func (t *phraseTable) intern(key []byte) uint32 {
	if p, ok := t.findBytes(key); ok {
		return p
	}
	if (t.phrases()+1)*4 > len(t.slots)*3 {
		t.rehash(2 * len(t.slots))
	}
	p := uint32(t.phrases())
	t.slab = append(t.slab, key...)
	t.off = append(t.off, uint32(len(t.slab)))
	t.place(p)
	if n := bytes.Count(key, []byte(" ")) + 1; n <= MaxPhraseWords {
		t.maxLen = max(t.maxLen, n)
	}
	return p
}

func (t *phraseTable) place(p uint32) {
	h := maphash.Bytes(t.seed, t.key(p))
	mask := uint64(len(t.slots) - 1)
	i := h & mask
	for t.slots[i] != 0 {
		i = (i + 1) & mask
	}
	t.slots[i], t.tags[i] = p+1, uint8(h>>56)
}

func (t *phraseTable) rehash(n int) {
	t.slots, t.tags = make([]uint32, n), make([]uint8, n)
	for p := range t.phrases() {
		t.place(uint32(p))
	}
}

// postings returns phrase p's postings, sorted. The slice is the table's.
func (t *phraseTable) postings(p uint32) []uint32 {
	if len(t.over) > 0 { // rarely: only an updated index has edits apart
		if l, ok := t.over[p]; ok {
			return l
		}
	}
	if int(p)+1 < len(t.first) {
		return t.post[t.first[p]:t.first[p+1]]
	}
	return nil
}

// listed returns the postings of key in every tier, sorted. The slice is
// the table's: callers only read it, under the lock that guards the
// table.
func (t *phraseTable) listed(key string) []uint32 {
	p, ok := t.find(key)
	if !ok {
		return nil
	}
	return t.postings(p)
}

// inTier returns the postings of tier tr among sorted postings l.
func inTier(l []uint32, tr tier) []uint32 {
	return l[firstOfTier(l, tr):firstOfTier(l, tr+1)]
}

// firstOfTier is the index of the first posting of l in tier tr or after.
func firstOfTier(l []uint32, tr tier) int {
	lo, hi := 0, len(l)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if tier(l[m]>>tierShift) < tr {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// has reports whether key is a phrase of the vocabulary: pinned, or a key
// any tier lists an entry under.
func (t *phraseTable) has(key string) bool {
	p, ok := t.find(key)
	return ok && (p < t.pinned || len(t.postings(p)) > 0)
}

// build adds a posting while the table is being built: entries must come
// in name order, each posting once, and freeze must follow before the
// table is read.
func (t *phraseTable) build(key []byte, tr tier, entry uint32) {
	p := t.intern(key)
	t.pend = append(t.pend, uint64(p)<<32|uint64(posting(tr, entry)))
}

// freeze makes the postings added by build, and those edited since the
// last freeze, into one array.
func (t *phraseTable) freeze() {
	n := t.phrases()
	first := make([]uint32, n+1)
	for p := range n {
		first[p+1] = uint32(len(t.postings(uint32(p))))
	}
	for _, pp := range t.pend {
		first[pp>>32+1]++
	}
	for p := range n {
		first[p+1] += first[p]
	}
	post := make([]uint32, first[n])
	fill := slices.Clone(first[:n])
	for p := range n {
		fill[p] += uint32(copy(post[fill[p]:], t.postings(uint32(p))))
	}
	for _, pp := range t.pend {
		p := pp >> 32
		post[fill[p]] = uint32(pp)
		fill[p]++
	}
	// Postings of one phrase came in entry order; sort those of phrases
	// listed by more than one tier into tier order.
	for p := range n {
		if l := post[first[p]:first[p+1]]; !slices.IsSorted(l) {
			slices.Sort(l)
		}
	}
	t.first, t.post, t.pend = first, post, nil
	clear(t.over)
}

// add lists entry under key in tier tr, keeping the postings sorted.
func (t *phraseTable) add(key string, tr tier, entry uint32) {
	p := t.intern([]byte(key))
	v := posting(tr, entry)
	l := t.postings(p)
	i, found := slices.BinarySearch(l, v)
	if found {
		return
	}
	t.over[p] = slices.Insert(slices.Clip(slices.Clone(l)), i, v)
}

// remove drops entry from key's list in tier tr.
func (t *phraseTable) remove(key string, tr tier, entry uint32) {
	p, ok := t.find(key)
	if !ok {
		return
	}
	l := t.postings(p)
	i, found := slices.BinarySearch(l, posting(tr, entry))
	if !found {
		return
	}
	t.over[p] = slices.Delete(slices.Clone(l), i, i+1)
}

// renumber moves every posting's entry e to to[e]. to must keep the order
// of the entries it keeps, so that postings stay sorted; an entry mapped
// to maxEntries is dropped.
func (t *phraseTable) renumber(to []uint32) {
	move := func(l []uint32) []uint32 { // in place
		out := l[:0]
		for _, v := range l {
			if e := to[v&entryMask]; e != maxEntries {
				out = append(out, v&^entryMask|e)
			}
		}
		return out
	}
	for p, l := range t.over {
		t.over[p] = move(l)
	}
	for p := range len(t.first) - 1 {
		if _, ok := t.over[uint32(p)]; ok {
			continue
		}
		l := t.post[t.first[p]:t.first[p+1]]
		if m := move(l); len(m) != len(l) {
			t.over[uint32(p)] = slices.Clone(m)
		}
	}
	t.compact()
}

// compact folds the edited postings back into one array once they are
// many, so that edits cost memory in proportion to what they changed.
func (t *phraseTable) compact() {
	if len(t.over) > max(1024, t.phrases()/16) {
		t.freeze()
	}
}
