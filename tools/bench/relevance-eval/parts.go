package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/groundgate/groundgate/discover/relevance"
)

// --parts measures decision rules that read the prompt's sentences
// (relevance.Index.RankParts) against the rule of the configuration
// ("rule"), on every condition of the tool sets: docs/discovery.md,
// "Sentences". Each condition is scored once; the rules are applied to
// the same rankings.

// partObs is what one request under one condition ranks.
type partObs struct {
	gold  []string
	rule  []string // the configuration's own decision (Index.Query)
	whole relevance.PartRank
	parts []relevance.PartRank
}

// partsRule adds, to the first of the rule's matches (first) or to all
// of them, the best of each sentence of at least two words whose best
// scores at least tp on it and passes the gate, and, per sentence, its
// next ones up to per while they score at least 0.8 of its best; the
// added ones by score, up to five in all.
func partsRule(o partObs, tp int64, per int, first bool) []string {
	out := slices.Clone(o.rule)
	if first {
		out = out[:min(1, len(out))]
	}
	type scored struct {
		name  string
		score int64
	}
	var add []scored
	for _, p := range o.parts {
		if p.Words < 2 || len(p.Matches) == 0 || !p.Gate || p.Matches[0].Score < tp {
			continue
		}
		for i, m := range p.Matches {
			if i == per || m.Score*1000 < p.Matches[0].Score*800 {
				break
			}
			add = append(add, scored{m.Name, m.Score})
		}
	}
	slices.SortStableFunc(add, func(a, b scored) int { return cmp.Compare(b.score, a.score) })
	for _, a := range add {
		if len(out) < 5 && !slices.Contains(out, a.name) {
			out = append(out, a.name)
		}
	}
	for _, n := range o.rule {
		if first && len(out) < 5 && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// roundRobin takes the whole prompt's best, each sentence's best, then
// the second of each, and so on, up to k: no threshold.
func roundRobin(o partObs, k int) []string {
	var out []string
	lists := append([]relevance.PartRank{o.whole}, o.parts...)
	for r := 0; r < 5 && len(out) < k; r++ {
		for _, l := range lists {
			if r < len(l.Matches) && len(out) < k && !slices.Contains(out, l.Matches[r].Name) {
				out = append(out, l.Matches[r].Name)
			}
		}
	}
	return out
}

func runParts(w io.Writer, vec *relevance.Vectors, cfg relevance.Config, tbDocs []relevance.Document, tbReqs []request, tauDocs []relevance.Document, tauReqs []request) error {
	conds := map[string][]partObs{}
	observe := func(cond string, x *relevance.Index, r request, gold []string) {
		whole, parts := x.RankParts(r.Prompt, 5)
		half := map[bool]string{true: "dev", false: "test"}[r.dev]
		conds[cond+" "+half] = append(conds[cond+" "+half], partObs{gold: gold, rule: names(x.Query(r.Prompt).Matches), whole: whole, parts: parts})
	}
	x, xt, err := buildSets(vec, cfg, tbDocs, tauDocs)
	if err != nil {
		return err
	}
	sv, us := offered(tbDocs, tbReqs)
	byName := docsByName(tbDocs)
	for i, r := range tbReqs {
		observe("stabletoolbench", x, r, r.Gold)
		without(x, byName, uniq(r.Gold), func() { observe("unserved: gold removed", x, r, nil) })
		xs, err := build(vec, cfg, sv[i])
		if err != nil {
			return err
		}
		observe("offered", xs, r, r.Gold)
		xu, err := build(vec, cfg, us[i])
		if err != nil {
			return err
		}
		observe("offered unserved", xu, r, nil)
		observe("airline tools", xt, r, nil)
	}
	for _, r := range tauReqs {
		observe("tau-airline", xt, r, r.Gold)
	}
	order := make([]string, 0, len(conds))
	for c := range conds {
		order = append(order, c)
	}
	slices.Sort(order)
	askCap := func(o partObs) []string {
		n := 1
		for _, p := range o.parts {
			if p.Words >= 2 {
				n++
			}
		}
		return o.rule[:min(n, len(o.rule))]
	}
	rules := []struct {
		name string
		f    func(partObs) []string
	}{
		{"rule", func(o partObs) []string { return o.rule }},
		{"round robin, 5", func(o partObs) []string { return roundRobin(o, 5) }},
		{"rule + sentence bests (0.2, 2)", func(o partObs) []string { return partsRule(o, 200_000, 2, false) }},
		{"rule's best, sentence bests (0.35, 1), rule", func(o partObs) []string { return partsRule(o, 350_000, 1, true) }},
		{"rule, at most sentences + 1", askCap},
		{"rule + sentence bests (0.2, 1) if the rule matched", func(o partObs) []string {
			if len(o.rule) == 0 {
				return nil
			}
			return partsRule(o, 200_000, 1, false)
		}},
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "condition\trule\tgold recall\tmatches\tnone\t")
	for _, c := range order {
		for _, ru := range rules {
			var s Stats
			for _, o := range conds[c] {
				s.add(o.gold, ru.f(o))
			}
			s.finish()
			fmt.Fprintf(tw, "%s\t%s\t%.3f\t%.2f\t%.3f\t\n", c, ru.name, s.GoldRecall, s.Mean, s.Zero)
		}
	}
	return tw.Flush()
}
