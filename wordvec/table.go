package wordvec

import (
	_ "embed"
	"encoding/hex"
	"fmt"
)

// Dims is the number of dimensions of every vector.
const Dims = 100

// File names the table embedded in this package, and Digest is its SHA-256
// as "sha256:<hex>": what a result that read the table records. Load
// refuses an embedded table with another digest. tools/vectors.sh prints it.
const (
	File   = "glove6b-100d-40k.bin"
	Digest = "sha256:a6b1db2ee0916b7689307b9c54aa07fb2ad1b999e531f845b2fbc345f60f058f"
)

//go:embed glove6b-100d-40k.bin
var embedded string

// Scale is a word's largest |component| in the source vector, in
// millionths (rounded, halves away from zero). The word's int8 vector v
// holds that component as ±127, so the source vector is approximately
// v·s.Unit().
type Scale uint32

// Unit is the value of one step of a quantised component: s/127·10⁻⁶.
func (s Scale) Unit() float64 { return float64(s) / 127e6 }

// Table is an immutable word-vector table; it is safe for concurrent use.
// Words are indexed 0…Len()−1 in table order (the source's frequency order:
// index 0 is the most frequent word).
type Table struct {
	words  string // the words, concatenated
	off    []uint32
	index  map[string]int32
	scales []Scale
	vecs   []int8
	norms  []uint32 // Σ v[i]² of each word's int8 vector
	digest [32]byte
	source [32]byte
}

// Load parses the table embedded in this package (File). Each call parses
// it anew (about 30 ms; the table keeps 6.5 MB of heap); a caller loads it
// once and keeps the result.
func Load() (*Table, error) {
	t, err := Parse([]byte(embedded))
	if err != nil {
		return nil, fmt.Errorf("wordvec: embedded %s: %w", File, err)
	}
	if got := t.Digest(); got != Digest {
		return nil, fmt.Errorf("wordvec: embedded %s has digest %s, want %s", File, got, Digest)
	}
	return t, nil
}

// Len is the number of words.
func (t *Table) Len() int { return len(t.scales) }

// Digest is the SHA-256 of the table's bytes, "sha256:<hex>".
func (t *Table) Digest() string { return "sha256:" + hex.EncodeToString(t.digest[:]) }

// Source is the SHA-256 of the npm tarball the table was made from,
// "sha256:<hex>", as recorded in the table's header.
func (t *Table) Source() string { return "sha256:" + hex.EncodeToString(t.source[:]) }

// Word is the word at index i (0 ≤ i < Len()).
func (t *Table) Word(i int) string { return t.words[t.off[i]:t.off[i+1]] }

// Index is the index of word, compared byte for byte: the table holds only
// lower-case ASCII words, so a caller folds case first.
func (t *Table) Index(word string) (int, bool) {
	i, ok := t.index[word]
	return int(i), ok
}

// Lookup returns word's int8 vector (Dims components, largest |component|
// 127) and its Scale. The slice is the table's own: do not modify it.
func (t *Table) Lookup(word string) ([]int8, Scale, bool) {
	i, ok := t.index[word]
	if !ok {
		return nil, 0, false
	}
	return t.vec(int(i)), t.scales[i], true
}

func (t *Table) vec(i int) []int8 { return t.vecs[i*Dims : (i+1)*Dims : (i+1)*Dims] }

// Cosine is the cosine similarity of two words' int8 vectors in
// millionths (CosineUnit), in [−CosineUnit, CosineUnit]. The per-word
// scales cancel, so it is computed from exact integer dot products and
// rounded once (see CosineVectors). ok is false, and the cosine 0, when a
// word is not in the table.
func (t *Table) Cosine(a, b string) (cos int64, ok bool) {
	i, ok1 := t.index[a]
	j, ok2 := t.index[b]
	if !ok1 || !ok2 {
		return 0, false
	}
	va, vb := t.vec(int(i)), t.vec(int(j))
	var dot int32
	for k := range Dims {
		dot += int32(va[k]) * int32(vb[k])
	}
	return cosMicro(int64(dot), uint64(t.norms[i]), uint64(t.norms[j])), true
}
