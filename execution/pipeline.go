package execution

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/zeebo/blake3"

	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/pipeline"
	"github.com/groundgate/groundgate/registry"
)

// StepInfo is one step of a pipeline as the footprint lists it: the
// capability it ran (by identity), its inputs and its layer.
type StepInfo struct {
	ID         string   `json:"id"`
	Capability CapRef   `json:"capability"`
	Inputs     []string `json:"inputs"`
	Layer      int      `json:"layer"`
}

// StepRun is one step of one morphism: the digest of its plan (the step's
// node and everything upstream of it) and of the value it computed.
type StepRun struct {
	ID     string          `json:"id"`
	Plan   hashing.Digest  `json:"plan"`
	Output *hashing.Digest `json:"output"`
}

// PlanStep says which node of a plan holds a step's value: a node, or a
// constant the step folded to (the const operation).
type PlanStep struct {
	ID         string `json:"id"`
	Capability CapRef `json:"capability"`
	Value      Arg    `json:"value"`
}

// pipelineSpec is a pipeline resolved at the execution's registry version.
type pipelineSpec struct {
	steps  []ground.Step
	caps   []registry.Capability
	refs   []CapRef
	bodies []*expr
	layout pipeline.Layout
	output string
}

// resolvePipeline resolves every step's capability by name and kind in
// snap, where the gate found them (ErrDrift otherwise), and lays the
// steps out.
func resolvePipeline(snap *registry.Snapshot, req ground.Request) (*pipelineSpec, error) {
	ps := &pipelineSpec{steps: req.Pipeline, output: req.Output}
	for _, s := range req.Pipeline {
		c, ok := snap.Get(s.Capability)
		if !ok || !pipeline.Stepable(c.Kind) {
			return nil, fmt.Errorf("%w: step %q: %q is not an operation or signal in registry version %d", ErrDrift, s.ID, s.Capability, snap.Version())
		}
		ps.caps = append(ps.caps, c)
		ps.refs = append(ps.refs, CapRef{Name: c.Name, Kind: c.Kind, Identity: c.Identity})
		body, err := parseExpr(c.Impl.Expr)
		if err != nil {
			body = nil // the "resolves" predicate says why, per morphism
		}
		ps.bodies = append(ps.bodies, body)
	}
	l, probs := pipeline.Lay(req.Nodes(), req.Output)
	if len(probs) > 0 {
		return nil, fmt.Errorf("%w: the pipeline's graph is not well formed: %s: %s", ErrDrift, probs[0].Field, probs[0].Detail)
	}
	ps.layout = l
	return ps, nil
}

// info lists the steps for the footprint.
func (ps *pipelineSpec) info() []StepInfo {
	out := make([]StepInfo, len(ps.steps))
	for i, s := range ps.steps {
		out[i] = StepInfo{ID: s.ID, Capability: ps.refs[i], Inputs: append([]string{}, s.Inputs...), Layer: ps.layout.Layer[i]}
	}
	return out
}

// paramKey names a step's parameter on the grid: "step.param".
func paramKey(step, param string) string { return step + "." + param }

// axes lists the pipeline grid's axes in a fixed order: the steps in
// layout order (depth first from the output: the graph's order, not the
// listing's, so listing the steps differently changes no morphism), each
// one's declared parameters in schema order, then any parameter a step
// gives that its capability does not declare (refused by the gate;
// rejected here by "schema"), sorted by name.
func (ps *pipelineSpec) axes() []gridParam {
	var axes []gridParam
	for _, i := range ps.layout.Order {
		id := ps.steps[i].ID
		axes = append(axes, axesOf(ps.caps[i].Alg.Params, ps.steps[i].Params, func(p string) string { return paramKey(id, p) })...)
	}
	return axes
}

// stepParams is the bound parameters of one step at a grid point.
func stepParams(pt map[string]Value, step string) map[string]Value {
	out := map[string]Value{}
	prefix := step + "."
	for k, v := range pt {
		if name, ok := strings.CutPrefix(k, prefix); ok {
			out[name] = v
		}
	}
	return out
}

// pipelineMorphismBody is the hashed form of a pipeline morphism: every
// step's id, canonical expression and inputs (in layout order), the
// output, every bound parameter and the registry hash — like a family's,
// not the metric and not the data.
type pipelineMorphismBody struct {
	Pipeline []stepBody       `json:"pipeline"`
	Output   string           `json:"output"`
	Params   map[string]Value `json:"params"`
	Registry hashing.Digest   `json:"registry"`
}

type stepBody struct {
	ID     string   `json:"id"`
	Expr   string   `json:"expr"`
	Inputs []string `json:"inputs"`
}

func (ps *pipelineSpec) morphismBody(pt map[string]Value, reg hashing.Digest) pipelineMorphismBody {
	b := pipelineMorphismBody{Output: ps.output, Params: pt, Registry: reg}
	for _, i := range ps.layout.Order {
		s := ps.steps[i]
		e := ps.caps[i].Impl.Expr
		if ps.bodies[i] != nil {
			e = ps.bodies[i].String()
		}
		b.Pipeline = append(b.Pipeline, stepBody{ID: s.ID, Expr: e, Inputs: s.Inputs})
	}
	return b
}

// unrunnable lists the steps this engine cannot compile at all (another
// engine, an expression that does not parse): the "resolves" predicate.
func (ps *pipelineSpec) unrunnable() []string {
	var out []string
	for i, c := range ps.caps {
		switch {
		case c.Impl.Engine != Engine:
			out = append(out, fmt.Sprintf("step %q: %s runs on engine %q, not %s", ps.steps[i].ID, c.Name, c.Impl.Engine, Engine))
		case ps.bodies[i] == nil:
			_, err := parseExpr(c.Impl.Expr)
			out = append(out, fmt.Sprintf("step %q: the expression of %s does not parse: %v", ps.steps[i].ID, c.Name, err))
		}
	}
	return out
}

// compile compiles one morphism of the pipeline into a plan. The steps
// compile in the layout's order (depth first from the output), each as
// its capability's expression with x and y bound to its inputs and its
// parameters to the grid point's values — exactly as a family's
// expression inlines the operations it names. So a pipeline that spells
// out a family's expression compiles to the family's nodes, in the same
// order; common subexpressions are shared across steps as within one.
func (ps *pipelineSpec) compile(snap *registry.Snapshot, pt map[string]Value) (*compiled, error) {
	c := &compiler{snap: snap, keys: map[string]int{}, caps: map[string]CapRef{}, builtin: map[string]bool{}}
	vals := map[string]cval{pipeline.Data: {t: tPanel, node: c.add(Node{Op: "input", Args: []Arg{strArg("x")}}), wide: true}}
	steps := make([]PlanStep, 0, len(ps.steps))
	for _, i := range ps.layout.Order {
		s, capb := ps.steps[i], ps.caps[i]
		sc := &scope{inputs: map[string]cval{}, params: map[string]cval{}, owner: fmt.Sprintf("step %q (%s)", s.ID, capb.Name)}
		args := make([]cval, 0, len(s.Inputs)+len(capb.Alg.Params))
		for k, in := range s.Inputs {
			v := vals[in]
			if v.t == tResult {
				return nil, resolveErr("%s: input %q is a P&L, which only the output can be", sc.owner, in)
			}
			if k < 2 {
				sc.inputs[[]string{"x", "y"}[k]] = v
			}
			args = append(args, v)
		}
		params := stepParams(pt, s.ID)
		for _, p := range capb.Alg.Params {
			v, ok := params[p.Name]
			if !ok {
				return nil, resolveErr("%s: parameter %q is required and has no default", sc.owner, p.Name)
			}
			cv := cval{t: tNum, num: v.Float()}
			if v.IsString() {
				cv = cval{t: tStr, str: v.Text()}
			}
			sc.params[p.Name] = cv
			args = append(args, cv)
		}
		v, err := c.applyStep(capb, ps.bodies[i], args, sc)
		if err != nil {
			return nil, err
		}
		vals[s.ID] = v
		steps = append(steps, PlanStep{ID: s.ID, Capability: ps.refs[i], Value: v.arg()})
	}
	out := vals[ps.output]
	if out.t != tResult {
		return nil, resolveErr("the output step %q yields a %s, not a P&L", ps.output, out.t)
	}
	return c.finish(Plan{Engine: Engine, Steps: steps, Nodes: c.nodes, Output: out.node})
}

// applyStep compiles one step: what compile does for an operation it
// meets inside an expression, with the step's scope in place of the
// arguments — a primitive's own expression re-enters compile and reaches
// its kernel; a composite's is expanded, its identity and preconditions
// recorded first.
func (c *compiler) applyStep(capb registry.Capability, body *expr, args []cval, sc *scope) (cval, error) {
	if body == nil {
		return cval{}, resolveErr("%s: the expression does not parse", sc.owner)
	}
	if capb.Impl.Engine != Engine {
		return cval{}, resolveErr("%s: runs on engine %q, not %s", sc.owner, capb.Impl.Engine, Engine)
	}
	if !(body.kind == exprList && body.head() == capb.Name) {
		c.caps[capb.Name] = CapRef{Name: capb.Name, Kind: capb.Kind, Identity: capb.Identity}
		if capb.Sem.Contract != nil && len(capb.Sem.Contract.Pre) > 0 {
			c.call(capb, args)
		}
		if c.depth >= maxInline {
			return cval{}, resolveErr("%s: expanding %q nests deeper than %d", sc.owner, capb.Name, maxInline)
		}
		c.depth++
		defer func() { c.depth-- }()
	}
	return c.compile(body, sc)
}

// stepDigests gives each step's plan digest (the content key of its node,
// or of the constant it folded to) for a compiled plan.
func stepDigests(cp *compiled) ([]StepRun, error) {
	out := make([]StepRun, len(cp.plan.Steps))
	for i, s := range cp.plan.Steps {
		out[i].ID = s.ID
		var key string
		if s.Value.Node != nil {
			key = cp.keys[*s.Value.Node]
		} else {
			key = hashing.SumSHA256([]byte("const|" + s.Value.String())).String()
		}
		d, err := hashing.Parse(key)
		if err != nil {
			return nil, fmt.Errorf("step %q: plan key: %w", s.ID, err)
		}
		out[i].Plan = d
	}
	return out, nil
}

// valueDigest is the BLAKE3 of a step's value: for a series, its column
// names and every float64's bits, column by column; for a P&L, the P&L and
// the weights; for a constant, its text. The encoding is fixed, so equal
// values give equal digests on every machine.
func valueDigest(v rval, constant Arg) hashing.Digest {
	h := blake3.New()
	var b [8]byte
	// The values go to the hash a block at a time (the digest does not
	// depend on how the bytes are split between writes).
	var block [4096]byte
	col := func(name string, xs []float64) {
		binary.LittleEndian.PutUint64(b[:], uint64(len(name)))
		h.Write(b[:])
		h.Write([]byte(name))
		binary.LittleEndian.PutUint64(b[:], uint64(len(xs)))
		h.Write(b[:])
		for len(xs) > 0 {
			k := min(len(xs), len(block)/8)
			for i, x := range xs[:k] {
				binary.LittleEndian.PutUint64(block[8*i:], math.Float64bits(canonNaN(x)))
			}
			h.Write(block[:8*k])
			xs = xs[k:]
		}
	}
	switch {
	case v.p != nil:
		h.Write([]byte("series\n"))
		for j, c := range v.p.cols {
			name := ""
			if j < len(v.p.names) {
				name = v.p.names[j]
			}
			col(name, c)
		}
	case v.res != nil:
		h.Write([]byte("pnl\n"))
		col("pnl", v.res.PnL)
		for j, w := range v.res.Weights {
			col(fmt.Sprint("weights/", j), w)
		}
	default:
		h.Write([]byte("const\n" + constant.String()))
	}
	return hashing.New(hashing.BLAKE3, h.Sum(nil))
}

// canonNaN maps every NaN to one bit pattern: NA is one value.
func canonNaN(x float64) float64 {
	if math.IsNaN(x) {
		return math.NaN()
	}
	return x
}

// StepChange names a pipeline step whose plan or value differs between two
// footprints (a stored one and its replay, or the two sides of a diff),
// for one morphism: the earliest layer that changed is where to look.
type StepChange struct {
	Morphism int    `json:"morphism"`
	Step     string `json:"step"`
	Layer    int    `json:"layer"`
	// What changed: "plan", "output", or "added"/"removed" when the step
	// is in one footprint only.
	What []string `json:"what"`
}

// maxStepChanges bounds the list a report carries (a 4096-point grid of 32
// steps could name 131 072); the earliest layers come first.
const maxStepChanges = 256

// stepChanges compares two footprints' pipeline steps morphism by
// morphism, matching steps by id, and lists what differs, ordered by
// morphism, then layer, then step id.
func stepChanges(a, b *Footprint) []StepChange {
	out := []StepChange{}
	if len(a.Steps) == 0 && len(b.Steps) == 0 {
		return out
	}
	layer := map[string]int{}
	for _, s := range b.Steps {
		layer[s.ID] = s.Layer
	}
	for _, s := range a.Steps {
		layer[s.ID] = s.Layer
	}
	for i := range min(len(a.Morphisms), len(b.Morphisms)) {
		ra, rb := runsByID(a.Morphisms[i].Steps), runsByID(b.Morphisms[i].Steps)
		var ids []string
		for id := range ra {
			ids = append(ids, id)
		}
		for id := range rb {
			if _, ok := ra[id]; !ok {
				ids = append(ids, id)
			}
		}
		sort.Slice(ids, func(x, y int) bool {
			if layer[ids[x]] != layer[ids[y]] {
				return layer[ids[x]] < layer[ids[y]]
			}
			return ids[x] < ids[y]
		})
		for _, id := range ids {
			sa, inA := ra[id]
			sb, inB := rb[id]
			var what []string
			switch {
			case !inB:
				what = []string{"removed"}
			case !inA:
				what = []string{"added"}
			default:
				if sa.Plan != sb.Plan {
					what = append(what, "plan")
				}
				if (sa.Output == nil) != (sb.Output == nil) || (sa.Output != nil && *sa.Output != *sb.Output) {
					what = append(what, "output")
				}
			}
			if len(what) == 0 {
				continue
			}
			out = append(out, StepChange{Morphism: i, Step: id, Layer: layer[id], What: what})
			if len(out) == maxStepChanges {
				return out
			}
		}
	}
	return out
}

func runsByID(rs []StepRun) map[string]StepRun {
	m := make(map[string]StepRun, len(rs))
	for _, r := range rs {
		m[r.ID] = r
	}
	return m
}

func sameStepRun(a, b StepRun) bool {
	return a.ID == b.ID && a.Plan == b.Plan && (a.Output == nil) == (b.Output == nil) && (a.Output == nil || *a.Output == *b.Output)
}

// planLevels groups a plan's nodes into levels for evaluation: with one
// worker, each node alone in plan order; otherwise by depth (a node's
// level is one more than its deepest argument's), each level in plan
// order.
func planLevels(nodes []Node, workers int) [][]int {
	if workers <= 1 {
		out := make([][]int, len(nodes))
		for i := range nodes {
			out[i] = []int{i}
		}
		return out
	}
	depth := make([]int, len(nodes))
	deepest := 0
	for i, n := range nodes {
		for _, a := range n.Args {
			if a.Node != nil {
				depth[i] = max(depth[i], depth[*a.Node]+1)
			}
		}
		deepest = max(deepest, depth[i])
	}
	out := make([][]int, deepest+1)
	for i, d := range depth {
		out[d] = append(out[d], i)
	}
	return out
}

// schedule computes the plan's levels and how long each value is needed,
// for both evaluation orders (node by node, and level by level): a value
// is dropped after its last reader ran, unless it is the output, one of
// its arguments or a step's value (all read after the run). live is the most
// values either order holds at once; the budget charges it.
func (cp *compiled) schedule() {
	nodes := cp.plan.Nodes
	cp.levels = planLevels(nodes, 2)
	level := make([]int, len(nodes))
	for li, l := range cp.levels {
		for _, i := range l {
			level[i] = li
		}
	}
	seq := make([]int, len(nodes))
	for i := range seq {
		seq[i] = i
	}
	cp.last, cp.lastSeq = lastUse(cp, level), lastUse(cp, seq)
	cp.live = max(peakLive(level, cp.last, len(cp.levels)), peakLive(seq, cp.lastSeq, len(nodes)))
}

// lastUse gives, per node, the step of the order (level or index) after
// which no node reads it; -1 for values kept to the end.
func lastUse(cp *compiled, at []int) []int {
	last := slices.Clone(at)
	for i, n := range cp.plan.Nodes {
		for _, a := range n.Args {
			if a.Node != nil {
				last[*a.Node] = max(last[*a.Node], at[i])
			}
		}
	}
	// The output, and its arguments: the weights' derivation and the
	// signal's range read them after the run.
	last[cp.plan.Output] = -1
	for _, a := range cp.plan.Nodes[cp.plan.Output].Args {
		if a.Node != nil {
			last[*a.Node] = -1
		}
	}
	for _, s := range cp.plan.Steps {
		if s.Value.Node != nil {
			last[*s.Value.Node] = -1
		}
	}
	return last
}

func peakLive(at, last []int, steps int) int {
	peak := 0
	for t := range steps {
		n := 0
		for i := range at {
			if at[i] <= t && (last[i] < 0 || last[i] >= t) {
				n++
			}
		}
		peak = max(peak, n)
	}
	return peak
}

// release drops the values no later step of the order reads.
func release(vals []rval, last []int, t int) {
	for i, l := range last {
		if l == t {
			vals[i] = rval{}
		}
	}
}
