package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/groundgate/groundgate/airline"
	ex "github.com/groundgate/groundgate/examples/airline"
	"github.com/groundgate/groundgate/internal/testio"
)

// TestMutationsBreakTheirRule reads every mutation against the policies
// offline (examples/airline's Sim: the gateway's policy checker over a
// session state kept as the gateway keeps it): each is refused, naming the rule it was made
// to break. The replay then checks the same against the server.
func TestMutationsBreakTheirRule(t *testing.T) {
	if _, err := exec.LookPath("z3"); err != nil {
		testio.MissingTool(t, "z3 is not installed")
	}
	checker, stop := ex.Z3Checker()
	t.Cleanup(stop)
	dir := testio.SharedData(t, "tau-airline")
	b, err := os.ReadFile(filepath.Join(dir, "tasks.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tasks []ex.Task
	if err := json.Unmarshal(b, &tasks); err != nil {
		t.Fatal(err)
	}
	if b, err = os.ReadFile("../../../examples/airline/gold-writes.json"); err != nil {
		t.Fatal(err)
	}
	var gold ex.GoldFile
	if err := json.Unmarshal(b, &gold); err != nil {
		t.Fatal(err)
	}
	facts := map[int]map[string]any{}
	for _, f := range gold.Facts {
		facts[f.Task] = f.Facts
	}
	world, err := airline.Load(filepath.Join(dir, "db"))
	if err != nil {
		t.Fatal(err)
	}
	ps := ex.Policies(world)
	// A mutation of a write that already breaks a rule is refused by
	// that rule or by the mutation's: the refusal names one rule (its
	// core is minimal), either is right.
	already := map[[2]int][]string{}
	for _, g := range gold.Writes {
		if !g.Compliant {
			already[[2]int{g.Task, g.Index}] = append([]string{g.Rule}, g.Also...)
		}
	}
	byRule := map[string][2]int{}
	n := 0
	for _, task := range tasks {
		w := world.Clone()
		for k, a := range task.Actions {
			if !airline.Writes[a.Name] {
				w.Call(a.Name, a.Arguments)
				continue
			}
			for _, m := range mutations(w, task, k, facts[task.Index]) {
				n++
				s, err := ex.NewSim(world.Clone(), m.facts, checker)
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range task.Actions[:k] {
					if airline.Writes[p.Name] {
						name, pol := ex.PolicyFor(ps, p.Name)
						if broken, err := s.Decide(pol, name, p.Name, p.Arguments); err != nil || len(broken) > 0 {
							continue
						}
					}
					s.Call(p.Name, p.Arguments)
				}
				raw, _ := json.Marshal(m.args)
				name, pol := ex.PolicyFor(ps, a.Name)
				broken, err := s.Decide(pol, name, a.Name, raw)
				c := byRule[m.rule]
				c[1]++
				ok := contains(broken, m.rule)
				for _, r := range already[[2]int{task.Index, k}] {
					ok = ok || contains(broken, r)
				}
				if err == nil && ok {
					c[0]++
				} else {
					t.Errorf("task %d write %d %s, %s: breaks %v (%v), not %s", task.Index, k, a.Name, m.name, broken, err, m.rule)
				}
				byRule[m.rule] = c
			}
			w.Call(a.Name, a.Arguments)
		}
	}
	for _, r := range sortedKeys(byRule) {
		t.Logf("%-85s %d / %d", r, byRule[r][0], byRule[r][1])
	}
	if n < 100 {
		t.Errorf("%d mutations", n)
	}
}
