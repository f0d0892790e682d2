package relevance

import (
	"cmp"
	"slices"
	"strings"
	"sync"
)

// Match is one document a prompt matched.
type Match struct {
	Name string `json:"name"`
	// Score is the document's relevance in millionths: the IDF-weighted
	// share of the prompt's words the document covers (see the package
	// documentation), 0…1,000,000.
	Score int64 `json:"score"`
	// ConfidenceMilli is the match's confidence in thousandths:
	// ⌊499·Score/10⁶⌋, so always below 500 (0.5, the keyword tier's).
	ConfidenceMilli int64 `json:"confidence_milli"`
}

// Confidence is ConfidenceMilli as a fraction (exactly the decimal
// value's nearest float64).
func (m Match) Confidence() float64 { return float64(m.ConfidenceMilli) / 1000 }

// Result is what a query returns.
type Result struct {
	// Words are the keys of the prompt the score read, in prompt order,
	// then the pairs of adjacent ones ("a b", Config.PairMilli) that some
	// document holds.
	Words []string `json:"words"`
	// Matches are the documents that pass the decision rule, best first
	// (ties by name); empty when nothing is relevant enough.
	Matches []Match `json:"matches"`
	// Scoring is the digest of the rule, its constants and the vector
	// table (Index.Scoring); Vectors the table's own digest.
	Scoring string `json:"scoring"`
	Vectors string `json:"vectors"`
}

// confidence maps a score to its confidence in thousandths.
func confidence(score int64) int64 { return 499 * score / 1_000_000 }

// qword is one distinct word of a prompt.
type qword struct {
	key string
	id  int64 // term id, −1 when no document holds it
	vec int32 // vector-table index, −1 when not in the table
	w   int64 // weight, millionths
}

// pair reports whether q is a pair of adjacent words ("a b",
// Config.PairMilli), not a word.
func (q qword) pair() bool { return strings.Contains(q.key, " ") }

var accPool = sync.Pool{New: func() any { return new([]int64) }}

// groupScan bounds the members of a group read for its best saturations
// (the first by name): the tools of one upstream are rarely more.
const groupScan = 64

// Query scores prompt against the index and applies the decision rule.
func (x *Index) Query(prompt string) Result {
	x.mu.RLock()
	sc := x.score(prompt, x.cfg.Candidates, true)
	ms := x.cover(sc)
	x.mu.RUnlock()
	return Result{Words: sc.words, Matches: ms, Scoring: x.scoring, Vectors: x.vec.Digest()}
}

// cover is the decision rule on a query's candidates (see the package
// documentation): greedy coverage of the prompt's coverable part. It
// never returns nil; x.mu is held.
func (x *Index) cover(sc scored) []Match {
	out := []Match{}
	cfg := x.cfg
	if len(sc.cands) == 0 {
		return out
	}
	den := x.den(sc)
	if den == 0 {
		return out
	}
	if !x.gate(sc) {
		return out
	}
	covered := make([]int64, len(sc.qs))
	top := min(sc.cands[0].s*1_000_000/den, 1_000_000)
	if top < cfg.ThresholdMicro {
		return out
	}
	most := x.most(sc)
	for ci, c := range sc.cands {
		s := min(c.s*1_000_000/den, 1_000_000)
		if len(out) == most {
			break
		}
		if s < cfg.FloorMicro || s*1000 < top*cfg.MarginMilli {
			continue // diversified: a later one may still pass
		}
		// A later match must add to what the earlier ones cover.
		var g int64
		for qi, v := range sc.vals[ci] {
			if v > covered[qi] {
				g += sc.qs[qi].w * (v - covered[qi]) / 1_000_000
			}
		}
		if len(out) > 0 && g*1_000_000/den < cfg.GainMicro {
			continue
		}
		for qi, v := range sc.vals[ci] {
			covered[qi] = max(covered[qi], v)
		}
		out = append(out, Match{Name: x.docs[c.slot].name, Score: s, ConfidenceMilli: confidence(s)})
	}
	// Chosen in diversified order, reported best first.
	slices.SortFunc(out, func(a, b Match) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out
}

// gate reports whether the best candidate stands out of the candidates'
// distribution: its credit at least GateMilli/1000 of the one ranked
// GateRank by credit (0 when there are fewer; GateRank 0: no gate).
func (x *Index) gate(sc scored) bool {
	cfg := x.cfg
	if cfg.GateRank == 0 || len(sc.cands) == 0 {
		return cfg.GateRank == 0
	}
	ref := int64(0)
	if cfg.GateRank < len(sc.cands) {
		ss := make([]int64, len(sc.cands)) // by credit: diversify reordered them
		for i, c := range sc.cands {
			ss[i] = c.s
		}
		slices.SortFunc(ss, func(a, b int64) int { return cmp.Compare(b, a) })
		ref = ss[cfg.GateRank]
	}
	return sc.cands[0].s*1000 >= ref*cfg.GateMilli
}

// most is how many matches the prompt may have (Config.WordsPerMatch).
func (x *Index) most(sc scored) int {
	cfg := x.cfg
	if cfg.WordsPerMatch == 0 {
		return cfg.MaxMatches
	}
	n := 0
	for _, q := range sc.qs {
		if !q.pair() {
			n++
		}
	}
	return min(cfg.MaxMatches, max(cfg.MinMatches, (n+cfg.WordsPerMatch-1)/cfg.WordsPerMatch))
}

// den is the decision rule's denominator: the weights of the
// Config.CoverWords heaviest prompt words (all of them when CoverWords is
// 0): a request asks for one or a few things, so a long prompt does not
// dilute the score.
func (x *Index) den(sc scored) int64 {
	if x.cfg.CoverWords == 0 {
		return sc.total
	}
	ws := make([]int64, len(sc.qs))
	for qi, q := range sc.qs {
		ws[qi] = q.w
	}
	slices.SortFunc(ws, func(a, b int64) int { return cmp.Compare(b, a) })
	var den int64
	for _, w := range ws[:min(len(ws), x.cfg.CoverWords)] {
		den += w
	}
	return den
}

// Rank returns the k best documents for prompt by the full score, in the
// decision rule's diversified order, without its gate, threshold and
// margin (k ≤ Config.Candidates).
func (x *Index) Rank(prompt string, k int) []Match {
	_, r := x.rank(prompt, k, true)
	return r
}

// RankLexical returns the k best documents by the BM25F part of the score
// alone (the prompt words' weighted saturations, no vectors): the
// baseline the word vectors are measured against.
func (x *Index) RankLexical(prompt string, k int) []Match {
	_, r := x.rank(prompt, k, false)
	return r
}

// prompt reads a prompt's distinct words; x.mu is held.
func (x *Index) prompt(prompt string) []qword {
	seen := map[string]bool{}
	var qs []qword
	ws := x.an.words(prompt)
	n := len(ws) // ws[n:]: the pairs of adjacent words
	if x.cfg.PairMilli > 0 {
		for i := 1; i < n; i++ {
			k := pairKey(ws[i-1], ws[i])
			ws = append(ws, word{fold: k, key: k})
		}
	}
	for wi, w := range ws {
		if seen[w.key] || len(qs) == x.cfg.MaxQueryWords {
			continue
		}
		seen[w.key] = true
		q := qword{key: w.key, id: -1, vec: -1}
		df := int64(0)
		if id, ok := x.dict.get(w.key); ok {
			q.id = int64(id)
			df = int64(len(x.terms[id].postings))
		}
		if i, ok := x.vec.index(w); ok && wi < n {
			q.vec = i
		}
		if q.id < 0 && q.vec < 0 {
			continue // nothing can match it
		}
		// BM25's IDF, ln(1 + (N − n + ½)/(n + ½)) = ln((2N + 2)/(2n + 1)).
		idf := lnMicro(uint64(2*x.n+2), uint64(2*df+1))
		rare := int64(1_000_000)
		if q.vec >= 0 {
			rare = max(x.cfg.RarityFloorMicro, x.vec.rank[q.vec])
		}
		q.w = idf * rare / 1_000_000
		if wi >= n {
			q.w = q.w * x.cfg.PairMilli / 1000
		}
		if q.w <= 0 {
			continue
		}
		qs = append(qs, q)
	}
	return qs
}

// sat is the BM25F saturation of a posting of document d, in millionths:
// t/(k1 + t) for t = Σ_f weight_f·tf_f/((1 − b_f) + b_f·len_f/avglen_f).
func (x *Index) sat(p posting, d *doc) int64 {
	var t int64 // thousandths
	for f := range NumFields {
		t += x.fieldTF(p, d, f)
	}
	return x.saturate(t)
}

// fieldTF is field f's term of the BM25F sum for posting p of document
// d, weight_f·tf_f/((1 − b_f) + b_f·len_f/avglen_f), in thousandths.
func (x *Index) fieldTF(p posting, d *doc, f int) int64 {
	tf := p.field(f)
	if tf == 0 || x.totLen[f] == 0 {
		return 0
	}
	b := x.cfg.BMilli[f]
	norm := max(1000-b+b*int64(d.lens[f])*x.n/x.totLen[f], 1)
	return x.cfg.WeightMilli[f] * tf * 1000 / norm
}

// saturate is t/(k1 + t) in millionths for t in thousandths.
func (x *Index) saturate(t int64) int64 {
	if t == 0 {
		return 0
	}
	return t * 1_000_000 / (x.cfg.K1Milli + t)
}

type cand struct {
	slot uint32
	s    int64
}

// scored is what a query computes: the prompt's words, their total
// weight, the candidates best first by the global score, and each
// candidate's credit for each prompt word (millionths).
type scored struct {
	qs    []qword
	words []string
	total int64
	cands []cand    // best first; s is the weighted credit Σ w_t·v_t/10⁶
	vals  [][]int64 // vals[i][q]: candidate i's credit for word q
}

// rank scores prompt and returns its words and the k best documents.
func (x *Index) rank(prompt string, k int, soft bool) ([]string, []Match) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	c := x.cfg.Candidates
	if !soft {
		c = k
	}
	sc := x.score(prompt, max(c, k), soft)
	if sc.total == 0 || k < 1 {
		return sc.words, nil
	}
	out := sc.cands
	if len(out) > k {
		out = out[:k]
	}
	ms := make([]Match, len(out))
	for i, o := range out {
		s := o.s * 1_000_000 / sc.total
		ms[i] = Match{Name: x.docs[o.slot].name, Score: s, ConfidenceMilli: confidence(s)}
	}
	return sc.words, ms
}

// less orders candidates: higher score first, then by name.
func (x *Index) less(a, b cand) bool {
	if a.s != b.s {
		return a.s > b.s
	}
	return x.docs[a.slot].name < x.docs[b.slot].name
}

// score computes the c best candidates of prompt; x.mu is held.
func (x *Index) score(prompt string, c int, soft bool) scored {
	qs := x.prompt(prompt)
	sc := scored{qs: qs, words: make([]string, len(qs))}
	for i, q := range qs {
		sc.words[i] = q.key
		sc.total += q.w
	}
	if x.n == 0 || sc.total == 0 || c < 1 {
		sc.total = 0
		return sc
	}
	// Lexical pass: every posting of every prompt word.
	accp := accPool.Get().(*[]int64)
	defer accPool.Put(accp)
	if len(*accp) < len(x.docs) {
		*accp = make([]int64, len(x.docs))
	}
	acc := *accp
	var touched []uint32
	grp := soft && x.cfg.GroupMilli > 0 // the lexical baseline reads no siblings
	for _, q := range qs {
		if q.id < 0 {
			continue
		}
		for _, p := range x.terms[q.id].postings {
			if acc[p.id] == 0 {
				touched = append(touched, p.id)
			}
			acc[p.id] += q.w*x.sat(p, x.docs[p.id])/1_000_000 + 1 // +1: touched, even at 0
		}
	}
	best := make([]cand, 0, c+1)
	for _, s := range touched {
		// acc holds one extra unit per word that touched it; the
		// candidates' scores are recomputed exactly below.
		cd := cand{s, acc[s]}
		acc[s] = 0
		if len(best) == c && !x.less(cd, best[c-1]) {
			continue
		}
		i, _ := slices.BinarySearchFunc(best, cd, func(e, t cand) int {
			if x.less(e, t) {
				return -1
			}
			return 1
		})
		best = slices.Insert(best, i, cd)
		if len(best) > c {
			best = best[:c]
		}
	}
	// The candidates' groups: each one's best saturation of each prompt
	// word among its first groupScan members (gbest[gid]).
	var gbest map[int32][]int64
	if grp {
		gbest = map[int32][]int64{}
		for _, b := range best {
			gi := x.docs[b.slot].gid
			if _, ok := gbest[gi]; ok || gi < 0 {
				continue
			}
			r := make([]int64, len(qs))
			gbest[gi] = r
			ms := x.gList[gi].members
			for _, m := range ms[:min(len(ms), groupScan)] {
				md := x.docs[m]
				for qi, q := range qs {
					if q.id < 0 {
						continue
					}
					if p, ok := x.posting(uint32(q.id), m); ok {
						r[qi] = max(r[qi], x.sat(p, md))
					}
				}
			}
			// The share lent, λ·(N − |g|)/N: a group that is the whole
			// registry tells nothing about which of its members is meant.
			lam := x.cfg.GroupMilli * (x.n - int64(len(ms))) / x.n
			for qi := range r {
				r[qi] = r[qi] * lam / 1000
			}
		}
	}
	// Exact credits of the candidates: per prompt word, the largest of its
	// saturation and (with soft) its soft match and its group's credit.
	var softv [][]int64
	var cols map[int32]int
	if soft {
		softv, cols = x.softTable(qs, best)
	}
	out := make([]cand, len(best))
	vals := make([][]int64, len(best))
	for ci, b := range best {
		d := x.docs[b.slot]
		row := make([]int64, len(qs))
		var num int64
		for qi, q := range qs {
			var v int64
			if q.id >= 0 {
				if p, ok := x.posting(uint32(q.id), b.slot); ok {
					v = x.sat(p, d)
				}
			}
			if soft && q.vec >= 0 {
				for _, dv := range d.vecs {
					if s := softv[qi][cols[dv]]; s > v {
						v = s
					}
				}
			}
			if grp && d.gid >= 0 {
				v = max(v, gbest[d.gid][qi])
			}
			row[qi] = v
			num += q.w * v / 1_000_000
		}
		out[ci] = cand{b.slot, num}
		vals[ci] = row
	}
	idx := make([]int, len(out))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		if x.less(out[a], out[b]) {
			return -1
		}
		return 1
	})
	sc.cands = make([]cand, len(out))
	sc.vals = make([][]int64, len(out))
	for i, j := range idx {
		sc.cands[i] = out[j]
		sc.vals[i] = vals[j]
	}
	if soft && x.cfg.DiverseMilli > 0 {
		x.diversify(&sc)
	}
	return sc
}

// diversify reorders the candidates greedily: after the best, each next
// one is the candidate with the largest (1 − μ)·S + μ·G, for S its
// weighted credit and G what it adds to the credit of those before it
// (per word, the excess of its credit over theirs), μ =
// Config.DiverseMilli/1000; ties by the order before. A request that asks
// for two things gets both in front rather than five ways to do one.
func (x *Index) diversify(sc *scored) {
	mu := x.cfg.DiverseMilli
	covered := make([]int64, len(sc.qs))
	for i := range sc.cands {
		if i > 0 {
			bi, bk := i, int64(-1)
			for j := i; j < len(sc.cands); j++ {
				var g int64
				for qi, v := range sc.vals[j] {
					if v > covered[qi] {
						g += sc.qs[qi].w * (v - covered[qi]) / 1_000_000
					}
				}
				if k := (1000-mu)*sc.cands[j].s + mu*g; k > bk {
					bi, bk = j, k
				}
			}
			// Move bi to i, keeping the others' order.
			c, v := sc.cands[bi], sc.vals[bi]
			copy(sc.cands[i+1:bi+1], sc.cands[i:bi])
			copy(sc.vals[i+1:bi+1], sc.vals[i:bi])
			sc.cands[i], sc.vals[i] = c, v
		}
		for qi, v := range sc.vals[i] {
			covered[qi] = max(covered[qi], v)
		}
	}
}

// softTable computes, for each prompt word with a vector and each distinct
// vector word of the candidates, the soft match
// SoftGain·(c − Floor)/(1 − Floor) of their cosine c (0 at or below the
// floor, and 0 for the word itself, which the lexical part scores).
func (x *Index) softTable(qs []qword, best []cand) ([][]int64, map[int32]int) {
	cols := map[int32]int{}
	var colv []int32
	for _, b := range best {
		for _, v := range x.docs[b.slot].vecs {
			if _, ok := cols[v]; !ok {
				cols[v] = len(colv)
				colv = append(colv, v)
			}
		}
	}
	floor := x.cfg.CosFloorMicro
	out := make([][]int64, len(qs))
	for qi, q := range qs {
		if q.vec < 0 {
			continue
		}
		row := make([]int64, len(colv))
		for j, v := range colv {
			if v == q.vec {
				continue
			}
			c := x.vec.cosine(q.vec, v)
			if c <= floor {
				continue
			}
			row[j] = x.cfg.SoftGainMilli * ((c - floor) * 1_000_000 / (1_000_000 - floor)) / 1000
		}
		out[qi] = row
	}
	return out, cols
}
