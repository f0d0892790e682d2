package relevance

import (
	"cmp"
	"slices"
)

// The per-candidate features a reranker reads (issue 27): the parts of the
// full score, split by where the credit came from, and a few facts about
// the candidate beside the others. Each is an integer in millionths, so a
// linear model over them with integer weights is exact on every platform.
const (
	FeatFull         = iota // the full score: weighted credit over the CoverWords denominator
	FeatLexical             // the BM25F part alone (no vectors, no siblings)
	FeatName                // the BM25F part of the name field alone
	FeatTitle               // … of the title
	FeatLabels              // … of aliases, tags and examples
	FeatDesc                // … of the description
	FeatParam               // … of the parameters
	FeatSoft                // what the word vectors and the siblings add over the BM25F part
	FeatCover               // the share of the prompt's weight (all its words) the document holds lexically
	FeatNameCover           // the share of the name's words the prompt holds
	FeatRatio               // the full score over the best candidate's
	FeatRank                // 10⁶/(1 + the candidate's place in the diversified order)
	FeatLength              // ln(1 + the document's indexed words), millionths
	FeatGroupBest           // the best full score among the candidates of its group, over the best candidate's
	FeatGroupShare          // the share of the candidates in its group
	FeatGroupCover          // the full score of its group's candidates together (per word, the best credit)
	FeatSentence            // the best over the prompt's sentences of the score on that sentence's words alone
	FeatSentenceLead        // the best over the sentences of its score on one over the best candidate's on it
	FeatSentenceRank        // 10⁶/(1 + its best place among the candidates by the score on one sentence)
	NumFeatures
)

// FeatureNames names the features, in order (for dumps and docs).
var FeatureNames = [NumFeatures]string{"full", "lexical", "name", "title", "labels", "desc", "param", "soft", "cover", "name_cover", "ratio", "rank", "length", "group_best", "group_share", "group_cover", "sentence", "sentence_lead", "sentence_rank"}

// Candidate is one of a prompt's candidates with its features.
type Candidate struct {
	Name     string             `json:"n"`
	Features [NumFeatures]int64 `json:"f"`
}

// Candidates scores prompt as Query does and returns its Config.Candidates
// candidates in the diversified order, with their features.
func (x *Index) Candidates(prompt string) []Candidate {
	x.mu.RLock()
	defer x.mu.RUnlock()
	sc := x.score(prompt, x.cfg.Candidates, true)
	return x.features(prompt, sc)
}

// features computes the candidates' features; x.mu is held.
func (x *Index) features(prompt string, sc scored) []Candidate {
	if len(sc.cands) == 0 || sc.total == 0 {
		return nil
	}
	den := x.den(sc)
	if den == 0 {
		return nil
	}
	var best int64
	for _, c := range sc.cands {
		best = max(best, c.s)
	}
	gbest := map[int32]int64{}
	gn := map[int32]int64{}
	gcov := map[int32][]int64{}
	for ci, c := range sc.cands {
		if g := x.docs[c.slot].gid; g >= 0 {
			gbest[g] = max(gbest[g], c.s)
			gn[g]++
			if gcov[g] == nil {
				gcov[g] = make([]int64, len(sc.qs))
			}
			for qi, v := range sc.vals[ci] {
				gcov[g][qi] = max(gcov[g][qi], v)
			}
		}
	}
	// The sentences: each one's prompt words (indices into sc.qs), its
	// denominator (the CoverWords heaviest), and each candidate's score
	// on it.
	at := map[string]int{}
	for qi, q := range sc.qs {
		at[q.key] = qi
	}
	var sents [][]int
	var sdens []int64
	for _, t := range sentences(prompt) {
		seen := map[int]bool{}
		var qis []int
		var ws []int64
		for _, w := range x.an.words(t) {
			if qi, ok := at[w.key]; ok && !seen[qi] {
				seen[qi] = true
				qis = append(qis, qi)
				ws = append(ws, sc.qs[qi].w)
			}
		}
		if len(qis) == 0 {
			continue
		}
		slices.SortFunc(ws, func(a, b int64) int { return cmp.Compare(b, a) })
		if x.cfg.CoverWords > 0 {
			ws = ws[:min(len(ws), x.cfg.CoverWords)]
		}
		var d int64
		for _, w := range ws {
			d += w
		}
		sents = append(sents, qis)
		sdens = append(sdens, d)
	}
	ss := make([][]int64, len(sc.cands))
	sbest := make([]int64, len(sents))
	for ci := range sc.cands {
		ss[ci] = make([]int64, len(sents))
		for si, qis := range sents {
			var num int64
			for _, qi := range qis {
				num += sc.qs[qi].w * sc.vals[ci][qi] / 1_000_000
			}
			ss[ci][si] = min(num*1_000_000/sdens[si], 1_000_000)
			sbest[si] = max(sbest[si], ss[ci][si])
		}
	}
	// Each candidate's best place on a sentence (ties share the place).
	srank := make([]int, len(sc.cands))
	for ci := range srank {
		srank[ci] = len(sc.cands)
	}
	for si := range sents {
		for ci := range sc.cands {
			r := 0
			for cj := range sc.cands {
				if ss[cj][si] > ss[ci][si] {
					r++
				}
			}
			if ss[ci][si] > 0 {
				srank[ci] = min(srank[ci], r)
			}
		}
	}
	out := make([]Candidate, len(sc.cands))
	for ci, c := range sc.cands {
		d := x.docs[c.slot]
		var f [NumFeatures]int64
		var lex [NumFields]int64
		var lexS, softS, covered, nameTF int64
		for qi, q := range sc.qs {
			var sat int64
			var p posting
			ok := false
			if q.id >= 0 {
				p, ok = x.posting(uint32(q.id), c.slot)
			}
			if ok {
				sat = x.sat(p, d)
				covered += q.w
				for fi := range NumFields {
					lex[fi] += q.w * x.saturate(x.fieldTF(p, d, fi)) / 1_000_000
				}
				if !q.pair() { // a pair ("a b") is no name word
					nameTF += p.field(FieldName)
				}
			}
			v := sc.vals[ci][qi]
			lexS += q.w * sat / 1_000_000
			// The credit above the saturation came from the vectors or
			// the siblings.
			if v > sat {
				softS += q.w * (v - sat) / 1_000_000
			}
		}
		f[FeatFull] = c.s * 1_000_000 / den
		f[FeatLexical] = lexS * 1_000_000 / den
		f[FeatName] = lex[FieldName] * 1_000_000 / den
		f[FeatTitle] = lex[FieldTitle] * 1_000_000 / den
		f[FeatLabels] = (lex[FieldAlias] + lex[FieldTag] + lex[FieldExample]) * 1_000_000 / den
		f[FeatDesc] = lex[FieldDesc] * 1_000_000 / den
		f[FeatParam] = lex[FieldParam] * 1_000_000 / den
		f[FeatSoft] = softS * 1_000_000 / den
		f[FeatCover] = covered * 1_000_000 / sc.total
		if n := int64(d.lens[FieldName]); n > 0 {
			f[FeatNameCover] = min(nameTF*1_000_000/n, 1_000_000)
		}
		if best > 0 {
			f[FeatRatio] = c.s * 1_000_000 / best
		}
		f[FeatRank] = 1_000_000 / int64(1+ci)
		var n uint64
		for _, l := range d.lens {
			n += uint64(l)
		}
		f[FeatLength] = lnMicro(n+1, 1)
		if g := d.gid; g >= 0 && best > 0 {
			f[FeatGroupBest] = gbest[g] * 1_000_000 / best
			f[FeatGroupShare] = gn[g] * 1_000_000 / int64(len(sc.cands))
			var gs int64
			for qi, v := range gcov[g] {
				gs += sc.qs[qi].w * v / 1_000_000
			}
			f[FeatGroupCover] = gs * 1_000_000 / den
		} else if best > 0 {
			f[FeatGroupBest] = f[FeatRatio]
			f[FeatGroupShare] = 1_000_000 / int64(len(sc.cands))
			f[FeatGroupCover] = f[FeatFull]
		}
		for si, v := range ss[ci] {
			f[FeatSentence] = max(f[FeatSentence], v)
			if sbest[si] > 0 {
				f[FeatSentenceLead] = max(f[FeatSentenceLead], v*1_000_000/sbest[si])
			}
		}
		f[FeatSentenceRank] = 1_000_000 / int64(1+srank[ci])
		out[ci] = Candidate{Name: d.name, Features: f}
	}
	return out
}

// sentences splits a prompt at the ends of its sentences: '.', '?', '!'
// or ';' before a space or the end, and line breaks (not the dots of a
// URL or a number).
func sentences(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		end := c == '\n'
		if c == '.' || c == '?' || c == '!' || c == ';' {
			end = i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\n' || s[i+1] == '\t' || s[i+1] == '\r'
		}
		if end {
			out = append(out, s[start:i+1])
			start = i + 1
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}
