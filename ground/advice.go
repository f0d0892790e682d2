package ground

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/pipeline"
)

// RepairLLM asks the gate's Advisor (an LLM) to fix what the named rules
// could not; only where the server has one (WithAdvisor), and only when a
// proposal asks for it.
const RepairLLM RepairMode = "llm"

// RuleLLM names the repairs an Advisor proposed.
const RuleLLM = "llm"

// Advisor proposes a repaired pipeline request: given the request document
// and the gate's failures ("field: detail"), the whole document with the
// failing steps' parameters fixed. It is untrusted: the gate keeps only
// changes to the parameters of steps that failed, records each as a
// repair (rule "llm") and decides the result like any other request.
type Advisor interface {
	ProposeRepair(ctx context.Context, doc []byte, failures []string) ([]byte, error)
}

// AdviceBudget bounds what one request may spend on an Advisor.
type AdviceBudget struct {
	Proposals int           // proposals asked for, at most (default 2)
	Timeout   time.Duration // for all of them together (default 30 s)
}

// WithAdvisor lets proposals ask for RepairLLM: adv is asked, within
// budget, to fix the step parameters the rules could not.
func WithAdvisor(adv Advisor, budget AdviceBudget) Option {
	if budget.Proposals <= 0 {
		budget.Proposals = 2
	}
	if budget.Timeout <= 0 {
		budget.Timeout = 30 * time.Second
	}
	return func(g *Gate) { g.advisor, g.adviceBudget = adv, budget }
}

// advise asks the Advisor to repair a refused pipeline, keeping the gate's
// invariants: only the parameters of steps with an F1 on them may change
// (never a step's id, capability or inputs, never another step, the
// output, metric or data), and every proposal goes through the whole
// gate. It returns the last decision reached; an Advisor's failure or an
// out-of-bounds proposal ends the advice with the decision it had.
func (g *Gate) advise(ctx context.Context, p Proposal, a *Admission, dec Decision, reps []pipeline.Repair) (*Admission, Decision, error) {
	actx, cancel := context.WithTimeout(ctx, g.adviceBudget.Timeout)
	defer cancel()
	for range g.adviceBudget.Proposals {
		faulty := faultySteps(a.failures)
		if len(faulty) == 0 || dec.Admitted {
			break
		}
		var problems []string
		for _, f := range a.failures {
			problems = append(problems, f.Field+": "+f.Detail)
		}
		proposed, err := g.advisor.ProposeRepair(actx, p.Request, problems)
		if err := ctx.Err(); err != nil {
			return nil, dec, err // the client went away
		}
		if err != nil {
			// An outage or the budget spent: the decision stands.
			g.log.WarnContext(ctx, "llm repair failed", "error", err.Error())
			break
		}
		more, ok := localChanges(p.Request, proposed, faulty)
		if !ok {
			g.log.WarnContext(ctx, "llm repair discarded: it changed more than the failing steps' parameters")
			continue
		}
		if len(more) == 0 {
			break
		}
		p.Request = proposed
		all := append(slices.Clone(reps), more...)
		na, nd, err := g.decide(ctx, p, a.snap, a.policies, all)
		if err != nil {
			return nil, dec, err
		}
		a, dec, reps = na, nd, all
	}
	return a, dec, nil
}

// faultySteps lists, per step (by listing index), the parameters an F1
// failure names: all that advice may touch. A request with any failure
// that is not an F1 on a step parameter (grounding, evidence, policies,
// the graph, a step's inputs) is not advised at all: advice fixes a
// parameter's value, never a step's grounding or the plan.
func faultySteps(fs []Failure) map[int]map[string]bool {
	steps := map[int]map[string]bool{}
	for _, f := range fs {
		i, param, ok := stepParam(f.Field)
		if f.Code != F1 || !ok {
			return nil
		}
		if steps[i] == nil {
			steps[i] = map[string]bool{}
		}
		steps[i][param] = true
	}
	return steps
}

// stepParam reads the step and parameter of a "pipeline[i].params.NAME"
// field.
func stepParam(field string) (int, string, bool) {
	rest, ok := strings.CutPrefix(field, "pipeline[")
	if !ok {
		return 0, "", false
	}
	n, tail, ok := strings.Cut(rest, "]")
	if !ok {
		return 0, "", false
	}
	param, ok := strings.CutPrefix(tail, ".params.")
	if !ok || param == "" {
		return 0, "", false
	}
	i, err := strconv.Atoi(n)
	return i, param, err == nil
}

// localChanges compares a proposal with the document it answers and
// returns one repair per parameter it changed; ok is false when it changed
// anything but the parameters faulty names, or turned a value into a list
// (a grid the agent did not propose) or a list into another shape.
func localChanges(before, after []byte, faulty map[int]map[string]bool) ([]pipeline.Repair, bool) {
	var b, a map[string]any
	if hashing.DecodeStrict(before, &b) != nil || decodeJSON(after, &a) != nil {
		return nil, false
	}
	for k := range mergeKeys(a, b) {
		if k != "pipeline" && !reflect.DeepEqual(a[k], b[k]) {
			return nil, false
		}
	}
	bs, _ := b["pipeline"].([]any)
	as, _ := a["pipeline"].([]any)
	if len(as) != len(bs) {
		return nil, false
	}
	var reps []pipeline.Repair
	for i := range bs {
		sb, _ := bs[i].(map[string]any)
		sa, _ := as[i].(map[string]any)
		if sb == nil || sa == nil {
			return nil, false
		}
		for k := range mergeKeys(sa, sb) {
			if k != "params" && !reflect.DeepEqual(sa[k], sb[k]) {
				return nil, false
			}
		}
		pb, _ := sb["params"].(map[string]any)
		pa, _ := sa["params"].(map[string]any)
		if reflect.DeepEqual(pa, pb) {
			continue
		}
		id, _ := sb["id"].(string)
		for _, k := range slices.Sorted(maps.Keys(mergeKeys(pa, pb))) {
			if reflect.DeepEqual(pa[k], pb[k]) {
				continue
			}
			if !faulty[i][k] || !sameShape(pb[k], pa[k]) {
				return nil, false
			}
			reps = append(reps, pipeline.Repair{Step: id, Field: "params." + k, From: pb[k], To: pa[k], Rule: RuleLLM})
		}
	}
	return reps, true
}

func decodeJSON(b []byte, v any) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return errors.New("empty")
	}
	return hashing.DecodeStrict(b, v)
}

func mergeKeys(a, b map[string]any) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// checkMode refuses a mode this gate cannot honour.
func (g *Gate) checkMode(m RepairMode) error {
	if m == RepairLLM && g.advisor == nil {
		return fmt.Errorf("repair %q: %w", m, ErrNoAdvisor)
	}
	return nil
}

// sameShape: a scalar stays a scalar (a missing parameter becomes one), a
// list stays a list of the same length.
func sameShape(before, after any) bool {
	lb, isList := before.([]any)
	la, wasList := after.([]any)
	switch {
	case isList || wasList:
		return isList && wasList && len(la) == len(lb)
	}
	return after != nil
}
