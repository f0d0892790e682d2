package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/gateway"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
)

// The cascade as the server runs it: each data set's tools registered as
// the tools of one upstream (gateway.ToolEntry, as a sync makes them) in a
// real registry, and every request discovered by package discover. Two
// rows: "cascade, named tiers" (exact, alias, tag, keyword and inversion
// matches: the cascade before the relevance tier) and "cascade + relevance"
// (every match). A match counts for a tool when it names the tool's entry.

// rawTool is one tool of a data set as its file lists it.
type rawTool struct {
	Name, Title, Description string
	Schema                   json.RawMessage
}

// cascadeTools reads the tools of StableToolBench's or τ-bench's file.
func cascadeTools(path string, tau bool) ([]rawTool, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var items []struct {
		Name        string          `json:"name"`
		Tool        string          `json:"tool"`
		API         string          `json:"api"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := make([]rawTool, len(items))
	for i, it := range items {
		t := rawTool{Name: it.Name, Description: it.Description, Schema: it.Parameters}
		if !tau { // as gateway/upstreamtest/toolbench.go serves them
			t.Title = it.Tool + ": " + it.API
		}
		out[i] = t
	}
	return out, nil
}

// cascade is a discoverer over one data set's tools.
type cascade struct {
	d    *discover.Discoverer
	s    *registry.Store
	pref string
}

func openCascade(ctx context.Context, dir, upstream string, tools []rawTool) (*cascade, error) {
	es := make([]registry.Entry, 0, len(tools))
	for _, t := range tools {
		schema := []byte(`{"type":"object"}`)
		if len(t.Schema) > 0 && string(t.Schema) != "null" {
			schema = t.Schema
		}
		canon, err := hashing.CanonicalizeJSON(schema)
		if err != nil {
			return nil, fmt.Errorf("%s: schema: %w", t.Name, err)
		}
		e, err := gateway.ToolEntry(upstream, gateway.PinSchema, gateway.ServerInfo{}, gateway.LiveTool{
			Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: canon,
		})
		if err != nil {
			return nil, err
		}
		es = append(es, e)
	}
	s, err := registry.Open(ctx, filepath.Join(dir, upstream+".db"), registry.Options{})
	if err != nil {
		return nil, err
	}
	if _, err := s.Seed(ctx, es); err != nil {
		s.Close()
		return nil, err
	}
	d, err := discover.New(ctx, s, s.DB(), discover.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		s.Close()
		return nil, err
	}
	if err := d.Sync(ctx); err != nil {
		d.Close()
		s.Close()
		return nil, err
	}
	return &cascade{d: d, s: s, pref: upstream + "."}, nil
}

func (c *cascade) Close() {
	c.d.Close()
	c.s.Close()
}

// probe discovers prompt and returns the tools matched by the named tiers
// and by every tier.
func (c *cascade) probe(ctx context.Context, prompt string) (named, all []string, err error) {
	r, err := c.d.Probe(ctx, discover.Query{Prompt: prompt})
	if err != nil {
		return nil, nil, err
	}
	for _, m := range r.Matches {
		n, ok := strings.CutPrefix(m.Name, c.pref)
		if !ok {
			continue
		}
		if m.Mode != discover.ModeRelevance {
			named = appendNew(named, n)
		}
		all = appendNew(all, n)
	}
	return named, all, nil
}

func appendNew(xs []string, x string) []string {
	for _, y := range xs {
		if y == x {
			return xs
		}
	}
	return append(xs, x)
}

// cascadeRows measures both rows on reqs.
func cascadeRows(ctx context.Context, c *cascade, data, half string, reqs []request) ([]Row, error) {
	var named, all Stats
	for _, r := range reqs {
		n, a, err := c.probe(ctx, r.Prompt)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", data, r.ID, err)
		}
		named.add(r.Gold, n)
		all.add(r.Gold, a)
	}
	named.finish()
	all.finish()
	return []Row{{data, half, "cascade, named tiers", named}, {data, half, "cascade + relevance", all}}, nil
}
