package main

import (
	"crypto/sha256"
	"slices"

	"github.com/groundgate/groundgate/discover/relevance"
)

// offeredOthers is how many other requests' offered APIs join a
// request's own in the "offered" conditions.
const offeredOthers = 3

// offered builds, for every StableToolBench request, the two registries
// of the "offered" conditions, as a request arrives at a gateway with the
// tools of a few upstreams, not of a whole marketplace: served, the APIs
// offered with it (its candidates) and those offered with offeredOthers
// other requests; unserved, those other requests' APIs alone. The others
// are the next requests in the order of their ids' SHA-256 whose APIs
// share no RapidAPI tool with the request's own, so the unserved registry
// holds no API of a tool that serves it.
func offered(docs []relevance.Document, reqs []request) (served, unserved [][]relevance.Document) {
	byName := docsByName(docs)
	tools := func(r request) []string {
		var ts []string
		for _, n := range r.Candidates {
			ts = append(ts, toolOf(byName[n]))
		}
		slices.Sort(ts)
		return slices.Compact(ts)
	}
	order := make([]int, len(reqs))
	for i := range order {
		order[i] = i
	}
	key := func(i int) [32]byte { return sha256.Sum256([]byte(reqs[i].ID)) }
	slices.SortFunc(order, func(a, b int) int {
		ka, kb := key(a), key(b)
		return slices.Compare(ka[:], kb[:])
	})
	pos := make([]int, len(reqs))
	for p, i := range order {
		pos[i] = p
	}
	served = make([][]relevance.Document, len(reqs))
	unserved = make([][]relevance.Document, len(reqs))
	for i, r := range reqs {
		own := tools(r)
		var others []relevance.Document
		n := 0
		for k := 1; k < len(reqs) && n < offeredOthers; k++ {
			o := reqs[order[(pos[i]+k)%len(reqs)]]
			if slices.ContainsFunc(tools(o), func(t string) bool { return slices.Contains(own, t) }) {
				continue
			}
			n++
			for _, c := range o.Candidates {
				others = append(others, byName[c])
			}
		}
		for _, c := range r.Candidates {
			served[i] = append(served[i], byName[c])
		}
		served[i] = append(served[i], others...)
		unserved[i] = others
	}
	return served, unserved
}

// offeredRows measures the offered conditions on reqs (a half of all,
// which offered() pairs with others): the relevance rule and bleve's
// BM25 top 3 and 5 on each request's served registry, and the share of
// requests matching nothing on its unserved registry and on τ-bench's
// airline tools. quick: the relevance rule only.
func offeredRows(vec *relevance.Vectors, cfg relevance.Config, docs []relevance.Document, all, reqs []request, tauDocs []relevance.Document, quick bool) ([]namedStats, error) {
	sv, us := offered(docs, all)
	at := map[string]int{}
	for i, r := range all {
		at[r.ID] = i
	}
	xa, err := build(vec, cfg, tauDocs)
	if err != nil {
		return nil, err
	}
	var rel, b3, b5, un, air Stats
	for _, r := range reqs {
		i := at[r.ID]
		x, err := build(vec, cfg, sv[i])
		if err != nil {
			return nil, err
		}
		rel.add(r.Gold, names(x.Query(r.Prompt).Matches))
		if !quick {
			bl, err := buildBleve(sv[i])
			if err != nil {
				return nil, err
			}
			b3.add(r.Gold, bleveTop(bl, r.Prompt, 3))
			b5.add(r.Gold, bleveTop(bl, r.Prompt, 5))
			bl.Close()
		}
		xu, err := build(vec, cfg, us[i])
		if err != nil {
			return nil, err
		}
		un.add(nil, names(xu.Query(r.Prompt).Matches))
		air.add(nil, names(xa.Query(r.Prompt).Matches))
	}
	out := []namedStats{{"offered: relevance", rel}}
	if !quick {
		out = append(out, namedStats{"offered: bleve bm25 top-3", b3}, namedStats{"offered: bleve bm25 top-5", b5})
	}
	out = append(out, namedStats{"offered unserved: relevance", un}, namedStats{"airline tools: relevance", air})
	for i := range out {
		out[i].finish()
	}
	return out, nil
}
