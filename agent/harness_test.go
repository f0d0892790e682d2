package agent

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

// fixedProposer proposes the same thing whatever it is shown.
type fixedProposer struct{ p Proposal }

func (f fixedProposer) Name() string { return "fixed (test)" }
func (f fixedProposer) Propose(_ context.Context, in Input) (Proposal, error) {
	p := f.p
	if p.Data == "" && p.Malformed == "" && !p.Abstain {
		p.Data = in.Data
	}
	return p, nil
}

func mustHarness(t *testing.T, base string, p Proposer) *Harness {
	t.Helper()
	h, err := NewHarness(context.Background(), mustClient(t, base), p)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// requireExecutor fails a test whose server answers POST /v1/executions
// with 404: the route is part of the API, so its absence is a bug, not a
// reason to skip.
func requireExecutor(t *testing.T, h *Harness) {
	t.Helper()
	if !h.Executor {
		t.Fatal("POST /v1/executions answers 404: the server started with an executor has no executions route")
	}
}

func trialOf(t *testing.T, trials []Trial, prompt, pipeline string, rep int) Trial {
	t.Helper()
	for _, tr := range trials {
		if tr.Prompt == prompt && tr.Pipeline == pipeline && tr.Rep == rep {
			return tr
		}
	}
	t.Fatalf("no trial %s %s %d", prompt, pipeline, rep)
	return Trial{}
}

func TestExecutionsProbe(t *testing.T) {
	ctx := context.Background()
	if err := mustClient(t, startServer(t, true).URL).ExecutionsAvailable(ctx); err != nil {
		t.Errorf("with executor: %v", err)
	}
	c := mustClient(t, startServer(t, false).URL)
	if err := c.ExecutionsAvailable(ctx); !errors.Is(err, ErrNoExecutor) {
		t.Errorf("without executor: %v, want ErrNoExecutor", err)
	}
	if _, err := c.Execute(ctx, "sha256:"+strings.Repeat("0", 64)); !errors.Is(err, ErrNoExecutor) {
		t.Errorf("Execute without executor: %v, want ErrNoExecutor", err)
	}
}

// TestHarnessWithoutExecutor: a server whose executions route is missing
// still gives a full, classified run; admitted proposals are marked as not
// executed.
func TestHarnessWithoutExecutor(t *testing.T) {
	h := mustHarness(t, startServer(t, false).URL, ScriptedProposer{})
	if h.Executor {
		t.Fatal("the probe did not notice the missing executor")
	}
	set := mustPrompts(t)
	prompts := []Prompt{promptByID(t, "S01"), promptByID(t, "U01")}
	trials, err := h.Run(context.Background(), prompts, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	s01 := trialOf(t, trials, "S01", PipelineVerified, 1)
	if s01.Classification.Code != "F0" || s01.Classification.Outcome != OutcomeAdmitted || s01.Execution.Status != ExecUnavailable {
		t.Errorf("S01 verified: %+v %+v", s01.Classification, s01.Execution)
	}
	if u := trialOf(t, trials, "U01", PipelineVerified, 1); u.Classification.Code != CodeCorrectRefusal {
		t.Errorf("U01 verified: %+v", u.Classification)
	}
	if u := trialOf(t, trials, "U01", PipelineAssertionOnly, 1); u.Classification.Code != "F3" || u.Classification.Outcome != OutcomeAdmitted {
		t.Errorf("U01 assertion-only: %+v", u.Classification)
	}
	res := NewResults(h, &PromptSet{Name: set.Name, Prompts: prompts}, "sha256:x", 1, trials)
	if res.Executor != "unavailable" || !strings.Contains(Markdown(res, prompts), "The server had no executor") {
		t.Errorf("the report does not say the executor was missing")
	}
}

// TestGateRefusals drives the verified pipeline's refusals and the
// assertion-only pipeline's schema through the real gate with proposers
// that always say the same thing.
func TestGateRefusals(t *testing.T) {
	base := startServer(t, false).URL
	ctx := context.Background()
	s01 := promptByID(t, "S01") // discovers MOM_WZS and SRP only
	u01 := promptByID(t, "U01")
	win := map[string]any{"window": 50}
	tests := []struct {
		name             string
		p                Prompt
		prop             Proposal
		codeA, codeB     string
		gateCodesA       []string
		outcomeA         string
		intentA          string
		inversionA       bool
		gateReachedByB   bool
		schemaFailedForB bool
	}{
		{"inversion caught", s01, Proposal{Family: "MOM_REV", Metric: "SRP", Params: win}, CodeRefused, "F3", []string{"F3", "F5"}, OutcomeRefused, "F3", true, true, false},
		{"metric swap caught", s01, Proposal{Family: "MOM_WZS", Metric: "SRT", Params: win}, CodeRefused, "F4", []string{"F4", "F5"}, OutcomeRefused, "F4", false, true, false},
		{"hallucinated", s01, Proposal{Family: "TREND_FOLLOW", Metric: "SRP"}, "F2", "F2", []string{"F2", "F5"}, OutcomeRefused, "F3", false, false, true},
		{"missing parameter", s01, Proposal{Family: "MOM_WZS", Metric: "SRP"}, "F1", "F1", []string{"F1"}, OutcomeRefused, "F0", false, false, true},
		{"undiscoverable refused", u01, Proposal{Family: "MOM_WZS", Metric: "SRP", Params: win}, CodeCorrectRefusal, "F3", []string{"F3", "F5"}, OutcomeRefused, "F3", false, true, false},
		{"malformed", s01, Proposal{Malformed: "no JSON object"}, "F1", "F1", nil, OutcomeMalformed, "", false, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := mustHarness(t, base, fixedProposer{tc.prop})
			a, err := h.Verified(ctx, tc.p, 1)
			if err != nil {
				t.Fatal(err)
			}
			c := a.Classification
			if c.Code != tc.codeA || c.Outcome != tc.outcomeA || c.Intent != tc.intentA || c.Inversion != tc.inversionA {
				t.Errorf("verified: %+v", c)
			}
			if tc.gateCodesA != nil && (a.Gate == nil || a.Gate.Admitted || !slices.Equal(c.Codes, tc.gateCodesA)) {
				t.Errorf("verified gate %+v codes %v, want refusal with %v", a.Gate, c.Codes, tc.gateCodesA)
			}
			if a.Execution != nil {
				t.Error("a refused proposal reached the executor")
			}
			b, err := h.AssertionOnly(ctx, tc.p, 1)
			if err != nil {
				t.Fatal(err)
			}
			if b.Classification.Code != tc.codeB {
				t.Errorf("assertion-only: %+v", b.Classification)
			}
			if (b.Schema != nil && !b.Schema.Passed) != tc.schemaFailedForB {
				t.Errorf("assertion-only schema %+v", b.Schema)
			}
			if (b.Gate != nil && b.Gate.Admitted) != tc.gateReachedByB {
				t.Errorf("assertion-only gate %+v", b.Gate)
			}
			if b.Gate != nil && b.Gate.Admitted && (b.Discovery == nil || b.Discovery.From != "proposal") {
				t.Errorf("assertion-only evidence %+v, want self-evidence from the proposal", b.Discovery)
			}
		})
	}
}

// TestEndToEnd runs prompts through both pipelines on the real server with
// the real executor, twice on two fresh servers, and checks outcomes and
// that the result files are byte-identical.
func TestEndToEnd(t *testing.T) {
	ctx := context.Background()
	ids := []string{"S01", "C05", "U01", "A03"}
	var prompts []Prompt
	for _, id := range ids {
		prompts = append(prompts, promptByID(t, id))
	}
	set := &PromptSet{Name: "e2e", Prompts: prompts}
	var files [][]byte
	for run := 0; run < 2; run++ {
		h := mustHarness(t, startServer(t, true).URL, ScriptedProposer{})
		requireExecutor(t, h)
		trials, err := h.Run(ctx, prompts, 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		res := NewResults(h, set, "sha256:e2e", 2, trials)
		b, err := MarshalResults(res)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, b)
		if run > 0 {
			continue
		}
		s01a := trialOf(t, trials, "S01", PipelineVerified, 1)
		s01b := trialOf(t, trials, "S01", PipelineAssertionOnly, 2)
		if s01a.Classification.Code != "F0" || s01a.Execution.Status != ExecRan || s01a.Execution.Admissible != 3 || len(s01a.Execution.Audit) != 0 {
			t.Errorf("S01 verified: %+v %+v", s01a.Classification, s01a.Execution)
		}
		if s01a.Execution.Hash == "" || s01a.Execution.Hash != s01b.Execution.Hash {
			t.Errorf("the same request gave execution hashes %q and %q", s01a.Execution.Hash, s01b.Execution.Hash)
		}
		if c := trialOf(t, trials, "C05", PipelineVerified, 1).Classification; c.Code != "F0" {
			t.Errorf("C05 verified: %+v", c)
		}
		if c := trialOf(t, trials, "C05", PipelineAssertionOnly, 1).Classification; c.Code != "F4" {
			t.Errorf("C05 assertion-only (Sharpe for Sortino): %+v", c)
		}
		if c := trialOf(t, trials, "U01", PipelineVerified, 1).Classification; c.Code != CodeCorrectRefusal {
			t.Errorf("U01 verified: %+v", c)
		}
		if c := trialOf(t, trials, "U01", PipelineAssertionOnly, 1).Classification; c.Code != "F3" {
			t.Errorf("U01 assertion-only: %+v", c)
		}
		if c := trialOf(t, trials, "A03", PipelineVerified, 1).Classification; c.Code != CodeAbstained {
			t.Errorf("A03 verified: %+v", c)
		}
		for _, tr := range trials {
			if tr.Proposer != ScriptedLabel || tr.Proposal.Proposer != ScriptedLabel {
				t.Fatalf("trial %s %s not labelled scripted", tr.Prompt, tr.Pipeline)
			}
		}
		if res.FisherP != nil || res.ProposerKind != "scripted" {
			t.Errorf("scripted results: kind %q p %v", res.ProposerKind, res.FisherP)
		}
		md := Markdown(res, prompts)
		if !strings.Contains(md, ScriptedLabel) || !strings.Contains(md, "not an LLM result") {
			t.Error("the markdown does not say the proposer was scripted")
		}
	}
	if !bytes.Equal(files[0], files[1]) {
		t.Error("two scripted runs gave different result files")
	}
	if bytes.Contains(files[0], []byte("127.0.0.1")) {
		t.Error("the result file holds the server address")
	}
}

// TestRiskFilterF6: a negative window is well typed, so the gate admits
// it; the executor's risk filter rejects every morphism.
func TestRiskFilterF6(t *testing.T) {
	h := mustHarness(t, startServer(t, true).URL, fixedProposer{Proposal{Family: "MOM_WZS", Metric: "SRP", Params: map[string]any{"window": -5}}})
	requireExecutor(t, h)
	tr, err := h.Verified(context.Background(), promptByID(t, "S01"), 1)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Classification.Code != "F6" || tr.Execution == nil || tr.Execution.Admissible != 0 || len(tr.Execution.Rejected) == 0 {
		t.Errorf("%+v %+v", tr.Classification, tr.Execution)
	}
}
