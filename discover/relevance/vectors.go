package relevance

import (
	"math/bits"

	"github.com/groundgate/groundgate/wordvec"
)

// Vectors is a word-vector table prepared for the scorer: the table and
// each word's squared norm. It is immutable and safe for concurrent use;
// make it once (NewVectors) and share it between indexes.
type Vectors struct {
	t     *wordvec.Table
	vecs  [][]int8
	norms []uint64
	rank  []int64 // rarity weight of each word, in millionths
}

// NewVectors prepares t. rarityFloor is Config.RarityFloorMicro; the
// rarity of word i is max(floor, 10⁶·ln(i+2)/ln(Len+1)).
func NewVectors(t *wordvec.Table) *Vectors {
	n := t.Len()
	v := &Vectors{t: t, vecs: make([][]int8, n), norms: make([]uint64, n), rank: make([]int64, n)}
	top := lnMicro(uint64(n+1), 1)
	for i := range n {
		vec, _, _ := t.Lookup(t.Word(i))
		v.vecs[i] = vec
		var s uint64
		for _, c := range vec {
			s += uint64(int64(c) * int64(c))
		}
		v.norms[i] = s
		v.rank[i] = mulDiv(lnMicro(uint64(i+2), 1), 1_000_000, top)
	}
	return v
}

// Digest is the table's digest (wordvec.Table.Digest).
func (v *Vectors) Digest() string { return v.t.Digest() }

// index is the table index of a word: its folded form, else its key.
func (v *Vectors) index(w word) (int32, bool) {
	if i, ok := v.t.Index(w.fold); ok {
		return int32(i), true
	}
	if w.key != w.fold {
		if i, ok := v.t.Index(w.key); ok {
			return int32(i), true
		}
	}
	return -1, false
}

// cosine is 10⁶ times the cosine of words i and j, rounded toward zero,
// in integers: ⌊√⌊10¹²·dot²/(na·nb)⌋⌋ with the sign of dot, from the
// exact dot product and norms of the int8 vectors. It is within 1 of
// wordvec.Table.Cosine, which rounds the same value to nearest instead.
func (v *Vectors) cosine(i, j int32) int64 {
	a, b := v.vecs[i], v.vecs[j]
	b = b[:len(a)]
	var dot int64
	for k := range a {
		dot += int64(a[k]) * int64(b[k])
	}
	nn := v.norms[i] * v.norms[j] // ≤ (127²·100)² < 2⁴²
	if nn == 0 {
		return 0
	}
	ad := uint64(dot)
	if dot < 0 {
		ad = uint64(-dot)
	}
	hi, lo := bits.Mul64(1_000_000_000_000, ad*ad) // quotient ≤ 10¹²
	q, _ := bits.Div64(hi, lo, nn)
	c := int64(isqrt(q))
	if dot < 0 {
		c = -c
	}
	return c
}
