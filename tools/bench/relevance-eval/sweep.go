package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/groundgate/groundgate/discover/relevance"
)

// runSweep prints the dev figures of a grid of decision-rule constants:
// StableToolBench recall and matches, its unserved share (gold removed),
// and τ-bench's all-gold share. Only dev requests are read.
func runSweep(w io.Writer, vec *relevance.Vectors, cfg relevance.Config, tbDocs []relevance.Document, tbReqs []request, tauDocs []relevance.Document, tauReqs []request) error {
	tb, tau := pick(tbReqs, true), pick(tauReqs, true)
	x, xt, err := buildSets(vec, cfg, tbDocs, tauDocs)
	if err != nil {
		return err
	}
	// The candidates' scores once, then the rule applied to them.
	ranked := make([][]relevance.Match, len(tb))
	for i, r := range tb {
		ranked[i] = x.Rank(r.Prompt, 5)
	}
	byName := docsByName(tbDocs)
	unranked := make([][]relevance.Match, len(tb))
	for i, r := range tb {
		without(x, byName, uniq(r.Gold), func() { unranked[i] = x.Rank(r.Prompt, 5) })
	}
	tauRanked := make([][]relevance.Match, len(tau))
	for i, r := range tau {
		tauRanked[i] = xt.Rank(r.Prompt, 5)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "threshold\tmargin\tmax\ttb all\ttb recall\ttb mean\ttb zero\tunserved none\ttau all\ttau mean\t")
	for _, th := range []int64{50_000, 75_000, 100_000, 125_000, 150_000, 200_000, 250_000, 300_000, 350_000, 400_000, 450_000, 500_000} {
		for _, mg := range []int64{600, 750, 850, 950} {
			for _, k := range []int{3, 5} {
				var a, u, t Stats
				for i, r := range tb {
					a.add(r.Gold, decide(ranked[i], th, min(th, cfg.FloorMicro), mg, k))
					u.add(nil, decide(unranked[i], th, min(th, cfg.FloorMicro), mg, k))
				}
				for i, r := range tau {
					t.add(r.Gold, decide(tauRanked[i], th, min(th, cfg.FloorMicro), mg, k))
				}
				a.finish()
				u.finish()
				t.finish()
				fmt.Fprintf(tw, "%d\t%d\t%d\t%.3f\t%.3f\t%.2f\t%.3f\t%.3f\t%.3f\t%.2f\t\n", th, mg, k, a.AllGold, a.GoldRecall, a.Mean, a.Zero, u.Zero, t.AllGold, t.Mean)
			}
		}
	}
	return tw.Flush()
}

// decide is Index.Query's rule on ranked matches: the best must reach
// th, the others floor.
func decide(ms []relevance.Match, th, floor, margin int64, k int) []string {
	var out []string
	if len(ms) == 0 || ms[0].Score < th {
		return out
	}
	for _, m := range ms {
		if len(out) == k {
			break
		}
		if m.Score < floor || m.Score*1000 < ms[0].Score*margin {
			continue // the candidates are diversified, not sorted by score
		}
		out = append(out, m.Name)
	}
	return out
}
