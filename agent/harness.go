package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// The two pipelines of the comparison.
const (
	PipelineVerified      = "verified"
	PipelineAssertionOnly = "assertion-only"
)

// Pipelines lists them in table order (the paper's A, then B).
var Pipelines = []string{PipelineVerified, PipelineAssertionOnly}

// Trial is one run of one prompt through one pipeline: everything needed
// to audit its classification, and nothing that varies between runs (no
// times, no addresses).
type Trial struct {
	Prompt   string `json:"prompt"`
	Category string `json:"category"`
	Pipeline string `json:"pipeline"`
	Rep      int    `json:"rep"`
	Proposer string `json:"proposer"`
	// Shown are the names the proposer could choose from.
	Shown Shown `json:"shown"`
	// Discovery is the evidence the proposal was grounded with: from the
	// researcher's prompt (verified) or from the proposal's own names
	// (assertion-only, after schema validation).
	Discovery *DiscoveryRef `json:"discovery,omitempty"`
	Proposal  Proposal      `json:"proposal"`
	// Schema is the assertion-only pipeline's validation.
	Schema         *Check         `json:"schema,omitempty"`
	Gate           *GateRef       `json:"gate,omitempty"`
	Execution      *Execution     `json:"execution,omitempty"`
	Classification Classification `json:"classification"`
}

// Shown lists the options' names.
type Shown struct {
	Families []string `json:"families"`
	Metrics  []string `json:"metrics"`
}

// DiscoveryRef summarises a discovery.
type DiscoveryRef struct {
	ID string `json:"id"`
	// From is "prompt" (the researcher's words) or "proposal" (the
	// proposer's own names, the assertion-only pipeline's self-evidence).
	From     string   `json:"from"`
	Families []string `json:"families"`
	Metrics  []string `json:"metrics"`
	OK       bool     `json:"ok"`
}

// GateRef is Γ's answer.
type GateRef struct {
	Grounding string    `json:"grounding,omitempty"`
	Admitted  bool      `json:"admitted"`
	Failures  []Failure `json:"failures,omitempty"`
}

// Execution is what the executor did.
type Execution struct {
	Status        string   `json:"status"` // ExecRan, ExecUnavailable, ExecFailed
	Hash          string   `json:"hash,omitempty"`
	Morphisms     int      `json:"morphisms"`
	Admissible    int      `json:"admissible"`
	Rejected      []string `json:"rejected,omitempty"` // risk predicates that rejected a morphism
	Selected      string   `json:"selected,omitempty"`
	SelectedScore *float64 `json:"selected_score,omitempty"`
	Error         *Problem `json:"error,omitempty"`
	Audit         []string `json:"audit,omitempty"`
}

// Harness runs prompts through both pipelines against one server.
type Harness struct {
	Client    *Client
	Proposer  Proposer
	Catalog   *Catalog
	Validator *Validator
	// Executor is false when the server has no POST /v1/executions: admitted
	// proposals are then recorded as not executed.
	Executor bool
}

// NewHarness reads the server's registry and probes for its executor.
func NewHarness(ctx context.Context, c *Client, p Proposer) (*Harness, error) {
	exp, err := c.Registry(ctx)
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	cat := NewCatalog(exp)
	if len(cat.Families) == 0 || len(cat.Metrics) == 0 {
		return nil, fmt.Errorf("registry version %d has %d families and %d metrics: nothing to compare", cat.Version, len(cat.Families), len(cat.Metrics))
	}
	v, err := NewValidator(cat)
	if err != nil {
		return nil, err
	}
	h := &Harness{Client: c, Proposer: p, Catalog: cat, Validator: v, Executor: true}
	switch err := c.ExecutionsAvailable(ctx); {
	case errors.Is(err, ErrNoExecutor):
		h.Executor = false
	case err != nil:
		return nil, err
	}
	return h, nil
}

// Run sends every prompt through both pipelines reps times, prompt by
// prompt, repetition by repetition, verified first. progress, when not
// nil, sees each trial as it completes.
func (h *Harness) Run(ctx context.Context, prompts []Prompt, reps int, progress func(Trial)) ([]Trial, error) {
	var out []Trial
	for _, p := range prompts {
		for rep := 1; rep <= reps; rep++ {
			for _, pl := range Pipelines {
				t, err := h.Trial(ctx, pl, p, rep)
				if err != nil {
					return out, err
				}
				if progress != nil {
					progress(t)
				}
				out = append(out, t)
			}
		}
	}
	return out, nil
}

// Trial runs one prompt through one pipeline.
func (h *Harness) Trial(ctx context.Context, pipeline string, p Prompt, rep int) (Trial, error) {
	switch pipeline {
	case PipelineVerified:
		return h.Verified(ctx, p, rep)
	case PipelineAssertionOnly:
		return h.AssertionOnly(ctx, p, rep)
	}
	return Trial{}, fmt.Errorf("unknown pipeline %q", pipeline)
}

// Verified is pipeline A: discovery on the prompt → the proposer sees only
// the discovered families and metrics → Γ with that evidence → execute.
func (h *Harness) Verified(ctx context.Context, p Prompt, rep int) (Trial, error) {
	t := Trial{Prompt: p.ID, Category: p.Category, Pipeline: PipelineVerified, Rep: rep, Proposer: h.Proposer.Name()}
	d, err := h.Client.Discover(ctx, p.Prompt)
	if err != nil {
		return t, fmt.Errorf("%s: discover: %w", p.ID, err)
	}
	t.Discovery = discoveryRef(d, "prompt")
	in := Input{Prompt: p.Prompt, Data: p.Data, Scope: ScopeDiscovered,
		Families: h.Catalog.Select(KindFamily, d.Names(KindFamily)),
		Metrics:  h.Catalog.Select(KindMetric, d.Names(KindMetric))}
	return h.finish(ctx, t, p, in, func(prop Proposal) (*Discovery, error) { return d, nil })
}

// AssertionOnly is pipeline B: the proposer sees every family and metric
// (every pair is valid) → schema validation → execute. The server only
// executes grounded requests, so after validation the pipeline grounds the
// proposal with discovery run on the proposal's own names: evidence that
// says nothing about the researcher's words, which is exactly what an
// assertion is.
func (h *Harness) AssertionOnly(ctx context.Context, p Prompt, rep int) (Trial, error) {
	t := Trial{Prompt: p.ID, Category: p.Category, Pipeline: PipelineAssertionOnly, Rep: rep, Proposer: h.Proposer.Name()}
	in := Input{Prompt: p.Prompt, Data: p.Data, Scope: ScopeAll, Families: h.Catalog.Families, Metrics: h.Catalog.Metrics}
	return h.finish(ctx, t, p, in, func(prop Proposal) (*Discovery, error) {
		d, err := h.Client.DiscoverTerms(ctx, []string{prop.Family, prop.Metric})
		if err != nil {
			return nil, err
		}
		return d, nil
	})
}

// finish proposes, validates (assertion-only), grounds, executes and
// classifies. evidence returns the discovery to ground the proposal with.
func (h *Harness) finish(ctx context.Context, t Trial, p Prompt, in Input, evidence func(Proposal) (*Discovery, error)) (Trial, error) {
	t.Shown = Shown{Families: names(in.Families), Metrics: names(in.Metrics)}
	prop, err := h.Proposer.Propose(ctx, in)
	if err != nil {
		return t, fmt.Errorf("%s (%s): %w", p.ID, t.Pipeline, err)
	}
	if prop.Proposer == "" {
		prop.Proposer = h.Proposer.Name()
	}
	t.Proposal = prop
	facts := Facts{Proposal: prop}
	if prop.Malformed != "" || prop.Abstain {
		t.Classification = Classify(p, facts, h.Catalog.Opposite)
		return t, nil
	}
	if in.Scope == ScopeAll {
		chk := h.Validator.Validate(prop)
		t.Schema, facts.Schema = &chk, &chk
		if !chk.Passed {
			t.Classification = Classify(p, facts, h.Catalog.Opposite)
			return t, nil
		}
	}
	d, err := evidence(prop)
	if err != nil {
		return t, fmt.Errorf("%s (%s): discover: %w", p.ID, t.Pipeline, err)
	}
	if t.Discovery == nil {
		t.Discovery = discoveryRef(d, "proposal")
	}
	g, err := h.Client.Ground(ctx, prop.Request(), d.ID)
	if err != nil {
		return t, fmt.Errorf("%s (%s): ground: %w", p.ID, t.Pipeline, err)
	}
	t.Gate = &GateRef{Grounding: g.ID, Admitted: g.Decision.Admitted, Failures: g.Decision.Failures}
	facts.Gate = &g.Decision
	if g.Decision.Admitted {
		ex, err := h.execute(ctx, g.ID, prop, d)
		if err != nil {
			return t, fmt.Errorf("%s (%s): %w", p.ID, t.Pipeline, err)
		}
		t.Execution = ex
		facts.Exec = &ExecFacts{Status: ex.Status, Morphisms: ex.Morphisms, Admissible: ex.Admissible, Audit: ex.Audit}
	}
	t.Classification = Classify(p, facts, h.Catalog.Opposite)
	return t, nil
}

// execute runs an admitted grounding and audits the footprint: it must
// read back under its hash, record the proposed request, and have run
// against the registry the evidence was made with. Only transport errors
// are returned; an error answer from the executor is recorded.
func (h *Harness) execute(ctx context.Context, grounding string, prop Proposal, d *Discovery) (*Execution, error) {
	if !h.Executor {
		return &Execution{Status: ExecUnavailable}, nil
	}
	fp, err := h.Client.Execute(ctx, grounding)
	var pr *Problem
	switch {
	case errors.Is(err, ErrNoExecutor):
		h.Executor = false
		return &Execution{Status: ExecUnavailable}, nil
	case errors.As(err, &pr):
		return &Execution{Status: ExecFailed, Error: &Problem{Type: pr.Type, Title: pr.Title, Status: pr.Status, Detail: pr.Detail}}, nil
	case err != nil:
		return nil, err
	}
	ex := &Execution{Status: ExecRan, Hash: fp.Hash, Morphisms: len(fp.Morphisms)}
	for _, m := range fp.Morphisms {
		if m.Admissible {
			ex.Admissible++
		}
		for _, r := range m.Rejected {
			if !slices.Contains(ex.Rejected, r) {
				ex.Rejected = append(ex.Rejected, r)
			}
		}
		if fp.Selected != nil && m.Hash == *fp.Selected {
			ex.Selected, ex.SelectedScore = m.Hash, m.Score
		}
	}
	slices.Sort(ex.Rejected)
	ex.Audit = h.audit(ctx, fp, prop, d)
	return ex, nil
}

func (h *Harness) audit(ctx context.Context, fp *Footprint, prop Proposal, d *Discovery) []string {
	var out []string
	back, err := h.Client.Execution(ctx, fp.Hash)
	switch {
	case fp.Hash == "":
		out = append(out, "F8: the footprint has no execution hash")
	case err != nil:
		out = append(out, fmt.Sprintf("F8: the footprint %s cannot be read back: %v", fp.Hash, err))
	case back.Hash != fp.Hash:
		out = append(out, fmt.Sprintf("F8: reading %s back gave %s", fp.Hash, back.Hash))
	}
	if fp.Request.Family != prop.Family || fp.Request.Metric != prop.Metric || fp.Request.Data != prop.Data {
		out = append(out, fmt.Sprintf("F8: the footprint records %s/%s on %q, not the proposal %s/%s on %q",
			fp.Request.Family, fp.Request.Metric, fp.Request.Data, prop.Family, prop.Metric, prop.Data))
	}
	reg := fp.Registry
	if reg == "" {
		reg = fp.Layers["registry"]
	}
	if reg != "" && reg != d.Registry {
		out = append(out, fmt.Sprintf("F7: executed against registry %s, discovered against %s", reg, d.Registry))
	}
	return out
}

func discoveryRef(d *Discovery, from string) *DiscoveryRef {
	return &DiscoveryRef{ID: d.ID, From: from, Families: nonNil(d.Names(KindFamily)), Metrics: nonNil(d.Names(KindMetric)), OK: d.OK}
}

func names(os []Option) []string {
	out := []string{}
	for _, o := range os {
		out = append(out, o.Name)
	}
	return out
}

func nonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}
