package relevance

import (
	"cmp"
	"slices"
)

// PartRank is what one sentence of a prompt (or the whole prompt) ranks:
// its Words (distinct prompt words and pairs read), its k best documents
// by their score on its words alone (over its CoverWords heaviest), best
// first, and whether the best passes the decision rule's gate. It is for
// measuring rules that read sentences (tools/bench/relevance-eval
// --parts); the tier reads terms, which keep no sentence.
type PartRank struct {
	Words   int
	Gate    bool
	Matches []Match
}

// RankParts ranks the whole prompt and each of its sentences (split as
// the reranker features split them).
func (x *Index) RankParts(prompt string, k int) (PartRank, []PartRank) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	whole := x.partRank(prompt, k)
	var parts []PartRank
	for _, s := range sentences(prompt) {
		parts = append(parts, x.partRank(s, k))
	}
	return whole, parts
}

func (x *Index) partRank(text string, k int) PartRank {
	sc := x.score(text, x.cfg.Candidates, true)
	pr := PartRank{Words: len(sc.qs)}
	if len(sc.cands) == 0 {
		return pr
	}
	den := x.den(sc)
	if den == 0 {
		return pr
	}
	pr.Gate = x.gate(sc)
	cs := slices.Clone(sc.cands)
	slices.SortStableFunc(cs, func(a, b cand) int { return cmp.Compare(b.s, a.s) })
	for _, c := range cs[:min(k, len(cs))] {
		s := min(c.s*1_000_000/den, 1_000_000)
		pr.Matches = append(pr.Matches, Match{Name: x.docs[c.slot].name, Score: s})
	}
	return pr
}
