package fuzz

import (
	"context"
	"fmt"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
)

// The finding kinds of SPEC §12.
const (
	KindRuntime         = "runtime"
	KindDiscoverability = "discoverability"
	KindConsistency     = "consistency"
	KindPoisoning       = "poisoning"
)

// Finding is one thing a run found, content-addressed: its id is the
// SHA-256 of the JCS encoding of everything else, so the same finding has
// the same id in every run that finds it.
type Finding struct {
	ID hashing.Digest `json:"id"`
	findingBody
}

// findingBody is a finding without its id: what the id hashes. Its fields
// are the finding's (encoding/json inlines them).
type findingBody struct {
	Kind       string `json:"kind"`
	Capability string `json:"capability"`
	// Rule names what was found within the kind: unreachable, confused,
	// synonyms_disagree, instruction, hidden_text, url, …
	Rule   string `json:"rule"`
	Detail string `json:"detail"`
	// Other is the capability found in place of this one (confused).
	Other string `json:"other,omitempty"`
	// Field is where in the entry (poisoning).
	Field    string   `json:"field,omitempty"`
	Examples []string `json:"examples,omitempty"`
}

// seal gives a finding its content address.
func seal(b findingBody) (Finding, error) {
	id, err := hashing.SHA256Of(b)
	if err != nil {
		return Finding{}, fmt.Errorf("fuzz: finding id: %w", err)
	}
	return Finding{ID: id, findingBody: b}, nil
}

// Report is a run's output (SPEC §12).
type Report struct {
	Registry hashing.Digest `json:"registry"`
	Version  uint64         `json:"version"`
	Seed     uint64         `json:"seed"`
	// Tests lists what this run tested.
	Tests []string `json:"tests"`
	// Complete is false when the run's time ran out: the findings cover
	// the Asked probes (a seeded sample of all Probes) and are
	// deterministic only for complete runs.
	Complete bool      `json:"complete"`
	Probes   int       `json:"probes"`
	Asked    int       `json:"asked"`
	Findings []Finding `json:"findings"`
	// Suggestions are discovery-layer changes answering the findings
	// (Patch writes them as a registry patch); AutoFix says how they were
	// made and measured. A run cut short makes none.
	Suggestions []Suggestion `json:"suggestions"`
	AutoFix     *AutoFix     `json:"autofix,omitempty"`
	// Confusion is the confusion matrix of families and of metrics.
	Confusion []Confusion `json:"confusion"`
	// Runtime says what the runtime tests covered (absent when not run).
	Runtime *RuntimeSummary `json:"runtime,omitempty"`
}

// Config configures a run.
type Config struct {
	// Seed orders the discovery probes (a run cut short by its time
	// budget samples all capabilities); the same seed on the same registry
	// version gives the same report when the run completes.
	Seed uint64
	// Grammar rephrases capabilities' own words (nil: BuiltinGrammar).
	Grammar *Grammar
	// Paraphraser, when set, adds an LLM's phrasings to the grammar's
	// (off by default: the run is then no longer reproducible from its
	// seed alone).
	Paraphraser Paraphraser
	// Runtime, when set, runs every executable capability through it on
	// hostile arguments and data (runtime.go); nil leaves that test out.
	Runtime *Runtime
	// Progress, when set, is told how far the run has got after each
	// step (it must return quickly: the run waits for it).
	Progress func(Progress)
}

// Progress is how far a run has got: Done of Total discovery probes
// asked (other tests report in the same units as they are added).
type Progress struct {
	Done  int `json:"done"`
	Total int `json:"total"`
}

// Run tests the registry version snap: every entry's discovery text for
// poisoning, and every family, metric, operation and signal's own phrases
// for discoverability and consistency, asking pr (which must answer at
// snap's version) until ctx ends. A run cut short keeps what it found.
func Run(ctx context.Context, snap *registry.Snapshot, pr Prober, cfg Config) (*Report, error) {
	r := &Report{Registry: snap.Registry(), Version: snap.Version(), Seed: cfg.Seed,
		Tests: []string{KindPoisoning, KindDiscoverability, KindConsistency}, Suggestions: []Suggestion{}}
	var found []findingBody
	for _, c := range sortedCaps(snap) {
		for _, f := range Poisoning(c.Entry) {
			found = append(found, findingBody{Kind: KindPoisoning, Capability: c.Name, Rule: f.Rule,
				Field: f.Field, Detail: f.Why, Examples: []string{f.Excerpt}})
		}
	}
	g := cfg.Grammar
	if g == nil {
		var err error
		if g, err = BuiltinGrammar(); err != nil {
			return nil, err
		}
	}
	reph, err := rephrase(ctx, snap, g, cfg.Paraphraser)
	if err != nil {
		return nil, err
	}
	d := &discoverability{probes: probes(snap, reph, cfg.Seed), reph: reph, grammar: g}
	complete, err := d.ask(ctx, pr, cfg.Seed, snap.Version(), cfg.Progress)
	if err != nil {
		return nil, err
	}
	r.Complete, r.Probes, r.Asked = complete, len(d.probes), len(d.answers)
	found = append(found, d.findings()...)
	found = append(found, d.rephrasedFindings()...)
	if cfg.Runtime != nil {
		rf, sum, done, err := cfg.Runtime.run(ctx, snap, cfg.Seed, cfg.Progress, len(d.probes))
		if err != nil {
			return nil, err
		}
		r.Tests, r.Runtime, r.Complete = append(r.Tests, KindRuntime), sum, r.Complete && done
		found = append(found, rf...)
	}
	r.Confusion = []Confusion{d.confusion(registry.KindFamily), d.confusion(registry.KindMetric)}
	r.Findings = make([]Finding, len(found))
	for i, b := range found {
		if r.Findings[i], err = seal(b); err != nil {
			return nil, err
		}
	}
	// Suggestions only from a whole run: a sample would propose aliases
	// for phrasings it happened to ask. A run whose time ends while the
	// suggestions are checked keeps its findings without them.
	if complete {
		sugg, fix, err := d.autofix(ctx, snap, r.Findings)
		switch {
		case err != nil && ctx.Err() != nil:
		case err != nil:
			return nil, err
		default:
			r.Suggestions, r.AutoFix = sugg, fix
		}
	}
	return r, nil
}
