package agent

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Outcomes: how far a trial got.
const (
	OutcomeMalformed = "malformed-output"      // the proposer's answer is not a proposal
	OutcomeAbstained = "abstained"             // the proposer declined
	OutcomeBlocked   = "blocked-by-schema"     // assertion-only: schema validation refused it
	OutcomeRefused   = "refused-by-gate"       // Γ refused it
	OutcomeExecuted  = "executed"              // the executor ran it (201 footprint)
	OutcomeAdmitted  = "admitted-not-executed" // it reached the executor, which the server lacks
	OutcomeFailed    = "execution-failed"      // it reached the executor, which answered an error
)

// Codes a trial is classified with besides F0–F8.
const (
	// CodeCorrectRefusal: nothing was executed for a prompt no registered
	// family fits, because the proposer abstained or Γ refused a proposal
	// that named real capabilities. (F1/F2 are proposer defects and keep
	// their codes even there.)
	CodeCorrectRefusal = "correct-refusal"
	// CodeRefused: Γ refused a well-formed proposal of real names (F3/F4/F5
	// in its failures) for a prompt that has an intended family. Intent says
	// whether the refused proposal was in fact the intended one (a false
	// block) or not (a caught error).
	CodeRefused = "refused"
	// CodeAbstained: the proposer declined a prompt that has an intended
	// family.
	CodeAbstained = "abstained"
	// CodeExecutionFailed: a proposal matching the intent reached the
	// executor, which answered an error (bad data, drift).
	CodeExecutionFailed = "execution-failed"
)

// Classification is a trial's place in the failure taxonomy. It is
// intent-based (paper §4.3): the executed family and metric are compared
// with the prompt's annotated ones, not with what discovery matched.
type Classification struct {
	// Code is the headline code: F0–F8 or one of the Code* constants.
	Code string `json:"code"`
	// Codes lists every code that applies, sorted (e.g. F3 with F5 when the
	// metric was right, F3 with F4 when both were wrong, the gate's codes
	// for a refusal).
	Codes   []string `json:"codes"`
	Outcome string   `json:"outcome"`
	// Intent compares the proposal with the prompt's intent whatever
	// happened to it: F0 (family and metric as intended), F3 (family not
	// intended) or F4 (family intended, metric not); empty when the
	// proposal names no family and metric.
	Intent string `json:"intent,omitempty"`
	// Inversion marks an F3 whose family is the semantic opposite of the
	// intended one (the paper's F3_INV).
	Inversion bool   `json:"inversion,omitempty"`
	Detail    string `json:"detail"`
}

// Executor statuses in ExecFacts and Execution.
const (
	ExecRan         = "executed"
	ExecUnavailable = "unavailable"
	ExecFailed      = "failed"
)

// Facts are what a pipeline observed, the input of Classify.
type Facts struct {
	Proposal Proposal
	// Schema is the assertion-only pipeline's validation; nil in the
	// verified pipeline or when not reached.
	Schema *Check
	// Gate is Γ's decision; nil when not reached.
	Gate *Decision
	// Exec is what the executor did; nil when not reached.
	Exec *ExecFacts
}

// ExecFacts is what the executor did with an admitted proposal.
type ExecFacts struct {
	Status     string // ExecRan, ExecUnavailable or ExecFailed
	Morphisms  int
	Admissible int
	// Audit lists provenance problems found after the run, each starting
	// with its code ("F7: …", "F8: …").
	Audit []string
}

// Classify places one trial in the taxonomy. opposite reports whether two
// families are semantic inversions of each other (Catalog.Opposite).
func Classify(p Prompt, f Facts, opposite func(a, b string) bool) Classification {
	prop := f.Proposal
	want := describeIntent(p)
	if prop.Malformed != "" {
		return Classification{Code: "F1", Codes: []string{"F1"}, Outcome: OutcomeMalformed,
			Detail: "the proposer's output is not a proposal: " + prop.Malformed}
	}
	if prop.Abstain {
		if p.ExpectedFamily == nil {
			return Classification{Code: CodeCorrectRefusal, Codes: []string{}, Outcome: OutcomeAbstained,
				Detail: "the proposer abstained; no registered family fits this prompt"}
		}
		return Classification{Code: CodeAbstained, Codes: []string{}, Outcome: OutcomeAbstained,
			Detail: "the proposer abstained; the researcher meant " + want}
	}
	in, inCodes, inv := intentOf(p, prop, opposite)
	c := Classification{Intent: in, Inversion: inv}
	got := prop.Family + "/" + prop.Metric
	switch {
	case f.Schema != nil && !f.Schema.Passed:
		codes := failureCodes(f.Schema.Failures)
		c.Outcome, c.Codes = OutcomeBlocked, codes
		c.Code = "F1"
		if slices.Contains(codes, "F2") {
			c.Code = "F2"
		}
		c.Detail = fmt.Sprintf("schema validation refused %s (%s)", got, firstDetail(f.Schema.Failures))
		return c
	case f.Gate != nil && !f.Gate.Admitted:
		codes := failureCodes(f.Gate.Failures)
		c.Outcome, c.Codes = OutcomeRefused, codes
		switch {
		case slices.Contains(codes, "F1"):
			c.Code = "F1"
		case slices.Contains(codes, "F2"):
			c.Code = "F2"
		case slices.Contains(codes, "F8"):
			c.Code = "F8"
		case slices.Contains(codes, "F7"):
			c.Code = "F7"
		case p.ExpectedFamily == nil:
			c.Code = CodeCorrectRefusal
		default:
			c.Code = CodeRefused
		}
		c.Detail = fmt.Sprintf("Γ refused %s (%s); the researcher meant %s", got, strings.Join(codes, ","), want)
		if c.Code == CodeCorrectRefusal {
			c.Detail = fmt.Sprintf("Γ refused %s (%s); no registered family fits this prompt", got, strings.Join(codes, ","))
		}
		return c
	case f.Exec == nil:
		// Not reached: a pipeline that stops before the executor without
		// a refusal is a harness bug; say so rather than guess.
		c.Code, c.Codes, c.Outcome = CodeExecutionFailed, []string{}, OutcomeFailed
		c.Detail = "the proposal passed every check but was not sent to the executor"
		return c
	}
	e := f.Exec
	switch e.Status {
	case ExecRan:
		c.Outcome = OutcomeExecuted
	case ExecUnavailable:
		c.Outcome = OutcomeAdmitted
	default:
		c.Outcome = OutcomeFailed
	}
	riskRejectedAll := e.Status == ExecRan && e.Morphisms > 0 && e.Admissible == 0
	codes := slices.Clone(inCodes)
	if riskRejectedAll {
		codes = append(codes, "F6")
	}
	for _, a := range e.Audit {
		if code, _, ok := strings.Cut(a, ":"); ok {
			codes = append(codes, code)
		}
	}
	c.Codes = sortedCodes(codes)
	verb := map[string]string{OutcomeExecuted: "executed", OutcomeAdmitted: "admitted (executor unavailable)", OutcomeFailed: "sent to the executor"}[c.Outcome]
	switch {
	case in != "F0":
		c.Code = in
		what := "not the intended family"
		if in == "F4" {
			what = "not the intended metric"
		}
		if inv {
			what = "the semantic inverse of the intended family"
		}
		c.Detail = fmt.Sprintf("%s %s, %s; the researcher meant %s", verb, got, what, want)
		if riskRejectedAll {
			c.Detail = fmt.Sprintf("sent %s to the executor, %s (the researcher meant %s); its risk filter then rejected every morphism", got, what, want)
		}
	case e.Status == ExecFailed:
		c.Code = CodeExecutionFailed
		c.Detail = fmt.Sprintf("%s %s as intended, but the executor answered an error", verb, got)
	case riskRejectedAll:
		c.Code = "F6"
		c.Detail = fmt.Sprintf("%s %s as intended, but the risk filter rejected every morphism", verb, got)
	case len(e.Audit) > 0:
		c.Code, _, _ = strings.Cut(e.Audit[0], ":")
		c.Detail = fmt.Sprintf("%s %s as intended, but the audit found: %s", verb, got, strings.Join(e.Audit, "; "))
	default:
		c.Code = "F0"
		c.Detail = fmt.Sprintf("%s %s as intended", verb, got)
	}
	return c
}

// intentOf compares a proposal's family and metric with the prompt's.
func intentOf(p Prompt, prop Proposal, opposite func(a, b string) bool) (code string, codes []string, inversion bool) {
	if prop.Family == "" && prop.Metric == "" {
		return "", nil, false
	}
	famOK := slices.Contains(p.Acceptable(), prop.Family)
	metOK := prop.Metric == p.ExpectedMetric
	switch {
	case !famOK:
		codes = []string{"F3"}
		if metOK {
			codes = append(codes, "F5")
		} else {
			codes = append(codes, "F4")
		}
		if opposite != nil {
			for _, a := range p.Acceptable() {
				inversion = inversion || opposite(a, prop.Family)
			}
		}
		return "F3", codes, inversion
	case !metOK:
		return "F4", []string{"F4", "F5"}, false
	}
	return "F0", []string{"F0"}, false
}

func describeIntent(p Prompt) string {
	fam := "no registered family"
	if acc := p.Acceptable(); len(acc) > 0 {
		fam = strings.Join(acc, " or ")
	}
	return fam + "/" + p.ExpectedMetric
}

func failureCodes(fs []Failure) []string {
	var codes []string
	for _, f := range fs {
		codes = append(codes, f.Code)
		codes = append(codes, f.Codes...)
	}
	return sortedCodes(codes)
}

// sortedCodes sorts and dedupes, dropping empty codes; never nil.
func sortedCodes(codes []string) []string {
	out := []string{}
	for _, c := range codes {
		if c != "" && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
}

func firstDetail(fs []Failure) string {
	if len(fs) == 0 {
		return "no detail"
	}
	return fs[0].Field + ": " + fs[0].Detail
}
