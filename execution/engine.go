package execution

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/groundgate/groundgate/artifacts"
	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/execution/frame"
	"github.com/groundgate/groundgate/execution/kernel"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
)

// The risk predicates, in the order a morphism's rejected list names them.
const (
	PredResolves    = "resolves"
	PredData        = "data"
	PredNonNegative = "non_negative"
	PredLeverage    = "leverage"
	PredSchema      = "schema"
	PredBounds      = "bounds"
	PredDomain      = "domain"
)

// Predicates lists the risk predicates in order.
func Predicates() []string {
	return []string{PredResolves, PredData, PredNonNegative, PredLeverage, PredSchema, PredBounds, PredDomain, PredPre, PredPost}
}

// morphismBody is the hashed form of a morphism: the family's canonical
// expression, every bound parameter and the registry hash. The metric and
// the data are left out on purpose: changing the metric or the data must
// not change the morphisms (SPEC §6).
type morphismBody struct {
	Expr     string           `json:"expr"`
	Params   map[string]Value `json:"params"`
	Registry hashing.Digest   `json:"registry"`
}

// runOptions tune how the grid runs; none of them changes a result.
type runOptions struct {
	workers int
	// planWorkers run the nodes of one level of a plan at once (set by
	// runGrid from the workers the grid itself leaves idle).
	planWorkers int
	share       bool // share node values between the morphisms of the grid
	artifacts   bool // encode and digest the output artifacts
	turnover    bool // keep the turnover series (the metric is TRN)
	// sink, when not nil, stores each morphism's artifacts as soon as it
	// has run (Execute); nil only digests them (Replay).
	sink *blobSink
	// memoBytes bounds the node values kept for sharing; zero means
	// defaultMemoBytes.
	memoBytes int64
	// legacyCSV encodes the artifacts as the previous release did, to
	// replay its footprints; executions always use EncodingSeries.
	legacyCSV bool
	// contracts are checked as each morphism runs; stage holds each
	// morphism's own artifacts until the metric's postconditions pass.
	contracts *contracts
	stage     bool
}

// outcome is a computed execution. Its artifacts are already in the sink
// (if any); the footprint is what remains to store.
type outcome struct {
	fp *Footprint
}

// input is everything an execution is a function of.
type input struct {
	snap      *registry.Snapshot
	req       ground.Request
	grounding hashing.Digest
	policies  *hashing.Digest // the policy set that admitted the grounding
	src       source
	risk      RiskPolicy
	maxBytes  int64
	budget    Budget // zero: unbounded (tests and benchmarks)
	// contracts caches compiled contracts across executions; nil compiles
	// afresh.
	contracts *contract.Cache
}

// Budget bounds one execution; a zero field is no bound.
type Budget struct {
	MaxCells     int64 // admissible morphisms × data rows × data columns
	MaxHeldBytes int64 // series held until scoring
}

// check refuses a grid over the budget, naming the budget, the estimate
// and what to change. staged says the morphisms' artifacts are held too,
// until the metric's postconditions have passed on the score: the P&L of
// each, and the whole weights table of the packed ones (weights no recipe
// derives).
func (b Budget) check(morphisms, rows, cols int, turnover, staged bool, packed int) error {
	cells := int64(morphisms) * int64(rows) * int64(cols)
	if b.MaxCells > 0 && cells > b.MaxCells {
		return fmt.Errorf("%w: %d admissible morphisms × %d rows × %d columns = %d cells, the budget is %d cells: narrow the parameter grid or the data",
			ErrOverBudget, morphisms, rows, cols, cells, b.MaxCells)
	}
	series := int64(1)
	if turnover {
		series++
	}
	if staged {
		series++
	}
	held := int64(morphisms) * int64(rows) * 8 * series
	if staged {
		held += int64(packed) * int64(rows) * int64(cols) * 8
	}
	if b.MaxHeldBytes > 0 && held > b.MaxHeldBytes {
		return fmt.Errorf("%w: %d admissible morphisms × %d rows hold %d bytes of series until scoring, the budget is %d bytes: narrow the parameter grid or the data",
			ErrOverBudget, morphisms, rows, held, b.MaxHeldBytes)
	}
	return nil
}

// familyNodes is about how many kernel nodes a family's plan has (MOM_WZS:
// 7): MaxCells was measured on such plans.
const familyNodes = 8

// checkPipeline refuses, before any plan is compiled, a pipeline grid
// whose work is over MaxCells: every grid point × rows × columns × its
// plan's size in family plans (nodes / 8, at least 1). A 32-step plan of
// 144 nodes counts 18 times a family's.
func (b Budget) checkPipeline(points, nodes, rows, cols int) error {
	units := int64(max(1, (nodes+familyNodes-1)/familyNodes))
	cells := int64(points) * int64(rows) * int64(cols) * units
	if b.MaxCells > 0 && cells > b.MaxCells {
		return fmt.Errorf("%w: %d morphisms × %d rows × %d columns × %d (a plan of %d kernel nodes, %d per family plan) = %d cells, the budget is %d cells: narrow the parameter grid, the pipeline or the data",
			ErrOverBudget, points, rows, cols, units, nodes, familyNodes, cells, b.MaxCells)
	}
	return nil
}

// checkPlans refuses a grid whose plans would hold more node values at
// once than the budget allows: the most any plan holds at a time (a long
// pipeline on a wide file holds many series), times rows × columns × 8
// bytes, times the morphisms running at once.
func (b Budget) checkPlans(jobs []gridJob, rows, cols, workers int) error {
	live := 0
	for _, j := range jobs {
		live = max(live, j.plan.live)
	}
	running := min(max(workers, 1), len(jobs))
	held := int64(live) * int64(rows) * int64(cols) * 8 * int64(running)
	if b.MaxHeldBytes > 0 && held > b.MaxHeldBytes {
		return fmt.Errorf("%w: each plan holds up to %d series of %d rows × %d columns while it runs, %d at once: %d bytes, the budget is %d bytes: shorten the pipeline or narrow the data",
			ErrOverBudget, live, rows, cols, running, held, b.MaxHeldBytes)
	}
	return nil
}

// resolveFamily finds the request's family in snap by name and kind.
func resolveFamily(snap *registry.Snapshot, name string) (registry.Capability, error) {
	c, ok := snap.Get(name)
	if !ok {
		return c, fmt.Errorf("%w: family %q is not in registry version %d", ErrDrift, name, snap.Version())
	}
	if c.Kind != registry.KindFamily {
		return c, fmt.Errorf("%w: %q is a %s in registry version %d, not a family", ErrDrift, name, c.Kind, snap.Version())
	}
	return c, nil
}

// resolveMetric finds the metric by name and kind and maps its expression
// "(k p)" (or "(trn w)") to the engine's metric kernel K and its
// orientation to a direction.
func resolveMetric(snap *registry.Snapshot, name string) (MetricRef, kernel.Metric, error) {
	c, ok := snap.Get(name)
	if !ok {
		return MetricRef{}, kernel.Metric{}, fmt.Errorf("%w: metric %q is not in registry version %d", ErrDrift, name, snap.Version())
	}
	if c.Kind != registry.KindMetric {
		return MetricRef{}, kernel.Metric{}, fmt.Errorf("%w: %q is a %s in registry version %d, not a metric", ErrDrift, name, c.Kind, snap.Version())
	}
	if c.Impl.Engine != Engine {
		return MetricRef{}, kernel.Metric{}, fmt.Errorf("%w: metric %q runs on engine %q, not %s", ErrNotRunnable, name, c.Impl.Engine, Engine)
	}
	e, err := parseExpr(c.Impl.Expr)
	if err != nil || e.kind != exprList || len(e.args()) != 1 || e.args()[0].kind != exprSymbol {
		return MetricRef{}, kernel.Metric{}, fmt.Errorf("%w: metric %q: expression %q is not (kernel input)", ErrNotRunnable, name, clipText(c.Impl.Expr))
	}
	km, err := kernel.LookupMetric(strings.ToUpper(e.head()))
	if err != nil {
		return MetricRef{}, kernel.Metric{}, fmt.Errorf("%w: metric %q: the engine has no metric kernel %q", ErrNotRunnable, name, e.head())
	}
	ref := MetricRef{CapRef: CapRef{Name: c.Name, Kind: c.Kind, Identity: c.Identity}, Kernel: km.Name}
	switch c.Sem.Orientation {
	case registry.OrientMaximize:
		km.Higher, ref.Direction = true, "maximize"
	case registry.OrientMinimize:
		km.Higher, ref.Direction = false, "minimize"
	default:
		return MetricRef{}, kernel.Metric{}, fmt.Errorf("%w: metric %q has orientation %q, not maximize or minimize", ErrNotRunnable, name, c.Sem.Orientation)
	}
	return ref, km, nil
}

// compute runs one execution from its inputs. It reads nothing but its
// arguments and writes nothing: Execute stores what it returns, Replay
// compares it. Errors: ErrDrift, ErrNotRunnable, ErrBadData, context errors, and internal
// failures; a morphism that cannot run is a rejection, not an error.
func compute(ctx context.Context, in input, ro runOptions) (*outcome, error) {
	st, err := resolveStrategy(in.snap, in.req)
	if err != nil {
		return nil, err
	}
	metric, km, err := resolveMetric(in.snap, in.req.Metric)
	if err != nil {
		return nil, err
	}
	cs := &contracts{cache: in.contracts, familyName: st.head.Name, metricName: metric.Name}
	if cs.cache == nil {
		cs.cache = contract.NewCache(64)
	}
	if cs.family, err = cs.program(st.head); err != nil {
		return nil, err
	}
	metCap, _ := in.snap.Get(in.req.Metric) // resolved above
	if cs.metric, err = cs.program(metCap); err != nil {
		return nil, err
	}

	var f *frame.Frame
	if in.src.missing == "" {
		if f, err = parseSource(in.src, in.maxBytes); err != nil {
			return nil, err
		}
	}

	axes := st.axes()
	points := expand(axes)
	if st.pipe != nil && f != nil && len(points) > 0 {
		// A pipeline's plans can be many times a family's: charge its
		// work before compiling every grid point.
		if cp, err := st.compile(in.snap, points[0]); err == nil {
			if err := in.budget.checkPipeline(len(points), len(cp.plan.Nodes), f.Len(), f.Width()); err != nil {
				return nil, err
			}
		}
	}
	var base contract.State // request and data facts; nil when the data is missing
	if f != nil {
		base = dataFacts(f, hashing.SumBLAKE3(in.src.raw))
		for k, v := range requestFacts(in.req.Family, in.req.Metric, in.req.Data) {
			base[k] = v
		}
	}
	states := make([]contract.State, len(points))

	fp := &Footprint{
		Grounding:        in.grounding,
		Policies:         in.policies,
		Request:          in.req,
		RegistryVersion:  in.snap.Version(),
		Registry:         in.snap.Registry(),
		Family:           st.family,
		Metric:           metric,
		Risk:             in.risk,
		Morphisms:        make([]Morphism, len(points)),
		Plans:            map[string]Plan{},
		ArtifactEncoding: EncodingSeries,
	}
	if st.pipe != nil {
		fp.Steps = st.pipe.info()
	}
	if ro.legacyCSV {
		fp.ArtifactEncoding = EncodingCSV
	}
	if fp.Request.Params == nil {
		fp.Request.Params = map[string]ground.Param{}
	}
	plans := make([]*compiled, len(points))
	logs := make([]verdictLog, len(points))
	for i, pt := range points {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		m := Morphism{Index: i, Params: pt, Rejected: []string{}, Reasons: []Reason{}, Artifacts: []Artifact{}}
		if m.Hash, err = hashing.SHA256Of(st.morphismBody(pt, in.snap.Registry())); err != nil {
			return nil, fmt.Errorf("morphism %d: hash: %w", i, err)
		}
		fails := map[string][]string{}
		if un := st.unrunnable(); len(un) > 0 {
			fails[PredResolves] = append(fails[PredResolves], un...)
		} else {
			cp, err := st.compile(in.snap, pt)
			var ce *compileError
			switch {
			case errors.As(err, &ce):
				fails[PredResolves] = append(fails[PredResolves], ce.msg)
			case err != nil:
				return nil, fmt.Errorf("morphism %d: %w", i, err)
			default:
				plans[i] = cp
				d := cp.digest
				m.Plan = &d
				if prog, err := hashing.Parse(cp.keys[cp.plan.Output]); err == nil {
					m.Program = &prog
				}
				fp.Plans[d.String()] = cp.plan
				if st.pipe != nil {
					if m.Steps, err = stepDigests(cp); err != nil {
						return nil, fmt.Errorf("morphism %d: %w", i, err)
					}
				}
				fails[PredDomain] = append(fails[PredDomain], cp.domain...)
				for _, lev := range cp.lev {
					if lev > in.risk.MaxLeverage {
						fails[PredLeverage] = append(fails[PredLeverage], fmt.Sprintf("leverage %s exceeds the bound %s", formatNumber(lev), formatNumber(in.risk.MaxLeverage)))
					}
				}
				if f != nil {
					for _, col := range cp.columns {
						if f.Index(col) < 0 {
							fails[PredData] = append(fails[PredData], fmt.Sprintf("%s has no column %q (it has %s)", in.src.path, col, nameList(f.Names())))
						}
					}
				}
			}
		}
		if in.src.missing != "" {
			fails[PredData] = append([]string{fmt.Sprintf("%q: %s", in.src.path, in.src.missing)}, fails[PredData]...)
		}
		fails[PredNonNegative] = st.negative(pt)
		fails[PredSchema], fails[PredBounds] = schemaFailures(axes, pt)
		if base != nil {
			// Preconditions over the request and the data: the family's
			// (a pipeline's output step's), then each operation's with the
			// parameters its plan binds.
			states[i] = withParams(base, st.head.ContractParams(), st.headParams(pt))
			lg := &logs[i]
			lg.add(cs.family.Eval(st.head.Name, contract.Pre, states[i], bound(states[i])), codePre)
			if cp := plans[i]; cp != nil {
				for _, call := range cp.calls {
					p, err := cs.program(call.cap)
					if err != nil {
						return nil, err
					}
					st := withParams(base, call.cap.ContractParams(), call.params)
					lg.add(p.Eval(call.cap.Name, contract.Pre, st, bound(st)), codePre)
				}
			}
			fails[PredPre] = lg.failed
			lg.failed = nil
		}
		setVerdict(&m, fails)
		fp.Morphisms[i] = m
	}

	// Run the admissible morphisms.
	var jobs []gridJob
	for i, m := range fp.Morphisms {
		if m.Admissible {
			jobs = append(jobs, gridJob{index: i, plan: plans[i], state: states[i]})
		}
	}
	dates, days := []string{}, []int32{}
	if f != nil {
		dates, days = dateStrings(f), dateDays(f)
	}
	ro.turnover = km.Name == "TRN"
	ro.contracts = cs
	ro.stage = len(cs.metric.Post) > 0
	if f != nil {
		packed := 0
		for _, j := range jobs {
			if !recipeShaped(j.plan) {
				packed++
			}
		}
		if err := in.budget.check(len(jobs), f.Len(), f.Width(), ro.turnover, ro.stage, packed); err != nil {
			return nil, err
		}
		if err := in.budget.checkPlans(jobs, f.Len(), f.Width(), ro.workers); err != nil {
			return nil, err
		}
		if ro.sink != nil {
			if err := ro.sink.add(ctx, in.src.raw); err != nil {
				return nil, fmt.Errorf("store the source data: %w", err)
			}
		}
	}
	outs := runGrid(ctx, f, days, jobs, ro)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for j := range outs {
		if outs[j].fatal != nil {
			return nil, fmt.Errorf("morphism %d: %w", jobs[j].index, outs[j].fatal)
		}
	}
	var pnls [][]float64
	ran := map[int]*gridOut{}
	for j, job := range jobs {
		o := &outs[j]
		m := &fp.Morphisms[job.index]
		logs[job.index].verdicts = append(logs[job.index].verdicts, o.verdicts...)
		if o.err != nil {
			setVerdict(m, map[string][]string{PredDomain: {"run: " + o.err.Error()}})
			if fp.RunErrors == nil {
				fp.RunErrors = map[int]error{}
			}
			fp.RunErrors[job.index] = o.err
			continue
		}
		if o.reject != "" {
			setVerdict(m, map[string][]string{o.reject: o.reasons})
			continue
		}
		ran[job.index] = o
		pnls = append(pnls, o.pnl)
	}

	// Score over the common evaluation window, then select.
	start := kernel.CommonStart(pnls...)
	if start >= 0 {
		s, from, to := start, dates[start], dates[len(dates)-1]
		fp.Evaluation = Evaluation{Start: &s, From: &from, To: &to, Rows: len(dates) - start}
	}
	scores := make([]float64, len(fp.Morphisms))
	for i := range fp.Morphisms {
		m := &fp.Morphisms[i]
		scores[i] = math.NaN()
		o, ok := ran[i]
		if !ok {
			continue
		}
		var v float64
		if km.Name == "TRN" {
			v, err = kernel.TRNOf(o.pnl, o.tv, start)
		} else {
			v, err = kernel.Evaluate(km.Name, o.pnl, nil, start)
		}
		if err != nil {
			return nil, fmt.Errorf("morphism %d: score: %w", i, err)
		}
		// The metric's postconditions decide whether the score, and with
		// it the morphism's staged artifacts, are committed.
		lg := &logs[i]
		if !lg.add(cs.metric.Eval(metric.Name, contract.Post, scoreFacts(o.state, v, fp.Evaluation.Rows), nil), codePost) {
			setVerdict(m, map[string][]string{PredPost: lg.failed})
			continue
		}
		for _, b := range o.staged {
			if err := ro.sink.addPrepared(ctx, b); err != nil {
				return nil, fmt.Errorf("morphism %d: store its artifacts: %w", i, err)
			}
		}
		m.Score = ScoreOf(v)
		scores[i] = m.Score.Float()
		m.Artifacts = append(m.Artifacts, o.arts...)
		for k := range m.Steps {
			if k < len(o.steps) {
				d := o.steps[k]
				m.Steps[k].Output = &d
			}
		}
	}
	for i := range fp.Morphisms {
		fp.Morphisms[i].Contracts = logs[i].verdicts
	}
	if best := kernel.Best(km, scores); best >= 0 {
		h, b := fp.Morphisms[best].Hash, best
		fp.Selected, fp.SelectedIndex = &h, &b
	}

	fp.Data = dataInfo(in.src, f, dates)
	fp.Capabilities = usedCapabilities(st.family, metric.CapRef, fp.Plans)
	if fp.Dependencies, err = hashing.SHA256Of(fp.Capabilities); err != nil {
		return nil, err
	}
	if fp.Layers, err = fp.computeLayers(); err != nil {
		return nil, err
	}
	fp.Hash = fp.Layers.Hash()
	return &outcome{fp: fp}, nil
}

// setVerdict records the failing predicates in Predicates order.
func setVerdict(m *Morphism, fails map[string][]string) {
	for _, p := range Predicates() {
		if len(fails[p]) == 0 {
			continue
		}
		m.Rejected = append(m.Rejected, p)
		for _, d := range fails[p] {
			m.Reasons = append(m.Reasons, Reason{Predicate: p, Detail: d})
		}
	}
	m.Admissible = len(m.Rejected) == 0
}

// dateStrings formats a frame's dates once per execution.
func dateStrings(f *frame.Frame) []string {
	out := make([]string, f.Len())
	for i, d := range f.Dates() {
		out[i] = d.String()
	}
	return out
}

func dataInfo(src source, f *frame.Frame, dates []string) DataInfo {
	d := DataInfo{Path: src.path, Digest: hashing.SumBLAKE3(src.raw), Bytes: len(src.raw), Missing: src.missing, Columns: []string{}}
	if f != nil {
		d.Rows = f.Len()
		d.Columns = append(d.Columns, f.Names()...)
		if len(dates) > 0 {
			from, to := dates[0], dates[len(dates)-1]
			d.From, d.To = &from, &to
		}
	}
	return d
}

// usedCapabilities is the union of the family, the metric and every plan's
// capabilities, sorted by name then identity.
func usedCapabilities(family *CapRef, metric CapRef, plans map[string]Plan) []CapRef {
	seen := map[CapRef]bool{metric: true}
	if family != nil {
		seen[*family] = true
	}
	for _, p := range plans {
		for _, c := range p.Capabilities {
			seen[c] = true
		}
	}
	out := make([]CapRef, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Identity.String() < out[j].Identity.String()
	})
	return out
}

// gridJob is one admissible morphism to run.
type gridJob struct {
	index int
	plan  *compiled
	state contract.State // request, data and parameter facts
}

// gridOut is what running one morphism leaves: the portfolio P&L, the
// turnover series when the metric needs it, and its artifacts' digests.
// The weights are encoded, stored and dropped as the morphism finishes, so
// a large grid never holds them all.
type gridOut struct {
	pnl, tv []float64
	arts    []Artifact
	err     error // the morphism could not run: a rejection
	fatal   error // storing its artifacts failed: the execution fails
	// Contracts: the verdicts of the family's postconditions and the
	// metric's preconditions; reject names the failing phase's predicate
	// and reasons its failures. state is the verified state the metric's
	// postconditions extend; staged holds the artifacts until they pass.
	verdicts []ClauseVerdict
	reject   string
	reasons  []string
	state    contract.State
	staged   []artifacts.Blob
	// steps holds a pipeline's step value digests, in plan step order.
	steps []hashing.Digest
}

// runGrid runs the jobs on a pool of workers. Every job's output lands at
// its own index, so the result does not depend on which worker ran what,
// or when.
func runGrid(ctx context.Context, f *frame.Frame, days []int32, jobs []gridJob, ro runOptions) []gridOut {
	outs := make([]gridOut, len(jobs))
	if len(jobs) == 0 {
		return outs
	}
	var m *memo
	if ro.share {
		m = newMemo(jobs, cmp.Or(ro.memoBytes, defaultMemoBytes))
	}
	workers := min(max(ro.workers, 1), len(jobs))
	// Workers the grid leaves idle go to the levels of each plan: a single
	// wide pipeline runs its independent branches at once.
	ro.planWorkers = max(ro.workers/len(jobs), 1)
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var bufs buffers // this worker's encoding buffers, reused
			if m == nil && ro.planWorkers <= 1 && f != nil {
				// Node values shared by the grid, or computed by several
				// goroutines, are never recycled.
				bufs.series = newSeriesPool(f.Len())
			}
			for j := range next {
				outs[j] = runOne(ctx, f, days, &bufs, jobs[j], m, ro)
				m.release(jobs[j].plan)
			}
		}()
	}
feed:
	for j := range jobs {
		select {
		case next <- j:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	return outs
}

// runOne runs one plan and keeps what the execution needs of its result.
// A panic in a kernel is turned into an error: the morphism is rejected,
// the server keeps going.
func runOne(ctx context.Context, f *frame.Frame, days []int32, bufs *buffers, job gridJob, m *memo, ro runOptions) (out gridOut) {
	cp := job.plan
	defer func() {
		if r := recover(); r != nil {
			out = gridOut{err: &PanicError{Value: r}}
		}
	}()
	vals, err := evalPlanPool(ctx, f, cp, m, ro.planWorkers, bufs.series)
	if err != nil {
		return gridOut{err: err}
	}
	defer func() { // once all of the run is read, encoded and digested
		for _, v := range vals {
			bufs.series.recycle(v)
		}
	}()
	res := vals[cp.plan.Output].res
	for _, st := range cp.plan.Steps {
		var v rval
		if st.Value.Node != nil {
			v = vals[*st.Value.Node]
		}
		out.steps = append(out.steps, valueDigest(v, st.Value))
	}
	if cs := ro.contracts; cs != nil {
		// The family's postconditions, then the metric's preconditions,
		// on the verified result, before anything of it is kept.
		lo, hi := signalRange(cp, vals)
		out.state = resultFacts(job.state, res, lo, hi, bufs.series)
		var lg verdictLog
		switch {
		case !lg.add(cs.family.Eval(cs.familyName, contract.Post, out.state, nil), codePost):
			out.reject = PredPost
		case !lg.add(cs.metric.Eval(cs.metricName, contract.Pre, out.state, nil), codePre):
			out.reject = PredPre
		}
		out.verdicts, out.reasons = lg.verdicts, lg.failed
		if out.reject != "" {
			return out
		}
	}
	out.pnl = res.PnL
	if ro.turnover {
		out.tv = kernel.Turnover(res.Weights, len(res.PnL))
	}
	out.arts = []Artifact{}
	switch {
	case !ro.artifacts:
	case ro.legacyCSV:
		out.arts = legacyArtifacts(days, res)
	default:
		var deriv *weightsDerivation
		if d, ok := derivationOf(cp, vals, days); ok {
			deriv = &d
		}
		var stage *[]artifacts.Blob
		if ro.stage {
			stage = &out.staged
		}
		out.arts, out.fatal = artifactsOf(ctx, bufs, days, res, deriv, ro.sink, stage)
	}
	return out
}

// firstFailure returns the error one worker would have reported: the
// first failing node in plan order. Node failed first in its level (the
// lowest index there); nodes before it in plan order that later levels
// hold have not run: run them, in order (their arguments come before them
// and are still held), and report the first of them that fails.
func firstFailure(failed int, evalNode func(int), errs []error, done []bool) error {
	for i := range failed {
		if done[i] || errs[i] != nil {
			if errs[i] != nil {
				return errs[i]
			}
			continue
		}
		evalNode(i)
		if errs[i] != nil {
			return errs[i]
		}
		done[i] = true
	}
	return errs[failed]
}

// evalPlan evaluates a plan's nodes in order over the frame, sharing node
// values through m when it is not nil, and returns every node's value; the
// output node's holds a result.
//
// With workers > 1 the nodes run level by level — a node's level is one
// more than the deepest of its arguments' — and the nodes of one level in
// parallel: independent branches of a wide pipeline at once. Every value
// lands at its own index and, on a failure, the first failing node in plan
// order is the one reported (firstFailure), so the result is the same with
// one worker.
func evalPlan(ctx context.Context, f *frame.Frame, cp *compiled, m *memo, workers int) ([]rval, error) {
	return evalPlanPool(ctx, f, cp, m, workers, nil)
}

// evalPlanPool is evalPlan taking the outputs of the kernels that can write
// into a given series from pool, and giving back each value once no later
// node reads it. It recycles nothing when values are shared (m) or
// computed by several goroutines (workers > 1).
func evalPlanPool(ctx context.Context, f *frame.Frame, cp *compiled, m *memo, workers int, pool *seriesPool) ([]rval, error) {
	if m != nil || workers > 1 {
		pool = nil
	}
	nodes := cp.plan.Nodes
	vals := make([]rval, len(nodes))
	errs := make([]error, len(nodes))
	done := make([]bool, len(nodes)) // evaluated without error
	evalNode := func(i int) {
		n := &nodes[i]
		defer func() {
			// A kernel's panic fails its morphism, whichever goroutine
			// ran it.
			if r := recover(); r != nil {
				errs[i] = &PanicError{Op: n.Op, Value: r}
			}
		}()
		eval := func() (rval, error) {
			args := make([]rval, len(n.Args))
			for k, a := range n.Args {
				if a.Node != nil {
					args[k] = vals[*a.Node]
				}
			}
			if run, ok := pooledRunners[n.Op]; ok && pool != nil {
				return run(f, n, args, pool)
			}
			run, ok := runners[n.Op]
			if !ok {
				return rval{}, fmt.Errorf("no runner for %q", n.Op)
			}
			return run(f, n, args)
		}
		var err error
		if m != nil {
			vals[i], err = m.get(cp.keys[i], eval)
		} else {
			vals[i], err = eval()
		}
		if err != nil {
			errs[i] = fmt.Errorf("%s: %w", n.Op, err)
		}
	}
	levels := cp.levels
	if workers <= 1 {
		levels = planLevels(nodes, 1)
	}
	for li, level := range levels {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(level) == 1 {
			evalNode(level[0])
		} else {
			var wg sync.WaitGroup
			next := make(chan int)
			for range min(workers, len(level)) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range next {
						evalNode(i)
					}
				}()
			}
			for _, i := range level {
				next <- i
			}
			close(next)
			wg.Wait()
		}
		for _, i := range level {
			if errs[i] != nil {
				return nil, firstFailure(i, evalNode, errs, done)
			}
			done[i] = true
		}
		if cp.last != nil { // plans built by compilePlan are scheduled
			if workers > 1 {
				release(vals, cp.last, li)
			} else {
				for i, l := range cp.lastSeq {
					if l == li {
						pool.recycle(vals[i])
					}
				}
				release(vals, cp.lastSeq, li)
			}
		}
	}
	if vals[cp.plan.Output].res == nil {
		return nil, fmt.Errorf("the plan's output is not a result")
	}
	return vals, nil
}

// memo shares node values between the plans of one grid: a node with the
// same content key computes the same value. Each entry counts the plans
// still to use it and is dropped when the last one is done, so a sweep
// holds only what its pending morphisms need. What it holds is bounded
// too: a value that would take the memo past limit bytes is handed to the
// morphism that computed it and not kept; later users recompute it. The
// result is the same either way (a node is a pure function of its
// inputs); only the time differs.
type memo struct {
	mu    sync.Mutex
	m     map[string]*memoEntry
	held  int64 // bytes of the values kept
	limit int64
}

type memoEntry struct {
	once sync.Once
	v    rval
	err  error
	kept bool // v is held for later users
	size int64
	refs int
}

// defaultMemoBytes bounds the node values one grid keeps for sharing.
const defaultMemoBytes = 64 << 20

func newMemo(jobs []gridJob, limit int64) *memo {
	m := &memo{m: map[string]*memoEntry{}, limit: limit}
	for _, j := range jobs {
		for _, k := range j.plan.keys {
			e := m.m[k]
			if e == nil {
				e = &memoEntry{}
				m.m[k] = e
			}
			e.refs++
		}
	}
	return m
}

func (m *memo) get(key string, eval func() (rval, error)) (rval, error) {
	m.mu.Lock()
	e := m.m[key]
	m.mu.Unlock()
	if e == nil {
		return eval()
	}
	var mine rval
	computed := false
	e.once.Do(func() {
		defer func() {
			if r := recover(); r != nil {
				e.err = &PanicError{Value: r}
			}
		}()
		mine, e.err = eval()
		computed = true
		size := mine.bytes()
		m.mu.Lock()
		if e.err == nil && m.held+size <= m.limit {
			e.v, e.kept, e.size = mine, true, size
			m.held += size
		}
		m.mu.Unlock()
	})
	switch {
	case e.err != nil:
		return rval{}, e.err
	case computed:
		return mine, nil
	case e.kept:
		return e.v, nil
	}
	return eval()
}

func (m *memo) release(cp *compiled) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range cp.keys {
		if e := m.m[k]; e != nil {
			if e.refs--; e.refs <= 0 {
				m.held -= e.size
				delete(m.m, k)
			}
		}
	}
}

// bytes is the memory a value's series take.
func (v rval) bytes() int64 {
	var n int
	if v.p != nil {
		for _, c := range v.p.cols {
			n += len(c)
		}
	}
	if v.res != nil {
		n += len(v.res.PnL)
		for _, c := range v.res.Weights {
			n += len(c)
		}
	}
	return int64(n) * 8
}

// nameList lists column names for a message, at most 12 of them.
func nameList(names []string) string {
	const max = 12
	if len(names) > max {
		return strings.Join(names[:max], ", ") + fmt.Sprintf(" and %d more", len(names)-max)
	}
	return strings.Join(names, ", ")
}
