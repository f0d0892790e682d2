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
// the tools of upstreams (gateway.ToolEntry, as a sync makes them) in a
// real registry: StableToolBench's APIs of one RapidAPI tool as the tools
// of one upstream each (one MCP server a provider), τ-bench's as one, and every request discovered by package discover. Two
// rows: "cascade, named tiers" (exact, alias, tag, keyword and inversion
// matches: the cascade before the relevance tier) and "cascade + relevance"
// (every match). A match counts for a tool when it names the tool's entry.

// rawTool is one tool of a data set as its file lists it.
type rawTool struct {
	Name, Title, Description string
	Schema                   json.RawMessage
	Upstream                 string
	Group                    string // StableToolBench: the RapidAPI tool
}

// cascadeTools reads the tools of StableToolBench's or τ-bench's file: the
// one reader of both, for the scorer's rows (documents) and the cascade's.
func cascadeTools(path string, tau bool) ([]rawTool, error) {
	ups := map[string]string{} // RapidAPI tool → upstream name
	taken := map[string]bool{}
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
		t := rawTool{Name: it.Name, Description: it.Description, Schema: it.Parameters, Upstream: "airline"}
		if !tau { // as gateway/upstreamtest/toolbench.go serves them
			t.Title = it.Tool + ": " + it.API
			u, ok := ups[it.Tool]
			if !ok {
				u = upstreamName(it.Tool, taken)
				ups[it.Tool], taken[u] = u, true
			}
			t.Upstream, t.Group = u, it.Tool
		}
		out[i] = t
	}
	return out, nil
}

// upstreamName is a valid upstream name (registry.UpstreamNameRE) for a
// RapidAPI tool, not in taken.
func upstreamName(tool string, taken map[string]bool) string {
	b := []byte(strings.ToLower(tool))
	for i, c := range b {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	base := "u" + string(b)
	base = base[:min(len(base), 28)]
	name := base
	for i := 2; taken[name]; i++ {
		name = fmt.Sprintf("%s%d", base, i)
	}
	return name
}

// cascade is a discoverer over one data set's tools.
type cascade struct {
	d *discover.Discoverer
	s *registry.Store
}

func openCascade(ctx context.Context, dir, file string, tools []rawTool) (*cascade, error) {
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
		e, err := gateway.ToolEntry(t.Upstream, gateway.PinSchema, gateway.ServerInfo{}, gateway.LiveTool{
			Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: canon,
		})
		if err != nil {
			return nil, err
		}
		es = append(es, e)
	}
	s, err := registry.Open(ctx, filepath.Join(dir, file+".db"), registry.Options{})
	if err != nil {
		return nil, err
	}
	if _, err := s.Seed(ctx, es); err != nil {
		s.Close()
		return nil, err
	}
	d, err := discover.New(ctx, s, s.Engine(), discover.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		s.Close()
		return nil, err
	}
	if err := d.Sync(ctx); err != nil {
		d.Close()
		s.Close()
		return nil, err
	}
	return &cascade{d: d, s: s}, nil
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
		_, n, ok := strings.Cut(m.Name, ".")
		if !ok || m.Kind != registry.KindTool {
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
