package execution

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
)

// The statuses of a clause in a contract dry run.
const (
	// StatusHolds and StatusFails: the clause was evaluated.
	StatusHolds = "holds"
	StatusFails = "fails"
	// StatusNotEvaluable: the clause was evaluated and could not be
	// decided (a fact it reads is absent or ill-typed, the cost limit). An
	// execution treats it as failing, and so does the report's holds.
	StatusNotEvaluable = "not evaluable"
	// StatusNeedsData: the clause reads data facts and the dry run did not
	// read the data (or the source could not be read).
	StatusNeedsData = "needs data"
	// StatusNeedsRun: the clause reads result facts, which only running
	// the morphism produces. A dry run never runs one: a bare request
	// never executes (SPEC §6), and a run without grounding would be one.
	StatusNeedsRun = "needs a run"
	// StatusNotChecked: the clause reads a parameter the morphism does not
	// bind (a required one missing, or an operation argument computed from
	// a series); an execution skips it too.
	StatusNotChecked = "not checked"
)

// ContractReport is the answer of a contract dry run: every clause of the
// family's, the operations' and the metric's contracts, per morphism of
// the grid, at the current registry version.
type ContractReport struct {
	RegistryVersion uint64         `json:"registry_version"`
	Registry        hashing.Digest `json:"registry"`
	// Schema names the state schema the clauses are typed against.
	Schema  string         `json:"schema"`
	Request ground.Request `json:"request"`
	Family  CapRef         `json:"family"`
	Metric  CapRef         `json:"metric"`
	// Data describes the source when the dry run was asked to read it;
	// null otherwise.
	Data      *DataCheck      `json:"data"`
	Morphisms []MorphismCheck `json:"morphisms"`
	// Counts tallies the verdicts of every morphism by status.
	Counts map[string]int `json:"counts"`
	// Holds is false when some clause fails or is not evaluable: an
	// execution would reject that morphism. Clauses not evaluated (needs
	// data, needs a run) do not make it false.
	Holds bool `json:"holds"`
}

// DataCheck says what the dry run found at the request's data path.
type DataCheck struct {
	Path string `json:"path"`
	// Missing is why the source could not be read (the reasons a
	// footprint's data.missing gives); data clauses then need data.
	Missing string          `json:"missing,omitempty"`
	Digest  *hashing.Digest `json:"digest,omitempty"`
	Rows    int             `json:"rows"`
	Columns []string        `json:"columns"`
}

// MorphismCheck is one grid point's verdicts, in the order an execution
// checks them: the family's preconditions, each operation's (with the
// parameters its plan binds), the family's postconditions, the metric's
// preconditions and postconditions.
type MorphismCheck struct {
	Index  int              `json:"index"`
	Params map[string]Value `json:"params"`
	// PlanError says why the family's expression does not compile for
	// this point (the "resolves" predicate); the operations' clauses are
	// then unknown and not listed.
	PlanError string        `json:"plan_error,omitempty"`
	Verdicts  []ClauseCheck `json:"verdicts"`
	Holds     bool          `json:"holds"`
}

// ClauseCheck is one clause's dry-run verdict.
type ClauseCheck struct {
	Capability string         `json:"capability"`
	Kind       registry.Kind  `json:"kind"`
	Phase      contract.Phase `json:"phase"`
	Clause     string         `json:"clause"`
	Expr       string         `json:"expr"`
	Status     string         `json:"status"`
	// Message is the clause's message when it fails or is not evaluable.
	Message string `json:"message,omitempty"`
	// Error says why an evaluated clause could not be decided.
	Error string `json:"error,omitempty"`
	// Reads are the state keys the clause names; Values the ones it was
	// evaluated on (empty when it was not evaluated).
	Reads  []string           `json:"reads"`
	Values []contract.Reading `json:"values"`
	// Params are the parameters an operation's plan binds for it.
	Params map[string]Value `json:"params,omitempty"`
}

// CheckContracts evaluates every contract clause a request meets, per
// morphism of its grid, without running anything: at the current registry
// version, with the grid expanded and each morphism's plan compiled as an
// execution would. Clauses over the request alone are always evaluated;
// clauses over data facts only when withData is set (the source is read
// from the data root under the executor's size limit, inside an
// execution slot, since parsing a large file costs what an execution's
// first step does); clauses over results are listed as needing a run.
// The request need not be grounded: nothing runs and nothing is stored.
//
// Errors: registry.ErrNotFound (wrapped) when the family or the metric
// does not resolve by name and kind; ErrNotRunnable for a metric this
// engine cannot run; ErrOverBudget for a grid over ground.MaxGridPoints;
// ErrBadData for a data file that does not parse; ErrBusy; context
// errors.
func (x *Executor) CheckContracts(ctx context.Context, req ground.Request, withData bool) (*ContractReport, error) {
	// A dry run compiles a plan and evaluates every clause for every grid
	// point, and may read the data: an execution's worth of work, so it
	// takes an execution slot (ErrBusy when none frees up in time).
	release, err := x.admit(ctx)
	if err != nil {
		return nil, fmt.Errorf("contracts: %w", err)
	}
	defer release()
	if req.IsPipeline() {
		return nil, fmt.Errorf("contracts: %w: a dry run takes a family request; ground the pipeline instead (its steps' preconditions over the request are checked at the gate, the rest per morphism)", ErrNotRunnable)
	}
	snap := x.reg.Current()
	famCap, err := dryResolve(snap, req.Family, registry.KindFamily)
	if err != nil {
		return nil, err
	}
	metCap, err := dryResolve(snap, req.Metric, registry.KindMetric)
	if err != nil {
		return nil, err
	}
	if _, _, err := resolveMetric(snap, req.Metric); err != nil {
		return nil, fmt.Errorf("contracts: %w", err) // not runnable: no execution could check its clauses
	}
	axes := gridAxes(famCap, req)
	if n := gridSize(axes); n > ground.MaxGridPoints {
		return nil, fmt.Errorf("contracts: %w: the grid spans %d morphisms, at most %d", ErrOverBudget, n, ground.MaxGridPoints)
	}
	cs := &contracts{cache: x.contracts}
	famProg, err := cs.program(famCap)
	if err != nil {
		return nil, err
	}
	metProg, err := cs.program(metCap)
	if err != nil {
		return nil, err
	}

	rep := &ContractReport{
		RegistryVersion: snap.Version(), Registry: snap.Registry(), Schema: contract.SchemaVersion,
		Request: req,
		Family:  CapRef{Name: famCap.Name, Kind: famCap.Kind, Identity: famCap.Identity},
		Metric:  CapRef{Name: metCap.Name, Kind: metCap.Kind, Identity: metCap.Identity},
		Counts:  map[string]int{}, Holds: true,
	}
	if rep.Request.Params == nil {
		rep.Request.Params = map[string]ground.Param{}
	}
	// base holds the facts the dry run knows: the request's, and the
	// data's when it was read.
	base := requestFacts(req.Family, req.Metric, req.Data)
	have := map[contract.Scope]bool{contract.ScopeRequest: true}
	if withData {
		facts, dc, err := x.readFacts(ctx, req.Data)
		if err != nil {
			return nil, err
		}
		rep.Data = dc
		if facts != nil {
			for k, v := range facts {
				base[k] = v
			}
			have[contract.ScopeData] = true
		}
	}

	famExpr, perr := parseExpr(famCap.Impl.Expr)
	family := rep.Family
	scopes := scopeIndex()
	for i, pt := range expand(axes) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		m := MorphismCheck{Index: i, Params: pt, Verdicts: []ClauseCheck{}, Holds: true}
		st := withParams(base, famCap.ContractParams(), pt)
		add := func(capb registry.Capability, prog *contract.Program, ph contract.Phase, st contract.State, params map[string]Value) {
			for _, cl := range prog.Clauses(ph) {
				v := dryVerdict(capb, cl, st, have, scopes)
				v.Params = params
				m.Verdicts = append(m.Verdicts, v)
				if v.Status == StatusFails || v.Status == StatusNotEvaluable {
					m.Holds = false
				}
			}
		}
		add(famCap, famProg, contract.Pre, st, nil)
		switch {
		case famCap.Impl.Engine != Engine:
			m.PlanError = fmt.Sprintf("%s runs on engine %q, not %s", famCap.Name, famCap.Impl.Engine, Engine)
		case perr != nil:
			m.PlanError = fmt.Sprintf("the expression of %s does not parse: %v", famCap.Name, perr)
		default:
			cp, err := compilePlan(snap, family, famExpr, pt)
			var ce *compileError
			switch {
			case errors.As(err, &ce):
				m.PlanError = ce.msg
			case err != nil:
				return nil, fmt.Errorf("contracts: morphism %d: %w", i, err)
			default:
				for _, call := range cp.calls {
					p, err := cs.program(call.cap)
					if err != nil {
						return nil, err
					}
					add(call.cap, p, contract.Pre, withParams(base, call.cap.ContractParams(), call.params), call.params)
				}
			}
		}
		// The metric reads the morphism's state, as in an execution.
		add(famCap, famProg, contract.Post, st, nil)
		add(metCap, metProg, contract.Pre, st, nil)
		add(metCap, metProg, contract.Post, st, nil)
		for _, v := range m.Verdicts {
			rep.Counts[v.Status]++
		}
		rep.Holds = rep.Holds && m.Holds
		rep.Morphisms = append(rep.Morphisms, m)
	}
	return rep, nil
}

// dryResolve finds a capability by name and kind. A name of another kind
// is as absent as an unknown one: there is no family by that name.
func dryResolve(snap *registry.Snapshot, name string, kind registry.Kind) (registry.Capability, error) {
	c, ok := snap.Get(name)
	if !ok {
		return c, fmt.Errorf("contracts: no %s named %q in registry version %d: %w", kind, name, snap.Version(), registry.ErrNotFound)
	}
	if c.Kind != kind {
		return c, fmt.Errorf("contracts: no %s named %q in registry version %d (%q is a %s): %w", kind, name, snap.Version(), name, c.Kind, registry.ErrNotFound)
	}
	return c, nil
}

// gridSize is the number of grid points the axes span, capped just above
// MaxGridPoints so that it cannot overflow.
func gridSize(axes []gridParam) int {
	n := 1
	for _, ax := range axes {
		if len(ax.values) > 0 {
			n = min(n*len(ax.values), ground.MaxGridPoints+1)
		}
	}
	return n
}

// readFacts reads and parses the source (inside CheckContracts' execution
// slot) and returns its data facts. A source that cannot be read is not an error
// (its clauses need data, as an execution's morphisms fail the "data"
// predicate); one that does not parse is ErrBadData.
func (x *Executor) readFacts(ctx context.Context, path string) (contract.State, *DataCheck, error) {
	dc := &DataCheck{Path: path, Columns: []string{}}
	src, err := readSource(x.data, path, x.opt.MaxDataBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("contracts: %w", err)
	}
	if src.missing != "" {
		dc.Missing = src.missing
		return nil, dc, nil
	}
	f, err := parseSource(src, x.opt.MaxDataBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("contracts: %w", err)
	}
	d := hashing.SumBLAKE3(src.raw)
	dc.Digest, dc.Rows = &d, f.Len()
	dc.Columns = append(dc.Columns, f.Names()...)
	return dataFacts(f, d), dc, nil
}

// scopeIndex maps every schema key to its scope; parameters are request
// facts.
func scopeIndex() map[string]contract.Scope {
	out := map[string]contract.Scope{}
	for _, k := range contract.Keys() {
		out[k.Name] = k.Scope
	}
	return out
}

// dryVerdict evaluates one clause when every fact it reads is known, and
// otherwise says what it waits for: a run when it reads results (or the
// score), data when it reads data facts the dry run does not have.
func dryVerdict(capb registry.Capability, cl *contract.Compiled, st contract.State, have map[contract.Scope]bool, scopes map[string]contract.Scope) ClauseCheck {
	v := ClauseCheck{Capability: capb.Name, Kind: capb.Kind, Phase: cl.Phase, Clause: cl.Clause.Name, Expr: cl.Clause.Expr,
		Reads: append([]string{}, cl.Reads...), Values: []contract.Reading{}}
	needsRun, needsData := false, false
	for _, r := range cl.Reads {
		if _, ok := st[r]; !ok && strings.HasPrefix(r, "params.") {
			// As an execution does (bound): an unbound parameter is a
			// rejection of its own, and the clause is not checked.
			v.Status = StatusNotChecked
			return v
		}
		sc, ok := scopes[r]
		if !ok {
			sc = contract.ScopeRequest // params.NAME
		}
		switch {
		case sc == contract.ScopeResult || sc == contract.ScopeScore:
			needsRun = true
		case !have[sc]:
			needsData = true
		}
	}
	switch {
	case needsRun:
		v.Status = StatusNeedsRun
		return v
	case needsData:
		v.Status = StatusNeedsData
		return v
	}
	got := cl.Eval(capb.Name, st)
	v.Values, v.Message, v.Error = cl.Readings(st), got.Message, got.Error
	switch {
	case got.Error != "":
		v.Status = StatusNotEvaluable
	case got.Holds:
		v.Status = StatusHolds
	default:
		v.Status = StatusFails
	}
	return v
}
