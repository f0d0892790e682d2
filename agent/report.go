package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// Results is the result file of one comparison run. It holds no times and
// no addresses: with the scripted proposer two runs give the same bytes.
type Results struct {
	Experiment string `json:"experiment"`
	// Proposer labels who made every proposal; ProposerKind is "scripted"
	// or "llm".
	Proposer     string `json:"proposer"`
	ProposerKind string `json:"proposer_kind"`
	Note         string `json:"note"`
	Registry     struct {
		Version uint64 `json:"version"`
		Hash    string `json:"hash"`
	} `json:"registry"`
	Prompts struct {
		Name   string `json:"name"`
		Digest string `json:"sha256"`
		Count  int    `json:"count"`
	} `json:"prompts"`
	Reps int `json:"reps"`
	// Executor is "available" or "unavailable" (POST /v1/executions not
	// served: admitted proposals were not executed).
	Executor string `json:"executor"`
	Summary  []Row  `json:"summary"`
	// FisherP is the two-sided Fisher exact p-value of the overall F3
	// counts of the two pipelines; null for the scripted proposer, whose
	// repetitions are identical and so not independent trials.
	FisherP *float64 `json:"fisher_exact_p"`
	Paper   []Row    `json:"paper_table7"`
	Trials  []Trial  `json:"trials"`
}

// Row counts one category (or "overall") of one pipeline.
type Row struct {
	Category string `json:"category"`
	Pipeline string `json:"pipeline"`
	N        int    `json:"n"`
	// Counts maps every headline code seen to its count.
	Counts map[string]int `json:"counts"`
	// F3 counts unwarranted executions (the paper's Table 7 measure):
	// trials whose unintended family reached the executor. Inversions is
	// how many of them were semantic inversions.
	F3         int `json:"f3"`
	Inversions int `json:"f3_inversions"`
	// F3Ran counts the F3 trials of which at least one morphism passed
	// the risk filter and ran.
	F3Ran int `json:"f3_ran"`
	// Reached counts trials that reached the executor; Ran those of which
	// at least one morphism passed the risk filter and ran.
	Reached int `json:"reached_executor"`
	Ran     int `json:"ran"`
	// FalseBlocks counts gate refusals of a proposal that was the
	// intended one.
	FalseBlocks int `json:"false_blocks"`
}

// Rate is F3 / N.
func (r Row) Rate() float64 {
	if r.N == 0 {
		return 0
	}
	return float64(r.F3) / float64(r.N)
}

// PaperTable7 is the paper's Table 7 (Claude Sonnet, T = 0.7, 3 reps):
// F3 counts by category and pipeline.
var PaperTable7 = []Row{
	{Category: "straightforward", Pipeline: PipelineVerified, N: 18, F3: 0},
	{Category: "straightforward", Pipeline: PipelineAssertionOnly, N: 18, F3: 0},
	{Category: "confusable", Pipeline: PipelineVerified, N: 24, F3: 4},
	{Category: "confusable", Pipeline: PipelineAssertionOnly, N: 24, F3: 6},
	{Category: "adversarial", Pipeline: PipelineVerified, N: 24, F3: 5},
	{Category: "adversarial", Pipeline: PipelineAssertionOnly, N: 24, F3: 3},
	{Category: "undiscoverable", Pipeline: PipelineVerified, N: 12, F3: 0},
	{Category: "undiscoverable", Pipeline: PipelineAssertionOnly, N: 12, F3: 12},
	{Category: "multi-family", Pipeline: PipelineVerified, N: 12, F3: 0},
	{Category: "multi-family", Pipeline: PipelineAssertionOnly, N: 12, F3: 0},
	{Category: "overall", Pipeline: PipelineVerified, N: 90, F3: 9},
	{Category: "overall", Pipeline: PipelineAssertionOnly, N: 90, F3: 21},
}

// Summarise counts trials by category and pipeline, categories in table
// order, then "overall".
func Summarise(trials []Trial) []Row {
	var rows []Row
	for _, cat := range append(slices.Clone(Categories), "overall") {
		for _, pl := range Pipelines {
			r := Row{Category: cat, Pipeline: pl, Counts: map[string]int{}}
			for _, t := range trials {
				if t.Pipeline != pl || (cat != "overall" && t.Category != cat) {
					continue
				}
				c := t.Classification
				r.N++
				r.Counts[c.Code]++
				ran := t.Execution != nil && t.Execution.Status == ExecRan && t.Execution.Admissible > 0
				if ran {
					r.Ran++
				}
				switch c.Outcome {
				case OutcomeExecuted, OutcomeAdmitted, OutcomeFailed:
					r.Reached++
					if c.Code == "F3" {
						r.F3++
						if c.Inversion {
							r.Inversions++
						}
						if ran {
							r.F3Ran++
						}
					}
				}
				if c.Code == CodeRefused && c.Intent == "F0" {
					r.FalseBlocks++
				}
			}
			rows = append(rows, r)
		}
	}
	return rows
}

// FisherExact is the two-sided Fisher exact test of the 2×2 table
// [[a, n1-a], [b, n2-b]]: the probability, under independence with the
// margins fixed, of a table at most as likely as the observed one.
func FisherExact(a, n1, b, n2 int) float64 {
	k, n := a+b, n1+n2
	lf := func(x int) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
	logp := func(x int) float64 {
		return lf(k) - lf(x) - lf(k-x) + lf(n-k) - lf(n1-x) - lf(n-k-n1+x) - (lf(n) - lf(n1) - lf(n-n1))
	}
	obs := logp(a)
	p := 0.0
	for x := max(0, k-n2); x <= min(k, n1); x++ {
		if lx := logp(x); lx <= obs+1e-7 {
			p += math.Exp(lx)
		}
	}
	return math.Min(p, 1)
}

// MarshalResults is the canonical file form: indented JSON, map keys
// sorted, no HTML escaping, a final newline.
func MarshalResults(r *Results) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

var pipelineLabel = map[string]string{PipelineVerified: "A (verified)", PipelineAssertionOnly: "B (assertion-only)"}

// Markdown renders the tables: F3 by category beside the paper's Table 7,
// every outcome code by category, and each prompt's outcomes.
func Markdown(r *Results, prompts []Prompt) string {
	var b strings.Builder
	b.WriteString("# Assertion-only vs verified: groundgate comparison harness\n\n")
	if r.ProposerKind == "scripted" {
		fmt.Fprintf(&b, "> **Proposer: %s.** These numbers exercise the harness (discovery, Γ, schema validation, execution, classification) end to end. They are not an LLM result and say nothing about how an LLM would do; they are shown beside the paper's Claude Sonnet figures only so the layout can be compared.\n\n", r.Proposer)
	} else {
		fmt.Fprintf(&b, "> **Proposer: %s.**\n\n", r.Proposer)
	}
	fmt.Fprintf(&b, "Prompts: `%s`, %d prompts (%s), %d repetition(s) per prompt and pipeline. Registry version %d (`%s`). Executor: %s.\n\n",
		r.Prompts.Name, r.Prompts.Count, r.Prompts.Digest, r.Reps, r.Registry.Version, r.Registry.Hash, r.Executor)
	if r.Executor != "available" {
		b.WriteString("**The server had no executor: \"reached executor\" means admitted, nothing was run, and F6 cannot occur.**\n\n")
	}
	b.WriteString("Pipeline A (verified): discovery on the prompt → the proposer sees only the discovered families and metrics → Γ → execute. " +
		"Pipeline B (assertion-only): the proposer sees every family and metric → JSON-Schema validation (enums of every registered name) → execute (grounded with discovery run on the proposal's own names).\n\n")

	b.WriteString("## Unwarranted executions (F3) by category, beside the paper's Table 7\n\n")
	b.WriteString("F3 counts trials whose family was not the intended one and still reached the executor (semantic inversions included, in brackets). \"ran\" counts those of which at least one morphism passed the risk filter and ran; the rest were stopped by the risk filter, which knows nothing of intent (e.g. CARRY on a file without futures contract columns).\n\n")
	b.WriteString("| Category | Pipeline | N | F3 | of which ran | F3 rate | paper F3 | paper rate |\n|---|---|---:|---:|---:|---:|---:|---:|\n")
	counts := map[string]int{}
	for _, p := range prompts {
		counts[p.Category]++
	}
	paper := map[string]Row{}
	for _, p := range r.Paper {
		paper[p.Category+"/"+p.Pipeline] = p
	}
	for _, row := range r.Summary {
		cat := strings.ToUpper(row.Category[:1]) + row.Category[1:]
		if row.Category != "overall" {
			cat += fmt.Sprintf(" (%d)", counts[row.Category])
		}
		pp := paper[row.Category+"/"+row.Pipeline]
		f3 := fmt.Sprint(row.F3)
		if row.Inversions > 0 {
			f3 += fmt.Sprintf(" (%d inv.)", row.Inversions)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %d | %s | %d/%d | %s |\n", cat, pipelineLabel[row.Pipeline], row.N, f3, row.F3Ran, pct(row.Rate()), pp.F3, pp.N, pct(pp.Rate()))
	}
	b.WriteString("\n")
	if r.FisherP != nil {
		fmt.Fprintf(&b, "Overall F3, A vs B: two-sided Fisher exact p = %.3f (paper: p = 0.027).\n\n", *r.FisherP)
	} else {
		b.WriteString("No p-value: the scripted proposer's repetitions are identical, so they are not independent trials (the paper's p = 0.027 is for 90 LLM trials per pipeline).\n\n")
	}

	b.WriteString("## Every outcome by category and pipeline\n\n")
	b.WriteString("F0 correct execution · F1 malformed · F2 hallucinated name · F3 unwarranted family executed · F4 metric swap executed · F6 risk filter rejected every morphism · F7/F8 drift / provenance gap found by the audit · refused: Γ refused a well-formed proposal of real names (false blocks: the refused proposal was the intended one) · correct refusal: nothing executed for an undiscoverable prompt · abstained · exec. failed: the executor answered an error.\n\n")
	cols := []string{"F0", "F1", "F2", "F3", "F4", "F6", "F7", "F8", CodeRefused, CodeCorrectRefusal, CodeAbstained, CodeExecutionFailed}
	b.WriteString("| Category | Pipeline | N | reached executor | ran | F0 | F1 | F2 | F3 | F4 | F6 | F7 | F8 | refused (false blocks) | correct refusal | abstained | exec. failed |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, row := range r.Summary {
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d |", row.Category, pipelineLabel[row.Pipeline], row.N, row.Reached, row.Ran)
		for _, c := range cols {
			v := fmt.Sprint(row.Counts[c])
			if c == CodeRefused {
				v += fmt.Sprintf(" (%d)", row.FalseBlocks)
			}
			fmt.Fprintf(&b, " %s |", v)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n## Per prompt\n\n")
	b.WriteString("Each cell: proposal → code, with the number of repetitions that gave it. Expected is the annotated intent.\n\n")
	b.WriteString("| Prompt | Category | Expected | A (verified): discovered families | A (verified) | B (assertion-only) |\n|---|---|---|---|---|---|\n")
	for _, p := range prompts {
		exp := "none/" + p.ExpectedMetric
		if acc := p.Acceptable(); len(acc) > 0 {
			exp = strings.Join(acc, " or ") + "/" + p.ExpectedMetric
		}
		var disc string
		cells := map[string]string{}
		for _, pl := range Pipelines {
			var parts []string
			n := map[string]int{}
			for _, t := range r.Trials {
				if t.Prompt != p.ID || t.Pipeline != pl {
					continue
				}
				if pl == PipelineVerified && t.Discovery != nil && disc == "" {
					disc = strings.Join(t.Discovery.Families, ", ")
					if disc == "" {
						disc = "—"
					}
				}
				k := trialCell(t)
				if n[k] == 0 {
					parts = append(parts, k)
				}
				n[k]++
			}
			for i, k := range parts {
				parts[i] = fmt.Sprintf("%s ×%d", k, n[k])
			}
			cells[pl] = strings.Join(parts, "; ")
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", p.ID, p.Category, exp, disc, cells[PipelineVerified], cells[PipelineAssertionOnly])
	}
	return b.String()
}

func trialCell(t Trial) string {
	c := t.Classification
	what := "abstain"
	switch {
	case t.Proposal.Malformed != "":
		what = "malformed"
	case !t.Proposal.Abstain:
		what = t.Proposal.Family + "/" + t.Proposal.Metric
	}
	code := c.Code
	if c.Inversion && code == "F3" {
		code += " (inv.)"
	}
	if (c.Code == CodeRefused || c.Code == CodeCorrectRefusal) && len(c.Codes) > 0 {
		code += " [" + strings.Join(c.Codes, ",") + "]"
	}
	return what + " → " + code
}

func pct(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }

// SortTrials orders trials by prompt order, repetition, then pipeline
// order, so that result files do not depend on scheduling.
func SortTrials(trials []Trial, prompts []Prompt) {
	idx := map[string]int{}
	for i, p := range prompts {
		idx[p.ID] = i
	}
	pidx := map[string]int{PipelineVerified: 0, PipelineAssertionOnly: 1}
	sort.SliceStable(trials, func(i, j int) bool {
		a, b := trials[i], trials[j]
		if idx[a.Prompt] != idx[b.Prompt] {
			return idx[a.Prompt] < idx[b.Prompt]
		}
		if a.Rep != b.Rep {
			return a.Rep < b.Rep
		}
		return pidx[a.Pipeline] < pidx[b.Pipeline]
	})
}

// NewResults assembles the result file of a run. digest is the prompt
// file's sha256 ("sha256:…").
func NewResults(h *Harness, set *PromptSet, digest string, reps int, trials []Trial) *Results {
	r := &Results{
		Experiment: "assertion-only vs verified (paper §4.3, Table 7)",
		Proposer:   h.Proposer.Name(),
		Reps:       reps,
		Executor:   "available",
		Paper:      PaperTable7,
		Trials:     trials,
	}
	if r.Proposer == ScriptedLabel {
		r.ProposerKind = "scripted"
		r.Note = "Every proposal was made by the scripted proposer (deterministic, not an LLM): these results test the harness and are not an LLM result."
	} else {
		r.ProposerKind = "llm"
		r.Note = "Every proposal was made by " + r.Proposer + "."
	}
	if !h.Executor {
		r.Executor = "unavailable"
	}
	r.Registry.Version, r.Registry.Hash = h.Catalog.Version, h.Catalog.Registry
	r.Prompts.Name, r.Prompts.Digest, r.Prompts.Count = set.Name, digest, len(set.Prompts)
	SortTrials(r.Trials, set.Prompts)
	r.Summary = Summarise(r.Trials)
	if r.ProposerKind != "scripted" {
		var a, b Row
		for _, row := range r.Summary {
			if row.Category == "overall" && row.Pipeline == PipelineVerified {
				a = row
			} else if row.Category == "overall" {
				b = row
			}
		}
		if a.N > 0 && b.N > 0 {
			p := FisherExact(a.F3, a.N, b.F3, b.N)
			r.FisherP = &p
		}
	}
	return r
}
