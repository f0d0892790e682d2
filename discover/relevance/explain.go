package relevance

import (
	"cmp"
	"slices"
)

// Explanation is what the decision rule reads of one prompt: the
// numbers its constants were calibrated on (tools/bench/relevance-eval
// --features). All in the scorer's integer units.
type Explanation struct {
	// Den is the weight of the Config.CoverWords heaviest prompt words,
	// Total of all of them.
	Den   int64 `json:"den"`
	Total int64 `json:"total"`
	// Credits are the candidates' weighted credits, highest first.
	Credits []int64 `json:"credits"`
	// Groups are the candidates' group ids in the order of Credits (−1:
	// none).
	Groups []int32 `json:"groups"`
	// Words are the prompt's words, heaviest first, with the best
	// candidate's credit and lexical saturation for each.
	Words []ExplainedWord `json:"words"`
}

// ExplainedWord is one prompt word of an Explanation.
type ExplainedWord struct {
	Key    string `json:"key"`
	Weight int64  `json:"w"`
	Credit int64  `json:"v"`   // the best candidate's, millionths
	Sat    int64  `json:"sat"` // its BM25F saturation alone
	DF     int    `json:"df"`
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
			d := x.docs[sc.cands[0].slot]
			if q.id >= 0 {
				if j, ok := slices.BinarySearchFunc(d.terms, uint32(q.id), func(p posting, id uint32) int { return cmp.Compare(p.id, id) }); ok {
					w.Sat = x.sat(d.terms[j], d)
				}
			}
		}
		e.Words = append(e.Words, w)
	}
	slices.SortStableFunc(e.Words, func(a, b ExplainedWord) int { return cmp.Compare(b.Weight, a.Weight) })
	return e
}
