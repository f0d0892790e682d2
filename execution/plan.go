package execution

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
)

// Engine names the engine plans are compiled for; a registry
// implementation layer names it in impl.engine.
const Engine = "groundgate/v1"

// maxInline bounds how deeply composite operations may expand into one
// another (a cycle in the registry would otherwise never end).
const maxInline = 16

// CapRef names a registry capability and its identity.
type CapRef struct {
	Name     string         `json:"name"`
	Kind     registry.Kind  `json:"kind"`
	Identity hashing.Digest `json:"identity"`
}

// Plan is the compiled execution plan of one morphism: a DAG of kernel
// nodes in evaluation order (every argument refers to an earlier node),
// with every parameter bound and every constant folded. Its digest is
// SHA-256 of its canonical JSON. It holds what runs — kernels, the registry
// identities behind them, literal arguments — and nothing about the metric
// or the data content.
type Plan struct {
	Engine string `json:"engine"`
	// Family is the family capability whose expression the plan compiles;
	// absent for a pipeline, whose Steps say which node each step is.
	Family *CapRef    `json:"family,omitempty"`
	Steps  []PlanStep `json:"steps,omitempty"`
	Nodes  []Node     `json:"nodes"`
	// Output is the node whose value is the morphism's result.
	Output int `json:"output"`
	// Capabilities lists every registry capability the plan used — the
	// family, each operation behind a node, each composite operation
	// expanded into nodes, each operation folded into a constant — sorted
	// by name.
	Capabilities []CapRef `json:"capabilities"`
	// Builtins lists the engine kernels the plan used that are not
	// registry capabilities, sorted.
	Builtins []string `json:"builtins"`
}

// Node is one kernel application.
type Node struct {
	// Op is the kernel: a registry operation's name, an engine built-in
	// (volsize, trailing_vol), or "input" for the data frame.
	Op string `json:"op"`
	// Capability is the identity of the registry operation Op resolved to;
	// absent for built-ins and the input.
	Capability *hashing.Digest `json:"capability,omitempty"`
	Args       []Arg           `json:"args"`
}

// Arg is a node argument: exactly one of a reference to an earlier node, a
// number, a string, or NA (a constant that folded to NaN or ±Inf, which
// makes the plan fail the domain predicate).
type Arg struct {
	Node *int     `json:"node,omitempty"`
	Num  *float64 `json:"num,omitempty"`
	Str  *string  `json:"str,omitempty"`
	NA   bool     `json:"na,omitempty"`
}

func nodeArg(i int) Arg    { return Arg{Node: &i} }
func numArg(v float64) Arg { return Arg{Num: &v} }
func strArg(s string) Arg  { return Arg{Str: &s} }
func (a Arg) isNode() bool { return a.Node != nil }
func (a Arg) String() string {
	switch {
	case a.Node != nil:
		return fmt.Sprintf("#%d", *a.Node)
	case a.Num != nil:
		return formatNumber(*a.Num)
	case a.Str != nil:
		return fmt.Sprintf("%q", *a.Str)
	}
	return "NA"
}

// Digest returns the plan digest: SHA-256 of its canonical JSON.
func (p *Plan) Digest() (hashing.Digest, error) { return hashing.SHA256Of(p) }

// typ is a compile-time type.
type typ uint8

const (
	tPanel  typ = iota + 1 // series: every data column (wide) or one column
	tNum                   // a number, folded at compile time
	tStr                   // a string (a column name)
	tResult                // weights and P&L (the output of volsize)
)

func (t typ) String() string {
	switch t {
	case tPanel:
		return "series"
	case tNum:
		return "number"
	case tStr:
		return "string"
	case tResult:
		return "result"
	}
	return "?"
}

// cval is a compile-time value: a node (series or result) or a constant.
type cval struct {
	t    typ
	node int  // tPanel, tResult
	wide bool // tPanel: spans every data column (else one column)
	num  float64
	na   bool // tNum folded to NaN/±Inf
	str  string
}

func (v cval) arg() Arg {
	switch v.t {
	case tNum:
		if v.na {
			return Arg{NA: true}
		}
		return numArg(v.num)
	case tStr:
		return strArg(v.str)
	}
	return nodeArg(v.node)
}

// compileError is a structural failure: a symbol that does not resolve, a
// wrong argument count or type, an unbound parameter. It fails the
// "resolves" predicate and leaves the morphism without a plan.
type compileError struct{ msg string }

func (e *compileError) Error() string { return e.msg }

func resolveErr(format string, a ...any) error {
	return &compileError{msg: fmt.Sprintf(format, a...)}
}

// scope binds the inputs and parameters visible in an expression: the
// family's at the top, a composite operation's inside its expansion.
type scope struct {
	inputs map[string]cval
	params map[string]cval
	owner  string // the capability whose expression this is, for messages
}

type compiler struct {
	snap    *registry.Snapshot
	nodes   []Node
	keys    map[string]int // CSE: node JSON → index
	caps    map[string]CapRef
	builtin map[string]bool
	domain  []string // value-domain failures (the "domain" predicate)
	columns []string // columns read by name (col, spread)
	lev     []float64
	calls   []opCall // operations with preconditions, in first-use order
	depth   int
}

// compiled is a compiled plan with what the risk filter and the runner
// need beside it.
type compiled struct {
	plan    Plan
	digest  hashing.Digest
	domain  []string  // failures of the domain predicate
	columns []string  // data columns the plan reads by name
	lev     []float64 // leverage caps of its volsize nodes
	keys    []string  // content key of every node (shared across plans)
	calls   []opCall  // operations whose preconditions the morphism must meet
	// levels is the evaluation schedule with several workers; last and
	// lastSeq say after which level, or node, each value is no longer
	// needed (-1: kept to the end); live is the most values held at once.
	levels  [][]int
	last    []int
	lastSeq []int
	live    int
}

// compilePlan compiles the family expression e for one morphism's bound
// parameters. A structural failure is a *compileError; value-domain
// failures are returned in compiled.domain with a plan.
func compilePlan(snap *registry.Snapshot, family CapRef, e *expr, params map[string]Value) (*compiled, error) {
	c := &compiler{snap: snap, keys: map[string]int{}, caps: map[string]CapRef{}, builtin: map[string]bool{}}
	c.caps[family.Name] = family
	top := scope{inputs: map[string]cval{}, params: map[string]cval{}, owner: family.Name}
	for name, v := range params {
		if v.IsString() {
			top.params[name] = cval{t: tStr, str: v.Text()}
		} else {
			top.params[name] = cval{t: tNum, num: v.Float()}
		}
	}
	top.inputs["x"] = cval{t: tPanel, node: c.add(Node{Op: "input", Args: []Arg{strArg("x")}}), wide: true}
	out, err := c.compile(e, &top)
	if err != nil {
		return nil, err
	}
	if out.t != tResult {
		return nil, resolveErr("%s: the expression yields a %s, not a P&L: its outermost kernel must be volsize", family.Name, out.t)
	}
	p := Plan{Engine: Engine, Family: &family, Nodes: c.nodes, Output: out.node}
	return c.finish(p)
}

// finish lists the plan's capabilities and built-ins, digests it and
// gathers what the risk filter and the runner need.
func (c *compiler) finish(p Plan) (*compiled, error) {
	names := make([]string, 0, len(c.caps))
	for n := range c.caps {
		names = append(names, n)
	}
	sort.Strings(names)
	p.Capabilities = make([]CapRef, len(names))
	for i, n := range names {
		p.Capabilities[i] = c.caps[n]
	}
	p.Builtins = make([]string, 0, len(c.builtin))
	for b := range c.builtin {
		p.Builtins = append(p.Builtins, b)
	}
	sort.Strings(p.Builtins)
	d, err := p.Digest()
	if err != nil {
		return nil, fmt.Errorf("plan digest: %w", err)
	}
	cols := uniqueSorted(c.columns)
	cp := &compiled{plan: p, digest: d, domain: c.domain, columns: cols, lev: c.lev, keys: contentKeys(p.Nodes), calls: c.calls}
	cp.schedule()
	return cp, nil
}

// add appends a node, or returns the index of an identical earlier one
// (common subexpression elimination: (dlog x) used twice is one node).
func (c *compiler) add(n Node) int {
	b, err := hashing.Canonical(n)
	if err != nil { // a Node always marshals; keep it distinct if not
		c.nodes = append(c.nodes, n)
		return len(c.nodes) - 1
	}
	k := string(b)
	if i, ok := c.keys[k]; ok {
		return i
	}
	c.nodes = append(c.nodes, n)
	c.keys[k] = len(c.nodes) - 1
	return len(c.nodes) - 1
}

func (c *compiler) domainf(format string, a ...any) {
	c.domain = append(c.domain, fmt.Sprintf(format, a...))
}

func (c *compiler) compile(e *expr, sc *scope) (cval, error) {
	switch e.kind {
	case exprNumber:
		return cval{t: tNum, num: e.num}, nil
	case exprParam:
		v, ok := sc.params[e.name]
		if !ok {
			return cval{}, resolveErr("%s: parameter $%s is not bound", sc.owner, e.name)
		}
		return v, nil
	case exprSymbol:
		v, ok := sc.inputs[e.name]
		if !ok {
			return cval{}, resolveErr("%s: %q is not an input here (inputs: %s)", sc.owner, e.name, inputNames(sc))
		}
		return v, nil
	}
	head := e.head()
	args := make([]cval, 0, len(e.args()))
	for _, a := range e.args() {
		v, err := c.compile(a, sc)
		if err != nil {
			return cval{}, err
		}
		args = append(args, v)
	}
	if b, ok := builtins[head]; ok {
		c.builtin[head] = true
		return b(c, head, nil, args)
	}
	capb, ok := c.snap.Get(head)
	if !ok {
		return cval{}, resolveErr("%s: %q does not resolve in the registry", sc.owner, head)
	}
	if capb.Kind != registry.KindOperation && capb.Kind != registry.KindSignal {
		return cval{}, resolveErr("%s: %q is a %s, not an operation or signal", sc.owner, head, capb.Kind)
	}
	if capb.Impl.Engine != Engine {
		return cval{}, resolveErr("%s: %q runs on engine %q, not %s", sc.owner, head, capb.Impl.Engine, Engine)
	}
	body, err := parseExpr(capb.Impl.Expr)
	if err != nil {
		return cval{}, resolveErr("%s: the expression of %q does not parse: %v", sc.owner, head, err)
	}
	ref := CapRef{Name: capb.Name, Kind: capb.Kind, Identity: capb.Identity}
	c.caps[capb.Name] = ref
	if capb.Sem.Contract != nil && len(capb.Sem.Contract.Pre) > 0 {
		c.call(capb, args)
	}
	if body.kind == exprList && body.head() == head {
		// A primitive: the operation is the engine kernel of its name.
		k, ok := kernels[head]
		if !ok {
			return cval{}, resolveErr("%s: %q resolves to %s but the engine has no kernel for it", sc.owner, head, capb.Identity)
		}
		id := capb.Identity
		return k(c, head, &id, args)
	}
	return c.inline(capb, body, args, sc)
}

// inline expands a composite operation or signal: its expression is
// compiled with its inputs (x, then y, as many as its arity) bound to the
// first arguments and its parameters, in schema order, to the rest;
// parameters left out take their defaults.
func (c *compiler) inline(capb registry.Capability, body *expr, args []cval, sc *scope) (cval, error) {
	if c.depth >= maxInline {
		return cval{}, resolveErr("%s: expanding %q nests deeper than %d (a cycle in the registry?)", sc.owner, capb.Name, maxInline)
	}
	arity := capb.Alg.Arity
	if arity < 0 || arity > 2 {
		return cval{}, resolveErr("%s: %q has arity %d; the engine expands arity 0 to 2", sc.owner, capb.Name, arity)
	}
	ps := capb.Alg.Params
	if len(args) < arity || len(args) > arity+len(ps) {
		return cval{}, resolveErr("%s: %q takes %d input(s) and up to %d parameter(s), got %d argument(s)", sc.owner, capb.Name, arity, len(ps), len(args))
	}
	inner := &scope{inputs: map[string]cval{}, params: map[string]cval{}, owner: capb.Name}
	for i, in := range []string{"x", "y"}[:arity] {
		inner.inputs[in] = args[i]
	}
	for i, p := range ps {
		if arity+i < len(args) {
			inner.params[p.Name] = args[arity+i]
			continue
		}
		switch d := p.Default.(type) {
		case float64:
			inner.params[p.Name] = cval{t: tNum, num: d}
		case string:
			inner.params[p.Name] = cval{t: tStr, str: d}
		default:
			return cval{}, resolveErr("%s: %q needs parameter %q, which has no default", sc.owner, capb.Name, p.Name)
		}
	}
	c.depth++
	defer func() { c.depth-- }()
	return c.compile(body, inner)
}

// call records an application of an operation with preconditions, once
// per distinct binding of its parameters.
func (c *compiler) call(capb registry.Capability, args []cval) {
	oc := opCall{cap: capb, params: boundParams(capb, args)}
	for _, prev := range c.calls {
		if prev.cap.Name == oc.cap.Name && sameParams(prev.params, oc.params) {
			return
		}
	}
	c.calls = append(c.calls, oc)
}

func sameParams(a, b map[string]Value) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func inputNames(sc *scope) string {
	var ns []string
	for n := range sc.inputs {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	if len(ns) == 0 {
		return "none"
	}
	return strings.Join(ns, ", ")
}

// kernelFn checks a kernel application's arguments and adds its node (or
// folds it into a constant).
type kernelFn func(c *compiler, op string, id *hashing.Digest, args []cval) (cval, error)

func (c *compiler) node(op string, id *hashing.Digest, args ...cval) int {
	n := Node{Op: op, Capability: id, Args: make([]Arg, len(args))}
	for i, a := range args {
		n.Args[i] = a.arg()
	}
	return c.add(n)
}

func arity(op string, args []cval, n int) error {
	if len(args) != n {
		return resolveErr("%s takes %d argument(s), got %d", op, n, len(args))
	}
	return nil
}

func want(op string, i int, v cval, ts ...typ) error {
	for _, t := range ts {
		if v.t == t {
			return nil
		}
	}
	names := make([]string, len(ts))
	for j, t := range ts {
		names[j] = t.String()
	}
	return resolveErr("%s: argument %d is a %s, want %s", op, i+1, v.t, strings.Join(names, " or "))
}

// intArg checks that argument i is an integer ≥ min; a violation is a
// domain failure (the plan still compiles, with the literal as given).
func (c *compiler) intArg(op, what string, v cval, min int) {
	switch {
	case v.na:
		c.domainf("%s: %s is NA", op, what)
	case v.num != math.Trunc(v.num) || math.Abs(v.num) > 1<<53:
		c.domainf("%s: %s %s is not an integer", op, what, formatNumber(v.num))
	case v.num < float64(min):
		c.domainf("%s: %s %s is below %d", op, what, formatNumber(v.num), min)
	}
}

// positive checks a finite, strictly positive number.
func (c *compiler) positive(op, what string, v cval) {
	if v.na || !(v.num > 0) {
		c.domainf("%s: %s %s must be finite and > 0", op, what, cvalText(v))
	}
}

func cvalText(v cval) string {
	if v.na {
		return "NA"
	}
	return formatNumber(v.num)
}

// folded wraps a folded constant, NA when it is not finite.
func folded(v float64) cval {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return cval{t: tNum, na: true, num: v}
	}
	return cval{t: tNum, num: v}
}

func (c *compiler) checkFolded(op string, v cval) cval {
	if v.na {
		c.domainf("%s: folds to a non-finite constant", op)
	}
	return v
}

// contentKeys gives every node a key that identifies its value across the
// plans of a grid: the op, the capability and the arguments, with node
// references replaced by the referenced node's key. Two nodes with one key
// compute the same series from the same frame.
func contentKeys(nodes []Node) []string {
	keys := make([]string, len(nodes))
	for i, n := range nodes {
		var b strings.Builder
		b.WriteString(n.Op)
		b.WriteByte('|')
		if n.Capability != nil {
			b.WriteString(n.Capability.String())
		}
		for _, a := range n.Args {
			b.WriteByte('|')
			switch {
			case a.Node != nil:
				b.WriteString(keys[*a.Node])
			case a.Num != nil:
				b.WriteString("n:")
				b.WriteString(formatNumber(*a.Num))
			case a.Str != nil:
				b.WriteString("s:")
				b.WriteString(fmt.Sprintf("%q", *a.Str))
			default:
				b.WriteString("na")
			}
		}
		keys[i] = hashing.SumSHA256([]byte(b.String())).String()
	}
	return keys
}

func uniqueSorted(xs []string) []string {
	out := append([]string{}, xs...)
	sort.Strings(out)
	j := 0
	for i, x := range out {
		if i == 0 || x != out[j-1] {
			out[j] = x
			j++
		}
	}
	return out[:j]
}
