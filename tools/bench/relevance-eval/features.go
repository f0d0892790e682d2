package main

import (
	"encoding/json"
	"io"

	"github.com/groundgate/groundgate/discover/relevance"
)

// featureRow is one request under one condition, for calibrating the
// decision rule offline: what the rule reads (relevance.Explanation) and
// what it would match with its abstention off.
type featureRow struct {
	Data      string                `json:"data"`
	Half      string                `json:"half"`
	Condition string                `json:"cond"` // served, gold-removed, tools-removed
	ID        string                `json:"id"`
	Gold      []string              `json:"gold,omitempty"`
	Matches   []string              `json:"matches"`
	Explain   relevance.Explanation `json:"x"`
}

// writeFeatures writes one JSON line per request and condition: served
// (StableToolBench and τ-bench) and, for StableToolBench, the two unserved
// conditions of unserved().
func writeFeatures(w io.Writer, vec *relevance.Vectors, cfg relevance.Config, tbDocs []relevance.Document, tbReqs []request, tauDocs []relevance.Document, tauReqs []request) error {
	cfg.GateRank, cfg.GateMilli = 0, 0
	enc := json.NewEncoder(w)
	half := func(r request) string {
		if r.dev {
			return "dev"
		}
		return "test"
	}
	emit := func(x *relevance.Index, data, cond string, r request) error {
		row := featureRow{Data: data, Half: half(r), Condition: cond, ID: r.ID, Matches: names(x.Query(r.Prompt).Matches), Explain: x.Explain(r.Prompt)}
		if cond == "served" || cond == "offered-served" {
			row.Gold = uniq(r.Gold)
		}
		return enc.Encode(row)
	}
	xt, err := build(vec, cfg, tauDocs)
	if err != nil {
		return err
	}
	for _, r := range tauReqs {
		if err := emit(xt, "tau-airline", "served", r); err != nil {
			return err
		}
	}
	x, err := build(vec, cfg, tbDocs)
	if err != nil {
		return err
	}
	byName := docsByName(tbDocs)
	siblings := apisOfTools(tbDocs)
	// The offered conditions: a registry of a few upstreams per request
	// (offered), and τ-bench's airline tools for every StableToolBench
	// request (another domain: unserved).
	sv, us := offered(tbDocs, tbReqs)
	for i, r := range tbReqs {
		for _, c := range []struct {
			cond string
			docs []relevance.Document
		}{{"offered-served", sv[i]}, {"offered-unserved", us[i]}, {"airline-unserved", tauDocs}} {
			xo, err := build(vec, cfg, c.docs)
			if err != nil {
				return err
			}
			if err := emit(xo, "stabletoolbench", c.cond, r); err != nil {
				return err
			}
		}
	}
	for _, r := range tbReqs {
		if err := emit(x, "stabletoolbench", "served", r); err != nil {
			return err
		}
		gold := uniq(r.Gold)
		without(x, byName, gold, func() {
			if err = emit(x, "stabletoolbench", "gold-removed", r); err == nil {
				without(x, byName, siblings(gold), func() { err = emit(x, "stabletoolbench", "tools-removed", r) })
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}
