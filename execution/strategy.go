package execution

import (
	"fmt"

	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
)

// strategy is what a request runs — a family's expression or a pipeline's
// steps — seen the same way by the grid, the risk filter and the runner.
type strategy struct {
	// head is the capability whose contract governs the whole result: the
	// family, or the pipeline's output step.
	head   registry.Capability
	family *CapRef // nil for a pipeline
	pipe   *pipelineSpec

	famExpr *expr
	perr    error
	canon   string
	req     ground.Request
}

// resolveStrategy resolves the request's family, or its pipeline's steps,
// in snap.
func resolveStrategy(snap *registry.Snapshot, req ground.Request) (*strategy, error) {
	if req.IsPipeline() {
		ps, err := resolvePipeline(snap, req)
		if err != nil {
			return nil, err
		}
		return &strategy{head: ps.caps[ps.layout.Output], pipe: ps, req: req}, nil
	}
	famCap, err := resolveFamily(snap, req.Family)
	if err != nil {
		return nil, err
	}
	st := &strategy{head: famCap, family: &CapRef{Name: famCap.Name, Kind: famCap.Kind, Identity: famCap.Identity}, req: req}
	st.famExpr, st.perr = parseExpr(famCap.Impl.Expr)
	st.canon = famCap.Impl.Expr
	if st.perr == nil {
		st.canon = st.famExpr.String()
	}
	return st, nil
}

func (st *strategy) axes() []gridParam {
	if st.pipe != nil {
		return st.pipe.axes()
	}
	return gridAxes(st.head, st.req)
}

func (st *strategy) morphismBody(pt map[string]Value, reg hashing.Digest) any {
	if st.pipe != nil {
		return st.pipe.morphismBody(pt, reg)
	}
	return morphismBody{Expr: st.canon, Params: pt, Registry: reg}
}

// unrunnable lists why this engine cannot compile the strategy at all.
func (st *strategy) unrunnable() []string {
	if st.pipe != nil {
		return st.pipe.unrunnable()
	}
	switch {
	case st.head.Impl.Engine != Engine:
		return []string{fmt.Sprintf("%s runs on engine %q, not %s", st.head.Name, st.head.Impl.Engine, Engine)}
	case st.perr != nil:
		return []string{fmt.Sprintf("the expression of %s does not parse: %v", st.head.Name, st.perr)}
	}
	return nil
}

func (st *strategy) compile(snap *registry.Snapshot, pt map[string]Value) (*compiled, error) {
	if st.pipe != nil {
		return st.pipe.compile(snap, pt)
	}
	return compilePlan(snap, *st.family, st.famExpr, pt)
}

// headParams are the parameters the head capability's contract reads.
func (st *strategy) headParams(pt map[string]Value) map[string]Value {
	if st.pipe != nil {
		return stepParams(pt, st.pipe.output)
	}
	return pt
}

// negative is the "non_negative" predicate. For a family every numeric
// parameter must be ≥ 0. A pipeline's steps take parameters that are
// negative by meaning (a clip's lower bound, an offset), so there it holds
// its integers — windows, lags, counts — to it, and leaves the rest to the
// bounds their capabilities declare.
func (st *strategy) negative(pt map[string]Value) []string {
	if st.pipe == nil {
		return negativeParams(pt)
	}
	ints := map[string]Value{}
	for i, s := range st.pipe.steps {
		for _, p := range st.pipe.caps[i].Alg.Params {
			if p.Type == registry.ParamInt {
				if v, ok := pt[paramKey(s.ID, p.Name)]; ok {
					ints[paramKey(s.ID, p.Name)] = v
				}
			}
		}
	}
	return negativeParams(ints)
}
