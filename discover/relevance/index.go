package relevance

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"slices"
	"sync"
)

// Param is one parameter of a tool: its name and description.
type Param struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// Document is what the scorer reads of one registry entry.
type Document struct {
	Name        string   `json:"name"`
	Title       string   `json:"title,omitempty"`
	Description string   `json:"description,omitempty"`
	Params      []Param  `json:"params,omitempty"`
	Aliases     []string `json:"aliases,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	Examples    []string `json:"examples,omitempty"`
	// Group names the family the entry belongs to: the upstream (an MCP
	// server, a web API) whose tools are siblings. Empty: none.
	Group string `json:"group,omitempty"`
}

// posting is one (document, term) pair in a term's postings: id is the
// document's slot; tf packs the term's frequency in each field, 4 bits a
// field (saturated at 15). A term's postings are sorted by slot, so that
// the pair is found from either side without a second copy of it.
type posting struct {
	id uint32
	tf uint32
}

func (p posting) field(f int) int64 { return int64(p.tf >> (4 * uint(f)) & 15) }

// term is one key's postings; its key is in Index.dict.
type term struct {
	vec      int32     // index in the vector table, −1 when not there
	postings []posting // sorted by slot
}

type doc struct {
	name  string
	hash  [32]byte
	lens  [NumFields]uint16
	terms []uint32 // its terms' ids, sorted: their frequencies are in the postings
	vecs  []int32  // distinct vector-table indices, at most MaxVecWords
	group *group   // nil when the document names none
	gid   int32    // group.id, −1 when none (read in the postings loop)
}

// group is the documents of one Document.Group: their slots, sorted by
// name.
type group struct {
	name    string
	id      uint32 // its slot in Index.groupList
	members []uint32
}

// Index is a relevance index over documents. It is safe for concurrent
// use: queries share a read lock, changes take the write lock.
type Index struct {
	cfg     Config
	vec     *Vectors
	an      *analyzer
	scoring string

	mu       sync.RWMutex
	docs     []*doc // by slot; nil when free
	free     []uint32
	byName   map[string]uint32
	groups   map[string]*group
	gList    []*group // by id; nil when free
	freeG    []uint32
	dict     *dict   // term keys to ids
	terms    []*term // by id; nil when free
	freeTerm []uint32
	totLen   [NumFields]int64
	n        int64
	digest   string // of the documents; "" when stale
}

// New returns an empty index scoring with cfg and the vectors vec.
func New(vec *Vectors, cfg Config) (*Index, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if vec == nil {
		return nil, errors.New("relevance: no vectors")
	}
	return &Index{
		cfg:     cfg,
		vec:     vec,
		an:      newAnalyzer(),
		scoring: cfg.Digest(vec.Digest()),
		byName:  map[string]uint32{},
		groups:  map[string]*group{},
		dict:    newDict(),
	}, nil
}

// Scoring is the digest a result cites: Config.Digest of the index's
// constants and vector table.
func (x *Index) Scoring() string { return x.scoring }

// Len is the number of documents.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return int(x.n)
}

// Add adds d, replacing the document of the same name if there is one.
func (x *Index) Add(d Document) error {
	if d.Name == "" {
		return ErrNoName
	}
	nd, ks := x.analyse(d)
	x.mu.Lock()
	defer x.mu.Unlock()
	if s, ok := x.byName[d.Name]; ok {
		if x.docs[s].hash == nd.hash {
			return nil
		}
		x.remove(s)
	}
	x.insert(nd, ks)
	x.digest = ""
	return nil
}

// Remove removes the document named name; it reports whether there was one.
func (x *Index) Remove(name string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	s, ok := x.byName[name]
	if !ok {
		return false
	}
	x.remove(s)
	x.digest = ""
	return true
}

// Names lists the documents' names, sorted.
func (x *Index) Names() []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make([]string, 0, len(x.byName))
	for n := range x.byName {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Digest is the SHA-256 of the documents the index holds: of their names
// and document hashes (docHash), sorted by name. Two indexes holding the
// same documents have the same digest, however they were built.
func (x *Index) Digest() string {
	x.mu.RLock()
	d := x.digest
	x.mu.RUnlock()
	if d != "" {
		return d
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.digest == "" {
		names := make([]string, 0, len(x.byName))
		for n := range x.byName {
			names = append(names, n)
		}
		slices.Sort(names)
		h := sha256.New()
		for _, n := range names {
			hd := x.docs[x.byName[n]].hash
			h.Write(hd[:])
		}
		x.digest = "sha256:" + hex.EncodeToString(h.Sum(nil))
	}
	return x.digest
}

// docHash is the SHA-256 of d's fields, each length-prefixed, in order.
func docHash(d Document) [32]byte {
	h := sha256.New()
	var buf [8]byte
	put := func(s string) {
		binary.BigEndian.PutUint64(buf[:], uint64(len(s)))
		h.Write(buf[:])
		h.Write([]byte(s))
	}
	list := func(ss []string) {
		binary.BigEndian.PutUint64(buf[:], uint64(len(ss)))
		h.Write(buf[:])
		for _, s := range ss {
			put(s)
		}
	}
	put(d.Name)
	put(d.Title)
	put(d.Description)
	binary.BigEndian.PutUint64(buf[:], uint64(len(d.Params)))
	h.Write(buf[:])
	for _, p := range d.Params {
		put(p.Name)
		put(p.Description)
	}
	list(d.Aliases)
	list(d.Tags)
	list(d.Examples)
	if d.Group != "" { // appended only when there is one: older hashes stand
		put(d.Group)
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// analyse reads d into a document (without term ids) and its keys with
// their packed field frequencies, sorted by key.
func (x *Index) analyse(d Document) (*doc, []keyTF) {
	nd := &doc{name: d.Name, hash: docHash(d), gid: -1}
	if d.Group != "" {
		nd.group = &group{name: d.Group} // replaced by the index's own in insert
	}
	tf := map[string]uint32{}
	fold := map[string]string{}
	seenVec := map[int32]bool{}
	var order [][]word
	bump := func(f int, key, fd string) {
		c := tf[key]
		if (c>>(4*uint(f)))&15 < 15 {
			c += 1 << (4 * uint(f))
		}
		tf[key] = c
		if _, ok := fold[key]; !ok {
			fold[key] = fd
		}
	}
	add := func(f int, texts ...string) {
		var ws []word
		var pairs []string // adjacent words of one text, as "a b" keys
		for _, t := range texts {
			tw := x.an.words(t)
			if x.cfg.PairMilli > 0 && f <= FieldTag {
				for i := 1; i < len(tw); i++ {
					pairs = append(pairs, pairKey(tw[i-1], tw[i]))
				}
			}
			ws = append(ws, tw...)
		}
		if len(ws) > x.cfg.MaxFieldWords {
			ws = ws[:x.cfg.MaxFieldWords]
		}
		if len(pairs) > x.cfg.MaxFieldWords {
			pairs = pairs[:x.cfg.MaxFieldWords]
		}
		nd.lens[f] = uint16(len(ws))
		for _, w := range ws {
			bump(f, w.key, w.fold)
		}
		for _, k := range pairs {
			bump(f, k, k)
		}
		order = append(order, ws)
	}
	add(FieldName, d.Name)
	add(FieldTitle, d.Title)
	add(FieldAlias, d.Aliases...)
	add(FieldTag, d.Tags...)
	add(FieldDesc, d.Description)
	ps := make([]string, 0, 2*len(d.Params))
	for _, p := range d.Params {
		ps = append(ps, p.Name, p.Description)
	}
	add(FieldParam, ps...)
	add(FieldExample, d.Examples...)
	for _, ws := range order {
		for _, w := range ws {
			if len(nd.vecs) >= x.cfg.MaxVecWords {
				break
			}
			if i, ok := x.vec.index(w); ok && !seenVec[i] {
				seenVec[i] = true
				nd.vecs = append(nd.vecs, i)
			}
		}
	}
	slices.Sort(nd.vecs)
	nd.vecs = slices.Clone(nd.vecs) // without append's spare room, times every document
	ks := make([]keyTF, 0, len(tf))
	for k, c := range tf {
		ks = append(ks, keyTF{k, fold[k], c})
	}
	slices.SortFunc(ks, func(a, b keyTF) int { return cmp.Compare(a.key, b.key) })
	return nd, ks
}

type keyTF struct {
	key, fold string
	tf        uint32
}

// insert adds an analysed document; x.mu is held.
func (x *Index) insert(nd *doc, ks []keyTF) {
	var s uint32
	if k := len(x.free); k > 0 {
		s = x.free[k-1]
		x.free = x.free[:k-1]
		x.docs[s] = nd
	} else {
		s = uint32(len(x.docs))
		x.docs = append(x.docs, nd)
	}
	x.byName[nd.name] = s
	if nd.group != nil {
		g, ok := x.groups[nd.group.name]
		if !ok {
			g = nd.group
			x.groups[g.name] = g
			if n := len(x.freeG); n > 0 {
				g.id = x.freeG[n-1]
				x.freeG = x.freeG[:n-1]
				x.gList[g.id] = g
			} else {
				g.id = uint32(len(x.gList))
				x.gList = append(x.gList, g)
			}
		}
		nd.group, nd.gid = g, int32(g.id)
		i, _ := slices.BinarySearchFunc(g.members, nd.name, func(m uint32, n string) int { return cmp.Compare(x.docs[m].name, n) })
		g.members = slices.Insert(g.members, i, s)
	}
	nd.terms = make([]uint32, 0, len(ks))
	for _, k := range ks {
		id, ok := x.dict.get(k.key)
		if !ok {
			t := &term{vec: -1}
			if i, ok := x.vec.index(word{fold: k.fold, key: k.key}); ok {
				t.vec = i
			}
			if n := len(x.freeTerm); n > 0 {
				id = x.freeTerm[n-1]
				x.freeTerm = x.freeTerm[:n-1]
				x.terms[id] = t
			} else {
				id = uint32(len(x.terms))
				x.terms = append(x.terms, t)
			}
			x.dict.put(k.key, id)
		}
		t := x.terms[id]
		// A new slot is the largest; a freed one is inserted in order.
		i := len(t.postings)
		if i > 0 && t.postings[i-1].id > s {
			i, _ = slices.BinarySearchFunc(t.postings, s, cmpSlot)
		}
		t.postings = slices.Insert(t.postings, i, posting{s, k.tf})
		nd.terms = append(nd.terms, id)
	}
	slices.Sort(nd.terms)
	for f := range NumFields {
		x.totLen[f] += int64(nd.lens[f])
	}
	x.n++
}

// Compact gives every term's postings exactly the memory they use: Add
// grows them as append does, up to twice what they hold, which at 100,000
// documents is megabytes held for nothing. Call it after adding many
// documents at once; scores do not change.
func (x *Index) Compact() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.compact()
}

// compact is Compact with x.mu held.
func (x *Index) compact() {
	for _, t := range x.terms {
		if t != nil && cap(t.postings) > len(t.postings) {
			t.postings = slices.Clone(t.postings)
		}
	}
}

// remove removes the document in slot s; x.mu is held.
func (x *Index) remove(s uint32) {
	d := x.docs[s]
	for _, id := range d.terms {
		t := x.terms[id]
		i, _ := slices.BinarySearchFunc(t.postings, s, cmpSlot)
		t.postings = slices.Delete(t.postings, i, i+1)
		if len(t.postings) == 0 {
			x.dict.del(id)
			x.terms[id] = nil
			x.freeTerm = append(x.freeTerm, id)
		}
	}
	for f := range NumFields {
		x.totLen[f] -= int64(d.lens[f])
	}
	x.n--
	delete(x.byName, d.name)
	if g := d.group; g != nil {
		g.members = slices.DeleteFunc(g.members, func(m uint32) bool { return m == s })
		if len(g.members) == 0 {
			delete(x.groups, g.name)
			x.gList[g.id] = nil
			x.freeG = append(x.freeG, g.id)
		}
	}
	x.docs[s] = nil
	x.free = append(x.free, s)
}

// pairKey is the key of two adjacent words, "a b": a word's key holds no
// space, so a pair never meets a word.
func pairKey(a, b word) string { return a.key + " " + b.key }

func cmpSlot(p posting, s uint32) int { return cmp.Compare(p.id, s) }

// posting is document s's posting of term id, if it holds the term; x.mu
// is held.
func (x *Index) posting(id, s uint32) (posting, bool) {
	ps := x.terms[id].postings
	if i, ok := slices.BinarySearchFunc(ps, s, cmpSlot); ok {
		return ps[i], true
	}
	return posting{}, false
}
