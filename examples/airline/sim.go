package airline

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"sort"
	"strings"

	"github.com/groundgate/groundgate/airline"
	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/session"
)

// FileAs are the writes whose result is the reservation, filed also under
// get_reservation_details by its reservation_id (upstream.json's file_as).
var FileAs = map[string]bool{
	"cancel_reservation": true, "update_reservation_flights": true,
	"update_reservation_baggages": true, "update_reservation_passengers": true,
}

// Sim is a session as the gateway keeps it, over a world of its own, and
// the policies decided on it with cel-go and z3: a stand-in for groundgate
// to read the policies against calls offline (the tests, and the replay's
// expectations).
type Sim struct {
	W     *airline.World
	St    *session.State
	Facts map[string]any
	Reads int // reads a rule needed first
	progs map[string]*contract.Expr
}

// NewSim is a session over w with the host's facts.
func NewSim(w *airline.World, facts map[string]any) (*Sim, error) {
	s := &Sim{W: w, St: &session.State{}, Facts: facts, progs: map[string]*contract.Expr{}}
	if s.Facts == nil {
		s.Facts = map[string]any{}
	}
	return s, nil
}

func textResult(out string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": out}}, "isError": airline.IsError(out)})
	return b
}

// Call runs the tool on the world and files an ok result in the state
// (and a write's reservation as read, as upstream.json's file_as).
func (s *Sim) Call(tool string, args json.RawMessage) string {
	out := s.W.Call(tool, args)
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

func (s *Sim) file(tool string, args json.RawMessage, out string) {
	o, ok, err := session.Observe(tool, args, textResult(out))
	if err != nil || !ok {
		panic(fmt.Sprintf("observe %s: %v %v", tool, ok, err))
	}
	st, err := s.St.With(session.Limits{}, o)
	if err != nil {
		panic(err)
	}
	s.St = st
}

// Decide evaluates the policy named name, governing tool, on args with
// groundgate's own CEL (contract.CompileCallExpr over the session's
// state, facts and clock): the rules it breaks (nil: admitted), making
// the reads a rule needs first.
func (s *Sim) Decide(pol Policy, name, tool string, args json.RawMessage) ([]string, error) {
	facts, err := json.Marshal(s.Facts)
	if err != nil {
		return nil, err
	}
	for range 20 {
		sess, err := contract.DecodeSession(s.St.Canonical(), facts, Now)
		if err != nil {
			return nil, err
		}
		st, err := contract.ToolStateIn("airline."+tool, args, nil, sess)
		if err != nil {
			return nil, err
		}
		vals := map[string]any{}
		var next *contract.Call
		for _, c := range sortedKeys(pol.Derive) {
			src := pol.Derive[c]
			e, ok := s.progs[src]
			if !ok {
				if e, err = contract.CompileCallExpr(src); err != nil {
					return nil, fmt.Errorf("%s.%s: %v", name, c, err)
				}
				s.progs[src] = e
			}
			v, err := e.Eval(st)
			if err != nil {
				if next = contract.NextCall(err); next != nil {
					break
				}
				return nil, fmt.Errorf("%s.%s: %v", name, c, err)
			}
			vals[c] = v
		}
		if next != nil {
			tool := strings.TrimPrefix(next.Tool, "airline.")
			if out := s.Call(tool, next.Arguments); airline.IsError(out) {
				return nil, fmt.Errorf("read %s%s: %s", tool, next.Arguments, out)
			}
			s.Reads++
			continue
		}
		return z3Broken(pol, PolicyRules[name], vals)
	}
	return nil, fmt.Errorf("%s: too many reads", name)
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
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

// PolicyFor is the policy (and its name) that governs the write tool.
func PolicyFor(ps map[string]Policy, tool string) (string, Policy) {
	for name, p := range ps {
		for _, a := range p.AppliesTo {
			if a == "airline."+tool {
				return name, p
			}
		}
	}
	return "", Policy{}
}
