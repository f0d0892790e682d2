package relevance

import (
	"cmp"
	"slices"
)

// Explanation is what the decision rule reads of one prompt: the
// numbers its constants were calibrated on (tools/bench/relevance-eval
// --features), in the scorer's integer units. Den is the weight of the
// Config.CoverWords heaviest prompt words and Total of all of them;
// Credits are the candidates' weighted credits, highest first, and Groups
// their group ids in that order (−1: none); Words are the prompt's words,
// heaviest first.
type Explanation struct {
	Den, Total int64
	Credits    []int64
	Groups     []int32
	Words      []ExplainedWord
}

// ExplainedWord is one prompt word of an Explanation: its key, weight and
// document frequency, and the best candidate's credit for it and BM25F
// saturation alone (millionths).
type ExplainedWord struct {
	Key                 string
	Weight, Credit, Sat int64
	DF                  int
}

// Explain scores prompt as Query does and returns what the decision rule
// reads.
func (x *Index) Explain(prompt string) Explanation {
	x.mu.RLock()
	defer x.mu.RUnlock()
	sc := x.score(prompt, x.cfg.Candidates, true)
	e := Explanation{Den: x.den(sc), Total: sc.total}
	cs := slices.Clone(sc.cands)
	slices.SortStableFunc(cs, func(a, b cand) int { return cmp.Compare(b.s, a.s) })
	for _, c := range cs {
		e.Credits = append(e.Credits, c.s)
		e.Groups = append(e.Groups, x.docs[c.slot].gid)
	}
	for qi, q := range sc.qs {
		w := ExplainedWord{Key: q.key, Weight: q.w}
		if q.id >= 0 {
			w.DF = len(x.terms[q.id].postings)
		}
		if len(sc.cands) > 0 {
			w.Credit = sc.vals[0][qi]
			s := sc.cands[0].slot
			if q.id >= 0 {
				if p, ok := x.posting(uint32(q.id), s); ok {
					w.Sat = x.sat(p, x.docs[s])
				}
			}
		}
		e.Words = append(e.Words, w)
	}
	slices.SortStableFunc(e.Words, func(a, b ExplainedWord) int { return cmp.Compare(b.Weight, a.Weight) })
	return e
}
