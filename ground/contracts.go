package ground

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/pipeline"
	"github.com/groundgate/groundgate/registry"
)

// contractCheck decides the family's and the metric's preconditions that
// read the request alone (SPEC §9): a clause that fails for some point of
// the parameter grid is an F9 failure, reported with the first such point,
// beside the request's other failures. Clauses over data and results are
// the executor's, per morphism.
type contractCheck struct{ cache *contract.Cache }

// MaxContractCost bounds the CEL cost Γ spends on one request's contracts
// (a grid of 4096 points times 64 clauses could otherwise cost seconds):
// past it, the clause being decided is F9, not decidable within the
// budget, and the agent narrows the grid.
const MaxContractCost = 2_000_000

func (contractCheck) Name() string { return "contracts" }

func (c contractCheck) Check(_ context.Context, a *Admission) ([]Failure, error) {
	if !a.decoded {
		return nil, nil // the request itself is F1; its facts are not trustworthy
	}
	var fails []Failure
	budget := uint64(MaxContractCost)
	type subject struct {
		name   string
		kinds  []registry.Kind
		params map[string]Param
		field  string // prefix of the failing field: a step's path
	}
	subjects := []subject{{a.request.Family, []registry.Kind{registry.KindFamily}, a.request.Params, ""}}
	if a.request.IsPipeline() {
		// Each step's preconditions over its own parameters (SPEC §11).
		subjects = subjects[:0]
		for i, s := range a.request.Pipeline {
			subjects = append(subjects, subject{s.Capability, []registry.Kind{registry.KindOperation, registry.KindSignal}, s.Params, pipeline.StepField(i, "")})
		}
	}
	subjects = append(subjects, subject{a.request.Metric, []registry.Kind{registry.KindMetric}, nil, ""})
	for _, want := range subjects {
		capb, ok := a.capability(want.name)
		if !ok || !slices.Contains(want.kinds, capb.Kind) || capb.Sem.Contract.Empty() {
			continue // not a name this check can speak for: other checks report it
		}
		prog, err := c.cache.Program(capb.Identity.String(), string(capb.Kind), capb.ContractParams(), capb.Sem.Contract)
		if err != nil {
			// Every stored contract compiled when it was written; one that
			// no longer does (another CEL release) cannot be checked, and
			// what cannot be checked is not admitted.
			fails = append(fails, Failure{Field: "request", Code: F9, Codes: []Code{F9}, Value: capb.Name,
				Detail: fmt.Sprintf("F9 %s's contract does not compile on this server (%v): it cannot be checked; ask the registry's administrator", capb.Name, err)})
			continue
		}
		for _, cl := range prog.Pre {
			if !cl.RequestOnly {
				continue
			}
			if f, failed := c.decide(a.request, want.params, capb, cl, &budget); failed {
				if want.field != "" && f.Field != "request" {
					f.Field = want.field + "." + f.Field
				} else if want.field != "" {
					f.Field = want.field
				}
				fails = append(fails, f)
			}
		}
	}
	return fails, nil
}

// decide evaluates one request-only clause over every combination of the
// values of the parameters it reads (their request values, or defaults),
// and reports the first combination for which it does not hold.
func (contractCheck) decide(req Request, params map[string]Param, capb registry.Capability, cl *contract.Compiled, budget *uint64) (Failure, bool) {
	base := contract.State{"request.family": req.Family, "request.metric": req.Metric, "request.data": req.Data}
	type axis struct {
		key    string
		values []any
	}
	var axes []axis
	for _, p := range capb.Alg.Params {
		key := contract.ParamKey(p.Name)
		if !reads(cl, key) {
			continue
		}
		var vals []any
		if given, ok := params[p.Name]; ok {
			for _, v := range given.Values {
				if x, ok := p.Type.StateValue(v.IsString(), v.Float(), v.Text()); ok {
					vals = append(vals, x)
				}
			}
		} else if p.Default != nil {
			num, _ := p.Default.(float64)
			str, isStr := p.Default.(string)
			if x, ok := p.Type.StateValue(isStr, num, str); ok {
				vals = append(vals, x)
			}
		}
		if len(vals) == 0 {
			return Failure{}, false // ill-typed or missing: the params check reports it
		}
		axes = append(axes, axis{key, vals})
	}
	// Odometer over the axes; the grid is bounded by MaxGridPoints. One
	// state serves every point (Eval keeps nothing of it): each point
	// sets every axis.
	idx := make([]int, len(axes))
	st := make(contract.State, len(base)+len(axes))
	for k, v := range base {
		st[k] = v
	}
	for {
		for i, ax := range axes {
			st[ax.key] = ax.values[idx[i]]
		}
		v := cl.Eval(capb.Name, st)
		if v.Cost >= *budget {
			return Failure{Field: "request", Code: F9, Codes: []Code{F9}, Value: capb.Name + "." + cl.Clause.Name,
				Detail: fmt.Sprintf("F9 pre %s.%s: deciding the contract over this grid exceeds the gate's budget of %d: narrow the parameter grid", capb.Name, cl.Clause.Name, MaxContractCost)}, true
		}
		*budget -= v.Cost
		if !v.Holds {
			field := "request"
			if len(axes) > 0 {
				field = axes[0].key
			}
			var point []string
			for i, ax := range axes {
				point = append(point, ax.key+"="+contract.Format(ax.values[idx[i]]))
			}
			return Failure{Field: field, Code: F9, Codes: []Code{F9}, Value: clip(strings.Join(point, " ")), Detail: v.Describe(string(F9))}, true
		}
		i := len(axes) - 1
		for ; i >= 0; i-- {
			if idx[i]++; idx[i] < len(axes[i].values) {
				break
			}
			idx[i] = 0
		}
		if i < 0 {
			return Failure{}, false
		}
	}
}

func reads(cl *contract.Compiled, key string) bool {
	for _, r := range cl.Reads {
		if r == key {
			return true
		}
	}
	return false
}
