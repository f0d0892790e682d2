package main

import (
	"encoding/json"
	"io"

	"github.com/groundgate/groundgate/discover/relevance"
)

// rankRow is one request under one condition with its candidates by the
// full score, for measuring another ranking offline (--ranks).
type rankRow struct {
	Data      string     `json:"data"`
	Half      string     `json:"half"`
	Condition string     `json:"cond"`
	ID        string     `json:"id"`
	Prompt    string     `json:"prompt"`
	Gold      []string   `json:"gold,omitempty"`
	Registry  []string   `json:"registry,omitempty"` // the offered conditions' documents
	Ranked    []rankPair `json:"ranked"`
	Matches   []string   `json:"matches"`
	// Candidates are the same candidates with their features (--candidates).
	Candidates []relevance.Candidate `json:"cands,omitempty"`
}

type rankPair struct {
	Name  string `json:"n"`
	Score int64  `json:"s"`
}

type docRow struct {
	Data string             `json:"data"`
	Doc  relevance.Document `json:"doc"`
}

// writeRanks writes the documents (one JSON line each) and then, for every
// request and condition, the Candidates best by the full score.
func writeRanks(w io.Writer, vec *relevance.Vectors, cfg relevance.Config, tbDocs []relevance.Document, tbReqs []request, tauDocs []relevance.Document, tauReqs []request) error {
	return writeRanked(w, false, vec, cfg, tbDocs, tbReqs, tauDocs, tauReqs)
}

// writeCandidates is writeRanks with every candidate's features
// (relevance.Index.Candidates), for training a reranker offline
// (tools/bench/relevance-eval-rerank).
func writeCandidates(w io.Writer, vec *relevance.Vectors, cfg relevance.Config, tbDocs []relevance.Document, tbReqs []request, tauDocs []relevance.Document, tauReqs []request) error {
	return writeRanked(w, true, vec, cfg, tbDocs, tbReqs, tauDocs, tauReqs)
}

func writeRanked(w io.Writer, feats bool, vec *relevance.Vectors, cfg relevance.Config, tbDocs []relevance.Document, tbReqs []request, tauDocs []relevance.Document, tauReqs []request) error {
	enc := json.NewEncoder(w)
	for _, d := range tbDocs {
		if err := enc.Encode(docRow{"stabletoolbench", d}); err != nil {
			return err
		}
	}
	for _, d := range tauDocs {
		if err := enc.Encode(docRow{"tau-airline", d}); err != nil {
			return err
		}
	}
	emit := func(x *relevance.Index, data, cond string, r request, reg []relevance.Document) error {
		row := rankRow{Data: data, Half: map[bool]string{true: "dev", false: "test"}[r.dev], Condition: cond, ID: r.ID, Prompt: r.Prompt, Matches: names(x.Query(r.Prompt).Matches)}
		if cond != "offered-unserved" {
			row.Gold = uniq(r.Gold)
		}
		for _, d := range reg {
			row.Registry = append(row.Registry, d.Name)
		}
		for _, m := range x.Rank(r.Prompt, cfg.Candidates) {
			row.Ranked = append(row.Ranked, rankPair{m.Name, m.Score})
		}
		if feats {
			row.Candidates = x.Candidates(r.Prompt)
		}
		return enc.Encode(row)
	}
	xt, err := build(vec, cfg, tauDocs)
	if err != nil {
		return err
	}
	for _, r := range tauReqs {
		if err := emit(xt, "tau-airline", "served", r, nil); err != nil {
			return err
		}
	}
	x, err := build(vec, cfg, tbDocs)
	if err != nil {
		return err
	}
	sv, us := offered(tbDocs, tbReqs)
	for i, r := range tbReqs {
		if err := emit(x, "stabletoolbench", "served", r, nil); err != nil {
			return err
		}
		for _, c := range []struct {
			cond string
			docs []relevance.Document
		}{{"offered-served", sv[i]}, {"offered-unserved", us[i]}} {
			xo, err := build(vec, cfg, c.docs)
			if err != nil {
				return err
			}
			if err := emit(xo, "stabletoolbench", c.cond, r, c.docs); err != nil {
				return err
			}
		}
	}
	return nil
}
