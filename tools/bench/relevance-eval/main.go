// Command relevance-eval measures the relevance scorer (package
// discover/relevance, issue 27) on the development data in
// ../shared/data, in-process, and prints a table and a JSON summary.
//
//	relevance-eval [--data DIR] [--json FILE] [--set dev|test|all] [--sweep] [--config JSON] [--features FILE] [--ranks FILE] [--candidates FILE]
//
// DIR holds tool-discovery/ and tau-airline/ (default
// $GROUNDGATE_SHARED/data, else ../shared/data beside the repository).
//
// Every data set is split by the SHA-256 of each request's text: an even
// first byte is dev (what the constants were calibrated on), odd is test.
// The figures are reported for each half apart; --set picks one.
//
// StableToolBench: the registry is the 2,479 APIs, one document each, named
// as the gateway names their tools (the API's `name`; title "tool: api",
// the description, the parameters' names and descriptions); a request's
// gold is its `gold` APIs. τ-bench airline: the registry is the 14 tools
// of tools.json, the requests the 50 task instructions, the gold the write
// tools (README) the task's gold actions call; tasks that write nothing
// are left out. Unserved: each StableToolBench request against the
// registry without its gold APIs ("gold removed"), and without every API
// of the tools its gold APIs belong to ("gold tools removed"): the share
// that matches nothing. Offered (offered.go): each StableToolBench
// request against the APIs offered with it and with three other requests
// ("offered"), the others' alone ("offered unserved") and τ-bench's
// airline tools ("airline tools"): a request arriving with a few
// upstreams' tools rather than a marketplace's.
//
// Columns: any = share of requests with at least one gold matched; all =
// share with every gold matched (the "recall" of a request); gold recall
// = matched gold / gold; mean and zero = matches per request and the
// share with none. Methods: "relevance" is the scorer with its decision
// rule; "bm25f top-k" its lexical part alone, the k best, no rule;
// "full top-k" its full score, the k best, no rule; "bleve bm25 top-k"
// bleve's own BM25 scoring of one text field holding all of a document's
// words (standard analyser, names split at underscores), the k best.
//
// Two more rows run the cascade as the server does: each data set's tools
// registered as the tools of upstreams (gateway.ToolEntry; StableToolBench:
// one upstream a RapidAPI tool, τ-bench: one) in a real registry, every
// request discovered by package discover. "cascade, named tiers" counts the exact, alias, tag, keyword and inversion matches (the
// cascade before the relevance tier), "cascade + relevance" every match.
//
// --features writes what the decision rule reads of every request under
// every condition (relevance.Index.Explain, and the rule's matches with
// the gate off), one JSON line each, for calibrating the rule offline.
// --ranks writes every document and, for every request under the served
// and offered conditions, the candidates by the full score with their
// scores, one JSON line each, for measuring another ranking offline
// (tools/bench/encoder-spike.sh). --candidates writes the same with every
// candidate's features (relevance.Index.Candidates), for training a
// reranker offline (tools/bench/relevance-eval-rerank.sh).
// --quick prints the relevance rule's rows and the top-5 baselines only (for
// calibration with --config). --sweep prints, for the dev half of StableToolBench, the figures of a
// grid of thresholds and margins (what calibrated them).
package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/standard"
	"github.com/blevesearch/bleve/v2/mapping"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/discover/relevance"
	"github.com/groundgate/groundgate/wordvec"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "relevance-eval:", err)
		os.Exit(1)
	}
}

type request struct {
	ID     string   `json:"id"`
	Set    string   `json:"set"`
	Prompt string   `json:"prompt"`
	Gold   []string `json:"gold"`
	// Candidates are the APIs offered with the request
	// (StableToolBench), its gold among them.
	Candidates []string `json:"candidates"`
	dev        bool
}

// Stats are one method's figures on one half of one data set.
type Stats struct {
	Requests   int     `json:"requests"`
	AnyGold    float64 `json:"any_gold"`
	AllGold    float64 `json:"all_gold"`
	GoldRecall float64 `json:"gold_recall"`
	Mean       float64 `json:"mean_matches"`
	Zero       float64 `json:"zero_matches"`

	any, all, gold, found, matches, zero int
}

func (s *Stats) add(gold []string, got []string) {
	s.Requests++
	s.matches += len(got)
	if len(got) == 0 {
		s.zero++
	}
	g := uniq(gold)
	n := 0
	for _, x := range g {
		if slices.Contains(got, x) {
			n++
		}
	}
	s.gold += len(g)
	s.found += n
	if n > 0 {
		s.any++
	}
	if n == len(g) && len(g) > 0 {
		s.all++
	}
}

func (s *Stats) finish() {
	if s.Requests == 0 {
		return
	}
	r := float64(s.Requests)
	s.AnyGold = round3(float64(s.any) / r)
	s.AllGold = round3(float64(s.all) / r)
	if s.gold > 0 {
		s.GoldRecall = round3(float64(s.found) / float64(s.gold))
	}
	s.Mean = round3(float64(s.matches) / r)
	s.Zero = round3(float64(s.zero) / r)
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

func uniq(xs []string) []string {
	out := slices.Clone(xs)
	slices.Sort(out)
	return slices.Compact(out)
}

func isDev(text string) bool {
	h := sha256.Sum256([]byte(text))
	return h[0]%2 == 0
}

// Row is one line of the table.
type Row struct {
	Data   string `json:"data"`
	Half   string `json:"half"`
	Method string `json:"method"`
	Stats
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("relevance-eval", flag.ContinueOnError)
	data := fs.String("data", "", "data `dir` (default $GROUNDGATE_SHARED/data or ../shared/data)")
	jsonOut := fs.String("json", "", "also write the JSON summary to `file`")
	set := fs.String("set", "all", "dev, test or all")
	sweep := fs.Bool("sweep", false, "print the calibration grid on StableToolBench dev")
	parts := fs.Bool("parts", false, "print rules that read the prompt's sentences beside the decision rule, on every condition")
	quick := fs.Bool("quick", false, "the relevance rows only (no baselines, no JSON)")
	features := fs.String("features", "", "write what the decision rule reads of every request to `file` (JSON lines) and exit")
	ranks := fs.String("ranks", "", "write the documents and every request's candidates by the full score to `file` (JSON lines) and exit")
	cands := fs.String("candidates", "", "as --ranks, with every candidate's features (relevance.Index.Candidates), for tools/bench/relevance-eval-rerank")
	override := fs.String("config", "", "JSON `object` overriding constants of relevance.DefaultConfig (for calibration on dev); the scorer's rows only: the cascade rows run package discover, which always uses the default")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *data == "" {
		if s := os.Getenv("GROUNDGATE_SHARED"); s != "" {
			*data = filepath.Join(s, "data")
		} else {
			*data = filepath.Join("..", "shared", "data")
		}
	}
	halves := map[string][]bool{"dev": {true}, "test": {false}, "all": {true, false}}[*set]
	if halves == nil {
		return fmt.Errorf("--set %q: want dev, test or all", *set)
	}
	t, err := wordvec.Load()
	if err != nil {
		return err
	}
	vec := relevance.NewVectors(t)
	cfg := relevance.DefaultConfig()
	if *override != "" {
		if err := json.Unmarshal([]byte(*override), &cfg); err != nil {
			return fmt.Errorf("--config: %w", err)
		}
		// A sweep that reads the cascade rows would see nothing move.
		fmt.Fprintln(stdout, "--config applies to the scorer's rows; the cascade rows use relevance.DefaultConfig")
	}

	tbTools, err := cascadeTools(filepath.Join(*data, "tool-discovery", "stabletoolbench-tools.json"), false)
	if err != nil {
		return err
	}
	tbDocs := documents(tbTools)
	tbReqs, err := loadQueries(filepath.Join(*data, "tool-discovery", "stabletoolbench-queries.jsonl"))
	if err != nil {
		return err
	}
	tauTools, tauReqs, err := loadTau(filepath.Join(*data, "tau-airline"))
	if err != nil {
		return err
	}
	tauDocs := documents(tauTools)
	for _, dump := range []struct {
		path  string
		write func(io.Writer, *relevance.Vectors, relevance.Config, []relevance.Document, []request, []relevance.Document, []request) error
	}{{*features, writeFeatures}, {*ranks, writeRanks}, {*cands, writeCandidates}} {
		if dump.path != "" {
			return writeFile(dump.path, func(w io.Writer) error {
				return dump.write(w, vec, cfg, tbDocs, tbReqs, tauDocs, tauReqs)
			})
		}
	}
	if *parts {
		return runParts(stdout, vec, cfg, tbDocs, tbReqs, tauDocs, tauReqs)
	}
	if *sweep {
		return runSweep(stdout, vec, cfg, tbDocs, tbReqs, tauDocs, tauReqs)
	}

	// The cascade as the server runs it, over each data set's tools.
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "relevance-eval")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cascades := map[string]*cascade{}
	for _, ds := range []struct {
		name, db string
		tools    []rawTool
	}{{"stabletoolbench", "tb", tbTools}, {"tau-airline", "airline", tauTools}} {
		c, err := openCascade(ctx, tmp, ds.db, ds.tools)
		if err != nil {
			return fmt.Errorf("%s: %w", ds.name, err)
		}
		defer c.Close()
		cascades[ds.name] = c
	}

	var rows []Row
	for _, dev := range halves {
		half := map[bool]string{true: "dev", false: "test"}[dev]
		for _, ds := range []struct {
			name string
			docs []relevance.Document
			reqs []request
		}{{"stabletoolbench", tbDocs, tbReqs}, {"tau-airline", tauDocs, tauReqs}} {
			reqs := pick(ds.reqs, dev)
			x, err := build(vec, cfg, ds.docs)
			if err != nil {
				return err
			}
			bl, err := buildBleve(ds.docs)
			if err != nil {
				return err
			}
			methods := []struct {
				name string
				f    func(string) []string
			}{
				{"relevance", func(p string) []string { return names(x.Query(p).Matches) }},
				{"bm25f top-3", func(p string) []string { return names(x.RankLexical(p, 3)) }},
				{"bm25f top-5", func(p string) []string { return names(x.RankLexical(p, 5)) }},
				{"full top-3", func(p string) []string { return names(x.Rank(p, 3)) }},
				{"full top-5", func(p string) []string { return names(x.Rank(p, 5)) }},
				{"bleve bm25 top-3", func(p string) []string { return bleveTop(bl, p, 3) }},
				{"bleve bm25 top-5", func(p string) []string { return bleveTop(bl, p, 5) }},
			}
			if *quick {
				methods = []struct {
					name string
					f    func(string) []string
				}{methods[0], methods[2], methods[4]}
			}
			crows, err := cascadeRows(ctx, cascades[ds.name], ds.name, half, reqs)
			if err != nil {
				return err
			}
			rows = append(rows, crows...)
			for _, m := range methods {
				var s Stats
				for _, r := range reqs {
					s.add(r.Gold, m.f(r.Prompt))
				}
				s.finish()
				rows = append(rows, Row{ds.name, half, m.name, s})
			}
			bl.Close()
			if ds.name == "stabletoolbench" {
				for _, u := range unserved(x, ds.docs, reqs) {
					rows = append(rows, Row{ds.name, half, u.name, u.Stats})
				}
				orows, err := offeredRows(vec, cfg, ds.docs, tbReqs, reqs, tauDocs, *quick)
				if err != nil {
					return err
				}
				for _, u := range orows {
					rows = append(rows, Row{ds.name, half, u.name, u.Stats})
				}
				wrows, err := wholeToolRows(vec, cfg, ds.docs, reqs, *quick)
				if err != nil {
					return err
				}
				for _, u := range wrows {
					rows = append(rows, Row{ds.name, half, u.name, u.Stats})
				}
			}
		}
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "data\thalf\tmethod\trequests\tany\tall\tgold recall\tmean\tzero\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.3f\t%.3f\t%.3f\t%.2f\t%.3f\t\n", r.Data, r.Half, r.Method, r.Requests, r.AnyGold, r.AllGold, r.GoldRecall, r.Mean, r.Zero)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if *quick {
		return nil
	}
	x, _ := build(vec, cfg, tbDocs)
	summary := struct {
		Scoring string `json:"scoring"`
		Vectors string `json:"vectors"`
		Index   string `json:"stabletoolbench_index"`
		Config  relevance.Config
		Rows    []Row `json:"rows"`
	}{x.Scoring(), vec.Digest(), x.Digest(), cfg, rows}
	b, err := json.MarshalIndent(summary, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s\n", b)
	if *jsonOut != "" {
		return os.WriteFile(*jsonOut, append(b, '\n'), 0o644)
	}
	return nil
}

// writeFile writes what write writes to path, buffered, and reports the
// close's error too (a full disk shows there).
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	if err := write(w); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

type namedStats struct {
	name string
	Stats
}

// unserved measures, for each request, the registry without its gold APIs
// and without the gold APIs' tools: removed, queried, added back.
func unserved(x *relevance.Index, docs []relevance.Document, reqs []request) []namedStats {
	byName := docsByName(docs)
	siblings := apisOfTools(docs)
	var a, b Stats
	for _, r := range reqs {
		gold := uniq(r.Gold)
		without(x, byName, gold, func() {
			a.add(nil, names(x.Query(r.Prompt).Matches))
			without(x, byName, siblings(gold), func() { b.add(nil, names(x.Query(r.Prompt).Matches)) })
		})
	}
	a.finish()
	b.finish()
	return []namedStats{{"unserved: gold removed", a}, {"unserved: gold tools removed", b}}
}

func toolOf(d relevance.Document) string {
	t, _, _ := strings.Cut(d.Title, ": ")
	return t
}

func names(ms []relevance.Match) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	return out
}

func pick(reqs []request, dev bool) []request {
	var out []request
	for _, r := range reqs {
		if r.dev == dev {
			out = append(out, r)
		}
	}
	return out
}

// buildSets builds the indexes of StableToolBench's and τ-bench's
// documents.
func buildSets(vec *relevance.Vectors, cfg relevance.Config, tbDocs, tauDocs []relevance.Document) (*relevance.Index, *relevance.Index, error) {
	x, err := build(vec, cfg, tbDocs)
	if err != nil {
		return nil, nil, err
	}
	xt, err := build(vec, cfg, tauDocs)
	return x, xt, err
}

// docsByName indexes docs by name.
func docsByName(docs []relevance.Document) map[string]relevance.Document {
	m := make(map[string]relevance.Document, len(docs))
	for _, d := range docs {
		m[d.Name] = d
	}
	return m
}

// apisOfTools returns a function that gives every API of the RapidAPI
// tools the named APIs belong to.
func apisOfTools(docs []relevance.Document) func(apis []string) []string {
	tool := map[string]string{}
	byTool := map[string][]string{}
	for _, d := range docs {
		t := toolOf(d)
		tool[d.Name] = t
		byTool[t] = append(byTool[t], d.Name)
	}
	return func(apis []string) []string {
		var out []string
		for _, a := range apis {
			out = append(out, byTool[tool[a]]...)
		}
		return out
	}
}

// without runs f with the named documents removed from x, then adds
// them back.
func without(x *relevance.Index, byName map[string]relevance.Document, names []string, f func()) {
	var removed []string
	for _, n := range names {
		if x.Remove(n) {
			removed = append(removed, n)
		}
	}
	f()
	for _, n := range removed {
		_ = x.Add(byName[n])
	}
}

func build(vec *relevance.Vectors, cfg relevance.Config, docs []relevance.Document) (*relevance.Index, error) {
	x, err := relevance.New(vec, cfg)
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		if err := x.Add(d); err != nil {
			return nil, err
		}
	}
	return x, nil
}

// documents are the scorer's documents of tools, as the cascade's
// relevance tier reads them (discover.SchemaParams for the parameters);
// a StableToolBench API's group is its RapidAPI tool.
func documents(tools []rawTool) []relevance.Document {
	docs := make([]relevance.Document, len(tools))
	for i, t := range tools {
		docs[i] = relevance.Document{Name: t.Name, Title: t.Title, Description: t.Description, Params: discover.SchemaParams(t.Schema), Group: t.Group}
	}
	return docs
}

func loadQueries(path string) ([]request, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []request
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var r request
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		r.dev = isDev(r.Prompt)
		out = append(out, r)
	}
	return out, sc.Err()
}

// tauWrites are the tools that write (tau-airline/README.md).
var tauWrites = []string{"book_reservation", "cancel_reservation", "update_reservation_flights", "update_reservation_baggages", "update_reservation_passengers", "send_certificate"}

func loadTau(dir string) ([]rawTool, []request, error) {
	tools, err := cascadeTools(filepath.Join(dir, "tools.json"), true)
	if err != nil {
		return nil, nil, err
	}
	raw, err := os.ReadFile(filepath.Join(dir, "tasks.json"))
	if err != nil {
		return nil, nil, err
	}
	var tasks []struct {
		Index       int    `json:"index"`
		Instruction string `json:"instruction"`
		Actions     []struct {
			Name string `json:"name"`
		} `json:"actions"`
	}
	if err := json.Unmarshal(raw, &tasks); err != nil {
		return nil, nil, err
	}
	var reqs []request
	for _, t := range tasks {
		var gold []string
		for _, a := range t.Actions {
			if slices.Contains(tauWrites, a.Name) {
				gold = append(gold, a.Name)
			}
		}
		if len(gold) == 0 {
			continue
		}
		reqs = append(reqs, request{ID: fmt.Sprint(t.Index), Prompt: t.Instruction, Gold: uniq(gold), dev: isDev(t.Instruction)})
	}
	return tools, reqs, nil
}

func buildBleve(docs []relevance.Document) (bleve.Index, error) {
	im := mapping.NewIndexMapping()
	im.ScoringModel = "bm25"
	im.DefaultAnalyzer = standard.Name
	x, err := bleve.NewMemOnly(im)
	if err != nil {
		return nil, err
	}
	b := x.NewBatch()
	for _, d := range docs {
		parts := []string{strings.ReplaceAll(d.Name, "_", " "), d.Title, d.Description}
		for _, p := range d.Params {
			parts = append(parts, strings.ReplaceAll(p.Name, "_", " "), p.Description)
		}
		parts = append(parts, d.Aliases...)
		parts = append(parts, d.Tags...)
		parts = append(parts, d.Examples...)
		if err := b.Index(d.Name, map[string]any{"text": strings.Join(parts, "\n")}); err != nil {
			return nil, err
		}
	}
	return x, x.Batch(b)
}

func bleveTop(x bleve.Index, prompt string, k int) []string {
	q := bleve.NewMatchQuery(prompt)
	q.SetField("text")
	req := bleve.NewSearchRequestOptions(q, k, 0, false)
	req.SortBy([]string{"-_score", "_id"})
	res, err := x.Search(req)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(res.Hits))
	for _, h := range res.Hits {
		out = append(out, h.ID)
	}
	return out
}
