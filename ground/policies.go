package ground

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/groundgate/groundgate/hashing"
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

// ErrNoData marks a data source whose facts cannot be read because of the
// source itself (missing, outside the root, not parseable).
var ErrNoData = errors.New("no usable data source")

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
	cs := a.policies.Applicable(a.request.Family, a.request.Metric)
	if len(cs) == 0 {
		return nil, nil
	}
	req, infra := c.request(ctx, a)
	refusals, err := c.checker.Check(ctx, cs, req)
	if *infra != nil {
		return nil, *infra
	}
	if err != nil {
		return nil, err
	}
	fails := make([]Failure, 0, len(refusals))
	for _, r := range refusals {
		fails = append(fails, refusalFailure(r))
	}
	return fails, nil
}

// request is the policy view of the admission's request: its values, the
// family's defaults for what it leaves out, and its data facts on demand.
// A facts error that is the server's own lands in *infra.
func (c *policyCheck) request(ctx context.Context, a *Admission) (policy.Request, *error) {
	var infra error
	r := a.request
	req := policy.Request{Family: r.Family, Metric: r.Metric, Data: r.Data,
		Params: map[string][]policy.Value{}, Defaults: map[string]policy.Value{}}
	for name, p := range r.Params {
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
	if fam, ok := a.snap.Get(r.Family); ok && fam.Kind == registry.KindFamily {
		for _, p := range fam.Alg.Params {
			switch d := p.Default.(type) {
			case float64:
				req.Defaults[p.Name] = policy.Num(d)
			case string:
				req.Defaults[p.Name] = policy.Str(d)
			}
		}
	}
	req.Facts = func() (map[string]policy.Value, error) {
		if c.facts == nil {
			return nil, fmt.Errorf("this server reads no data facts at the gate")
		}
		facts, digest, err := c.facts.PolicyFacts(ctx, r.Data)
		if err != nil {
			if !errors.Is(err, ErrNoData) {
				infra = err
			}
			return nil, err
		}
		a.data = &digest
		return facts, nil
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
