package airline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"

	"github.com/groundgate/groundgate/airline"
	"github.com/groundgate/groundgate/session"
)

// FileAs are the writes whose result is the reservation, filed also under
// get_reservation_details by its reservation_id (upstream.json's file_as).
var FileAs = map[string]bool{
	"cancel_reservation": true, "update_reservation_flights": true,
	"update_reservation_baggages": true, "update_reservation_passengers": true,
}

// missingRead is read()'s error when the state lacks the call's result.
type missingRead struct {
	Tool      string
	Arguments map[string]any
}

func (m *missingRead) Error() string { return fmt.Sprintf("read %s %v first", m.Tool, m.Arguments) }

// sim is a session as the gateway keeps it, over a world of its own: the
// stand-in for groundgate while the derive member is not merged, so the
// policies can be read against the gold actions here.
type sim struct {
	t     *testing.T
	w     *airline.World
	st    *session.State
	facts map[string]any
	reads int // reads a rule needed first
}

func textResult(out string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": out}}, "isError": airline.IsError(out)})
	return b
}

// call runs the tool on the world and files an ok result in the state.
func (s *sim) call(tool string, args json.RawMessage) string {
	out := s.w.Call(tool, args)
	if airline.IsError(out) {
		return out
	}
	s.file("airline."+tool, args, out)
	if FileAs[tool] {
		var a struct {
			ReservationID string `json:"reservation_id"`
		}
		_ = json.Unmarshal(args, &a)
		s.file("airline.get_reservation_details", json.RawMessage(fmt.Sprintf(`{"reservation_id": %q}`, a.ReservationID)), out)
	}
	return out
}

func (s *sim) file(tool string, args json.RawMessage, out string) {
	o, ok, err := session.Observe(tool, args, textResult(out))
	if err != nil || !ok {
		s.t.Fatalf("observe %s: %v %v", tool, ok, err)
	}
	st, err := s.st.With(session.Limits{}, o)
	if err != nil {
		s.t.Fatal(err)
	}
	s.st = st
}

func env(t *testing.T, s **sim) *cel.Env {
	e, err := cel.NewEnv(
		cel.Variable("tool", cel.StringType),
		cel.Variable("arguments", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("state", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("facts", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("now", cel.TimestampType),
		cel.Function("read", cel.Overload("read_string_map", []*cel.Type{cel.StringType, cel.MapType(cel.StringType, cel.DynType)}, cel.DynType,
			cel.BinaryBinding(func(tool, args ref.Val) ref.Val {
				a, err := args.ConvertToNative(jsonMapType)
				if err != nil {
					return types.WrapErr(err)
				}
				raw, _ := json.Marshal(a)
				key, err := session.Key(raw)
				if err != nil {
					return types.WrapErr(err)
				}
				v, ok := (*s).st.Result(string(tool.(types.String)), key)
				if !ok {
					return types.WrapErr(&missingRead{Tool: string(tool.(types.String)), Arguments: a.(map[string]any)})
				}
				var x any
				_ = json.Unmarshal(v, &x)
				return types.DefaultTypeAdapter.NativeToValue(x)
			}))),
	)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

var jsonMapType = reflect.TypeOf(map[string]any{})

// decide evaluates the policy governing tool on args: the rules it breaks
// (nil: admitted), making the reads a rule needs first.
func (s *sim) decide(e *cel.Env, pol Policy, name, tool string, args json.RawMessage) ([]string, error) {
	var a map[string]any
	if err := json.Unmarshal(args, &a); err != nil {
		return nil, err
	}
	var stDoc map[string]any
	for range 20 {
		_ = json.Unmarshal(s.st.Canonical(), &stDoc)
		vals := map[string]any{}
		var missing *missingRead
		for c, src := range pol.Derive {
			ast, iss := e.Compile(src)
			if iss.Err() != nil {
				return nil, fmt.Errorf("%s.%s: %v", name, c, iss.Err())
			}
			prg, err := e.Program(ast)
			if err != nil {
				return nil, err
			}
			out, _, err := prg.Eval(map[string]any{"tool": "airline." + tool, "arguments": a, "state": stDoc, "facts": s.facts, "now": Now})
			if err != nil {
				if errors.As(err, &missing) {
					break
				}
				return nil, fmt.Errorf("%s.%s: %v", name, c, err)
			}
			vals[c] = out.Value()
		}
		if missing != nil {
			raw, _ := json.Marshal(missing.Arguments)
			name := strings.TrimPrefix(missing.Tool, "airline.")
			if out := s.call(name, raw); airline.IsError(out) {
				return nil, fmt.Errorf("read %s%s: %s", name, raw, out)
			}
			s.reads++
			continue
		}
		return z3Broken(pol, PolicyRules[name], vals)
	}
	return nil, fmt.Errorf("%s: too many reads", name)
}

// z3Broken asks z3 which named rules the derived values break.
func z3Broken(pol Policy, rules [][2]string, vals map[string]any) ([]string, error) {
	var b strings.Builder
	b.WriteString(pol.SMTLIB)
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch v := vals[k].(type) {
		case bool:
			fmt.Fprintf(&b, "(assert (= %s %v))\n", k, v)
		case int64:
			if v < 0 {
				fmt.Fprintf(&b, "(assert (= %s (- %d)))\n", k, -v)
			} else {
				fmt.Fprintf(&b, "(assert (= %s %d))\n", k, v)
			}
		default:
			return nil, fmt.Errorf("%s: %T %v", k, v, v)
		}
	}
	for _, r := range rules {
		fmt.Fprintf(&b, "(push)\n(assert (not %s))\n(check-sat)\n(pop)\n", r[1])
	}
	cmd := exec.Command("z3", "-in")
	cmd.Stdin = strings.NewReader(b.String())
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("z3: %v: %s", err, out)
	}
	lines := strings.Fields(string(out))
	if len(lines) != len(rules) {
		return nil, fmt.Errorf("z3 said %q", out)
	}
	var broken []string
	for i, l := range lines {
		if l == "sat" {
			broken = append(broken, rules[i][0])
		}
	}
	return broken, nil
}

func policyFor(ps map[string]Policy, tool string) (string, Policy) {
	for name, p := range ps {
		for _, a := range p.AppliesTo {
			if a == "airline."+tool {
				return name, p
			}
		}
	}
	return "", Policy{}
}

// TestPoliciesOnGold writes policies.json (made by Policies) and reads the
// policies against every gold write, in a session of its own per task as
// the gateway would keep it (reads filed, admitted writes filed, the
// reservation a write returns filed as read): each write is admitted
// exactly when gold-writes.json says it complies, and a refusal names the
// rule it gives. Then every wanted call of the tasks without actions.
func TestPoliciesOnGold(t *testing.T) {
	if _, err := exec.LookPath("z3"); err != nil {
		t.Skip("no z3")
	}
	tasks, fresh, _ := load(t)
	w0 := fresh()
	ps := Policies(w0)
	got := marshal(t, ps)
	if *update {
		if err := os.WriteFile("policies.json", got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if want, err := os.ReadFile("policies.json"); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("policies.json is not what Policies makes (go test ./examples/airline/ -update): %v", err)
	}
	var gold GoldFile
	raw, err := os.ReadFile("gold-writes.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &gold); err != nil {
		t.Fatal(err)
	}
	facts := map[int]map[string]any{}
	for _, f := range gold.Facts {
		facts[f.Task] = f.Facts
	}
	verdict := map[[2]int]GoldWrite{}
	for _, g := range gold.Writes {
		verdict[[2]int{g.Task, g.Index}] = g
	}
	var s *sim
	e := env(t, &s)
	start := time.Now()
	agree, reads := 0, 0
	for _, task := range tasks {
		s = &sim{t: t, w: fresh(), st: &session.State{}, facts: facts[task.Index]}
		for i, a := range task.Actions {
			if !airline.Writes[a.Name] {
				s.call(a.Name, a.Arguments)
				continue
			}
			name, pol := policyFor(ps, a.Name)
			broken, err := s.decide(e, pol, name, a.Name, a.Arguments)
			if err != nil {
				t.Errorf("task %d action %d: %v", task.Index, i, err)
				continue
			}
			v := verdict[[2]int{task.Index, i}]
			ok := v.Compliant == (len(broken) == 0) && (v.Compliant || contains(broken, v.Rule))
			if ok {
				agree++
			} else {
				t.Errorf("task %d action %d %s: the policies break %v, gold-writes.json says compliant %v rule %q", task.Index, i, a.Name, broken, v.Compliant, v.Rule)
			}
			if len(broken) == 0 {
				if out := s.call(a.Name, a.Arguments); airline.IsError(out) {
					t.Errorf("task %d action %d: %s", task.Index, i, out)
				}
			}
		}
		reads += s.reads
	}
	for _, wc := range gold.Wanted {
		s = &sim{t: t, w: fresh(), st: &session.State{}, facts: facts[wc.Task]}
		name, pol := policyFor(ps, wc.Tool)
		broken, err := s.decide(e, pol, name, wc.Tool, wc.Arguments)
		if err != nil {
			t.Errorf("wanted %d: %v", wc.Task, err)
			continue
		}
		if wc.Forbidden != (len(broken) > 0) || (wc.Forbidden && !contains(broken, wc.Rule)) {
			t.Errorf("wanted %d %s: the policies break %v, gold-writes.json says forbidden %v by %q", wc.Task, wc.Tool, broken, wc.Forbidden, wc.Rule)
		}
		reads += s.reads
	}
	t.Logf("%d of %d gold writes as gold-writes.json reads them; %d reads made first; %v", agree, len(gold.Writes), reads, time.Since(start))
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
