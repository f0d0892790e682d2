package airline

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/groundgate/groundgate/airline"
	"github.com/groundgate/groundgate/internal/testio"
)

// BenchmarkDecideGoldWrites: the airline policy set's decision of each
// gold write of τ-bench's tasks, as the gateway's checker makes it (the
// derived values in CEL, one query to a warm z3), once the reads it needs
// are in the session's state. It reports the median and the 99th
// percentile over the 56 writes, every round.
//
//	go test -run '^$' -bench DecideGoldWrites -benchtime 20x ./examples/airline/
func BenchmarkDecideGoldWrites(b *testing.B) {
	dir := testio.SharedData(b, "tau-airline")
	raw, err := os.ReadFile(filepath.Join(dir, "tasks.json"))
	if err != nil {
		b.Fatal(err)
	}
	var tasks []Task
	if err := json.Unmarshal(raw, &tasks); err != nil {
		b.Fatal(err)
	}
	world, err := airline.Load(filepath.Join(dir, "db"))
	if err != nil {
		b.Fatal(err)
	}
	if raw, err = os.ReadFile("gold-writes.json"); err != nil {
		b.Fatal(err)
	}
	var gold GoldFile
	if err := json.Unmarshal(raw, &gold); err != nil {
		b.Fatal(err)
	}
	facts := map[int]map[string]any{}
	for _, f := range gold.Facts {
		facts[f.Task] = f.Facts
	}
	k, stop := Z3Checker()
	b.Cleanup(stop)
	ps := Policies(world)
	type write struct {
		s    *Sim
		name string
		pol  Policy
		tool string
		args json.RawMessage
	}
	var writes []write
	for _, task := range tasks {
		s, err := NewSim(world.Clone(), facts[task.Index], k)
		if err != nil {
			b.Fatal(err)
		}
		for _, a := range task.Actions {
			if !airline.Writes[a.Name] {
				s.Call(a.Name, a.Arguments)
				continue
			}
			name, pol := PolicyFor(ps, a.Name)
			// The first decision makes the reads the rules need.
			if _, err := s.Decide(pol, name, a.Name, a.Arguments); err != nil {
				b.Fatal(err)
			}
			writes = append(writes, write{s, name, pol, a.Name, a.Arguments})
		}
	}
	var lat []time.Duration
	by := map[string][]time.Duration{}
	for b.Loop() {
		for _, w := range writes {
			start := time.Now()
			broken, err := w.s.Decide(w.pol, w.name, w.tool, w.args)
			if err != nil {
				b.Fatal(err)
			}
			d := time.Since(start)
			lat = append(lat, d)
			by[w.name] = append(by[w.name], d)
			if len(broken) > 0 {
				by["(refused)"] = append(by["(refused)"], d)
			} else {
				by["(admitted)"] = append(by["(admitted)"], d)
			}
		}
	}
	for _, name := range sortedKeys(by) {
		ls := by[name]
		slices.Sort(ls)
		b.Logf("%-28s n=%4d p50 %6.2f ms p99 %6.2f ms", name, len(ls), float64(ls[len(ls)/2].Microseconds())/1000, float64(ls[(len(ls)-1)*99/100].Microseconds())/1000)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[(len(lat)-1)*99/100].Microseconds()), "p99-µs")
}
