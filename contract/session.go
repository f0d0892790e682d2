package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"

	"github.com/groundgate/groundgate/session/statekey"
)

// Session is what a tool's clauses read of the session a call is decided
// in, beyond the call itself (SPEC §15): the trusted state, the host's
// facts and the decision's time. Its maps are shared and read only.
type Session struct {
	// State is the session's trusted state document
	// (groundgate.session-state/v1) as ToolState converts JSON; {} outside
	// a session.
	State map[string]any
	// Facts are the facts the host asserted in the session's turns; {}
	// when none.
	Facts map[string]any
	// Now is the time the call is decided; zero outside a session, where
	// the key now is absent (a clause reading it is not evaluable).
	Now time.Time
}

// Call names a tool call: what a rule needed and the state lacked comes
// from the call of Tool with Arguments (their RFC 8785 form).
type Call struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

// MissingError is read()'s error when the state holds no result of the
// call it names: the call that would supply it.
type MissingError struct{ Call Call }

func (e *MissingError) Error() string {
	return fmt.Sprintf("the session's state has no result of %s %s: call it first", e.Call.Tool, e.Call.Arguments)
}

// NextCall returns the call an evaluation error names (a MissingError in
// its chain), or nil.
func NextCall(err error) *Call {
	var m *MissingError
	if errors.As(err, &m) {
		c := m.Call
		return &c
	}
	return nil
}

// DecodeSession decodes a session's state (its RFC 8785 JSON; nil or {}
// outside a session) and the host's facts (a JSON object; nil: none) for
// the clauses of one call. A state is not checked for members that differ
// only in case (a session's state legitimately holds them: results under
// reservation_id=ab12 and reservation_id=AB12); the facts are, like
// arguments.
func DecodeSession(state, facts []byte, now time.Time) (*Session, error) {
	return (*SessionCache)(nil).Decode(state, facts, now)
}

// SessionCache keeps decoded states by their bytes, so the phases of one
// call (preconditions, policies, postconditions) and calls in a row on an
// unchanged state decode a state of up to a MiB once. It is bounded;
// when full it starts over. A nil cache decodes every time.
type SessionCache struct {
	mu  sync.Mutex
	m   map[string]map[string]any
	max int
}

// NewSessionCache returns a cache of at most max states.
func NewSessionCache(max int) *SessionCache {
	return &SessionCache{m: map[string]map[string]any{}, max: max}
}

// Decode is DecodeSession through the cache.
func (c *SessionCache) Decode(state, facts []byte, now time.Time) (*Session, error) {
	st, err := c.state(state)
	if err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	f, err := decodeObject(facts, true)
	if err != nil {
		return nil, fmt.Errorf("facts: %w", err)
	}
	return &Session{State: st, Facts: f, Now: now}, nil
}

func (c *SessionCache) state(raw []byte) (map[string]any, error) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "{}" || string(t) == "null" {
		return map[string]any{}, nil
	}
	if c != nil {
		c.mu.Lock()
		m, ok := c.m[string(raw)]
		c.mu.Unlock()
		if ok {
			return m, nil
		}
	}
	m, ok := decodeStateDoc(raw)
	if !ok {
		var err error
		if m, err = decodeJSON(raw); err != nil {
			return nil, err
		}
	}
	if c != nil {
		c.mu.Lock()
		if len(c.m) >= c.max {
			clear(c.m)
		}
		c.m[string(raw)] = m
		c.mu.Unlock()
	}
	return m, nil
}

// lazyJSON is a value of the state decoded when a clause first reads it:
// a state of a MiB holds many results, and a rule reads a few. The
// adapter (jsonAdapter) and the formatting read through it.
type lazyJSON struct {
	raw  json.RawMessage
	once sync.Once
	v    any
	err  error
}

// value is the decoded value (ToolState's types).
func (l *lazyJSON) value() (any, error) {
	l.once.Do(func() {
		d := json.NewDecoder(bytes.NewReader(l.raw))
		d.UseNumber()
		var v any
		if l.err = d.Decode(&v); l.err == nil {
			// Nested in state.results.TOOL.KEY (or latest.TOOL.result):
			// the depth bound counts from the state's top.
			l.v, l.err = celJSON(v, 4)
		}
	})
	return l.v, l.err
}

// decodeStateDoc reads a session's state document
// (groundgate.session-state/v1) with its results and latest entries left
// as lazyJSON; ok is false when raw is not one (decodeJSON then reads it
// whole).
func decodeStateDoc(raw []byte) (map[string]any, bool) {
	// A session's state is its own RFC 8785 form (session.DecodeState):
	// it has no duplicate names, and checking each value for them would
	// double the cost of a MiB. The document's own members and latest's
	// entries are checked here; elsewhere the last of two names wins, as
	// encoding/json has it.
	d := jsontext.NewDecoder(bytes.NewReader(raw), jsontext.AllowDuplicateNames(true))
	// object reads one object whose members member reads.
	object := func(member func(name string) bool) bool {
		if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
			return false
		}
		for d.PeekKind() == '"' {
			tok, err := d.ReadToken()
			if err != nil || !member(tok.String()) {
				return false
			}
		}
		tok, err := d.ReadToken()
		return err == nil && tok.Kind() == '}'
	}
	lazy := func() (*lazyJSON, bool) {
		v, err := d.ReadValue()
		if err != nil {
			return nil, false
		}
		return &lazyJSON{raw: bytes.Clone(v)}, true
	}
	latest, results := map[string]any{}, map[string]any{}
	var version any
	seen := map[string]bool{}
	ok := object(func(name string) bool {
		if seen[name] {
			return false
		}
		seen[name] = true
		switch name {
		case "latest":
			return object(func(tool string) bool {
				entry := map[string]any{}
				ok := object(func(m string) bool {
					if m != "arguments" && m != "result" || entry[m] != nil {
						return false
					}
					v, ok := lazy()
					entry[m] = v
					return ok
				})
				latest[tool] = entry
				return ok && len(entry) == 2
			})
		case "results":
			return object(func(tool string) bool {
				byKey := map[string]any{}
				results[tool] = byKey
				return object(func(key string) bool {
					v, ok := lazy()
					byKey[key] = v
					return ok
				})
			})
		case "version":
			tok, err := d.ReadToken()
			if err != nil || tok.Kind() != '"' {
				return false
			}
			version = tok.String()
			return true
		}
		return false
	})
	if !ok || len(seen) != 3 {
		return nil, false
	}
	if _, err := d.ReadToken(); err != io.EOF {
		return nil, false
	}
	return map[string]any{"latest": latest, "results": results, "version": version}, true
}

// decodeJSON decodes one JSON object to ToolState's types, without the
// strict syntax's case check.
func decodeJSON(data []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON value")
	}
	out, err := celJSON(v, 1)
	if err != nil {
		return nil, err
	}
	m, ok := out.(map[string]any)
	if !ok {
		return nil, errors.New("not a JSON object")
	}
	return m, nil
}

// ToolStateIn is ToolState for a call decided in a session: the state
// holds the session's keys as well (state, facts and, when s.Now is set,
// now). A nil s is outside a session.
func ToolStateIn(tool string, arguments, result []byte, s *Session) (State, error) {
	st, err := ToolState(tool, arguments, result)
	if err != nil || s == nil {
		return st, err
	}
	if s.State != nil {
		st["state"] = s.State
	}
	if s.Facts != nil {
		st["facts"] = s.Facts
	}
	if !s.Now.IsZero() {
		st["now"] = s.Now.UTC()
	}
	return st, nil
}

// readFunc is the overload read(tool, arguments) is expanded to, with the
// state as its first argument: a user cannot spell it.
const readFunc = "@read"

// readOptions declare read(tool, arguments) -> dyn on a tool's state:
// state.results[tool][Key(arguments)], or a MissingError naming the call.
// read is a macro for @read(state, tool, arguments), so it reads the state
// the clause is evaluated on.
func readOptions() []cel.EnvOption {
	return []cel.EnvOption{
		cel.Macros(cel.GlobalMacro("read", 2, func(meh cel.MacroExprFactory, _ ast.Expr, args []ast.Expr) (ast.Expr, *cel.Error) {
			return meh.NewCall(readFunc, meh.NewIdent("state"), args[0], args[1]), nil
		})),
		cel.Function(readFunc, cel.Overload("read_state_string_map",
			[]*cel.Type{cel.MapType(cel.StringType, cel.DynType), cel.StringType, cel.MapType(cel.StringType, cel.DynType)}, cel.DynType,
			cel.FunctionBinding(readState))),
	}
}

var readAdapter = jsonAdapter{types.DefaultTypeAdapter}

func readState(args ...ref.Val) ref.Val {
	if len(args) != 3 {
		return types.NewErr("read takes a tool and its arguments")
	}
	tool, ok := args[1].(types.String)
	if !ok {
		return types.NewErr("read: the tool is a %s, not a string", args[1].Type())
	}
	native, err := celNative(args[2], 1)
	if err != nil {
		return types.NewErr("read: the arguments: %v", err)
	}
	raw, err := json.Marshal(native)
	if err != nil {
		return types.NewErr("read: the arguments: %v", err)
	}
	canon, key, err := statekey.Of(raw)
	if err != nil {
		return types.NewErr("read: %v", err)
	}
	var st map[string]any
	switch s := args[0].(type) {
	case sortedMap:
		st = s.m
	default:
		return types.NewErr("read: the state is not a session state")
	}
	results, _ := st["results"].(map[string]any)
	byKey, _ := results[string(tool)].(map[string]any)
	v, ok := byKey[key]
	if !ok {
		return types.WrapErr(&MissingError{Call: Call{Tool: string(tool), Arguments: canon}})
	}
	return readAdapter.NativeToValue(v)
}

// celNative converts a CEL value to JSON's Go types (int64 kept exact),
// depth bounded as ToolState's.
func celNative(v ref.Val, depth int) (any, error) {
	if depth > MaxToolStateDepth {
		return nil, fmt.Errorf("nested deeper than %d", MaxToolStateDepth)
	}
	switch x := v.(type) {
	case types.String:
		return string(x), nil
	case types.Int:
		return json.Number(strconv.FormatInt(int64(x), 10)), nil
	case types.Uint:
		return json.Number(strconv.FormatUint(uint64(x), 10)), nil
	case types.Double:
		return float64(x), nil
	case types.Bool:
		return bool(x), nil
	case types.Null:
		return nil, nil
	case traits.Mapper:
		out := map[string]any{}
		it := x.Iterator()
		for it.HasNext() == types.True {
			k := it.Next()
			ks, ok := k.(types.String)
			if !ok {
				return nil, fmt.Errorf("a key is a %s, not a string", k.Type())
			}
			e, err := celNative(x.Get(k), depth+1)
			if err != nil {
				return nil, err
			}
			out[string(ks)] = e
		}
		return out, nil
	case traits.Lister:
		n, _ := x.Size().(types.Int)
		out := make([]any, 0, int(n))
		for i := types.Int(0); i < n; i++ {
			e, err := celNative(x.Get(i), depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
		return out, nil
	}
	return nil, fmt.Errorf("a %s is not JSON", v.Type())
}

// Expr is one CEL expression over a tool call's pre-state
// (ToolSchemaVersion's request keys: tool, arguments, state, facts, now;
// read() too), compiled once: a policy's derived value.
type Expr struct {
	Text string
	// Type is the expression's CEL type as checked: int, double, string,
	// bool, or dyn when it reads JSON whose type only the value tells.
	Type *cel.Type
	prog cel.Program
}

// CompileCallExpr compiles expr against a tool call's pre-state, bounded
// as a clause is (MaxExprLen, the cost estimate).
func CompileCallExpr(expr string) (*Expr, error) {
	if len(expr) > MaxExprLen {
		return nil, fmt.Errorf("longer than %d bytes", MaxExprLen)
	}
	env, err := toolEnv(Pre)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace([]byte(expr))) == 0 {
		return nil, errors.New("the expression is empty")
	}
	checked, iss := env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		return nil, fmt.Errorf("does not compile against %s (a call's tool, arguments, state, facts, now): %s", ToolSchemaVersion, oneLine(iss.Err().Error()))
	}
	if err := mapLoops(checked, ToolKind); err != nil {
		return nil, err
	}
	est, err := env.EstimateCost(checked, toolSizeEstimator{})
	if err != nil {
		return nil, fmt.Errorf("cost estimate: %w", err)
	}
	if est.Max > MaxEstimatedCost {
		return nil, fmt.Errorf("its worst-case cost %d exceeds the limit %d (lists, maps and strings of %d elements assumed): simplify it", est.Max, MaxEstimatedCost, toolSizeHint)
	}
	prog, err := env.Program(checked, cel.CostLimit(MaxCost), cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, fmt.Errorf("program: %w", err)
	}
	return &Expr{Text: expr, Type: checked.OutputType(), prog: prog}, nil
}

// Eval evaluates the expression on a call's state (ToolStateIn) to a
// scalar: int64, float64, string or bool. An error that came from read()
// carries the call (NextCall).
func (e *Expr) Eval(st State) (any, error) {
	out, _, err := e.prog.Eval(map[string]any(st))
	if err != nil {
		return nil, err
	}
	switch x := out.(type) {
	case types.Int:
		return int64(x), nil
	case types.Double:
		return float64(x), nil
	case types.String:
		return string(x), nil
	case types.Bool:
		return bool(x), nil
	}
	return nil, fmt.Errorf("evaluated to a %s: %w", out.Type(), ErrNotScalar)
}

// toolEnv is the CEL environment of a tool's clauses of one phase.
func toolEnv(ph Phase) (*cel.Env, error) {
	scopes, err := scopesFor(ToolKind, ph)
	if err != nil {
		return nil, err
	}
	base, err := baseEnv()
	if err != nil {
		return nil, fmt.Errorf("CEL environment: %w", err)
	}
	decls, err := declarations(ToolKind, scopes, nil)
	if err != nil {
		return nil, err
	}
	decls = append(decls, cel.CustomTypeAdapter(jsonAdapter{base.CELTypeAdapter()}))
	decls = append(decls, readOptions()...)
	env, err := base.Extend(decls...)
	if err != nil {
		return nil, fmt.Errorf("CEL environment: %w", err)
	}
	return env, nil
}
