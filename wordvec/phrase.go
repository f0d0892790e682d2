package wordvec

// MaxPhraseWeight bounds a Phrase's total weight. With it, every component
// of a phrase vector fits int32 (|c| ≤ 127·2²⁰) and every dot product and
// norm of two phrase vectors is exact in int64 (≤ 100·(127·2²⁰)² < 2⁶³).
const MaxPhraseWeight = 1 << 20

// Phrase is a phrase vector: the weighted sum of its words' int8 vectors,
// in int32. The sum does not depend on the order words are added in. The
// zero Phrase is empty and ready to use.
//
// Each word's vector has its largest |component| at 127 (its own scale is
// not applied), so every word weighs about the same in the sum whatever its
// source vector's length; integer weights (say, quantised IDF) let a caller
// weigh words differently.
type Phrase struct {
	sum    [Dims]int32
	weight int32
}

// Weight is the sum of the weights of the words added (the number of words
// when each was added with weight 1); 0 for an empty phrase.
func (p *Phrase) Weight() int { return int(p.weight) }

// Vector is the phrase's summed vector.
func (p *Phrase) Vector() [Dims]int32 { return p.sum }

// Add adds weight times word's vector to p. It reports false, leaving p
// unchanged, when word is not in the table, weight < 1, or p's total weight
// would exceed MaxPhraseWeight.
func (t *Table) Add(p *Phrase, word string, weight int) bool {
	i, ok := t.index[word]
	if !ok || weight < 1 || weight > MaxPhraseWeight-int(p.weight) {
		return false
	}
	v := t.vec(int(i))
	w := int32(weight)
	for k := range Dims {
		p.sum[k] += w * int32(v[k])
	}
	p.weight += w
	return true
}

// Phrase is the phrase vector of words, each with weight 1. Words not in
// the table are skipped, as are words beyond MaxPhraseWeight.
func (t *Table) Phrase(words []string) Phrase {
	var p Phrase
	for _, w := range words {
		t.Add(&p, w, 1)
	}
	return p
}

// CosinePhrases is the cosine similarity of two phrase vectors in
// millionths (CosineUnit): exact integer dot product and norms, one
// rounding (halves away from zero). ok is false, and the cosine 0, when
// either phrase is empty or its vector is zero.
func CosinePhrases(a, b *Phrase) (cos int64, ok bool) {
	var dot, na, nb int64
	for k := range Dims {
		x, y := int64(a.sum[k]), int64(b.sum[k])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0, false
	}
	return cosMicro(dot, uint64(na), uint64(nb)), true
}

// PhraseCosine is CosinePhrases of the phrase vectors of a and b.
func (t *Table) PhraseCosine(a, b []string) (cos int64, ok bool) {
	pa, pb := t.Phrase(a), t.Phrase(b)
	return CosinePhrases(&pa, &pb)
}
