package discover

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/groundgate/groundgate/registry"
)

// normaliseTerms folds given terms: each must be valid UTF-8, at most
// MaxTermBytes, and fold to something; terms with the same key are listed
// once (the first spelling wins).
func normaliseTerms(an *textAnalyzer, terms []string, maxTerms int) ([]folded, error) {
	if len(terms) > maxTerms {
		return nil, fmt.Errorf("%w: %d terms, the limit is %d", ErrBadQuery, len(terms), maxTerms)
	}
	out := make([]folded, 0, len(terms))
	seen := make(map[string]bool, len(terms))
	for i, t := range terms {
		switch {
		case !utf8.ValidString(t):
			return nil, fmt.Errorf("%w: term %d is not valid UTF-8", ErrBadQuery, i)
		case len(t) > MaxTermBytes:
			return nil, fmt.Errorf("%w: term %d is %d bytes, the limit is %d", ErrBadQuery, i, len(t), MaxTermBytes)
		}
		f := an.foldTerm(t)
		if f.text == "" {
			return nil, fmt.Errorf("%w: term %d (%q) is empty once folded", ErrBadQuery, i, clip(t))
		}
		k := f.key()
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, f)
	}
	return out, nil
}

func clip(s string) string {
	const n = 40
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// termMatch is the outcome of the cascade for one term.
type termMatch struct {
	mode Mode
	ents []uint32 // postings or positions, sorted: the entries are e&entryMask
	cue  bool     // an inversion cue that named nothing itself
}

// match runs the cascade for every term against x and assembles the
// result (without its id). The caller holds whatever lock protects x.
func (x *index) match(ctx context.Context, terms []folded) (Result, error) {
	res := Result{
		Registry:   x.snap.Registry(),
		Version:    x.snap.Version(),
		Terms:      make([]string, len(terms)),
		Matches:    []Match{},
		Unresolved: []string{},
	}
	tms := make([]termMatch, len(terms))
	for i, t := range terms {
		res.Terms[i] = t.text
		tm, err := x.cascade(ctx, t)
		if err != nil {
			return Result{}, err
		}
		tms[i] = tm
	}

	// A cue that also names an entry ("fade" is an alias of a reversal
	// family) is read as a cue when another term names a family with an
	// opposite: "fade the momentum" asks for momentum's opposite, not for
	// the reversal and momentum side by side.
	for i, tm := range tms {
		if tm.cue || len(tm.ents) == 0 || !x.vocab.isCue(terms[i]) {
			continue
		}
		for j, other := range tms {
			if j != i && !other.cue && !x.vocab.isCue(terms[j]) && x.hasOpposable(other) {
				tms[i] = termMatch{cue: true}
				break
			}
		}
	}

	// Inversion: each cue inverts the families matched by the nearest
	// terms (in term order) that matched a family; ties invert both. The
	// inverted families move to their opposites: they are no longer
	// matches of the terms that named them.
	inverted := make([][]Match, len(terms))
	moved := make([]map[string]bool, len(terms)) // by term: the families inverted away
	for i, tm := range tms {
		if !tm.cue {
			continue
		}
		best := -1
		var near []int
		for j, other := range tms {
			if j == i || other.cue || !x.hasFamily(other) {
				continue
			}
			d := j - i
			if d < 0 {
				d = -d
			}
			switch {
			case best < 0 || d < best:
				best, near = d, []int{j}
			case d == best:
				near = append(near, j)
			}
		}
		seen := map[string]bool{}
		for _, j := range near {
			for _, e := range tms[j].ents {
				fam := x.caps[e&entryMask].Name
				opps := x.opposites(fam)
				if len(opps) > 0 {
					if moved[j] == nil {
						moved[j] = map[string]bool{}
					}
					moved[j][fam] = true
				}
				for _, opp := range opps {
					if seen[opp] {
						continue
					}
					seen[opp] = true
					o, ok := x.position(opp)
					if !ok {
						return Result{}, fmt.Errorf("discover: opposite %q of %q is not in registry version %d", opp, fam, x.version())
					}
					m, err := x.newMatch(terms[i].text, uint32(o), ModeInversion)
					if err != nil {
						return Result{}, err
					}
					m.Inverts = fam
					inverted[i] = append(inverted[i], m)
				}
			}
		}
		slices.SortFunc(inverted[i], func(a, b Match) int { return strings.Compare(a.Name, b.Name) })
	}

	// Relevance: the terms the named tiers left, read together.
	var read []string
	for i, tm := range tms {
		if !tm.cue && len(tm.ents) == 0 {
			read = append(read, terms[i].text)
		}
	}
	rel, relMatches, err := x.relevant(ctx, read)
	if err != nil {
		return Result{}, err
	}
	res.Relevance = rel
	relMatches = x.relevanceAdds(tms, inverted, relMatches)

	var family, metric bool
	for i, tm := range tms {
		ms := inverted[i]
		if !tm.cue {
			ms = make([]Match, 0, len(tm.ents))
			for _, e := range tm.ents {
				if moved[i][x.caps[e&entryMask].Name] {
					continue
				}
				m, err := x.newMatch(terms[i].text, e&entryMask, tm.mode)
				if err != nil {
					return Result{}, err
				}
				ms = append(ms, m)
			}
		}
		if len(ms) == 0 {
			if len(moved[i]) == 0 && (len(relMatches) == 0 || tm.cue) {
				res.Unresolved = append(res.Unresolved, terms[i].text)
			}
			continue
		}
		for _, m := range ms {
			family = family || m.Kind == registry.KindFamily
			metric = metric || m.Kind == registry.KindMetric
		}
		res.Matches = append(res.Matches, ms...)
	}
	for _, m := range relMatches {
		family = family || m.Kind == registry.KindFamily
		metric = metric || m.Kind == registry.KindMetric
	}
	res.Matches = append(res.Matches, relMatches...)
	res.OK = family && metric
	return res, nil
}

func (x *index) hasFamily(tm termMatch) bool {
	for _, e := range tm.ents {
		if x.caps[e&entryMask].Kind == registry.KindFamily {
			return true
		}
	}
	return false
}

// hasOpposable reports whether tm matched a family with an opposite.
func (x *index) hasOpposable(tm termMatch) bool {
	for _, e := range tm.ents {
		if c := &x.caps[e&entryMask]; c.Kind == registry.KindFamily && len(x.opposites(c.Name)) > 0 {
			return true
		}
	}
	return false
}

// newMatch is the match of entry e (a position).
func (x *index) newMatch(term string, e uint32, mode Mode) (Match, error) {
	disc, err := x.discDigest(e)
	if err != nil {
		return Match{}, err
	}
	c := &x.caps[e]
	return Match{
		Term:       term,
		Name:       c.Name,
		Kind:       c.Kind,
		Mode:       mode,
		Confidence: mode.confidence(),
		Capability: c.Identity,
		Disc:       disc,
	}, nil
}

// cascade matches one term: exact, then alias, then tag, then keyword; the
// first tier with a match wins. An inversion cue that no equality tier
// matches skips the keyword tier and is marked as a cue.
func (x *index) cascade(ctx context.Context, t folded) (termMatch, error) {
	// Postings are sorted by tier: the first one's tier is the highest
	// that lists the term.
	listed := x.terms.listed(t.key())
	if len(listed) > 0 {
		ents := inTier(listed, tier(listed[0]>>tierShift))
		switch tier(listed[0] >> tierShift) {
		case tierExact:
			return termMatch{mode: ModeExact, ents: ents}, nil
		case tierAlias:
			return termMatch{mode: ModeAlias, ents: ents}, nil
		case tierTag:
			return termMatch{mode: ModeTag, ents: ents}, nil
		}
	}
	if x.vocab.isCue(t) {
		return termMatch{cue: true}, nil
	}
	n, err := x.keyword(ctx, t, listed)
	if err != nil {
		return termMatch{}, err
	}
	return termMatch{mode: ModeKeyword, ents: n}, nil
}
