package policy

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"

	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/policy/smt"
	"github.com/groundgate/groundgate/registry"
)

// reserved prefixes the symbols the checker adds to a query (grid indexes,
// per-policy verdicts, renamed copies); a policy may not use it.
const reserved = "gg."

// Compiled is a validated policy, ready to check requests with.
type Compiled struct {
	Name   string
	ID     hashing.Digest
	Policy Policy

	allow    string            // the allow symbol
	sorts    map[string]string // declared constant → sort
	bound    []binding         // sorted by constant
	free     []string          // declared constants no pointer binds (allow among them when declared)
	symbols  map[string]bool   // every symbol the policy declares or defines
	commands []smt.Sexp        // declare-const and define-fun, in order
	asserts  []assertion
	derived  []derived // sorted by constant
	calls    bool      // binds /tool, /arguments/…, /grounding/… or /now, or derives: governs tool calls only
	requests bool      // binds a request's fields: governs requests only

	// texts holds the policy's query text per symbol prefix (renamedText),
	// made on a check's path once rather than on every check.
	texts sync.Map // string → *renamed
}

// derived is a constant whose value is a CEL expression over the call.
type derived struct {
	Const, Sort string
	Expr        *contract.Expr
}

// DerivePointer is the pointer a witness names a derived constant's value
// by: /derive/NAME (no request field; FieldName writes derive.NAME).
func DerivePointer(name string) string { return "/derive/" + name }

// Derived lists the derived constants, sorted.
func (c *Compiled) Derived() []string {
	out := make([]string, len(c.derived))
	for i, d := range c.derived {
		out[i] = d.Const
	}
	return out
}

type binding struct {
	Const, Sort string
	Ptr         Pointer
}

// assertion is one (assert …) with any top-level (! … :named n) removed:
// Term is what it asserts, Name its name ("" when unnamed).
type assertion struct {
	Name string
	Term smt.Sexp
}

// Rules lists the policy's named assertions, in order.
func (c *Compiled) Rules() []string {
	var out []string
	for _, a := range c.asserts {
		if a.Name != "" {
			out = append(out, a.Name)
		}
	}
	return out
}

// Rule returns the term a named assertion asserts, as one line of SMT-LIB.
func (c *Compiled) Rule(name string) string {
	for _, a := range c.asserts {
		if a.Name == name {
			return a.Term.String()
		}
	}
	return ""
}

// Unbound lists the declared constants that no pointer binds, except allow:
// entailment must hold for every value they can take.
func (c *Compiled) Unbound() []string {
	var out []string
	for _, f := range c.free {
		if f != c.allow {
			out = append(out, f)
		}
	}
	return out
}

// Pointers lists the pointers the policy binds, sorted.
func (c *Compiled) Pointers() []Pointer {
	out := make([]Pointer, len(c.bound))
	for i, b := range c.bound {
		out[i] = b.Ptr
	}
	return out
}

// AppliesTo reports whether the policy governs a request with this family
// and metric. A policy that binds /tool, /arguments/… or /grounding/…
// governs tool calls only (ForTool).
func (c *Compiled) AppliesTo(family, metric string) bool {
	if c.calls {
		return false
	}
	for _, a := range c.Policy.AppliesTo {
		switch a {
		case string(registry.KindFamily), string(registry.KindMetric):
			return true
		case family, metric:
			return true
		}
	}
	return false
}

// Governs reports whether the policy governs a capability of this name
// and kind as a pipeline names it: a step (an operation or a signal), or
// the metric of a pipeline, each decided on its own (SPEC §11).
func (c *Compiled) Governs(name string, kind registry.Kind) bool {
	if kind == registry.KindTool {
		return c.GovernsTool(name)
	}
	if c.calls {
		return false
	}
	return slices.Contains(c.Policy.AppliesTo, string(kind)) || slices.Contains(c.Policy.AppliesTo, name)
}

// GovernsTool reports whether the policy governs a call to the upstream
// tool named name (U.T, SPEC §14): its applies_to names the kind tool or
// that name, and it binds none of a request's fields (/family, /metric,
// /data, /params/…, /grid/points, /facts/…), which a call does not have.
func (c *Compiled) GovernsTool(name string) bool {
	if c.requests {
		return false
	}
	return slices.Contains(c.Policy.AppliesTo, string(registry.KindTool)) || slices.Contains(c.Policy.AppliesTo, name)
}

// ForCalls reports whether the policy binds /tool, /arguments/… or
// /grounding/…: it then governs tool calls only.
func (c *Compiled) ForCalls() bool { return c.calls }

// kinds a policy may name in applies_to: a request names a family and a
// metric, a pipeline its steps' operations and signals and a metric, a
// call (SPEC §14) a tool.
var kindNames = []string{string(registry.KindFamily), string(registry.KindMetric), string(registry.KindOperation), string(registry.KindSignal), string(registry.KindTool)}

// toolNameRE is the spelling of a tool capability's name, U.T: an
// upstream's name (registry.UpstreamNameRE), a dot and an MCP tool name
// (registry.ToolNameRE). Such a name may be longer than MaxNameLen.
var toolNameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}\.[A-Za-z0-9_.-]{1,128}$`)

// IsToolName reports whether name is spelt like a tool capability's name,
// U.T. (A family may be spelt so too; only the registry can tell.)
func IsToolName(name string) bool { return toolNameRE.MatchString(name) }

// otherKinds are kinds no request names: a policy on them would govern
// nothing.
var otherKinds = []string{string(registry.KindRecipe)}

// Compile validates a policy without a solver: its name, its fields, and
// its SMT-LIB (syntax, commands, declarations, the allow constant, the
// sorts of bound constants). What only a solver can tell (ill-sorted
// terms, unknown functions) Checker.Validate adds.
func Compile(name string, p Policy) (*Compiled, error) {
	if err := ValidName(name); err != nil {
		return nil, invalid(name, "name", "%v", err)
	}
	var fe []registry.FieldError
	add := func(field, format string, args ...any) {
		fe = append(fe, registry.FieldError{Field: field, Problem: fmt.Sprintf(format, args...)})
	}
	c := &Compiled{Name: name, Policy: p, sorts: map[string]string{}, symbols: map[string]bool{}}

	// applies_to
	switch {
	case len(p.AppliesTo) == 0:
		add("applies_to", "name at least one capability or kind (%s) the policy governs", strings.Join(kindNames, ", "))
	case len(p.AppliesTo) > MaxAppliesTo:
		add("applies_to", "%d entries, at most %d", len(p.AppliesTo), MaxAppliesTo)
	}
	seen := map[string]bool{}
	for i, a := range p.AppliesTo {
		switch {
		case seen[a]:
			add(fmt.Sprintf("applies_to[%d]", i), "%q is listed twice", clip(a))
		case slices.Contains(otherKinds, a):
			add(fmt.Sprintf("applies_to[%d]", i), "no request names a capability of kind %s: a policy governs what a request names (kinds %s, or their names)", a, strings.Join(kindNames, ", "))
		case IsToolName(a):
		case len(a) > MaxNameLen || !registry.ValidName(a):
			add(fmt.Sprintf("applies_to[%d]", i), "%q is neither a kind nor a capability name", clip(a))
		}
		seen[a] = true
	}

	// smtlib
	if strings.TrimSpace(p.SMTLIB) == "" {
		add("smtlib", "the policy text is empty")
		return nil, &ValidationError{Policy: name, Fields: fe}
	}
	if len(p.SMTLIB) > MaxSMTLIB {
		add("smtlib", "%d bytes, at most %d", len(p.SMTLIB), MaxSMTLIB)
		return nil, &ValidationError{Policy: name, Fields: fe}
	}
	cmds, err := smt.Parse(p.SMTLIB)
	if err != nil {
		add("smtlib", "%v", err)
		return nil, &ValidationError{Policy: name, Fields: fe}
	}
	defined := map[string]smt.Sexp{} // define-fun name → its command
	named := map[string]bool{}
	for _, cmd := range cmds {
		at := func(format string, args ...any) { add("smtlib", "%s: "+format, append([]any{cmd.Pos}, args...)...) }
		if !cmd.IsList || len(cmd.List) == 0 {
			at("expected a command")
			continue
		}
		if msg := checkAtoms(cmd); msg != "" {
			at("%s", msg)
			continue
		}
		head := cmd.Head()
		switch {
		case head == "declare-const" && len(cmd.List) == 3,
			head == "declare-fun" && len(cmd.List) == 4 && cmd.List[2].IsList && len(cmd.List[2].List) == 0:
			sym, ok := cmd.List[1].Symbol()
			if !ok {
				at("%s needs a symbol name", head)
				continue
			}
			sortOf := cmd.List[len(cmd.List)-1].String()
			if !declareName(c, sym, at) {
				continue
			}
			c.sorts[sym] = sortOf
			// One form for both spellings of a constant.
			cmd = smt.Sexp{IsList: true, Pos: cmd.Pos, List: []smt.Sexp{{Atom: "declare-const"}, cmd.List[1], cmd.List[len(cmd.List)-1]}}
			c.commands = append(c.commands, cmd)
		case head == "declare-fun":
			at("declare-fun with arguments declares a function no request field can bind and no check can quantify over: declare constants")
		case head == "define-fun" && len(cmd.List) == 5 && cmd.List[2].IsList:
			sym, ok := cmd.List[1].Symbol()
			if !ok {
				at("define-fun needs a symbol name")
				continue
			}
			if !declareName(c, sym, at) {
				continue
			}
			defined[sym] = cmd
			c.commands = append(c.commands, cmd)
		case head == "assert" && len(cmd.List) == 2:
			a, msg := splitNamed(cmd.List[1])
			if msg != "" {
				at("%s", msg)
				continue
			}
			if a.Name != "" {
				if named[a.Name] {
					at("two assertions are named %q", a.Name)
					continue
				}
				if c.symbols[a.Name] {
					at("the assertion name %s is also a declared or defined symbol", a.Name)
					continue
				}
				named[a.Name] = true
			}
			if msg := nestedNamed(a.Term); msg != "" {
				at("%s", msg)
				continue
			}
			c.asserts = append(c.asserts, a)
		case head == "declare-const", head == "define-fun", head == "assert":
			at("malformed %s", head)
		default:
			at("command %q is not allowed in a policy (declare-const, define-fun and assert only)", clip(cmd.Head()))
		}
	}

	// allow
	allow, ok := smtSymbol(p.Allow)
	switch {
	case !ok:
		add("allow", "%q is not an SMT-LIB symbol", clip(p.Allow))
	case c.sorts[allow] != "" && c.sorts[allow] != "Bool":
		add("allow", "%s is declared %s; allow must be a Bool constant", allow, c.sorts[allow])
	case c.sorts[allow] == "":
		if d, isDef := defined[allow]; !isDef || len(d.List[2].List) != 0 || d.List[3].String() != "Bool" {
			add("allow", "%s is not declared as a Bool constant: (declare-const %s Bool) or (define-fun %s () Bool …)", allow, allow, allow)
		}
	}
	c.allow = allow

	// bind
	if len(p.Bind) > MaxBindings {
		add("bind", "%d bindings, at most %d", len(p.Bind), MaxBindings)
	}
	boundSet := map[string]bool{}
	for _, k := range slices.Sorted(maps.Keys(p.Bind)) {
		field := "bind." + clip(k)
		sym, srt, ok := c.valued(k, field, "bind", "bound to the request", allow, defined, add)
		if !ok {
			continue
		}
		ptr, err := ParsePointer(p.Bind[k])
		if err != nil {
			add(field, "%v", err)
			continue
		}
		if !slices.Contains(ptr.Sorts(), srt) {
			add(field, "%s is declared %s, but %s holds %s", sym, srt, ptr.Text, strings.Join(ptr.Sorts(), " or "))
			continue
		}
		if boundSet[sym] {
			add(field, "%s is bound twice", sym)
			continue
		}
		boundSet[sym] = true
		c.bound = append(c.bound, binding{Const: sym, Sort: srt, Ptr: ptr})
	}
	sort.Slice(c.bound, func(i, j int) bool { return c.bound[i].Const < c.bound[j].Const })

	// derive
	if len(p.Derive) > MaxDerived {
		add("derive", "%d derived constants, at most %d", len(p.Derive), MaxDerived)
	}
	derivedSet := map[string]bool{}
	for _, k := range slices.Sorted(maps.Keys(p.Derive)) {
		field := "derive." + clip(k)
		sym, srt, ok := c.valued(k, field, "derive", "derived", allow, defined, add)
		switch {
		case !ok:
			continue
		case boundSet[sym]:
			add(field, "%s is bound to %s too: a constant is bound or derived, not both", sym, p.Bind[k])
			continue
		case !slices.Contains(deriveSorts, srt):
			add(field, "%s is declared %s; a derived constant is an Int, a Real, a String or a Bool", sym, srt)
			continue
		case len(p.Derive[k]) > MaxDeriveLen:
			add(field, "%d bytes, at most %d", len(p.Derive[k]), MaxDeriveLen)
			continue
		}
		e, err := contract.CompileCallExpr(p.Derive[k])
		if err != nil {
			add(field, "%v", err)
			continue
		}
		if !fitsSort(e.Type, srt) {
			add(field, "%s is declared %s, but the expression is a %s (%s)", sym, srt, e.Type, sortTypes[srt])
			continue
		}
		derivedSet[sym] = true
		c.derived = append(c.derived, derived{Const: sym, Sort: srt, Expr: e})
	}
	c.checkScope(add)
	for _, cmd := range c.commands {
		if cmd.Head() == "declare-const" {
			if sym, _ := cmd.List[1].Symbol(); !boundSet[sym] && !derivedSet[sym] {
				c.free = append(c.free, sym)
			}
		}
	}
	// A helper that read a free constant would escape the quantifier the
	// check puts around the free constants: helpers read bound ones only.
	freeSet := map[string]bool{}
	for _, f := range c.free {
		freeSet[f] = true
	}
	for _, name := range slices.Sorted(maps.Keys(defined)) {
		d := defined[name]
		params := map[string]bool{}
		for _, prm := range d.List[2].List {
			if prm.IsList && len(prm.List) == 2 {
				if s, ok := prm.List[0].Symbol(); ok {
					params[s] = true
				}
			}
		}
		if r := readsAny(d.List[4], freeSet, params); r != "" {
			add("smtlib", "%s: define-fun %s reads %s, which no pointer binds: a helper may read bound constants only", d.Pos, name, r)
		}
	}
	if len(fe) > 0 {
		return nil, &ValidationError{Policy: name, Fields: fe}
	}
	id, err := p.ID()
	if err != nil {
		return nil, invalid(name, "", "%v", err)
	}
	c.ID = id
	return c, nil
}

// checkScope sets what the policy governs from what it binds, and refuses
// a policy that would govern what it cannot read: a tool call has /tool,
// /arguments/… and /grounding/… only, a request (a family's, a
// pipeline's, a step's) has no tool, arguments or call grounding. Such a policy would refuse every call or
// request it governs as missing. A policy that binds neither may govern
// both (a blanket rule).
func (c *Compiled) checkScope(add func(field, format string, args ...any)) {
	var call, req *binding
	for i := range c.bound {
		b := &c.bound[i]
		if b.Ptr.ForCall() {
			c.calls = true
			if call == nil {
				call = b
			}
		} else {
			c.requests = true
			if req == nil {
				req = b
			}
		}
	}
	if len(c.derived) > 0 {
		// A derived value reads a call: a policy that derives governs
		// tool calls only.
		d := c.derived[0].Const
		for i, a := range c.Policy.AppliesTo {
			if a != string(registry.KindTool) && !IsToolName(a) {
				add("derive."+clip(d), "applies_to[%d] %q is not a tool: a derived constant reads a tool call (groundgate.call/v1), so a policy that derives applies to the kind tool and to tools by name (upstream.tool) only", i, clip(a))
			}
		}
		if req != nil {
			add("derive."+clip(d), "a derived constant reads a tool call, and %s binds %s, a request's field: no request has both; write two policies", req.Const, req.Ptr.Text)
		}
		c.calls = true
		return
	}
	switch {
	case c.calls && c.requests:
		add("bind."+clip(req.Const), "%s binds %s, a request's field, and %s binds %s, a tool call's: no request has both, so the policy would refuse everything it governs; write two policies", req.Const, req.Ptr.Text, call.Const, call.Ptr.Text)
	case c.calls:
		for i, a := range c.Policy.AppliesTo {
			if a != string(registry.KindTool) && !IsToolName(a) {
				add(fmt.Sprintf("applies_to[%d]", i), "%q is not a tool: the policy binds %s to %s, which only a tool call has; it may apply to the kind tool and to tools by name (upstream.tool)", clip(a), call.Const, call.Ptr.Text)
			}
		}
	case c.requests:
		for i, a := range c.Policy.AppliesTo {
			if a == string(registry.KindTool) || len(a) > MaxNameLen && IsToolName(a) {
				add(fmt.Sprintf("applies_to[%d]", i), "%q governs tool calls, but the policy binds %s to %s, which a tool call does not have (a call has /tool, /arguments/… and /grounding/…)", clip(a), req.Const, req.Ptr.Text)
			}
		}
	}
}

// valued checks that k, a member of bind or derive (verb), names a
// declared constant other than allow, and returns it and its sort.
func (c *Compiled) valued(k, field, verb, done, allow string, defined map[string]smt.Sexp, add func(field, format string, args ...any)) (string, string, bool) {
	sym, ok := smtSymbol(k)
	if !ok {
		add(field, "%q is not an SMT-LIB symbol", clip(k))
		return "", "", false
	}
	srt, declared := c.sorts[sym]
	switch {
	case !declared && defined[sym].IsList:
		add(field, "%s is defined by define-fun; %s a declared constant", sym, verb)
	case !declared:
		add(field, "%s is not declared in the policy: (declare-const %s Sort)", sym, sym)
	case sym == allow:
		add(field, "allow is what the policy decides; it cannot be %s", done)
	default:
		return sym, srt, true
	}
	return "", "", false
}

// deriveSorts are the sorts a derived constant may have, and sortTypes the
// CEL types that fit each.
var (
	deriveSorts = []string{"Int", "Real", "String", "Bool"}
	sortTypes   = map[string]string{"Int": "want an int", "Real": "want an int or a double", "String": "want a string", "Bool": "want a bool"}
)

// fitsSort reports whether a value of CEL type t can be a constant of
// sort: dyn may be (Check decides on the value).
func fitsSort(t *cel.Type, sort string) bool {
	switch {
	case t.IsExactType(cel.DynType):
		return true
	case sort == "Int":
		return t.IsExactType(cel.IntType)
	case sort == "Real":
		return t.IsExactType(cel.IntType) || t.IsExactType(cel.DoubleType)
	case sort == "String":
		return t.IsExactType(cel.StringType)
	case sort == "Bool":
		return t.IsExactType(cel.BoolType)
	}
	return false
}

func declareName(c *Compiled, sym string, at func(string, ...any)) bool {
	switch {
	case strings.HasPrefix(sym, reserved):
		at("symbols starting %q are reserved for the checker", reserved)
		return false
	case strings.ContainsAny(sym, `|\`):
		at("symbol %q cannot be written back to a solver", clip(sym))
		return false
	case c.symbols[sym]:
		at("%s is declared twice", sym)
		return false
	}
	c.symbols[sym] = true
	return true
}

// splitNamed takes a term apart: (! t :named n) gives t and n.
func splitNamed(t smt.Sexp) (assertion, string) {
	if t.Head() != "!" {
		return assertion{Term: t}, ""
	}
	if len(t.List) < 2 {
		return assertion{}, "(! …) needs a term"
	}
	a := assertion{Term: t.List[1]}
	for i := 2; i < len(t.List); i += 2 {
		if i+1 >= len(t.List) {
			return assertion{}, "an attribute without a value"
		}
		if t.List[i].Atom != ":named" {
			return assertion{}, fmt.Sprintf("attribute %s is not allowed (only :named)", clip(t.List[i].String()))
		}
		n, ok := t.List[i+1].Symbol()
		if !ok || a.Name != "" {
			return assertion{}, ":named needs one symbol"
		}
		a.Name = n
	}
	return a, ""
}

// nestedNamed refuses (! …) inside a term: the checker copies terms into
// quantifiers, where a named term would be declared twice.
func nestedNamed(t smt.Sexp) string {
	if !t.IsList {
		return ""
	}
	if t.Head() == "!" {
		return "(! … :named …) is allowed only around a whole assertion"
	}
	for _, c := range t.List {
		if m := nestedNamed(c); m != "" {
			return m
		}
	}
	return ""
}

// readsAny returns the first symbol of set that t reads, ignoring names in
// shadow (a define-fun's parameters). Binders inside t (let, forall) that
// reuse a name are rare enough to be refused with it.
func readsAny(t smt.Sexp, set, shadow map[string]bool) string {
	if !t.IsList {
		if s, ok := t.Symbol(); ok && set[s] && !shadow[s] {
			return s
		}
		return ""
	}
	for _, c := range t.List {
		if r := readsAny(c, set, shadow); r != "" {
			return r
		}
	}
	return ""
}

func smtSymbol(s string) (string, bool) {
	xs, err := smt.Parse(s)
	if err != nil || len(xs) != 1 {
		return "", false
	}
	return xs[0].Symbol()
}

// CheckRegistry checks the policy against the registry it will govern:
// a name in applies_to that is a capability no request names (a recipe)
// is refused (a policy on it would govern nothing and fail open), and so
// is a binding to a parameter that no capability it applies to declares
// (a typo, a renamed parameter: it would refuse every request it
// governs). Names the registry does not hold are not held against the
// policy: it may gain them.
//
// Tool capabilities (SPEC §14) declare no parameters: a policy over tool
// calls binds /tool and /arguments/…, which are checked against nothing
// here (a call's arguments are checked against the tool's input schema).
// A name in applies_to that is a tool is refused for a policy that binds
// a request's fields, and a name that is another kind of capability for
// a policy that binds a call's.
func (c *Compiled) CheckRegistry(snap *registry.Snapshot) error {
	declared := map[string]bool{}
	known := false
	var fe []registry.FieldError
	for i, a := range c.Policy.AppliesTo {
		for _, cp := range snap.Capabilities() {
			governed := slices.Contains(kindNames, string(cp.Kind))
			switch {
			case cp.Name == a && cp.Kind == registry.KindTool && c.requests:
				fe = append(fe, registry.FieldError{Field: fmt.Sprintf("applies_to[%d]", i),
					Problem: fmt.Sprintf("%s is a tool, but the policy binds a request's fields (%s), which a tool call does not have (a call has /tool, /arguments/… and /grounding/…)", a, c.pointersText(false))})
				continue
			case cp.Name == a && cp.Kind != registry.KindTool && c.calls:
				fe = append(fe, registry.FieldError{Field: fmt.Sprintf("applies_to[%d]", i),
					Problem: fmt.Sprintf("%s is a capability of kind %s, but the policy binds a tool call's fields (%s), which only a call has", a, cp.Kind, c.pointersText(true))})
				continue
			case cp.Name == a && !governed:
				fe = append(fe, registry.FieldError{Field: fmt.Sprintf("applies_to[%d]", i),
					Problem: fmt.Sprintf("%s is a capability of kind %s: a policy governs what requests name (a family and a metric, or a pipeline's steps and metric)", a, cp.Kind)})
				continue
			case cp.Name != a && string(cp.Kind) != a, !governed:
				continue
			}
			known = true
			for _, p := range cp.Alg.Params {
				declared[p.Name] = true
			}
		}
	}
	if known {
		for _, b := range c.bound {
			if b.Ptr.Field == "params" && !declared[b.Ptr.Param] {
				fe = append(fe, registry.FieldError{Field: "bind." + b.Const,
					Problem: fmt.Sprintf("%s points to a parameter no capability this policy applies to (%s) declares", b.Ptr.Text, strings.Join(c.Policy.AppliesTo, ", "))})
			}
		}
	}
	if len(fe) > 0 {
		return &ValidationError{Policy: c.Name, Fields: fe}
	}
	return nil
}

// pointersText lists the pointers the policy binds that read a call
// (calls) or a request (!calls).
func (c *Compiled) pointersText(calls bool) string {
	var out []string
	for _, b := range c.bound {
		if b.Ptr.ForCall() == calls && !slices.Contains(out, b.Ptr.Text) {
			out = append(out, b.Ptr.Text)
		}
	}
	if calls {
		for _, d := range c.derived {
			out = append(out, "derive."+d.Const)
		}
	}
	return strings.Join(out, ", ")
}

// checkAtoms refuses what a solver would read differently from this
// checker: a symbol with the checker's reserved prefix anywhere (a let or
// quantifier variable named gg.p0.x would capture a renamed constant), and
// a string literal with raw non-ASCII text (z3 4.8 reads its UTF-8 bytes
// one by one, so "é" would never equal the \u{e9} a request value is
// written as; cvc5 refuses it).
func checkAtoms(t smt.Sexp) string {
	if t.IsList {
		for _, c := range t.List {
			if m := checkAtoms(c); m != "" {
				return m
			}
		}
		return ""
	}
	if sym, ok := t.Symbol(); ok && strings.HasPrefix(sym, reserved) {
		return fmt.Sprintf("symbols starting %q are reserved for the checker (%s)", reserved, clip(sym))
	}
	if strings.HasPrefix(t.Atom, `"`) {
		for i := 0; i < len(t.Atom); i++ {
			if t.Atom[i] >= 0x80 {
				return fmt.Sprintf("string literal %s holds non-ASCII text: write it with \\u{…} escapes (é is \\u{e9})", clip(t.Atom))
			}
		}
	}
	return ""
}
