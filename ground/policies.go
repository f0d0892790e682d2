package ground

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/pipeline"
	"github.com/groundgate/groundgate/policy"
	"github.com/groundgate/groundgate/registry"
)

// Policies is where the gate reads the policy set in force.
type Policies interface {
	Current() *policy.Set
}

var _ Policies = (*policy.Store)(nil)

// DataFacts reads the facts of a data source that policies bind
// (/facts/data/…) and the BLAKE3 digest of the bytes they describe. An
// error wrapping ErrNoData is a refusal (the source is missing or
// unreadable); any other error is the server's failure.
type DataFacts interface {
	PolicyFacts(ctx context.Context, path string) (map[string]policy.Value, hashing.Digest, error)
}

// emptySet stands in when the gate has no policy store: every record still
// names the (empty) set that admitted it.
var emptySet = policy.NewSet()

func (g *Gate) policySet() *policy.Set {
	if g.policies == nil {
		return emptySet
	}
	return g.policies.Current()
}

// policyCheck decides the solver-checked policies that govern the request
// (SPEC §10): each refusing policy is one F11 failure with the policy's
// name, the :named assertions of the unsat core and the violating grid
// point.
type policyCheck struct {
	checker *policy.Checker
	facts   DataFacts
	reg     Registry
}

func (*policyCheck) Name() string { return "policies" }

func (c *policyCheck) Check(ctx context.Context, a *Admission) ([]Failure, error) {
	if !a.decoded {
		return nil, nil // the request itself is F1
	}
	r := a.request
	if !r.IsPipeline() {
		var decl []registry.Param
		if fam, ok := a.capability(r.Family); ok && fam.Kind == registry.KindFamily {
			decl = fam.Alg.Params
		}
		return c.decide(ctx, a, a.policies.Applicable(r.Family, r.Metric), r.Family, r.Params, decl, 0, "", "")
	}
	// A pipeline: each step under the policies that govern its operation
	// or signal (by name or kind), reading the step's own parameters; then
	// the whole under those that govern every strategy or its metric
	// (kinds family and metric, the metric's name) — as a family request
	// would be, with no family (/family is empty), the output step's
	// parameters in the family's place (it sizes and trades, as a family's
	// volsize does: leverage, target_vol…) and the whole grid's points.
	var fails []Failure
	var params map[string]Param // the output step's
	var decl []registry.Param
	var outPath, owner string
	points := 1
	for i, s := range r.Pipeline {
		for _, p := range s.Params {
			points = min(points*len(p.Values), MaxGridPoints+1)
		}
		capb, ok := a.capability(s.Capability)
		if !ok {
			continue // F2: reported by grounding
		}
		if s.ID == r.Output {
			params, decl, outPath = s.Params, capb.Alg.Params, pipeline.StepField(i, "")
			owner = fmt.Sprintf("the pipeline's output step %q (%s)", s.ID, capb.Name)
		}
		got, err := c.decide(ctx, a, a.policies.Governing(capb.Name, capb.Kind), capb.Name, s.Params, capb.Alg.Params, 0, pipeline.StepField(i, ""), fmt.Sprintf("step %q (%s)", s.ID, capb.Name))
		if err != nil {
			return nil, err
		}
		fails = append(fails, got...)
	}
	got, err := c.decide(ctx, a, a.policies.Applicable("", r.Metric), "", params, decl, points, "", owner)
	if err != nil {
		return nil, err
	}
	for i := range got {
		if strings.HasPrefix(got[i].Field, "params.") && outPath != "" {
			got[i].Field = outPath + "." + got[i].Field // the output step's parameter
		}
	}
	return append(fails, got...), nil
}

// decide checks the policies cs against one view of the request: the
// capability they govern (the family, or a step's capability, read by
// /family), its parameters and their declared defaults, and (when not
// zero) the grid points of the whole request. A refusal's field is
// prefixed with the step's path, when the view is a step's.
func (c *policyCheck) decide(ctx context.Context, a *Admission, cs []*policy.Compiled, governed string, params map[string]Param, decl []registry.Param, points int, step, owner string) ([]Failure, error) {
	if len(cs) == 0 {
		return nil, nil
	}
	req, infra := c.view(ctx, a, governed, params, decl)
	req.GridPoints, req.Owner = points, owner
	refusals, err := c.checker.Check(ctx, cs, req)
	if *infra != nil {
		return nil, *infra
	}
	if err != nil {
		return nil, err
	}
	fails := make([]Failure, 0, len(refusals))
	for _, r := range refusals {
		f := refusalFailure(r)
		switch {
		case step == "":
		case f.Field == "request":
			f.Field = step
		case f.Field == "family":
			f.Field = step + ".capability"
		case strings.HasPrefix(f.Field, "params."):
			f.Field = step + "." + f.Field
		}
		fails = append(fails, f)
	}
	return fails, nil
}

// view is the policy view of the admission's request: the governed
// capability, the parameters' values and the declared defaults for what
// they leave out, and the data facts on demand. A facts error that is the
// server's own lands in *infra.
func (c *policyCheck) view(ctx context.Context, a *Admission, governed string, params map[string]Param, decl []registry.Param) (policy.Request, *error) {
	var infra error
	r := a.request
	req := policy.Request{Family: governed, Metric: r.Metric, Data: r.Data,
		Params: map[string][]policy.Value{}, Defaults: map[string]policy.Value{}}
	for name, p := range params {
		vs := make([]policy.Value, len(p.Values))
		for i, v := range p.Values {
			if v.IsString() {
				vs[i] = policy.Str(v.Text())
			} else {
				vs[i] = policy.Num(v.Float())
			}
		}
		req.Params[name] = vs
	}
	for _, p := range decl {
		switch d := p.Default.(type) {
		case float64:
			req.Defaults[p.Name] = policy.Num(d)
		case string:
			req.Defaults[p.Name] = policy.Str(d)
		}
	}
	req.Facts = func() (map[string]policy.Value, error) {
		// Read once per decision: every view (a pipeline's steps and the
		// whole) decides on the same bytes, and the source is read once.
		if !a.factsRead {
			a.factsRead = true
			if c.facts == nil {
				a.factsErr = fmt.Errorf("this server reads no data facts at the gate")
			} else {
				var digest hashing.Digest
				a.facts, digest, a.factsErr = c.facts.PolicyFacts(ctx, r.Data)
				if a.factsErr == nil {
					a.data = &digest
				}
			}
		}
		if a.factsErr != nil && c.facts != nil && !errors.Is(a.factsErr, ErrNoData) {
			infra = a.factsErr
		}
		return a.facts, a.factsErr
	}
	return req, &infra
}

// maxWitnessText bounds a refusal's value: the witness in words.
const maxWitnessText = 1024

// refusalFailure words a policy refusal as a gate failure.
func refusalFailure(r policy.Refusal) Failure {
	var point []string
	for _, w := range r.Witness {
		point = append(point, policy.FieldName(w.Pointer)+"="+w.Value.String())
	}
	core := r.Core
	if core == nil {
		core = []string{}
	}
	// The point is bounded by the request's own limits (values of at most
	// 256 bytes, 32 bindings); clip it only as far as a person can read.
	value := strings.Join(point, " ")
	if len(value) > maxWitnessText {
		value = value[:maxWitnessText] + "…"
	}
	return Failure{Field: r.Field(), Code: F11, Codes: []Code{F11}, Value: value,
		Detail: "F11 " + r.Detail, Policy: r.Policy, Core: core, Witness: r.Witness}
}
