// Command toolbench-discovery measures discovery on real words from
// outside, as a user would (issue 26): against a running `groundgate
// serve`, it registers one upstream whose tools are the StableToolBench
// APIs (PUT /v1/upstreams/{name}), syncs it with apply (POST
// /v1/upstreams/{name}/sync), discovers the prompt of every request (POST
// /v1/discover) and scores the tool matches against the request's gold
// APIs. It prints a short text table and a JSON summary on stdout.
//
//	toolbench-discovery --url http://HOST:PORT --queries FILE [--upstream NAME]
//	    [--concurrency N] [--json FILE] -- ARGV…
//
// ARGV is the upstream's stdio command (for example `mcp-testupstream
// --toolbench DIR`); --upstream-url URL gives a streamable HTTP upstream
// instead. The admin token is read from GROUNDGATE_ADMIN_TOKEN. FILE is
// stabletoolbench-queries.jsonl: one request a line, {"id", "set",
// "prompt", "candidates", "gold"}, gold and candidates naming APIs by their
// `name`, which mcp-testupstream serves as the tool of that name, so the
// gold API G is the capability NAME.G.
//
// Scores, per request, over the distinct tools the matches of kind `tool`
// name (a tool matched by several terms counts once): whether at least
// one gold API is matched (any), whether all are (all), recall over gold
// APIs (matched gold APIs / gold APIs, over all requests), the share of
// matched tools that are gold, and the number of tools matched (mean,
// median, share with none). The same again counting only the matches of
// one mode (exact, alias, tag, keyword, inversion), and per request set.
// Nothing here tunes discovery: it measures what the server answers.
//
// tools/bench/toolbench-discovery.sh builds and starts everything.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// Modes are the discovery modes, in cascade order (SPEC §4,
// docs/discovery.md); a mode the server answers that is not listed here
// is reported too.
var Modes = []string{"exact", "alias", "tag", "keyword", "inversion"}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "toolbench-discovery:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("toolbench-discovery", flag.ContinueOnError)
	base := fs.String("url", "", "the server's base `URL` (http://HOST:PORT)")
	queries := fs.String("queries", "", "stabletoolbench-queries.jsonl `file`")
	name := fs.String("upstream", "toolbench", "the upstream's `name`")
	upURL := fs.String("upstream-url", "", "a streamable HTTP upstream's `URL` instead of a stdio command")
	conc := fs.Int("concurrency", 4, "discoveries in flight (`n`); results do not depend on it")
	jsonOut := fs.String("json", "", "also write the JSON summary to `file`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg := Config{
		BaseURL:     strings.TrimRight(*base, "/"),
		Token:       os.Getenv("GROUNDGATE_ADMIN_TOKEN"),
		Upstream:    *name,
		Concurrency: *conc,
	}
	switch {
	case *upURL != "" && fs.NArg() > 0:
		return errors.New("give either --upstream-url or a command after --, not both")
	case *upURL != "":
		cfg.UpstreamConfig = map[string]any{"transport": "http", "url": *upURL}
	case fs.NArg() > 0:
		cfg.UpstreamConfig = map[string]any{"transport": "stdio", "command": fs.Args()}
	default:
		return errors.New("no upstream: give its stdio command after -- or --upstream-url")
	}
	if cfg.BaseURL == "" || *queries == "" {
		return errors.New("--url and --queries are required")
	}
	if cfg.Token == "" {
		return errors.New("GROUNDGATE_ADMIN_TOKEN is not set (PUT and sync need the admin token)")
	}
	reqs, err := ReadQueries(*queries)
	if err != nil {
		return err
	}
	cfg.Requests = reqs
	sum, err := Measure(ctx, &http.Client{Timeout: 10 * time.Minute}, cfg)
	if err != nil {
		return err
	}
	js, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return err
	}
	js = append(js, '\n')
	if *jsonOut != "" {
		if err := os.WriteFile(*jsonOut, js, 0o644); err != nil {
			return err
		}
	}
	if err := WriteTable(stdout, sum); err != nil {
		return err
	}
	_, err = stdout.Write(js)
	return err
}

// Request is one line of stabletoolbench-queries.jsonl.
type Request struct {
	ID         string   `json:"id"`
	Set        string   `json:"set"`
	Prompt     string   `json:"prompt"`
	Candidates []string `json:"candidates"`
	Gold       []string `json:"gold"`
}

// ReadQueries reads a queries file: one JSON request a line, each with a
// prompt and at least one gold API.
func ReadQueries(path string) ([]Request, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Request
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		var r Request
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, n, err)
		}
		if r.Prompt == "" || len(r.Gold) == 0 {
			return nil, fmt.Errorf("%s:%d: a request needs a prompt and gold APIs", path, n)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no requests", path)
	}
	return out, nil
}

// Config is one measurement.
type Config struct {
	BaseURL  string
	Token    string
	Upstream string
	// UpstreamConfig is the body of PUT /v1/upstreams/{Upstream}.
	UpstreamConfig map[string]any
	Requests       []Request
	Concurrency    int
}

// Summary is what a measurement reports.
type Summary struct {
	Upstream        string      `json:"upstream"`
	RegistryVersion uint64      `json:"registry_version"`
	Sync            SyncSummary `json:"sync"`
	// GoldNotEntries counts gold APIs (over requests, each request's
	// gold APIs counted once) that are no tool entry after the sync:
	// never served, held or refused. They count as missed.
	// RequestsGoldNotEntries counts the requests with such a gold API.
	GoldNotEntries         int `json:"gold_not_entries"`
	RequestsGoldNotEntries int `json:"requests_gold_not_entries"`
	// DiscoverErrors are requests the server refused to discover (each
	// counted as matching nothing), by id.
	DiscoverErrors map[string]string `json:"discover_errors"`
	// SyncSeconds is the wall time of the sync (apply included);
	// DiscoverSeconds that of all discoveries.
	SyncSeconds     float64 `json:"sync_seconds"`
	DiscoverSeconds float64 `json:"discover_seconds"`
	// OtherMatchesMean is the mean number of distinct entries of other
	// kinds (the built-in catalog) a request matches.
	OtherMatchesMean float64 `json:"other_matches_mean"`
	// All is every tool match; ByMode the matches of one mode; BySet the
	// requests of one set.
	All    Scores            `json:"all"`
	ByMode map[string]Scores `json:"by_mode"`
	BySet  map[string]Scores `json:"by_set"`
}

// SyncSummary is the applied sync plan, counted.
type SyncSummary struct {
	Listed  int            `json:"listed"`
	Changes map[string]int `json:"changes"`
	// Added counts tools applied as new entries; HeldByScreen those the
	// poisoning screen held; RefusedAsEntries those that cannot be
	// entries (Held without findings).
	Added            int `json:"added"`
	HeldByScreen     int `json:"held_by_screen"`
	RefusedAsEntries int `json:"refused_as_entries"`
	// ScreenRules counts the tools the screen held by the rules of their
	// findings (a tool flagged by two rules counts under each).
	ScreenRules map[string]int `json:"screen_rules"`
	// Held lists every held or refused tool and why.
	Held []HeldTool `json:"held"`
}

// HeldTool is one tool a sync did not apply.
type HeldTool struct {
	Tool     string    `json:"tool"`
	Reason   string    `json:"reason"`
	Findings []Finding `json:"findings,omitempty"`
}

// Finding is one of the poisoning screen's findings, as the plan gives it.
type Finding struct {
	Field   string `json:"field"`
	Rule    string `json:"rule"`
	Why     string `json:"why"`
	Excerpt string `json:"excerpt"`
}

// Scores are the scores of a set of requests.
type Scores struct {
	Requests int `json:"requests"`
	GoldAPIs int `json:"gold_apis"`
	// AnyGold and AllGold are shares of requests.
	AnyGold float64 `json:"any_gold_matched"`
	AllGold float64 `json:"all_gold_matched"`
	// Recall is matched gold APIs over gold APIs.
	Recall float64 `json:"gold_recall"`
	// GoldShare is matched gold APIs over matched tools (0 when none).
	GoldShare float64 `json:"gold_share_of_matches"`
	// Matches is the distinct tools matched per request.
	MatchesMean   float64 `json:"matches_mean"`
	MatchesMedian float64 `json:"matches_median"`
	MatchesMax    int     `json:"matches_max"`
	ZeroMatches   float64 `json:"zero_matches"`
}

// planItem and plan are the body of a sync's answer (SPEC §14).
type planItem struct {
	Tool     string    `json:"tool"`
	Change   string    `json:"change"`
	Findings []Finding `json:"findings"`
	Held     string    `json:"held"`
}

type plan struct {
	Plan    []planItem `json:"plan"`
	Applied bool       `json:"applied"`
	Version uint64     `json:"version"`
}

// discoverResult is the part of POST /v1/discover's answer scored here.
type discoverResult struct {
	Version uint64 `json:"version"`
	Matches []struct {
		Name string `json:"name"`
		Kind string `json:"kind"`
		Mode string `json:"mode"`
	} `json:"matches"`
}

// Outcome is what one request discovered: the distinct tools matched, all
// and by mode, and how many entries of other kinds.
type Outcome struct {
	Tools  map[string]bool
	ByMode map[string]map[string]bool
	Other  int
	Err    string
}

// Measure registers and syncs the upstream, discovers every request and
// scores the answers.
func Measure(ctx context.Context, hc *http.Client, cfg Config) (*Summary, error) {
	if cfg.Concurrency < 1 {
		cfg.Concurrency = 1
	}
	c := client{hc: hc, base: cfg.BaseURL, token: cfg.Token}
	up := url.PathEscape(cfg.Upstream)
	if _, err := c.do(ctx, http.MethodPut, "/v1/upstreams/"+up, cfg.UpstreamConfig, nil); err != nil {
		return nil, fmt.Errorf("register the upstream: %w", err)
	}
	var p plan
	syncStart := time.Now()
	if _, err := c.do(ctx, http.MethodPost, "/v1/upstreams/"+up+"/sync", map[string]any{"apply": true}, &p); err != nil {
		return nil, fmt.Errorf("sync: %w", err)
	}
	if !p.Applied {
		return nil, errors.New("sync: the plan was not applied")
	}
	sum := &Summary{Upstream: cfg.Upstream, RegistryVersion: p.Version, Sync: summarizePlan(p),
		SyncSeconds: round(time.Since(syncStart).Seconds()), DiscoverErrors: map[string]string{}}
	entries := map[string]bool{} // tool names that are entries after the sync
	for _, it := range p.Plan {
		if it.Held == "" && it.Change != "removed" {
			entries[cfg.Upstream+"."+it.Tool] = true
		}
	}

	outs := make([]Outcome, len(cfg.Requests))
	start := time.Now()
	var (
		wg    sync.WaitGroup
		next  = make(chan int)
		errMu sync.Mutex
		fatal error
	)
	for range cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				o, err := c.discover(ctx, cfg.Requests[i].Prompt)
				if err != nil {
					var he *httpError
					if !errors.As(err, &he) || he.status >= 500 {
						errMu.Lock()
						fatal = errors.Join(fatal, fmt.Errorf("discover %s: %w", cfg.Requests[i].ID, err))
						errMu.Unlock()
					}
					o.Err = err.Error()
				}
				outs[i] = o
			}
		}()
	}
	for i := range cfg.Requests {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(fatal, ctx.Err()); err != nil {
		return nil, err
	}
	sum.DiscoverSeconds = round(time.Since(start).Seconds())
	for i, o := range outs {
		if o.Err != "" {
			sum.DiscoverErrors[cfg.Requests[i].ID] = o.Err
		}
	}
	for _, r := range cfg.Requests {
		missing := 0
		for _, g := range distinct(r.Gold) {
			if !entries[cfg.Upstream+"."+g] {
				missing++
			}
		}
		sum.GoldNotEntries += missing
		if missing > 0 {
			sum.RequestsGoldNotEntries++
		}
	}
	score(sum, cfg.Upstream, cfg.Requests, outs)
	return sum, nil
}

func summarizePlan(p plan) SyncSummary {
	s := SyncSummary{Listed: 0, Changes: map[string]int{}, ScreenRules: map[string]int{}, Held: []HeldTool{}}
	for _, it := range p.Plan {
		if it.Change != "removed" {
			s.Listed++
		}
		s.Changes[it.Change]++
		switch {
		case it.Held != "" && len(it.Findings) > 0:
			s.HeldByScreen++
			rules := map[string]bool{}
			for _, f := range it.Findings {
				rules[f.Rule] = true
			}
			for r := range rules {
				s.ScreenRules[r]++
			}
			s.Held = append(s.Held, HeldTool{Tool: it.Tool, Reason: it.Held, Findings: it.Findings})
		case it.Held != "":
			s.RefusedAsEntries++
			s.Held = append(s.Held, HeldTool{Tool: it.Tool, Reason: it.Held})
		case it.Change == "added":
			s.Added++
		}
	}
	return s
}

// score fills sum's scores from the outcomes of reqs (in the same order).
func score(sum *Summary, upstream string, reqs []Request, outs []Outcome) {
	pick := func(o Outcome, mode string) map[string]bool {
		if mode == "" {
			return o.Tools
		}
		return o.ByMode[mode]
	}
	all := make([]int, len(reqs))
	for i := range reqs {
		all[i] = i
	}
	sum.All = scores(upstream, reqs, outs, all, func(o Outcome) map[string]bool { return pick(o, "") })
	modes := slices.Clone(Modes)
	for _, o := range outs {
		for m := range o.ByMode {
			if !slices.Contains(modes, m) {
				modes = append(modes, m)
			}
		}
	}
	sum.ByMode = map[string]Scores{}
	for _, m := range modes {
		sum.ByMode[m] = scores(upstream, reqs, outs, all, func(o Outcome) map[string]bool { return pick(o, m) })
	}
	sets := map[string][]int{}
	for i, r := range reqs {
		sets[r.Set] = append(sets[r.Set], i)
	}
	sum.BySet = map[string]Scores{}
	for s, idx := range sets {
		sum.BySet[s] = scores(upstream, reqs, outs, idx, func(o Outcome) map[string]bool { return pick(o, "") })
	}
	other := 0
	for _, o := range outs {
		other += o.Other
	}
	sum.OtherMatchesMean = ratio(other, len(outs))
}

// scores scores the requests idx, the tools of each request's outcome
// being tools(outcome).
func scores(upstream string, reqs []Request, outs []Outcome, idx []int, tools func(Outcome) map[string]bool) Scores {
	s := Scores{Requests: len(idx)}
	var anyN, allN, goldHit, matched, zero int
	counts := make([]int, 0, len(idx))
	for _, i := range idx {
		got := tools(outs[i])
		gold := map[string]bool{}
		for _, g := range distinct(reqs[i].Gold) {
			gold[upstream+"."+g] = true
		}
		hit := 0
		for g := range gold {
			if got[g] {
				hit++
			}
		}
		s.GoldAPIs += len(gold)
		goldHit += hit
		if hit > 0 {
			anyN++
		}
		if hit == len(gold) {
			allN++
		}
		matched += len(got)
		if len(got) == 0 {
			zero++
		}
		s.MatchesMax = max(s.MatchesMax, len(got))
		counts = append(counts, len(got))
	}
	s.AnyGold = ratio(anyN, len(idx))
	s.AllGold = ratio(allN, len(idx))
	s.Recall = ratio(goldHit, s.GoldAPIs)
	s.GoldShare = ratio(goldHit, matched)
	s.MatchesMean = ratio(matched, len(idx))
	s.MatchesMedian = median(counts)
	s.ZeroMatches = ratio(zero, len(idx))
	return s
}

// distinct is xs without repetitions (a few requests list a gold API
// twice), in first-seen order.
func distinct(xs []string) []string {
	var out []string
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return round(float64(a) / float64(b))
}

// round keeps four decimals, so that the summary reads the same on every
// machine.
func round(x float64) float64 {
	return float64(int64(x*10000+0.5)) / 10000
}

func median(xs []int) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return float64(s[n/2])
	}
	return float64(s[n/2-1]+s[n/2]) / 2
}

// WriteTable writes the summary's short text table.
func WriteTable(w io.Writer, s *Summary) error {
	sy := s.Sync
	fmt.Fprintf(w, "sync: %d tools listed, %d added, %d held by the poisoning screen, %d refused as entries (registry version %d)\n",
		sy.Listed, sy.Added, sy.HeldByScreen, sy.RefusedAsEntries, s.RegistryVersion)
	for _, r := range sortedKeys(sy.ScreenRules) {
		fmt.Fprintf(w, "  held by screen rule %s: %d tools\n", r, sy.ScreenRules[r])
	}
	for _, h := range sy.Held {
		if len(h.Findings) == 0 {
			fmt.Fprintf(w, "  refused %s: %s\n", h.Tool, h.Reason)
		}
	}
	fmt.Fprintf(w, "discover: %d requests in %.1f s (sync %.1f s), %d refused; %d gold APIs (of %d) in %d requests are no entry; other-kind matches %.2f a request\n\n",
		s.All.Requests, s.DiscoverSeconds, s.SyncSeconds, len(s.DiscoverErrors), s.GoldNotEntries, s.All.GoldAPIs,
		s.RequestsGoldNotEntries, s.OtherMatchesMean)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "matches\trequests\tany gold\tall gold\tgold recall\tgold share\tmean tools\tmedian\tmax\tzero\t")
	row := func(label string, sc Scores) {
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.2f\t%g\t%d\t%.3f\t\n", label, sc.Requests,
			sc.AnyGold, sc.AllGold, sc.Recall, sc.GoldShare, sc.MatchesMean, sc.MatchesMedian, sc.MatchesMax, sc.ZeroMatches)
	}
	row("all", s.All)
	for _, m := range sortedModes(s.ByMode) {
		row("mode "+m, s.ByMode[m])
	}
	for _, set := range sortedKeys(s.BySet) {
		row("set "+set, s.BySet[set])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w)
	return err
}

func sortedModes(m map[string]Scores) []string {
	out := slices.Clone(Modes)
	for _, k := range sortedKeys(m) {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return slices.DeleteFunc(out, func(k string) bool { _, ok := m[k]; return !ok })
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// client speaks to the server's REST API.
type client struct {
	hc    *http.Client
	base  string
	token string
}

// httpError is an answer other than 2xx.
type httpError struct {
	status int
	body   string
}

func (e *httpError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.status, e.body) }

func (c client) do(ctx context.Context, method, path string, body, out any) (int, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, &httpError{status: resp.StatusCode, body: strings.TrimSpace(string(raw))}
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: %v", method, path, err)
		}
	}
	return resp.StatusCode, nil
}

// discover discovers a prompt: the distinct tools it matches, all and by
// mode.
func (c client) discover(ctx context.Context, prompt string) (Outcome, error) {
	o := Outcome{Tools: map[string]bool{}, ByMode: map[string]map[string]bool{}}
	var res discoverResult
	if _, err := c.do(ctx, http.MethodPost, "/v1/discover", map[string]string{"prompt": prompt}, &res); err != nil {
		return o, err
	}
	other := map[string]bool{}
	for _, m := range res.Matches {
		if m.Kind != "tool" {
			other[m.Name] = true
			continue
		}
		o.Tools[m.Name] = true
		if o.ByMode[m.Mode] == nil {
			o.ByMode[m.Mode] = map[string]bool{}
		}
		o.ByMode[m.Mode][m.Name] = true
	}
	o.Other = len(other)
	return o, nil
}
