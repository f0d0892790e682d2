package contract

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"cel.dev/cel-go/common/types"
)

// State is the typed state clauses read: schema keys and params.NAME
// mapped to string, int64, float64, bool, []string or map[string]float64,
// as the schema declares; a tool's (ToolState) holds JSON values as well:
// map[string]any, []any and nil. Whoever fills it owns the facts; a clause
// only reads.
type State map[string]any

// Verdict is one clause's outcome for one capability.
type Verdict struct {
	Capability string `json:"capability"`
	Phase      Phase  `json:"phase"`
	Clause     string `json:"clause"`
	Holds      bool   `json:"holds"`
	// Message is the clause's message, given when it does not hold.
	Message string `json:"message,omitempty"`
	// Error says why the clause could not be evaluated (a missing fact,
	// the cost limit); such a clause does not hold.
	Error string `json:"error,omitempty"`
	// Cost is the evaluation's actual CEL cost, for callers that bound the
	// total a request may spend.
	Cost uint64 `json:"-"`
	// Values are the keys the clause reads and their values, formatted;
	// only when it does not hold (Compiled.Readings gives them anyway).
	Values []Reading `json:"values"`
	// Next is the call that would supply what the clause read and the
	// session's state lacks (read()): set on a clause not evaluable for
	// that reason.
	Next *Call `json:"next,omitempty"`
}

// Reading is one state value a clause read.
type Reading struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Describe words a failing verdict for a rejection: capability, clause,
// message and the values read.
func (v Verdict) Describe(code string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s.%s: %s", code, v.Phase, v.Capability, v.Clause, v.Message)
	if v.Error != "" {
		fmt.Fprintf(&b, " (not evaluable: %s)", v.Error)
	}
	if len(v.Values) > 0 {
		b.WriteString(" [")
		for i, r := range v.Values {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(r.Key + "=" + r.Value)
		}
		b.WriteString("]")
	}
	return b.String()
}

// Eval evaluates the clause on st.
func (c *Compiled) Eval(capability string, st State) Verdict {
	v := Verdict{Capability: capability, Phase: c.Phase, Clause: c.Clause.Name, Values: []Reading{}}
	out, det, err := c.prog.Eval(map[string]any(st))
	if det != nil {
		if cost := det.ActualCost(); cost != nil {
			v.Cost = *cost
		}
	}
	switch {
	case err != nil:
		v.Error = oneLine(err.Error())
		v.Next = NextCall(err)
	case out.Type() != types.BoolType:
		v.Error = fmt.Sprintf("evaluated to a %s, not a bool", out.Type())
	default:
		v.Holds = out.Value().(bool)
	}
	if !v.Holds {
		// Formatting the values read costs more than most clauses: only a
		// failure reports them.
		v.Message = c.Clause.Message
		v.Values = c.Readings(st)
	}
	return v
}

// Readings returns the values the clause reads in st, formatted.
func (c *Compiled) Readings(st State) []Reading { return readings(c.Reads, st) }

// Eval evaluates the clauses of one phase that keep accepts (all when keep
// is nil), in declaration order.
func (p *Program) Eval(capability string, ph Phase, st State, keep func(*Compiled) bool) []Verdict {
	var out []Verdict
	for _, c := range p.Clauses(ph) {
		if keep == nil || keep(c) {
			out = append(out, c.Eval(capability, st))
		}
	}
	return out
}

// Failed returns the verdicts that do not hold.
func Failed(vs []Verdict) []Verdict {
	var out []Verdict
	for _, v := range vs {
		if !v.Holds {
			out = append(out, v)
		}
	}
	return out
}

func readings(keys []string, st State) []Reading {
	out := make([]Reading, len(keys))
	for i, k := range keys {
		v, ok := st[k]
		if !ok {
			out[i] = Reading{k, "(absent)"}
			continue
		}
		out[i] = Reading{k, Format(v)}
	}
	return out
}

// Format renders a state value deterministically (NaN and ±Inf included,
// which JSON numbers cannot hold); long lists and maps are cut. A tool's
// JSON values are rendered as JSON-like text, objects with their keys
// sorted, nested at most formatDepth deep and strings inside them cut at
// formatString bytes, so a reading stays short whatever the upstream
// returned.
func Format(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case int64:
		return strconv.FormatInt(x, 10)
	case string:
		return strconv.Quote(x)
	case bool:
		return strconv.FormatBool(x)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case []string:
		var parts []string
		for i, s := range x {
			if i == formatMost {
				parts = append(parts, fmt.Sprintf("… %d more", len(x)-formatMost))
				break
			}
			parts = append(parts, strconv.Quote(s))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]float64:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for i, k := range keys {
			if i == formatMost {
				parts = append(parts, fmt.Sprintf("… %d more", len(keys)-formatMost))
				break
			}
			parts = append(parts, strconv.Quote(k)+": "+strconv.FormatFloat(x[k], 'g', -1, 64))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case nil, map[string]any, []any:
		var b strings.Builder
		formatJSON(&b, x, 1)
		return b.String()
	}
	return fmt.Sprintf("%v", v)
}

// Bounds of a formatted value: elements of a list or map, nesting of a
// tool's JSON values, bytes of a string inside one.
const (
	formatMost   = 8
	formatDepth  = 4
	formatString = 128
)

// formatJSON writes a tool's JSON value (ToolState's types) to b; depth is
// its nesting, from 1.
func formatJSON(b *strings.Builder, v any, depth int) {
	if l, ok := v.(*lazyJSON); ok {
		x, err := l.value()
		if err != nil {
			b.WriteString("(unreadable)")
			return
		}
		v = x
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case string:
		if len(x) > formatString {
			cut := formatString
			for cut > 0 && !utf8.RuneStart(x[cut]) {
				cut--
			}
			b.WriteString(strconv.Quote(x[:cut]))
			fmt.Fprintf(b, "…(%d bytes)", len(x))
			return
		}
		b.WriteString(strconv.Quote(x))
	case map[string]any:
		if depth > formatDepth {
			if len(x) == 0 {
				b.WriteString("{}")
			} else {
				fmt.Fprintf(b, "{… %d}", len(x))
			}
			return
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			if i == formatMost {
				fmt.Fprintf(b, "… %d more", len(keys)-formatMost)
				break
			}
			formatJSON(b, k, depth+1)
			b.WriteString(": ")
			formatJSON(b, x[k], depth+1)
		}
		b.WriteByte('}')
	case []any:
		if depth > formatDepth {
			if len(x) == 0 {
				b.WriteString("[]")
			} else {
				fmt.Fprintf(b, "[… %d]", len(x))
			}
			return
		}
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			if i == formatMost {
				fmt.Fprintf(b, "… %d more", len(x)-formatMost)
				break
			}
			formatJSON(b, e, depth+1)
		}
		b.WriteByte(']')
	default:
		b.WriteString(Format(x))
	}
}

// Cache holds compiled contracts by capability identity and kind, so a
// contract compiles once however many requests and registry versions use
// it (an identity covers the contract and the parameter schema it is
// typed against), and compiled clauses by what compiling one depends on,
// so that checking a contract (Check) and compiling it (Program) parse
// each clause once. It is bounded: when full, a map starts over.
type Cache struct {
	mu      sync.Mutex
	m       map[string]*Program
	clauses map[string]compiledClause
	max     int
}

// compiledClause is the outcome of compiling one expression: a clause
// (whose name and message are the first caller's) or why it does not
// compile.
type compiledClause struct {
	c   *Compiled
	err error
}

// NewCache returns a cache of at most max programs and max clauses.
func NewCache(max int) *Cache {
	return &Cache{m: map[string]*Program{}, clauses: map[string]compiledClause{}, max: max}
}

// clauseKey is what compiling an expression depends on, each part
// length-prefixed.
func clauseKey(kind string, ph Phase, params []Param, expr string) string {
	var b strings.Builder
	str := func(s string) { b.WriteString(strconv.Itoa(len(s))); b.WriteByte(':'); b.WriteString(s) }
	str(kind)
	str(string(ph))
	for _, p := range params {
		str(p.Name)
		str(p.Type)
	}
	b.WriteByte('|')
	b.WriteString(expr)
	return b.String()
}

// compileIn compiles cl for a capability of the given kind and
// parameters, once per cache (nil: every time). A clause's compilation depends on the kind, the phase,
// the parameters' names and types and the expression, not on its name or
// message: those are the caller's.
func compileIn(cache *Cache, kind string, ph Phase, params []Param, cl Clause) (*Compiled, error) {
	if cache == nil {
		return compileClause(kind, ph, params, cl)
	}
	key := clauseKey(kind, ph, params, cl.Expr)
	cache.mu.Lock()
	r, ok := cache.clauses[key]
	cache.mu.Unlock()
	if !ok {
		r.c, r.err = compileClause(kind, ph, params, cl)
		cache.mu.Lock()
		if len(cache.clauses) >= cache.max {
			clear(cache.clauses)
		}
		cache.clauses[key] = r
		cache.mu.Unlock()
	}
	if r.err != nil {
		return nil, r.err
	}
	if r.c.Clause == cl {
		return r.c, nil
	}
	c := *r.c // the compiled program is shared; CEL programs are safe for concurrent use
	c.Clause = cl
	return &c, nil
}

// Program returns the compiled contract of the capability with the given
// identity, compiling it on first use.
func (c *Cache) Program(identity, kind string, params []Param, con *Contract) (*Program, error) {
	if con.Empty() {
		return &Program{}, nil
	}
	key := identity + "|" + kind
	c.mu.Lock()
	p, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return p, nil
	}
	p, err := compile(c, con, kind, params)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// Two callers may have compiled the same contract at once: the first
	// stored wins, so an identity has one program while it is cached.
	if q, ok := c.m[key]; ok {
		return q, nil
	}
	if len(c.m) >= c.max {
		clear(c.m)
	}
	c.m[key] = p
	return p, nil
}
