package airline

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/groundgate/groundgate/airline"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/internal/testio"
	"github.com/groundgate/groundgate/policy"
)

// TestPoliciesOnGold writes policies.json (made by Policies) and reads the
// policies against every gold write, in a session of its own per task as
// the gateway would keep it (reads filed, admitted writes filed, the
// reservation a write returns filed as read): each write is admitted
// exactly when gold-writes.json says it complies, and a refusal names the
// rule it gives. Then every wanted call of the tasks without actions.
func TestPoliciesOnGold(t *testing.T) {
	if _, err := exec.LookPath("z3"); err != nil {
		testio.MissingTool(t, "z3 is not installed")
	}
	k, stop := Z3Checker()
	t.Cleanup(stop)
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
	// groundgate takes them: each compiles (SMT-LIB, derive, limits).
	var set map[string]policy.Policy
	if err := hashing.DecodeStrict(got, &set); err != nil {
		t.Fatal(err)
	}
	for name, p := range set {
		if _, err := policy.Compile(name, p); err != nil {
			t.Errorf("policy %s: %v", name, err)
		}
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
	start := time.Now()
	agree, reads := 0, 0
	for _, task := range tasks {
		s, err := NewSim(fresh(), facts[task.Index], k)
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range task.Actions {
			if !airline.Writes[a.Name] {
				s.Call(a.Name, a.Arguments)
				continue
			}
			name, pol := PolicyFor(ps, a.Name)
			broken, err := s.Decide(pol, name, a.Name, a.Arguments)
			if err != nil {
				t.Errorf("task %d action %d: %v", task.Index, i, err)
				continue
			}
			v := verdict[[2]int{task.Index, i}]
			ok := v.Compliant == (len(broken) == 0) && (v.Compliant || namesOne(broken, v.Rule, v.Also))
			if ok {
				agree++
			} else {
				t.Errorf("task %d action %d %s: the policies break %v, gold-writes.json says compliant %v rule %q", task.Index, i, a.Name, broken, v.Compliant, v.Rule)
			}
			if len(broken) == 0 {
				if out := s.Call(a.Name, a.Arguments); airline.IsError(out) {
					t.Errorf("task %d action %d: %s", task.Index, i, out)
				}
			}
		}
		reads += s.Reads
	}
	for _, wc := range gold.Wanted {
		s, err := NewSim(fresh(), facts[wc.Task], k)
		if err != nil {
			t.Fatal(err)
		}
		name, pol := PolicyFor(ps, wc.Tool)
		broken, err := s.Decide(pol, name, wc.Tool, wc.Arguments)
		if err != nil {
			t.Errorf("wanted %d: %v", wc.Task, err)
			continue
		}
		if wc.Forbidden != (len(broken) > 0) || (wc.Forbidden && !namesOne(broken, wc.Rule, wc.Also)) {
			t.Errorf("wanted %d %s: the policies break %v, gold-writes.json says forbidden %v by %q", wc.Task, wc.Tool, broken, wc.Forbidden, wc.Rule)
		}
		reads += s.Reads
	}
	t.Logf("%d of %d gold writes as gold-writes.json reads them; %d reads made first; %v", agree, len(gold.Writes), reads, time.Since(start))
}

// namesOne reports whether a refusal names rule or one of also: a call
// that breaks several rules is refused naming one (the solver's core is
// minimal).
func namesOne(broken []string, rule string, also []string) bool {
	if contains(broken, rule) {
		return true
	}
	for _, r := range also {
		if contains(broken, r) {
			return true
		}
	}
	return false
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
