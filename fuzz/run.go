package fuzz

import (
	"context"
	"fmt"
	"sort"

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
	// Suggestions will hold discovery-layer patches (not built yet).
	Suggestions []any `json:"suggestions"`
	// Confusion is the confusion matrix of families and of metrics.
	Confusion []Confusion `json:"confusion"`
}

// Config configures a run.
type Config struct {
	// Seed orders the discovery probes (a run cut short by its time
	// budget samples all capabilities); the same seed on the same registry
	// version gives the same report when the run completes.
	Seed uint64
}

// Run tests the registry version snap: every entry's discovery text for
// poisoning, and every family, metric, operation and signal's own phrases
// for discoverability and consistency, asking pr (which must answer at
// snap's version) until ctx ends. A run cut short keeps what it found.
func Run(ctx context.Context, snap *registry.Snapshot, pr Prober, cfg Config) (*Report, error) {
	r := &Report{Registry: snap.Registry(), Version: snap.Version(), Seed: cfg.Seed,
		Tests: []string{KindPoisoning, KindDiscoverability, KindConsistency}, Suggestions: []any{}}
	caps := snap.Capabilities()
	sort.Slice(caps, func(i, j int) bool { return caps[i].Name < caps[j].Name })
	var found []findingBody
	for _, c := range caps {
		for _, f := range Poisoning(c.Entry) {
			found = append(found, findingBody{Kind: KindPoisoning, Capability: c.Name, Rule: f.Rule,
				Field: f.Field, Detail: f.Why, Examples: []string{f.Excerpt}})
		}
	}
	d := &discoverability{probes: probes(snap)}
	complete, err := d.ask(ctx, pr, cfg.Seed, snap.Version())
	if err != nil {
		return nil, err
	}
	r.Complete, r.Probes, r.Asked = complete, len(d.probes), len(d.answers)
	found = append(found, d.findings()...)
	r.Confusion = []Confusion{d.confusion(registry.KindFamily), d.confusion(registry.KindMetric)}
	r.Findings = make([]Finding, len(found))
	for i, b := range found {
		if r.Findings[i], err = seal(b); err != nil {
			return nil, err
		}
	}
	return r, nil
}
