package main

import (
	"slices"
	"strings"

	"github.com/groundgate/groundgate/discover/relevance"
)

// The "whole tools" condition: one document per RapidAPI tool rather than
// per API (its name; its APIs' names and descriptions as its description,
// their parameters as its parameters; no group), and a request's gold the
// tools of its gold APIs. It is the shape of a registry of a few hundred
// services each described in a paragraph, and of requests most of which
// want one of them (474 of the 765 want one tool, 253 two).

// wholeTools returns the tool documents of docs and, for each request,
// its gold tools.
func wholeTools(docs []relevance.Document, reqs []request) ([]relevance.Document, map[string][]string) {
	byTool := map[string]*relevance.Document{}
	var names []string
	toolOfAPI := map[string]string{}
	for _, d := range docs {
		t := toolOf(d)
		toolOfAPI[d.Name] = t
		td, ok := byTool[t]
		if !ok {
			td = &relevance.Document{Name: t, Title: t}
			byTool[t] = td
			names = append(names, t)
		}
		_, api, _ := strings.Cut(d.Title, ": ")
		line := api
		if d.Description != "" {
			line += ": " + d.Description
		}
		if td.Description != "" {
			td.Description += "\n"
		}
		td.Description += line
		td.Params = append(td.Params, d.Params...)
	}
	slices.Sort(names)
	out := make([]relevance.Document, len(names))
	for i, n := range names {
		out[i] = *byTool[n]
	}
	gold := map[string][]string{}
	for _, r := range reqs {
		var g []string
		for _, a := range r.Gold {
			g = append(g, toolOfAPI[a])
		}
		gold[r.ID] = uniq(g)
	}
	return out, gold
}

// wholeToolRows measures the relevance rule and bleve's BM25 top 3 and 5
// on the tool documents, and the share of requests matching nothing when
// their gold tools are removed.
func wholeToolRows(vec *relevance.Vectors, cfg relevance.Config, docs []relevance.Document, reqs []request, quick bool) ([]namedStats, error) {
	tds, gold := wholeTools(docs, reqs)
	x, err := build(vec, cfg, tds)
	if err != nil {
		return nil, err
	}
	byName := docsByName(tds)
	var rel, b3, b5, un Stats
	bl, err := buildBleve(tds)
	if err != nil {
		return nil, err
	}
	defer bl.Close()
	for _, r := range reqs {
		g := gold[r.ID]
		rel.add(g, names(x.Query(r.Prompt).Matches))
		if !quick {
			b3.add(g, bleveTop(bl, r.Prompt, 3))
			b5.add(g, bleveTop(bl, r.Prompt, 5))
		}
		without(x, byName, g, func() { un.add(nil, names(x.Query(r.Prompt).Matches)) })
	}
	out := []namedStats{{"whole tools: relevance", rel}}
	if !quick {
		out = append(out, namedStats{"whole tools: bleve bm25 top-3", b3}, namedStats{"whole tools: bleve bm25 top-5", b5})
	}
	out = append(out, namedStats{"whole tools unserved: relevance", un})
	for i := range out {
		out[i].finish()
	}
	return out, nil
}
