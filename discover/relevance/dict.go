package relevance

import (
	"hash/maphash"
	"slices"
)

// dict maps the index's term keys to term ids. At 100,000 documents an
// index holds about 400,000 terms, most of them word pairs held by one
// document; a map[string]uint32 beside a string in each term cost about
// 60 bytes a term in headers and buckets. dict keeps the keys' bytes in
// shared chunks and its table as bare ids: about 25 (issue 27: RSS at
// 100,000 entries). The hash only places keys in the table; nothing
// observable depends on it.
type dict struct {
	seed   maphash.Seed
	slots  []uint32 // id+1, 0 when empty; a power of two long, at most ¾ full
	chunks [][]byte // the keys' bytes; a chunk is never moved once written
	refs   []keyRef // by id
	n      int      // keys held
	dead   int      // bytes of removed keys still in chunks
	total  int      // bytes in chunks
}

// keyRef is where a key's bytes are.
type keyRef struct{ chunk, off, len uint32 }

// dictChunk is the size of a chunk of keys (a longer key gets its own).
const dictChunk = 64 << 10

func newDict() *dict { return &dict{seed: maphash.MakeSeed()} }

// bytes is the key of id, which the dict holds.
func (d *dict) bytes(id uint32) []byte {
	r := d.refs[id]
	return d.chunks[r.chunk][r.off : r.off+r.len : r.off+r.len]
}

// key is the key of id as a string (a copy).
func (d *dict) key(id uint32) string { return string(d.bytes(id)) }

// find is the slot of key, or of the empty slot where it would go.
func (d *dict) find(key string) (uint64, bool) {
	if len(d.slots) == 0 {
		return 0, false
	}
	mask := uint64(len(d.slots) - 1)
	for i := maphash.String(d.seed, key) & mask; ; i = (i + 1) & mask {
		s := d.slots[i]
		if s == 0 {
			return i, false
		}
		if string(d.bytes(s-1)) == key {
			return i, true
		}
	}
}

// get is the id of key.
func (d *dict) get(key string) (uint32, bool) {
	i, ok := d.find(key)
	if !ok {
		return 0, false
	}
	return d.slots[i] - 1, true
}

// put adds key, which the dict does not hold, as id.
func (d *dict) put(key string, id uint32) {
	if 4*(d.n+1) > 3*len(d.slots) {
		d.grow(0)
	}
	for uint32(len(d.refs)) <= id {
		d.refs = append(d.refs, keyRef{})
	}
	d.refs[id] = d.store(key)
	i, _ := d.find(key)
	d.slots[i] = id + 1
	d.n++
}

// store copies key's bytes into the chunks.
func (d *dict) store(key string) keyRef {
	c := len(d.chunks) - 1
	if c < 0 || len(d.chunks[c])+len(key) > cap(d.chunks[c]) {
		d.chunks = append(d.chunks, make([]byte, 0, max(dictChunk, len(key))))
		c++
	}
	off := len(d.chunks[c])
	d.chunks[c] = append(d.chunks[c], key...)
	d.total += len(key)
	return keyRef{uint32(c), uint32(off), uint32(len(key))}
}

// del removes key id, which the dict holds: linear probing's deletion,
// moving back the keys after it that its slot displaced.
func (d *dict) del(id uint32) {
	mask := uint64(len(d.slots) - 1)
	i, _ := d.find(string(d.bytes(id)))
	d.dead += int(d.refs[id].len)
	d.refs[id] = keyRef{}
	d.slots[i] = 0
	d.n--
	for j := (i + 1) & mask; d.slots[j] != 0; j = (j + 1) & mask {
		home := maphash.Bytes(d.seed, d.bytes(d.slots[j]-1)) & mask
		// Move j to i unless its home lies cyclically in (i, j].
		if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
			d.slots[i], d.slots[j] = d.slots[j], 0
			i = j
		}
	}
	if d.dead > dictChunk && 2*d.dead > d.total {
		d.repack()
	}
}

// reserve makes room for n keys without growing again (a snapshot's
// terms, whose count it declares).
func (d *dict) reserve(n int) {
	size := 64
	for 3*size < 4*n {
		size *= 2
	}
	if size > len(d.slots) {
		d.grow(size)
	}
	d.refs = slices.Grow(d.refs, n-len(d.refs))
}

// grow makes the table size slots long (a power of two), at least twice
// what it was when 0.
func (d *dict) grow(size int) {
	old := d.slots
	if size == 0 {
		size = max(64, 2*len(old))
	}
	d.slots = make([]uint32, size)
	mask := uint64(len(d.slots) - 1)
	for _, s := range old {
		if s == 0 {
			continue
		}
		i := maphash.Bytes(d.seed, d.bytes(s-1)) & mask
		for d.slots[i] != 0 {
			i = (i + 1) & mask
		}
		d.slots[i] = s
	}
}

// repack copies the keys held into new chunks, dropping removed ones'.
func (d *dict) repack() {
	old := d.chunks
	d.chunks, d.total, d.dead = nil, 0, 0
	for id, r := range d.refs {
		if r.len == 0 { // free: keys are never empty
			continue
		}
		d.refs[id] = d.store(string(old[r.chunk][r.off : r.off+r.len]))
	}
}
