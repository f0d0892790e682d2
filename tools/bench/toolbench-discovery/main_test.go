package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/gateway/upstreamtest"
	"github.com/groundgate/groundgate/internal/app"
	"github.com/groundgate/groundgate/internal/app/apptest"
)

// fixtureTools is the repository's small StableToolBench fixture: three
// APIs, served as in tools/bench/toolbench-discovery.sh.
const fixtureTools = "../../../gateway/upstreamtest/testdata/toolbench"

// TestPipelineOnFixture runs what tools/bench/toolbench-discovery.sh runs,
// in-process, on the fixture: the wired server (app.Open) with an admin
// token, mcp-testupstream built and registered as a stdio upstream (one of
// its tools poisoned, so the screen holds it), a sync with apply, and a
// discovery per request of testdata/stabletoolbench-queries.jsonl, scored.
func TestPipelineOnFixture(t *testing.T) {
	const token = "toolbench-test-token"
	m, _ := apptest.Serve(t, app.Config{AdminToken: token})
	bin := upstreamtest.Build(t)
	t.Setenv("GROUNDGATE_ADMIN_TOKEN", token)
	jsonOut := filepath.Join(t.TempDir(), "summary.json")
	var out bytes.Buffer
	err := run(context.Background(), []string{
		"--url", "http://" + m.Addr(), "--queries", "testdata/stabletoolbench-queries.jsonl",
		"--upstream", "bench", "--json", jsonOut,
		"--", bin, "--toolbench", fixtureTools, "--poison", "Book_Shelf__Search",
	}, &out)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	t.Logf("\n%s", out.String())
	raw, err := os.ReadFile(jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(out.Bytes(), raw) {
		t.Error("stdout does not end with the JSON summary written to --json")
	}
	var s Summary
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}

	sy := s.Sync
	if sy.Listed != 3 || sy.Added != 2 || sy.HeldByScreen != 1 || sy.RefusedAsEntries != 0 || sy.Changes["added"] != 3 {
		t.Errorf("sync = %+v, want 3 listed, 2 added, 1 held by the screen", sy)
	}
	if len(sy.Held) != 1 || sy.Held[0].Tool != "Book_Shelf__Search" || len(sy.Held[0].Findings) == 0 || sy.ScreenRules["instruction"] != 1 {
		t.Errorf("held = %+v, rules %v; want Book_Shelf__Search held for an instruction", sy.Held, sy.ScreenRules)
	}
	if s.RegistryVersion < 2 || s.Upstream != "bench" {
		t.Errorf("upstream %q at registry version %d", s.Upstream, s.RegistryVersion)
	}
	// fixture-3's Book_Shelf__Search was held; fixture-4 lists its gold twice.
	if s.GoldNotEntries != 1 || s.RequestsGoldNotEntries != 1 || len(s.DiscoverErrors) != 0 {
		t.Errorf("gold not entries %d in %d requests, errors %v; want 1 in 1, none", s.GoldNotEntries, s.RequestsGoldNotEntries, s.DiscoverErrors)
	}
	a := s.All
	if a.Requests != 4 || a.GoldAPIs != 6 {
		t.Errorf("all: %d requests, %d gold APIs; want 4 and 6", a.Requests, a.GoldAPIs)
	}
	// The pipeline must see tool matches at all: fixture-1 quotes the
	// head of its gold API's description, which the keyword tier finds.
	if a.AnyGold == 0 || a.MatchesMean == 0 || a.ZeroMatches == 1 || s.ByMode["keyword"].AnyGold == 0 {
		t.Errorf("no gold tool matched: %+v (is the match kind still \"tool\"?)", a)
	}
	for _, mode := range Modes {
		b, ok := s.ByMode[mode]
		if !ok {
			t.Errorf("mode %s missing from by_mode", mode)
			continue
		}
		if b.Requests != a.Requests || b.GoldAPIs != a.GoldAPIs || b.Recall > a.Recall || b.MatchesMean > a.MatchesMean ||
			b.AnyGold > a.AnyGold || b.ZeroMatches < a.ZeroMatches {
			t.Errorf("mode %s scores %+v exceed all %+v", mode, b, a)
		}
	}
	if g1, g2 := s.BySet["G1_instruction"], s.BySet["G2_category"]; g1.Requests != 2 || g2.Requests != 2 || g1.GoldAPIs+g2.GoldAPIs != a.GoldAPIs {
		t.Errorf("by set: %+v", s.BySet)
	}
	for _, want := range []string{"sync: 3 tools listed, 2 added, 1 held", "mode keyword", "set G2_category"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table lacks %q", want)
		}
	}
}

// TestScore pins the arithmetic on outcomes made by hand.
func TestScore(t *testing.T) {
	reqs := []Request{
		{ID: "a", Set: "s1", Gold: []string{"x", "y"}},
		{ID: "b", Set: "s1", Gold: []string{"z", "z"}}, // a gold API listed twice counts once
		{ID: "c", Set: "s2", Gold: []string{"x"}},
		{ID: "d", Set: "s2", Gold: []string{"y"}},
	}
	set := func(names ...string) map[string]bool {
		m := map[string]bool{}
		for _, n := range names {
			m["u."+n] = true
		}
		return m
	}
	outs := []Outcome{
		// a: x by keyword and by tag (counted once), y missed, w extra.
		{Tools: set("x", "w"), ByMode: map[string]map[string]bool{"keyword": set("x", "w"), "tag": set("x")}},
		// b: z found by alias, plus two extras.
		{Tools: set("z", "p", "q"), ByMode: map[string]map[string]bool{"alias": set("z"), "keyword": set("p", "q")}, Other: 2},
		// c: nothing.
		{Tools: set(), ByMode: map[string]map[string]bool{}},
		// d: an extra only.
		{Tools: set("x"), ByMode: map[string]map[string]bool{"keyword": set("x")}},
	}
	var s Summary
	score(&s, "u", reqs, outs)
	want := Scores{Requests: 4, GoldAPIs: 5, AnyGold: 0.5, AllGold: 0.25, Recall: 0.4, GoldShare: round(2.0 / 6),
		MatchesMean: 1.5, MatchesMedian: 1.5, MatchesMax: 3, ZeroMatches: 0.25}
	if s.All != want {
		t.Errorf("all = %+v\nwant  %+v", s.All, want)
	}
	kw := Scores{Requests: 4, GoldAPIs: 5, AnyGold: 0.25, AllGold: 0, Recall: 0.2, GoldShare: 0.2,
		MatchesMean: 1.25, MatchesMedian: 1.5, MatchesMax: 2, ZeroMatches: 0.25}
	if s.ByMode["keyword"] != kw {
		t.Errorf("keyword = %+v\nwant      %+v", s.ByMode["keyword"], kw)
	}
	if e := s.ByMode["exact"]; e.ZeroMatches != 1 || e.MatchesMean != 0 || e.Recall != 0 {
		t.Errorf("exact = %+v, want nothing matched", e)
	}
	if s1 := s.BySet["s1"]; s1.Requests != 2 || s1.GoldAPIs != 3 || s1.AllGold != 0.5 || s1.Recall != round(2.0/3) {
		t.Errorf("s1 = %+v", s1)
	}
	if s.OtherMatchesMean != 0.5 {
		t.Errorf("other = %v, want 0.5", s.OtherMatchesMean)
	}
}
