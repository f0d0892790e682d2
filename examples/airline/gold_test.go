package airline

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/airline"
	"github.com/groundgate/groundgate/internal/testio"
)

var update = flag.Bool("update", false, "rewrite gold-writes.json and policies.json")

// load reads tasks.json and the world from shared/data/tau-airline.
func load(t *testing.T) ([]Task, func() *airline.World, string) {
	t.Helper()
	dir := testio.SharedData(t, "tau-airline")
	b, err := os.ReadFile(filepath.Join(dir, "tasks.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tasks []Task
	if err := json.Unmarshal(b, &tasks); err != nil {
		t.Fatal(err)
	}
	w, err := airline.Load(filepath.Join(dir, "db"))
	if err != nil {
		t.Fatal(err)
	}
	return tasks, w.Clone, dir
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestGoldWrites checks gold-writes.json: made again from tasks.json, db/
// and the verdicts, it is the file byte for byte; it lists every gold
// write of tasks.json exactly once, with a verdict; every rule's sentence
// is policy.md's.
func TestGoldWrites(t *testing.T) {
	tasks, fresh, dir := load(t)
	g, err := Make(tasks, fresh)
	if err != nil {
		t.Fatal(err)
	}
	got := marshal(t, g)
	if *update {
		if err := os.WriteFile("gold-writes.json", got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("gold-writes.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("gold-writes.json is not what gold.go makes from tasks.json and db/ (go test ./examples/airline/ -update)")
	}
	// Complete and consistent with tasks.json.
	var file GoldFile
	if err := json.Unmarshal(want, &file); err != nil {
		t.Fatal(err)
	}
	listed := map[[2]int]string{}
	for _, w := range file.Writes {
		listed[[2]int{w.Task, w.Index}] = w.Tool
		if w.Compliant != (w.Rule == "") || (w.Rule != "") != (w.Sentence != "") || w.Why == "" {
			t.Errorf("task %d action %d: compliant %v, rule %q, sentence %q, why %q", w.Task, w.Index, w.Compliant, w.Rule, w.Sentence, w.Why)
		}
	}
	n, without := 0, 0
	for _, task := range tasks {
		if len(task.Actions) == 0 {
			without++
		}
		for i, a := range task.Actions {
			if !airline.Writes[a.Name] {
				continue
			}
			n++
			if listed[[2]int{task.Index, i}] != a.Name {
				t.Errorf("task %d action %d %s is not listed", task.Index, i, a.Name)
			}
		}
	}
	if n != len(file.Writes) || n != 56 {
		t.Errorf("%d gold writes in tasks.json, %d listed (56 expected)", n, len(file.Writes))
	}
	if without != 7 || len(file.Wanted) != 7 {
		t.Errorf("%d tasks without actions, %d wanted calls", without, len(file.Wanted))
	}
	if len(file.Facts) != len(tasks) {
		t.Errorf("%d tasks, facts for %d", len(tasks), len(file.Facts))
	}
	policy, err := os.ReadFile(filepath.Join(dir, "policy.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range Rules {
		if !strings.Contains(string(policy), r.Sentence) {
			t.Errorf("rule %s: %q is not in policy.md", r.Name, r.Sentence)
		}
	}
	// The README's seven tasks are among those whose cancellation breaks a rule.
	broken := map[int]bool{}
	for _, w := range file.Writes {
		if w.Tool == "cancel_reservation" && !w.Compliant {
			broken[w.Task] = true
		}
	}
	for _, task := range []int{10, 26, 27, 28, 31, 33, 34} {
		if !broken[task] {
			t.Errorf("task %d: the README says its cancellation breaks the policy", task)
		}
	}
}
