package ground

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/pipeline"
	"github.com/groundgate/groundgate/registry"
)

// Step is one step of a pipeline request (SPEC §11): a registry operation
// or signal applied to its inputs — earlier steps' outputs, or "data" —
// with its parameters (lists span the grid, over the whole pipeline).
type Step struct {
	ID         string           `json:"id"`
	Capability string           `json:"capability"`
	Params     map[string]Param `json:"params"`
	Inputs     []string         `json:"inputs"`
}

// ParamNames returns the step's parameter names, sorted.
func (s Step) ParamNames() []string { return slices.Sorted(maps.Keys(s.Params)) }

// Nodes is the pipeline's step graph, for pipeline.Lay.
func (r Request) Nodes() []pipeline.Node {
	ns := make([]pipeline.Node, len(r.Pipeline))
	for i, s := range r.Pipeline {
		ns[i] = pipeline.Node{ID: s.ID, Inputs: s.Inputs}
	}
	return ns
}

// clone deep-copies a request, so a Grounded never shares maps with its
// callers.
func (r Request) clone() Request {
	r.Params = cloneParams(r.Params)
	if r.Pipeline != nil {
		r.Pipeline = slices.Clone(r.Pipeline)
		for i := range r.Pipeline {
			r.Pipeline[i].Params = cloneParams(r.Pipeline[i].Params)
			r.Pipeline[i].Inputs = slices.Clone(r.Pipeline[i].Inputs)
		}
	}
	r.Repairs = slices.Clone(r.Repairs)
	return r
}

func cloneParams(ps map[string]Param) map[string]Param {
	if ps == nil {
		return nil
	}
	out := maps.Clone(ps)
	for k, p := range out {
		p.Values = slices.Clone(p.Values)
		out[k] = p
	}
	return out
}

// decodePipeline decodes the pipeline and output fields, reporting every
// malformed step field as F1 on its path, then the graph's faults (a
// cycle, a dangling input, an output that is no step, a dead step).
func decodePipeline(raw map[string]jsontext.Value) ([]Step, string, []Failure) {
	var fails []Failure
	var output string
	if v, ok := raw["output"]; !ok {
		fails = append(fails, fail("output", F1, "", "output is missing: name the step whose P&L is scored"))
	} else if err := hashing.DecodePart(v, &output); err != nil || output == "" {
		fails = append(fails, fail("output", F1, "", "output must be a step id"))
	}
	var items []jsontext.Value
	if err := hashing.DecodePart(raw["pipeline"], &items); err != nil {
		return nil, output, append(fails, fail("pipeline", F1, "", "pipeline must be a list of steps {id, capability, params, inputs}"))
	}
	switch {
	case len(items) == 0:
		return nil, output, append(fails, fail("pipeline", F1, "", "the pipeline has no steps"))
	case len(items) > pipeline.MaxSteps:
		return nil, output, append(fails, fail("pipeline", F1, "", fmt.Sprintf("%d steps, at most %d", len(items), pipeline.MaxSteps)))
	}
	steps := make([]Step, len(items))
	points := 1
	stepsOK := true
	for i, item := range items {
		s, sf, n := decodeStep(i, item)
		steps[i] = s
		fails = append(fails, sf...)
		stepsOK = stepsOK && len(sf) == 0
		points = min(points*n, MaxGridPoints+1)
	}
	if points > MaxGridPoints {
		fails = append(fails, fail("pipeline", F1, "", fmt.Sprintf("the steps' parameter lists span more than %d morphisms", MaxGridPoints)))
	}
	if stepsOK && output != "" {
		r := Request{Pipeline: steps}
		if _, probs := pipeline.Lay(r.Nodes(), output); len(probs) > 0 {
			for _, p := range probs {
				fails = append(fails, fail(p.Field, F1, "", p.Detail))
			}
		}
	}
	return steps, output, fails
}

// decodeStep decodes one step; it returns the grid points its lists span.
func decodeStep(i int, item jsontext.Value) (Step, []Failure, int) {
	s := Step{Params: map[string]Param{}}
	field := func(f string) string { return pipeline.StepField(i, f) }
	var raw map[string]jsontext.Value
	if err := hashing.DecodePart(item, &raw); err != nil {
		return s, []Failure{fail(field(""), F1, "", "a step is an object {id, capability, params, inputs}")}, 1
	}
	var fails []Failure
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		switch k {
		case "id", "capability", "params", "inputs":
		default:
			fails = append(fails, fail(field(clip(k)), F1, "", fmt.Sprintf("unknown step field %q (a step has id, capability, params and inputs)", clip(k))))
		}
	}
	str := func(key string, dst *string) {
		v, ok := raw[key]
		switch {
		case !ok:
			fails = append(fails, fail(field(key), F1, "", key+" is missing"))
		case hashing.DecodePart(v, dst) != nil:
			fails = append(fails, fail(field(key), F1, "", key+" must be a string"))
		case *dst == "":
			fails = append(fails, fail(field(key), F1, "", key+" is empty"))
		case len(*dst) > MaxNameLen:
			fails = append(fails, fail(field(key), F1, "", fmt.Sprintf("%s is longer than %d bytes", key, MaxNameLen)))
			*dst = clip(*dst)
		}
	}
	str("id", &s.ID)
	str("capability", &s.Capability)
	if v, ok := raw["inputs"]; !ok {
		fails = append(fails, fail(field("inputs"), F1, "", "inputs is missing: list step ids or \"data\""))
	} else if err := hashing.DecodePart(v, &s.Inputs); err != nil {
		fails = append(fails, fail(field("inputs"), F1, "", "inputs must be a list of step ids or \"data\""))
	} else if len(s.Inputs) > pipeline.MaxInputs {
		fails = append(fails, fail(field("inputs"), F1, "", fmt.Sprintf("%d inputs, at most %d", len(s.Inputs), pipeline.MaxInputs)))
	}
	points := 1
	if v, ok := raw["params"]; ok {
		var pf []Failure
		points, pf = decodeParams(v, field("params"), s.Params)
		fails = append(fails, pf...)
	}
	return s, fails, points
}

// stepCaps resolves each step's capability in the decision's registry
// version: nil where it is not a capability a step can be.
func stepCaps(snap *registry.Snapshot, steps []Step) []*registry.Capability {
	caps := make([]*registry.Capability, len(steps))
	for i, s := range steps {
		if c, ok := snap.Get(s.Capability); ok && pipeline.Stepable(c.Kind) {
			caps[i] = &c
		}
	}
	return caps
}

// groundSteps is the gate proper for a pipeline: every step's capability
// must be an operation or signal (F2 otherwise) that the evidence matched
// (F3: it exists but was not discovered from the researcher's words).
func groundSteps(a *Admission) []Failure {
	var fails []Failure
	var discovered []string
	if a.evidence != nil {
		discovered = stepMatches(a.evidence)
	}
	for i, s := range a.request.Pipeline {
		f := pipeline.StepField(i, "capability")
		if s.Capability == "" || hasFailure(a.failures, f) {
			continue
		}
		c, ok := a.capability(s.Capability)
		switch {
		case !ok:
			fails = append(fails, fail(f, F2, s.Capability, notInRegistry(a.snap, s.Capability, registry.KindOperation, c, false)+" (a step is an operation or a signal)"))
			continue
		case !pipeline.Stepable(c.Kind):
			fails = append(fails, fail(f, F2, s.Capability, fmt.Sprintf("%s is a %s; a step is an operation or a signal", s.Capability, c.Kind)))
			continue
		}
		if a.evidence != nil && !slices.Contains(discovered, s.Capability) {
			fails = append(fails, fail(f, F3, s.Capability, fmt.Sprintf(
				"%s %s exists but was not discovered from the researcher's terms; discovered operations and signals: %s",
				c.Kind, s.Capability, list(discovered))))
		}
	}
	return fails
}

func stepMatches(r *discover.Result) []string {
	var names []string
	for _, m := range r.Matches {
		if pipeline.Stepable(m.Kind) {
			names = append(names, m.Name)
		}
	}
	return dedupe(names)
}

// checkSteps is the schema gate of every step (SPEC §11): each parameter
// declared by the step's capability, of its type and within its bounds
// (every value of a list), every required one given, then the edges —
// inputs as many as the capability's arity, of the types it takes, and an
// output that is a P&L. (A family's out-of-bounds grid point is the risk
// filter's, per morphism; a pipeline's step is refused whole, before
// anything runs. The risk filter checks bounds per morphism too.)
func checkSteps(a *Admission) []Failure {
	steps := a.request.Pipeline
	caps := stepCaps(a.snap, steps)
	var fails []Failure
	for i, s := range steps {
		c := caps[i]
		if c == nil {
			continue // not a step capability: F2, reported by grounding
		}
		schema := map[string]registry.Param{}
		var known []string
		for _, p := range c.Alg.Params {
			schema[p.Name] = p
			known = append(known, p.Name)
		}
		for _, name := range s.ParamNames() {
			f := pipeline.StepField(i, "params."+clip(name))
			spec, ok := schema[name]
			if !ok {
				fails = append(fails, fail(f, F1, "", fmt.Sprintf("%s has no parameter %q; it takes %s", c.Name, clip(name), list(known))))
				continue
			}
			for k, v := range s.Params[name].Values {
				if msg := spec.Type.Mismatch(v.IsString(), v.Float()); msg != "" {
					fails = append(fails, fail(f, F1, v.String(), fmt.Sprintf("value %d: %s (%s.%s is %s)", k, msg, c.Name, name, spec.Type)))
					continue
				}
				if msg := outOfBounds(spec, v); msg != "" {
					fails = append(fails, fail(f, F1, v.String(), fmt.Sprintf("value %d: %s", k, msg)))
				}
			}
		}
		for _, p := range c.Alg.Params {
			if _, given := s.Params[p.Name]; !given && p.Default == nil {
				fails = append(fails, fail(pipeline.StepField(i, "params."+p.Name), F1, "", fmt.Sprintf("%s requires parameter %q (%s)", c.Name, p.Name, p.Doc)))
			}
		}
	}
	l, probs := pipeline.Lay(a.request.Nodes(), a.request.Output)
	if len(probs) > 0 {
		return fails // reported by the request check
	}
	for _, p := range pipeline.CheckEdges(a.request.Nodes(), caps, l.Output) {
		fails = append(fails, fail(p.Field, F1, "", p.Detail))
	}
	return fails
}

// markPartialSteps adds F5 to a pipeline's grounding failures (F2, F3 on
// a step's capability, F4 on the metric) when at least one of the names
// it grounds — its steps' capabilities and its metric — was grounded.
func markPartialSteps(fs []Failure, names int) {
	if hasFailure(fs, "discovery") {
		return // grounding says nothing when the evidence was refused
	}
	var grounding []int
	for i, f := range fs {
		if f.Code == F2 || f.Code == F3 || f.Code == F4 {
			grounding = append(grounding, i)
		}
	}
	if len(grounding) == 0 {
		return
	}
	// Every name a grounding failure did not hit was grounded; the fields
	// that name a capability are the metric and each step's capability.
	failed := map[string]bool{}
	for _, f := range fs {
		// A capability field that is malformed (F1) grounds nothing either.
		if f.Code == F2 || f.Code == F3 || f.Code == F4 || (f.Code == F1 && strings.HasSuffix(f.Field, ".capability")) {
			failed[f.Field] = true
		}
	}
	if len(failed) >= names {
		return // nothing grounded: not partial
	}
	for _, i := range grounding {
		if !slices.Contains(fs[i].Codes, F5) {
			fs[i].Codes = append(fs[i].Codes, F5)
		}
	}
}

// outOfBounds says how a numeric value breaks its declared bounds, if it
// does.
func outOfBounds(spec registry.Param, v Scalar) string {
	if v.IsString() {
		return ""
	}
	if m := spec.Min; m != nil && v.Float() < *m {
		return fmt.Sprintf("%s is below the minimum %s of %s", v, formatBound(*m), spec.Name)
	}
	if m := spec.Max; m != nil && v.Float() > *m {
		return fmt.Sprintf("%s is above the maximum %s of %s", v, formatBound(*m), spec.Name)
	}
	return ""
}

func formatBound(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
