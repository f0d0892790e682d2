// Command groundgate-compare runs the paper's assertion-only vs verified
// experiment (§4.3, Table 7) against a groundgate server.
//
//	groundgate-compare [--server URL] [--prompts FILE] [--reps N] [--out DIR]
//	                   [--only ID,…] [--proposer auto|scripted|llm]
//	                   [--llm-base-url URL] [--llm-model NAME] [--llm-api-key KEY]
//	                   [--llm-temperature T]
//
// Without --server it starts an in-process server on 127.0.0.1:0 with a
// temporary bbolt file, the built-in catalog and the bundled sample data.
// Without --prompts it uses the bundled 30-prompt set. The proposer is an
// OpenAI-compatible chat endpoint when a base URL and a model are given
// (flags, or GROUNDGATE_LLM_BASE_URL / GROUNDGATE_LLM_MODEL /
// GROUNDGATE_LLM_API_KEY); otherwise the deterministic scripted proposer,
// labelled as such in every output.
//
// It writes DIR/comparison-<proposer>.json (every trial; no times, so two
// scripted runs give identical bytes) and DIR/comparison-<proposer>.md
// (tables by category and pipeline beside the paper's figures), and prints
// the F3 table.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"github.com/groundgate/groundgate/agent"
	"github.com/groundgate/groundgate/agent/llm"
	"github.com/groundgate/groundgate/internal/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := Main(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "groundgate-compare:", err)
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "groundgate-compare:", err)
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")

// Config is one run's settings.
type Config struct {
	Server      string // "" starts an in-process server
	Prompts     string // "" uses the bundled set
	Only        []string
	Reps        int
	Out         string
	Proposer    string // auto, scripted, llm
	LLM         llm.Config
	Progress    io.Writer // one line per trial; nil for none
	Quiet       bool
	HTTP        *http.Client
	serverLabel string
}

// Paths are the files a run wrote.
type Paths struct{ JSON, Markdown string }

// Main parses the flags and runs.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("groundgate-compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg Config
	var only string
	fs.StringVar(&cfg.Server, "server", "", "groundgate server `URL` (default: start one in-process with the bundled sample data)")
	fs.StringVar(&cfg.Prompts, "prompts", "", "prompt set `file` (default: the bundled 30-prompt set, agent/testdata/prompts30.json)")
	fs.StringVar(&only, "only", "", "comma-separated prompt `ids` to run (default: all)")
	fs.IntVar(&cfg.Reps, "reps", 3, "repetitions per prompt and pipeline")
	fs.StringVar(&cfg.Out, "out", filepath.Join("reproducibility", "results"), "output `dir`")
	fs.StringVar(&cfg.Proposer, "proposer", "auto", "auto (an LLM when base URL and model are set, else scripted), scripted or llm")
	fs.StringVar(&cfg.LLM.BaseURL, "llm-base-url", getenv(llm.EnvBaseURL), "OpenAI-compatible API base `URL` (env "+llm.EnvBaseURL+")")
	fs.StringVar(&cfg.LLM.Model, "llm-model", getenv(llm.EnvModel), "model `name` (env "+llm.EnvModel+")")
	fs.StringVar(&cfg.LLM.APIKey, "llm-api-key", "", "API `key` (prefer env "+llm.EnvAPIKey+")")
	fs.Float64Var(&cfg.LLM.Temperature, "llm-temperature", llm.DefaultTemperature, "sampling temperature")
	fs.BoolVar(&cfg.Quiet, "q", false, "no per-trial progress on stderr")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	if cfg.LLM.APIKey == "" {
		cfg.LLM.APIKey = getenv(llm.EnvAPIKey)
	}
	if only != "" {
		cfg.Only = strings.Split(only, ",")
	}
	if !cfg.Quiet {
		cfg.Progress = stderr
	}
	res, paths, err := Run(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "proposer: %s\n\n", res.Proposer)
	fmt.Fprint(stdout, f3Table(res))
	fmt.Fprintf(stdout, "\nwrote %s\nwrote %s\n", paths.JSON, paths.Markdown)
	return nil
}

// Run runs the comparison and writes the result files.
func Run(ctx context.Context, cfg Config) (*agent.Results, Paths, error) {
	if cfg.Reps < 1 {
		return nil, Paths{}, fmt.Errorf("%w: --reps must be at least 1", errUsage)
	}
	raw := agent.Prompts30()
	if cfg.Prompts != "" {
		b, err := os.ReadFile(cfg.Prompts)
		if err != nil {
			return nil, Paths{}, err
		}
		raw = b
	}
	set, err := agent.ParsePrompts(raw)
	if err != nil {
		return nil, Paths{}, err
	}
	if len(cfg.Only) > 0 {
		if set.Prompts, err = selectPrompts(set.Prompts, cfg.Only); err != nil {
			return nil, Paths{}, err
		}
	}
	sum := sha256.Sum256(raw)
	digest := "sha256:" + hex.EncodeToString(sum[:])

	prop, err := proposer(cfg)
	if err != nil {
		return nil, Paths{}, err
	}
	base := cfg.Server
	if base == "" {
		srv, err := StartServer(ctx)
		if err != nil {
			return nil, Paths{}, err
		}
		defer srv.Close()
		base = srv.URL
	}
	client, err := agent.NewClient(base, cfg.HTTP)
	if err != nil {
		return nil, Paths{}, err
	}
	h, err := agent.NewHarness(ctx, client, prop)
	if err != nil {
		return nil, Paths{}, err
	}
	progress := func(t agent.Trial) {
		if cfg.Progress == nil {
			return
		}
		what := t.Proposal.Family + "/" + t.Proposal.Metric
		if t.Proposal.Abstain {
			what = "abstain"
		} else if t.Proposal.Malformed != "" {
			what = "malformed"
		}
		fmt.Fprintf(cfg.Progress, "%s rep %d %-14s %-16s → %s (%s)\n", t.Prompt, t.Rep, t.Pipeline, what, t.Classification.Code, t.Classification.Outcome)
	}
	trials, err := h.Run(ctx, set.Prompts, cfg.Reps, progress)
	if err != nil {
		return nil, Paths{}, err
	}
	res := agent.NewResults(h, set, digest, cfg.Reps, trials)
	js, err := agent.MarshalResults(res)
	if err != nil {
		return nil, Paths{}, err
	}
	md := agent.Markdown(res, set.Prompts)
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return nil, Paths{}, err
	}
	stem := "comparison-scripted"
	if res.ProposerKind != "scripted" {
		stem = "comparison-llm-" + safeName(cfg.LLM.Model)
	}
	paths := Paths{JSON: filepath.Join(cfg.Out, stem+".json"), Markdown: filepath.Join(cfg.Out, stem+".md")}
	if err := os.WriteFile(paths.JSON, js, 0o644); err != nil {
		return nil, Paths{}, err
	}
	if err := os.WriteFile(paths.Markdown, []byte(md), 0o644); err != nil {
		return nil, Paths{}, err
	}
	return res, paths, nil
}

func proposer(cfg Config) (agent.Proposer, error) {
	haveLLM := cfg.LLM.BaseURL != "" && cfg.LLM.Model != ""
	switch cfg.Proposer {
	case "scripted":
		return agent.ScriptedProposer{}, nil
	case "auto":
		if !haveLLM {
			return agent.ScriptedProposer{}, nil
		}
	case "llm":
		if !haveLLM {
			return nil, fmt.Errorf("%w: --proposer llm needs --llm-base-url and --llm-model (or %s and %s)", errUsage, llm.EnvBaseURL, llm.EnvModel)
		}
	default:
		return nil, fmt.Errorf("%w: --proposer %q: want auto, scripted or llm", errUsage, cfg.Proposer)
	}
	return agent.NewOpenAIProposer(cfg.LLM)
}

func selectPrompts(ps []agent.Prompt, ids []string) ([]agent.Prompt, error) {
	want := map[string]bool{}
	for _, id := range ids {
		want[strings.TrimSpace(id)] = true
	}
	var out []agent.Prompt
	for _, p := range ps {
		if want[p.ID] {
			out = append(out, p)
			delete(want, p.ID)
		}
	}
	if len(want) > 0 {
		var missing []string
		for id := range want {
			missing = append(missing, id)
		}
		return nil, fmt.Errorf("%w: --only: no prompt %q", errUsage, missing)
	}
	return out, nil
}

var unsafeRE = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func safeName(s string) string {
	s = strings.Trim(unsafeRE.ReplaceAllString(s, "-"), "-.")
	if s == "" {
		return "model"
	}
	return s
}

// f3Table is the headline table for the terminal.
func f3Table(r *agent.Results) string {
	var b strings.Builder
	paper := map[string]agent.Row{}
	for _, p := range r.Paper {
		paper[p.Category+"/"+p.Pipeline] = p
	}
	fmt.Fprintf(&b, "%-16s %-15s %4s %4s %4s %8s   %s\n", "category", "pipeline", "N", "F3", "ran", "F3 rate", "paper F3 (Claude Sonnet)")
	for _, row := range r.Summary {
		pp := paper[row.Category+"/"+row.Pipeline]
		fmt.Fprintf(&b, "%-16s %-15s %4d %4d %4d %7.1f%%   %d/%d %.1f%%\n", row.Category, row.Pipeline, row.N, row.F3, row.F3Ran, 100*row.Rate(), pp.F3, pp.N, 100*pp.Rate())
	}
	b.WriteString("(F3: an unintended family reached the executor; ran: at least one of its morphisms passed the risk filter)\n")
	if r.Executor != "available" {
		b.WriteString("(the server has no executor: admitted proposals were not executed)\n")
	}
	return b.String()
}

// Server is an in-process groundgate server: a temporary bbolt file seeded
// with the built-in catalog, the bundled sample data, on 127.0.0.1:0 — the
// same wiring as `groundgate serve` (internal/app).
type Server struct {
	URL    string
	dir    string
	cancel context.CancelFunc
	done   chan error
}

// StartServer starts one; Close stops it and removes its files.
func StartServer(ctx context.Context) (*Server, error) {
	dir, err := os.MkdirTemp("", "groundgate-compare-")
	if err != nil {
		return nil, err
	}
	m, err := app.Open(ctx, app.Config{Addr: "127.0.0.1:0", DB: filepath.Join(dir, "groundgate.db"),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	s := &Server{URL: "http://" + m.Addr(), dir: dir, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- m.Run(runCtx) }()
	return s, nil
}

// Close shuts the server down (gracefully, closing the database) and
// removes its temporary files.
func (s *Server) Close() error {
	var err error
	if s.cancel != nil {
		s.cancel()
		err = <-s.done
		s.cancel = nil
	}
	if s.dir != "" {
		if rerr := os.RemoveAll(s.dir); err == nil {
			err = rerr
		}
		s.dir = ""
	}
	return err
}
