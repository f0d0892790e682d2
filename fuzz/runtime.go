package fuzz

// This file is the runtime half of ToolFuzz: every executable capability
// of a registry version is run through the real path — discovery evidence,
// the gate, the executor — on arguments from its own parameter schema and
// on hostile data, and every way it fails without a named rejection is a
// finding, minimised to the smallest case that still fails.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/errkind"
	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/pipeline"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/series"
)

// The runtime rules (kind runtime) and the output-consistency rule (kind
// consistency).
const (
	// RulePanic: the capability panicked — in the gate or the executor,
	// or in a kernel, whose panic the executor turns into a rejection
	// that names no rule (an execution.PanicError).
	RulePanic = "panic"
	// RuleHang: one execution ran past the case deadline.
	RuleHang = "hang"
	// RuleNonFinite: a committed score is NaN or ±Inf, or a committed
	// P&L holds ±Inf (NA is a value the engine defines; an infinity never
	// is), and nothing refused it.
	RuleNonFinite = "non_finite"
	// RuleUnnamedError: the run failed with an error that is no named
	// rejection: not a gate failure code, a contract clause, a risk
	// predicate, or an error with a kind (errkind) that is the request's
	// (a kernel's parameter error, a sentinel the API answers with a 4xx
	// problem, or load).
	RuleUnnamedError = "unnamed_error"
	// RuleOutputsDisagree: one grounding executed twice (or replayed)
	// gave two results.
	RuleOutputsDisagree = "outputs_disagree"
)

// DefaultCaseTimeout bounds one runtime case's execution; past it the
// case is a hang.
const DefaultCaseTimeout = 10 * time.Second

// Discoverer stores discovery evidence the gate can look up
// (discover.Discoverer.Discover).
type Discoverer interface {
	Discover(ctx context.Context, q discover.Query) (discover.Result, error)
}

// Grounder is the gate (ground.Gate).
type Grounder interface {
	Ground(ctx context.Context, p ground.Proposal) (ground.Outcome, error)
}

// Executor runs and replays grounded requests (execution.Executor).
type Executor interface {
	Execute(ctx context.Context, g *ground.Grounded) (*execution.Footprint, error)
	Replay(ctx context.Context, h hashing.Digest) (*execution.ReplayReport, error)
}

// Blobs reads stored artifacts (the executor's artifact store).
type Blobs interface {
	Get(ctx context.Context, d hashing.Digest) ([]byte, error)
}

var (
	_ Discoverer = (*discover.Discoverer)(nil)
	_ Grounder   = (*ground.Gate)(nil)
	_ Executor   = (*execution.Executor)(nil)
)

// Runtime is the real stack the runtime tests run cases through. Gate and
// Exec must read the registry Run is given (its version pinned: a case
// decided at another version stops the run) and Exec's data root must be
// Data. Everything a case stores (evidence, groundings, footprints,
// artifacts) lands in their database: give them a scratch copy
// (internal/app.OpenFuzzRuntime does).
type Runtime struct {
	Discover Discoverer
	Gate     Grounder
	Exec     Executor
	// Blobs reads committed P&Ls to check them for infinities; nil skips
	// that check (scores are still checked).
	Blobs Blobs
	// Data is the data root Exec reads: its base's CSV files are the
	// bundled data, and the hostile frames are written into it.
	Data *DataRoot
	// CaseTimeout bounds one execution; zero means DefaultCaseTimeout.
	CaseTimeout time.Duration
	// Save, when set, is a directory each finding's minimised case is
	// written to as JSON (a RegressionCase named by the finding).
	Save string
}

// RuntimeSummary says what a run's runtime tests covered. For a complete
// run it depends only on the registry version and the data root.
type RuntimeSummary struct {
	// Cases is how many cases the run planned, Ran how many it ran (in
	// seeded order: a run cut short has sampled every capability).
	Cases int `json:"cases"`
	Ran   int `json:"ran"`
	// Executed counts cases the gate admitted and the executor ran;
	// Refused those the gate refused, every failure with its code;
	// Rejected those the executor refused with a named error.
	Executed int `json:"executed"`
	Refused  int `json:"refused"`
	Rejected int `json:"rejected"`
	// Minimising counts the extra cases minimisation ran.
	Minimising int `json:"minimising"`
	// Outcomes counts how the cases ended: "gate:F1" … for the gate's
	// failure codes, "error:CODE" for a named execution error (its
	// problem type, or its kind, in snake case: "error:registry_drift",
	// "error:not_found"), and per
	// morphism "committed" or "rejected:PREDICATE" for each predicate it
	// failed.
	Outcomes map[string]int `json:"outcomes"`
	// Capabilities is how many capabilities had cases; Untested names
	// executable capabilities no case can run, and why.
	Capabilities int      `json:"capabilities"`
	Untested     []string `json:"untested"`
	// Frames are the data the cases ran on; Metrics the metrics they were
	// scored with (rotated, so each is exercised).
	Frames  []string `json:"frames"`
	Metrics []string `json:"metrics"`
}

// RegressionCase is a minimised finding, replayable: the request, the
// data path and (for a generated frame) its bytes.
type RegressionCase struct {
	Kind       string          `json:"kind"`
	Rule       string          `json:"rule"`
	Capability string          `json:"capability"`
	Detail     string          `json:"detail"`
	Request    json.RawMessage `json:"request"`
	Data       string          `json:"data"`
	// CSV is the frame's content when it is generated (under
	// HostileDir); empty for a file of the data root's base.
	CSV string `json:"csv,omitempty"`
}

// rtCase is one runtime case: a capability, the data, a metric and the
// request parameters (the base values of required parameters, and at
// most one parameter varied off its default).
type rtCase struct {
	target registry.Capability
	step   bool // run as a pipeline step
	frame  *frameData
	metric string
	params map[string]ground.Scalar
	varied string // the parameter varied, "" for none
	// consistency: execute twice and replay, comparing the results.
	consistency bool
}

func (c rtCase) with(f func(*rtCase)) rtCase {
	c.params = maps.Clone(c.params)
	f(&c)
	return c
}

// describe says, for a finding, what the case ran.
func (c rtCase) describe() string {
	ps := "defaults"
	if len(c.params) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(c.params)) {
			parts = append(parts, k+"="+c.params[k].String())
		}
		ps = strings.Join(parts, ", ")
		if c.varied == "" {
			ps += " (required parameters; the rest at their defaults)"
		} else {
			ps += " (the rest at their defaults)"
		}
	}
	how := "as a family"
	if c.step {
		how = "as a pipeline step"
	}
	return fmt.Sprintf("%s %s, params %s, data %s, metric %s", c.target.Name, how, ps, c.frame.describe(), c.metric)
}

// obs is one failure a case showed.
type obs struct {
	kind, rule, detail string
}

// attempt is what running one case gave.
type attempt struct {
	obs      []obs
	outcomes []string
	executed bool
	refused  bool
	rejected bool // a named execution error
	stop     error
}

// rules lists the rules the attempt broke, each with its detail.
func (a attempt) rules() []string {
	var rules []string
	for _, o := range a.obs {
		rules = append(rules, o.rule+": "+o.detail)
	}
	return rules
}

// plan is the runtime tests of one registry version: the cases in
// canonical order, and what they need.
type plan struct {
	cases []rtCase
	sizer *registry.Capability // the step that turns a signal into a P&L
	// partner gives a binary step a second series other than the data
	// itself (which many binary kernels refuse as "the same series").
	partner  *registry.Capability
	probe    string // a metric that scores weights, not the P&L
	metrics  []string
	frames   []*frameData
	untested []string
	targets  int
}

// newPlan lists the cases: for each family (by name), every frame with
// its defaults, then each numeric or column parameter varied off its
// default on the walk frame; for each operation and signal, the same as a
// pipeline step — sized into a P&L by the registry's sizing step — on the
// hostile frames and one bundled file (rotating, so every file is used);
// and, for each family, one consistency case on the first bundled file.
func newPlan(snap *registry.Snapshot, hostile, bundled []*frameData) *plan {
	caps := snap.Capabilities()
	sort.Slice(caps, func(i, j int) bool { return caps[i].Name < caps[j].Name })
	p := &plan{}
	for _, c := range caps {
		if c.Kind == registry.KindMetric {
			p.metrics = append(p.metrics, c.Name)
			// "(k w)": a metric of the weights, blind to the P&L.
			if f := strings.Fields(strings.Trim(c.Impl.Expr, "() \t\n")); len(f) == 2 && f[1] == "w" && p.probe == "" {
				p.probe = c.Name
			}
		}
	}
	for i := range caps {
		c := caps[i]
		if !pipeline.Stepable(c.Kind) || p.sizer != nil {
			continue
		}
		if t, err := pipeline.Yields(c); err == nil && t == pipeline.PnL && c.Alg.Arity >= 1 && allDefaulted(c) {
			p.sizer = &caps[i]
		}
	}
	// The partner: the first (by name) stateful operation taking one
	// series to a series with every parameter defaulted — a running
	// transform of the data (a lag, a running sum), so the two inputs
	// differ from row to row.
	for i := range caps {
		c := caps[i]
		if t, err := pipeline.Yields(c); c.Kind == registry.KindOperation && err == nil && t == pipeline.Series && c.Alg.Arity == 1 &&
			slices.Equal(c.Alg.Inputs, []string{"series"}) && c.Sem.Stateful && allDefaulted(c) {
			p.partner = &caps[i]
			break
		}
	}
	p.frames = append(append(p.frames, hostile...), bundled...)
	if len(p.metrics) == 0 {
		for _, c := range caps {
			if c.Kind == registry.KindFamily || pipeline.Stepable(c.Kind) {
				p.untested = append(p.untested, c.Name+": the registry has no metric to score it with")
			}
		}
		return p
	}
	walk := hostile[0]
	k := 0 // rotates the metric over every case of the plan
	next := func() string { k++; return p.metrics[(k-1)%len(p.metrics)] }
	for ti, c := range caps {
		var frames []*frameData
		step := false
		switch {
		case c.Kind == registry.KindFamily:
			frames = p.frames
		case pipeline.Stepable(c.Kind):
			step = true
			if why := p.unrunnable(c); why != "" {
				p.untested = append(p.untested, c.Name+": "+why)
				continue
			}
			frames = hostile
			if len(bundled) > 0 {
				frames = append(slices.Clone(hostile), bundled[ti%len(bundled)])
			}
		default:
			continue
		}
		p.targets++
		for _, f := range frames {
			p.cases = append(p.cases, rtCase{target: c, step: step, frame: f, metric: next(), params: baseParams(c, f)})
		}
		for _, prm := range c.Alg.Params {
			base := baseParams(c, walk)
			for _, v := range variations(prm, base) {
				ps := maps.Clone(base)
				ps[prm.Name] = v
				p.cases = append(p.cases, rtCase{target: c, step: step, frame: walk, metric: next(), params: ps, varied: prm.Name})
			}
		}
		if c.Kind == registry.KindFamily {
			f := walk
			if len(bundled) > 0 {
				f = bundled[0]
			}
			p.cases = append(p.cases, rtCase{target: c, frame: f, metric: next(), params: baseParams(c, f), consistency: true})
		}
	}
	return p
}

func allDefaulted(c registry.Capability) bool {
	for _, p := range c.Alg.Params {
		if p.Default == nil {
			return false
		}
	}
	return true
}

// unrunnable says why a step capability cannot run in the harness, or "".
func (p *plan) unrunnable(c registry.Capability) string {
	t, err := pipeline.Yields(c)
	switch {
	case err != nil:
		return err.Error()
	case c.Alg.Arity < 1:
		return "it takes no input"
	case t != pipeline.PnL && p.sizer == nil:
		return "no step of the registry turns its output into a P&L"
	}
	for j, in := range c.Alg.Inputs {
		if !pipeline.Accepts(in, pipeline.Frame) && !pipeline.Accepts(in, pipeline.Series) {
			return fmt.Sprintf("its input %d is a %s, which no step yields", j+1, in)
		}
	}
	return ""
}

// baseParams are the values of a capability's required parameters (those
// without a default): a window of 20, a number 1 (each within the
// bounds), the frame's columns in order.
func baseParams(c registry.Capability, f *frameData) map[string]ground.Scalar {
	out := map[string]ground.Scalar{}
	col := 0
	for _, p := range c.Alg.Params {
		if p.Default != nil {
			continue
		}
		switch p.Type {
		case registry.ParamInt:
			out[p.Name] = ground.Number(clamp(20, p))
		case registry.ParamFloat:
			out[p.Name] = ground.Number(clamp(1, p))
		case registry.ParamColumn:
			cols := f.cols()
			if len(cols) == 0 {
				out[p.Name] = ground.String("C1")
			} else {
				out[p.Name] = ground.String(cols[col%len(cols)])
			}
			col++
		default:
			out[p.Name] = ground.String("x")
		}
	}
	return out
}

func clamp(v float64, p registry.Param) float64 {
	if p.Min != nil && v < *p.Min {
		v = *p.Min
	}
	if p.Max != nil && v > *p.Max {
		v = *p.Max
	}
	if p.Type == registry.ParamInt {
		v = math.Ceil(v)
	}
	return v
}

// variations are the values a parameter is tried with, one at a time off
// its base: each bound and just outside it, huge, tiny, zero and a
// negative number (numbers); empty and a column no frame has (strings);
// and a value of the wrong type. Values equal to the base are left out.
func variations(p registry.Param, base map[string]ground.Scalar) []ground.Scalar {
	var baseNum float64
	var baseStr string
	baseIsStr := false
	switch d := p.Default.(type) {
	case float64:
		baseNum = d
	case string:
		baseStr, baseIsStr = d, true
	default:
		if b, ok := base[p.Name]; ok {
			baseNum, baseStr, baseIsStr = b.Float(), b.Text(), b.IsString()
		}
	}
	var out []ground.Scalar
	switch p.Type {
	case registry.ParamInt, registry.ParamFloat:
		isInt := p.Type == registry.ParamInt
		var vals []float64
		eps := func(b float64) float64 {
			if isInt {
				return 1
			}
			return math.Max(math.Abs(b), 1) * 1e-9
		}
		if p.Min != nil {
			vals = append(vals, *p.Min, *p.Min-eps(*p.Min))
		}
		if p.Max != nil {
			vals = append(vals, *p.Max, *p.Max+eps(*p.Max))
		}
		if isInt {
			vals = append(vals, 1e15, 1, 0, -1)
		} else {
			vals = append(vals, 1e300, 1e-300, 0, -math.Max(math.Abs(baseNum), 1))
		}
		seen := map[float64]bool{}
		for _, v := range vals {
			if seen[v] || (!baseIsStr && v == baseNum) {
				continue
			}
			seen[v] = true
			out = append(out, ground.Number(v))
		}
		out = append(out, ground.String("1")) // the wrong type
	default:
		for _, s := range []string{"", "NO_SUCH_COLUMN"} {
			if baseIsStr && s == baseStr {
				continue
			}
			out = append(out, ground.String(s))
		}
		out = append(out, ground.Number(1)) // the wrong type
	}
	return out
}

// request is the case's FPR: the family, or a pipeline of the step under
// test sized into a P&L (the step alone when it yields one).
func (p *plan) request(c rtCase) ([]byte, []string, error) {
	params := map[string]ground.Scalar{}
	maps.Copy(params, c.params)
	if !c.step {
		b, err := json.Marshal(map[string]any{"family": c.target.Name, "metric": c.metric, "params": params, "data": c.frame.path})
		return b, []string{c.target.Name}, err
	}
	data := func(n int) []string {
		in := make([]string, n)
		for i := range in {
			in[i] = pipeline.Data
		}
		return in
	}
	t, _ := pipeline.Yields(c.target)
	inputs := data(c.target.Alg.Arity)
	names := []string{c.target.Name}
	var steps []map[string]any
	if t != pipeline.PnL && p.partner != nil {
		for j := 1; j < len(inputs); j++ {
			if j < len(c.target.Alg.Inputs) && c.target.Alg.Inputs[j] == "series" {
				inputs[j] = "y"
			}
		}
		if slices.Contains(inputs, "y") {
			steps = append(steps, map[string]any{"id": "y", "capability": p.partner.Name, "params": map[string]any{}, "inputs": data(1)})
			names = append(names, p.partner.Name)
		}
	}
	steps = append(steps, map[string]any{"id": "s", "capability": c.target.Name, "params": params, "inputs": inputs})
	output := "s"
	if t != pipeline.PnL {
		steps = append(steps, map[string]any{"id": "out", "capability": p.sizer.Name, "params": map[string]any{},
			"inputs": append([]string{"s"}, data(p.sizer.Alg.Arity-1)...)})
		names = append(names, p.sizer.Name)
		output = "out"
	}
	b, err := json.Marshal(map[string]any{"pipeline": steps, "output": output, "metric": c.metric, "data": c.frame.path})
	return b, names, err
}

// runner runs the cases of one run.
type runner struct {
	rt       *Runtime
	snap     *registry.Snapshot
	plan     *plan
	evidence map[string]hashing.Digest // by the capabilities a request names
	sum      RuntimeSummary
	stuck    bool // an execution never returned: the executor's slot is held
}

func (rt *Runtime) timeout() time.Duration {
	if rt.CaseTimeout > 0 {
		return rt.CaseTimeout
	}
	return DefaultCaseTimeout
}

// run runs the runtime tests of snap until ctx ends, in the seeded order,
// and returns the findings (minimised) and what the run covered. progress,
// when set, is told after each case, counting from offset.
func (rt *Runtime) run(ctx context.Context, snap *registry.Snapshot, seed uint64, progress func(Progress), offset int) ([]findingBody, *RuntimeSummary, bool, error) {
	if rt.Discover == nil || rt.Gate == nil || rt.Exec == nil || rt.Data == nil {
		return nil, nil, false, errors.New("fuzz: the runtime tests need discovery, the gate, the executor and their data root")
	}
	hostile := hostileFrames()
	for _, f := range hostile {
		rt.Data.Put(f.path, f.csv())
	}
	bundled, err := bundledFrames(rt.Data.Base())
	if err != nil {
		return nil, nil, false, err
	}
	p := newPlan(snap, hostile, bundled)
	r := &runner{rt: rt, snap: snap, plan: p, evidence: map[string]hashing.Digest{}}
	r.sum = RuntimeSummary{Cases: len(p.cases), Capabilities: p.targets, Outcomes: map[string]int{}, Untested: append([]string{}, p.untested...), Metrics: append([]string{}, p.metrics...)}
	for _, f := range p.frames {
		r.sum.Frames = append(r.sum.Frames, f.name)
	}
	found := map[[2]string][]int{} // (capability, rule) → failing case indices
	detail := map[int]map[string]obs{}
	complete := true
	for _, i := range order(len(p.cases), seed^0x52554e54494d45) {
		if ctx.Err() != nil || r.stuck {
			complete = false
			break
		}
		a := r.attempt(ctx, p.cases[i])
		if a.stop != nil {
			if ctx.Err() != nil {
				complete = false
				break
			}
			return nil, nil, false, a.stop
		}
		r.sum.Ran++
		for _, o := range a.outcomes {
			r.sum.Outcomes[o]++
		}
		switch {
		case a.executed:
			r.sum.Executed++
		case a.refused:
			r.sum.Refused++
		case a.rejected:
			r.sum.Rejected++
		}
		for _, o := range a.obs {
			key := [2]string{p.cases[i].target.Name, o.kind + "/" + o.rule}
			found[key] = append(found[key], i)
			if detail[i] == nil {
				detail[i] = map[string]obs{}
			}
			if _, ok := detail[i][o.kind+"/"+o.rule]; !ok {
				detail[i][o.kind+"/"+o.rule] = o
			}
		}
		if progress != nil {
			progress(Progress{Done: offset + r.sum.Ran, Total: offset + len(p.cases)})
		}
	}
	keys := slices.SortedFunc(maps.Keys(found), func(a, b [2]string) int {
		if a[0] != b[0] {
			return strings.Compare(a[0], b[0])
		}
		return strings.Compare(a[1], b[1])
	})
	var out []findingBody
	for _, key := range keys {
		idx := found[key]
		sort.Ints(idx)
		first := p.cases[idx[0]]
		o := detail[idx[0]][key[1]]
		small, mo := first, o
		if complete && !r.stuck && ctx.Err() == nil && o.kind == KindRuntime && o.rule != RuleHang {
			small, mo = r.minimise(ctx, first, o)
		}
		b := findingBody{Kind: o.kind, Capability: key[0], Rule: o.rule,
			Detail: fmt.Sprintf("%s — %s; %d failing case(s)", mo.detail, small.describe(), len(idx))}
		if small.frame != first.frame {
			b.Detail += fmt.Sprintf(" (data minimised from %s)", first.frame.describe())
		}
		var ex []string
		if req, _, err := p.request(small); err == nil {
			ex = append(ex, "request: "+string(req))
		}
		if !small.frame.bundled && len(small.frame.lines) <= 12 {
			ex = append(ex, "data "+small.frame.path+":\n"+string(small.frame.csv()))
		}
		for _, j := range idx[1:] {
			if len(ex) >= 5 {
				break
			}
			ex = append(ex, "also: "+p.cases[j].describe())
		}
		b.Examples = ex
		if rt.Save != "" {
			if err := r.save(b, small); err != nil {
				return nil, nil, false, err
			}
		}
		out = append(out, b)
	}
	sort.Strings(r.sum.Untested)
	if ctx.Err() != nil {
		complete = false
	}
	return out, &r.sum, complete, nil
}

// save writes a finding's minimised case into the Save directory, named
// by the finding's content.
func (r *runner) save(b findingBody, c rtCase) error {
	req, _, err := r.plan.request(c)
	if err != nil {
		return err
	}
	rc := RegressionCase{Kind: b.Kind, Rule: b.Rule, Capability: b.Capability, Detail: b.Detail, Request: req, Data: c.frame.path}
	if !c.frame.bundled {
		rc.CSV = string(c.frame.csv())
	}
	var raw bytes.Buffer
	enc := json.NewEncoder(&raw)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rc); err != nil {
		return err
	}
	id, err := hashing.SHA256Of(b)
	if err != nil {
		return err
	}
	s := id.String()
	name := fmt.Sprintf("%s-%s-%s.json", safeName(b.Capability), b.Rule, s[len(s)-12:])
	if err := os.MkdirAll(r.rt.Save, 0o755); err != nil {
		return fmt.Errorf("fuzz: save cases: %w", err)
	}
	if err := os.WriteFile(filepath.Join(r.rt.Save, name), raw.Bytes(), 0o644); err != nil {
		return fmt.Errorf("fuzz: save cases: %w", err)
	}
	return nil
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, s)
}

// evidenceFor discovers, once per set of capabilities (a family, or a
// step with its partner and the sizing step), evidence naming them and
// every metric by their exact names.
func (r *runner) evidenceFor(ctx context.Context, names []string) (hashing.Digest, error) {
	key := strings.Join(names, "\x00")
	if id, ok := r.evidence[key]; ok {
		return id, nil
	}
	res, err := r.rt.Discover.Discover(ctx, discover.Query{Terms: append(slices.Clone(names), r.plan.metrics...)})
	if err != nil {
		return hashing.Digest{}, fmt.Errorf("fuzz: discover %s: %w", strings.Join(names, ", "), err)
	}
	if res.Version != r.snap.Version() {
		return hashing.Digest{}, fmt.Errorf("fuzz: the registry moved to version %d during a run pinned to %d", res.Version, r.snap.Version())
	}
	r.evidence[key] = res.ID
	return res.ID, nil
}

// attempt runs one case through discovery, the gate and the executor and
// says how it failed, if it did.
func (r *runner) attempt(ctx context.Context, c rtCase) attempt {
	req, names, err := r.plan.request(c)
	if err != nil {
		return attempt{stop: fmt.Errorf("fuzz: encode a case: %w", err)}
	}
	return r.runRequest(ctx, req, names, c.consistency, true)
}

// runRequest grounds a request on evidence naming its capabilities and
// executes it. With probe, a score the metric refused is looked into by
// running the request again with a metric of the weights.
func (r *runner) runRequest(ctx context.Context, req []byte, names []string, consistency, probe bool) (a attempt) {
	ev, err := r.evidenceFor(ctx, names)
	if err != nil {
		return attempt{stop: err}
	}
	out, perr, err := r.ground(ctx, ground.Proposal{Request: req, DiscoveryID: ev, Repair: ground.RepairRules})
	switch {
	case perr != nil:
		return attempt{obs: []obs{{KindRuntime, RulePanic, fmt.Sprintf("the gate panicked: %v", perr)}}}
	case err != nil && ctx.Err() != nil:
		return attempt{stop: ctx.Err()}
	case err != nil:
		return attempt{obs: []obs{{KindRuntime, RuleUnnamedError, fmt.Sprintf("the gate failed with an error, not a decision: %v", err)}}}
	case out.Record.RegistryVersion != r.snap.Version() || out.Record.Registry != r.snap.Registry():
		return attempt{stop: fmt.Errorf("fuzz: the gate decided at registry version %d during a run pinned to %d", out.Record.RegistryVersion, r.snap.Version())}
	}
	if !out.Record.Decision.Admitted {
		for _, f := range out.Record.Decision.Failures {
			if f.Code == "" {
				return attempt{obs: []obs{{KindRuntime, RuleUnnamedError, fmt.Sprintf("the gate refused it without a failure code: %s: %s", f.Field, f.Detail)}}}
			}
		}
		var codes []string
		for _, f := range out.Record.Decision.Failures {
			codes = append(codes, "gate:"+string(f.Code))
		}
		return attempt{refused: true, outcomes: codes}
	}
	fp, perr, hung, err := r.execute(ctx, out.Grounded)
	switch {
	case perr != nil:
		return attempt{obs: []obs{{KindRuntime, RulePanic, fmt.Sprintf("the executor panicked: %v", perr)}}}
	case hung:
		return attempt{obs: []obs{{KindRuntime, RuleHang, fmt.Sprintf("one execution ran past the case deadline of %s", r.rt.timeout())}}}
	case err != nil && ctx.Err() != nil:
		return attempt{stop: ctx.Err()}
	case err != nil && namedExecError(err):
		return attempt{rejected: true, outcomes: []string{"error:" + execErrorName(err)}}
	case err != nil:
		return attempt{obs: []obs{{KindRuntime, RuleUnnamedError, fmt.Sprintf("the execution failed with an error no problem type names: %v", err)}}}
	}
	a = attempt{executed: true}
	for _, m := range fp.Morphisms {
		if m.Admissible {
			a.outcomes = append(a.outcomes, "committed")
		}
		for _, p := range m.Rejected {
			a.outcomes = append(a.outcomes, "rejected:"+p)
		}
	}
	a.obs, a.stop = r.classify(ctx, req, names, fp, probe)
	if a.stop == nil && consistency {
		o, err := r.consistent(ctx, out.Grounded, fp)
		if err != nil {
			a.stop = err
		}
		a.obs = append(a.obs, o...)
	}
	return a
}

// withMetric is a request scored by another metric.
func withMetric(req []byte, metric string) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := hashing.DecodeStrict(req, &m); err != nil {
		return nil, err
	}
	b, err := json.Marshal(metric)
	if err != nil {
		return nil, err
	}
	m["metric"] = b
	return json.Marshal(m)
}

// ground runs the gate, turning a panic into a value.
func (r *runner) ground(ctx context.Context, p ground.Proposal) (out ground.Outcome, panicked any, err error) {
	defer func() {
		if v := recover(); v != nil {
			panicked = v
		}
	}()
	out, err = r.rt.Gate.Ground(ctx, p)
	return out, nil, err
}

// execute runs the executor under the case deadline, turning a panic into
// a value. An execution that does not return within the deadline and a
// grace period is a hang too; its goroutine holds an execution slot, so
// the run stops after it.
func (r *runner) execute(ctx context.Context, g *ground.Grounded) (*execution.Footprint, any, bool, error) {
	cctx, cancel := context.WithTimeout(ctx, r.rt.timeout())
	defer cancel()
	type result struct {
		fp       *execution.Footprint
		err      error
		panicked any
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				done <- result{panicked: v}
			}
		}()
		fp, err := r.rt.Exec.Execute(cctx, g)
		done <- result{fp: fp, err: err}
	}()
	grace := time.NewTimer(r.rt.timeout() + 2*time.Second)
	defer grace.Stop()
	select {
	case res := <-done:
		hung := res.err != nil && ctx.Err() == nil && errors.Is(res.err, context.DeadlineExceeded)
		return res.fp, res.panicked, hung, res.err
	case <-grace.C:
		if ctx.Err() != nil {
			return nil, nil, false, ctx.Err()
		}
		r.stuck = true
		return nil, nil, true, nil
	}
}

// execErrorName names a named execution error for the outcome tally: its
// sentinel's code (the problem type the API answers it with), else its
// kind, in snake case ("error:registry_drift", "error:not_found").
func execErrorName(err error) string {
	name := errkind.CodeOf(err)
	if name == "" {
		name = errkind.Of(err).String()
	}
	return strings.NewReplacer("-", "_", " ", "_").Replace(name)
}

// namedExecError reports an execution error that is a named rejection of
// the request (or load): one with a kind, other than the kinds that are a
// failure of the server or of what it depends on.
func namedExecError(err error) bool {
	switch errkind.Of(err) {
	case errkind.Unknown, errkind.Corrupt, errkind.Unavailable:
		return false
	}
	return true
}

// classify reads an execution's footprint, morphism by morphism.
func (r *runner) classify(ctx context.Context, req []byte, names []string, fp *execution.Footprint, probe bool) ([]obs, error) {
	var out []obs
	add := func(rule, detail string) {
		for _, o := range out {
			if o.rule == rule {
				return
			}
		}
		out = append(out, obs{KindRuntime, rule, detail})
	}
	for i, m := range fp.Morphisms {
		if m.Admissible {
			if _, ok := m.Score.Value(); !ok {
				add(RuleNonFinite, fmt.Sprintf("the %s score is NaN or infinite and nothing refused it", fp.Metric.Name))
				continue
			}
			if d, bad, err := r.infinitePnL(ctx, m); err != nil {
				return nil, err
			} else if bad > 0 {
				add(RuleNonFinite, fmt.Sprintf("the committed P&L holds %d infinite value(s), the first on %s, and nothing refused it", bad, d))
			}
			continue
		}
		// A run's failure is classified by its error (kept in process by
		// the executor), not by the reason's text.
		var panicked *execution.PanicError
		switch runErr := fp.RunErrors[i]; {
		case runErr == nil:
		case errors.As(runErr, &panicked):
			add(RulePanic, "a kernel panicked; the executor rejected the morphism with "+clipDetail("run: "+runErr.Error()))
		case errkind.Of(runErr) == errkind.Unknown:
			add(RuleUnnamedError, "the run failed with an error that names no rule: "+clipDetail("run: "+runErr.Error()))
		}
		scoreRefused := false
		for _, rs := range m.Reasons {
			if rs.Predicate == execution.PredPost && strings.Contains(rs.Detail, " "+fp.Metric.Name+".") {
				scoreRefused = true
			}
		}
		// The metric refused the score: was it the P&L? Re-run with a
		// metric of the weights, which commits the P&L unless the
		// capability's own contract refuses it.
		if scoreRefused && probe && r.plan.probe != "" && r.plan.probe != fp.Metric.Name {
			alt, err := withMetric(req, r.plan.probe)
			if err != nil {
				return nil, err
			}
			a := r.runRequest(ctx, alt, names, false, false)
			if a.stop != nil {
				return nil, a.stop
			}
			for _, o := range a.obs {
				if o.rule == RuleNonFinite {
					add(RuleNonFinite, fmt.Sprintf("%s (scored with %s, whose postcondition refused the score; %s, which scores the weights, shows the P&L)", o.detail, fp.Metric.Name, r.plan.probe))
				}
			}
			probe = false // once per execution
		}
	}
	return out, nil
}

// infinitePnL counts the infinities in a committed morphism's P&L.
func (r *runner) infinitePnL(ctx context.Context, m execution.Morphism) (string, int, error) {
	if r.rt.Blobs == nil {
		return "", 0, nil
	}
	for _, a := range m.Artifacts {
		if a.Name != "pnl" {
			continue
		}
		raw, err := r.rt.Blobs.Get(ctx, a.Digest)
		if err != nil {
			return "", 0, fmt.Errorf("fuzz: read the P&L %s: %w", a.Digest, err)
		}
		t, err := series.Decode(raw)
		if err != nil {
			return "", 0, fmt.Errorf("fuzz: decode the P&L %s: %w", a.Digest, err)
		}
		bad, first := 0, ""
		for _, col := range t.Cols {
			for i, v := range col {
				if math.IsInf(v, 0) {
					if bad == 0 {
						first = time.Unix(int64(t.Dates[i])*86400, 0).UTC().Format(time.DateOnly)
					}
					bad++
				}
			}
		}
		return first, bad, nil
	}
	return "", 0, nil
}

// consistent executes a grounding a second time and replays the first
// execution: both must reproduce it.
func (r *runner) consistent(ctx context.Context, g *ground.Grounded, fp *execution.Footprint) ([]obs, error) {
	var out []obs
	rep, err := r.rt.Exec.Replay(ctx, fp.Hash)
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		out = append(out, obs{KindConsistency, RuleOutputsDisagree, fmt.Sprintf("replaying execution %s failed: %v", fp.Hash, err)})
	case !rep.Match:
		var layers []string
		for _, l := range rep.Layers {
			if !l.Match {
				layers = append(layers, l.Layer)
			}
		}
		out = append(out, obs{KindConsistency, RuleOutputsDisagree, fmt.Sprintf("replaying execution %s recomputed %s: layers %s differ (morphisms %v)",
			fp.Hash, rep.ReplayHash, strings.Join(layers, ", "), rep.Morphisms)})
	}
	again, _, hung, err := r.execute(ctx, g)
	switch {
	case hung:
		out = append(out, obs{KindRuntime, RuleHang, "the second execution of one grounding ran past the case deadline"})
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		out = append(out, obs{KindConsistency, RuleOutputsDisagree, fmt.Sprintf("executing grounding %s a second time failed: %v", g.ID(), err)})
	case again.Hash != fp.Hash || !sameScores(again, fp):
		out = append(out, obs{KindConsistency, RuleOutputsDisagree, fmt.Sprintf("grounding %s executed twice gave executions %s and %s", g.ID(), fp.Hash, again.Hash)})
	}
	return out, nil
}

func sameScores(a, b *execution.Footprint) bool {
	if len(a.Morphisms) != len(b.Morphisms) {
		return false
	}
	for i := range a.Morphisms {
		x, xok := a.Morphisms[i].Score.Value()
		y, yok := b.Morphisms[i].Score.Value()
		if xok != yok || math.Float64bits(x) != math.Float64bits(y) {
			return false
		}
	}
	return true
}

func clipDetail(s string) string {
	const max = 300
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}

// maxTrials bounds the cases minimising one finding runs.
const maxTrials = 96

// minimise looks for a smaller case failing by the same rule: the metric
// that showed it, the varied parameter back at its default, then fewer columns (one at a time), then
// fewer rows (removing runs of rows, halving the run), within maxTrials
// cases.
func (r *runner) minimise(ctx context.Context, c rtCase, o obs) (rtCase, obs) {
	trials := 0
	fails := func(x rtCase) (obs, bool) {
		if trials >= maxTrials || ctx.Err() != nil || r.stuck {
			return obs{}, false
		}
		trials++
		r.sum.Minimising++
		r.rt.Data.Put(x.frame.path, x.frame.csv())
		a := r.attempt(ctx, x)
		if a.stop != nil {
			return obs{}, false
		}
		for _, y := range a.obs {
			if y.kind == o.kind && y.rule == o.rule {
				return y, true
			}
		}
		return obs{}, false
	}
	// A failure the probe metric showed needs no more history than that
	// metric does.
	if pm := r.plan.probe; pm != "" && c.metric != pm && strings.Contains(o.detail, "shows the P&L") {
		if y, ok := fails(c.with(func(x *rtCase) { x.metric = pm })); ok {
			c.metric, o = pm, y
		}
	}
	if c.varied != "" {
		x := c.with(func(x *rtCase) { delete(x.params, x.varied); x.varied = "" })
		for k, v := range baseParams(c.target, c.frame) {
			x.params[k] = v
		}
		if y, ok := fails(x); ok {
			c, o = x, y
		}
	}
	rows := make([]int, len(c.frame.lines))
	for i := range rows {
		rows[i] = i
	}
	cols := make([]int, len(c.frame.cols()))
	for i := range cols {
		cols[i] = i
	}
	src := c.frame
	try := func(rs, cs []int) bool {
		x := c.with(func(x *rtCase) { x.frame = src.subset(rs, cs) })
		if y, ok := fails(x); ok {
			c, o = x, y
			return true
		}
		return false
	}
	for j := 0; j < len(cols) && len(cols) > 1 && trials < maxTrials; {
		cand := append(slices.Clone(cols[:j]), cols[j+1:]...)
		if try(rows, cand) {
			cols = cand
			continue
		}
		j++
	}
	// The longest prefix, then suffix, that can go (by bisection: a
	// failure usually needs a contiguous stretch of history), then runs
	// of rows anywhere.
	for _, suffix := range []bool{false, true} {
		lo, hi := 0, len(rows)-1
		for lo < hi && trials < maxTrials {
			mid := (lo + hi + 1) / 2
			cand := rows[mid:]
			if suffix {
				cand = rows[:len(rows)-mid]
			}
			if try(slices.Clone(cand), cols) {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		if suffix {
			rows = rows[:len(rows)-lo]
		} else {
			rows = rows[lo:]
		}
	}
	for chunk := len(rows) / 2; chunk >= 1 && trials < maxTrials; chunk /= 2 {
		for start := 0; start < len(rows) && trials < maxTrials; {
			end := min(start+chunk, len(rows))
			cand := append(slices.Clone(rows[:start]), rows[end:]...)
			if len(cand) > 0 && try(cand, cols) {
				rows = cand
				continue
			}
			start = end
		}
	}
	return c, o
}

// Check replays a saved regression case on this stack: its frame is
// written into the data root, its request grounded against evidence of its
// capabilities and executed, and the result classified as a run would.
// It returns the rules it still breaks, each with its detail; none means
// the case is now a named rejection or a finite success.
func (rt *Runtime) Check(ctx context.Context, snap *registry.Snapshot, rc RegressionCase) ([]string, error) {
	if rc.CSV != "" {
		if !hostile(rc.Data) {
			return nil, fmt.Errorf("fuzz: case data %q with content must be under %s/", rc.Data, HostileDir)
		}
		rt.Data.Put(rc.Data, []byte(rc.CSV))
	}
	var req ground.Request
	if err := hashing.DecodeStrict(rc.Request, &req); err != nil {
		return nil, fmt.Errorf("fuzz: case request: %w", err)
	}
	var names []string
	if req.IsPipeline() {
		for _, s := range req.Pipeline {
			names = append(names, s.Capability)
		}
	} else {
		names = append(names, req.Family)
	}
	r := &runner{rt: rt, snap: snap, plan: newPlan(snap, hostileFrames(), nil), evidence: map[string]hashing.Digest{}}
	a := r.runRequest(ctx, rc.Request, names, rc.Kind == KindConsistency, true)
	if a.stop != nil {
		return nil, a.stop
	}
	return a.rules(), nil
}

// Case runs one case through the stack, for Go's fuzzing engine and
// tests: capability (a family, an operation or a signal, run as a run
// would) with params (required ones it leaves out take their base values,
// the rest their defaults) on the frame csv (its first line the header;
// written under HostileDir), scored by metric ("" for the first by name).
// It returns the rules the case breaks, each with its detail; none means
// a named rejection or a finite success.
func (rt *Runtime) Case(ctx context.Context, snap *registry.Snapshot, capability string, params map[string]ground.Scalar, csv []byte, metric string) ([]string, error) {
	p := newPlan(snap, hostileFrames(), nil)
	c, ok := snap.Get(capability)
	switch {
	case !ok:
		return nil, fmt.Errorf("fuzz: no capability %q", capability)
	case len(p.metrics) == 0:
		return nil, errors.New("fuzz: the registry has no metric")
	case pipeline.Stepable(c.Kind) && p.unrunnable(c) != "":
		return nil, fmt.Errorf("fuzz: %s cannot run as a step: %s", c.Name, p.unrunnable(c))
	case c.Kind != registry.KindFamily && !pipeline.Stepable(c.Kind):
		return nil, fmt.Errorf("fuzz: %s is a %s, not a family, an operation or a signal", c.Name, c.Kind)
	}
	if metric == "" {
		metric = p.metrics[0]
	}
	head, body, _ := strings.Cut(strings.ReplaceAll(string(csv), "\r\n", "\n"), "\n")
	f := &frameData{name: "case", header: head}
	for _, l := range strings.Split(body, "\n") {
		if l != "" {
			f.lines = append(f.lines, l)
		}
	}
	sum := hashing.SumBLAKE3(csv).String()
	f.path = fmt.Sprintf("%s/case/%s.csv", HostileDir, sum[len(sum)-16:])
	rt.Data.Put(f.path, csv)
	ps := baseParams(c, f)
	maps.Copy(ps, params)
	r := &runner{rt: rt, snap: snap, plan: p, evidence: map[string]hashing.Digest{}}
	a := r.attempt(ctx, rtCase{target: c, step: pipeline.Stepable(c.Kind), frame: f, metric: metric, params: ps})
	if a.stop != nil {
		return nil, a.stop
	}
	return a.rules(), nil
}
