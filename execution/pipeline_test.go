package execution

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/ground"
)

// groundPipeline discovers every step's capability and the metric by name
// (the exact tier) and runs the gate.
func (r *rig) groundPipeline(t testing.TB, req map[string]any) ground.Outcome {
	t.Helper()
	terms := []string{req["metric"].(string)}
	for _, s := range req["pipeline"].([]map[string]any) {
		if c, ok := s["capability"].(string); ok {
			terms = append(terms, c)
		}
	}
	return r.groundTerms(t, req, terms...)
}

func (r *rig) executePipeline(t testing.TB, req map[string]any) *Footprint {
	t.Helper()
	out := r.groundPipeline(t, req)
	if out.Grounded == nil {
		t.Fatalf("not admitted: %s", mustJSON(t, out.Record.Decision.Failures))
	}
	fp, err := r.x.Execute(context.Background(), out.Grounded)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	return fp
}

func step(id, capability string, params map[string]any, inputs ...string) map[string]any {
	s := map[string]any{"id": id, "capability": capability, "inputs": inputs}
	if params != nil {
		s["params"] = params
	}
	return s
}

func pipelineRequest(metric, data, output string, steps ...map[string]any) map[string]any {
	return map[string]any{"pipeline": steps, "output": output, "metric": metric, "data": data}
}

// momentumSteps spells MOM_WZS out as registry operations.
func momentumSteps(window any) []map[string]any {
	return []map[string]any{
		step("r", "dlog", nil, "data"),
		step("c", "cs0", nil, "r"),
		step("z", "wzs", map[string]any{"window": window}, "c"),
		step("k", "clip", map[string]any{"lo": -1, "hi": 1}, "z"),
		step("out", "SIZE_BY_VOL", nil, "k", "data"),
	}
}

// TestPipelineSpellsOutFamily: a pipeline that spells out a family's
// expression compiles to the family's nodes, in the same order, and
// scores, selects and stores exactly what the family does.
func TestPipelineSpellsOutFamily(t *testing.T) {
	r := newRig(t, realData, Options{})
	cases := []struct {
		name   string
		family map[string]any
		steps  []map[string]any
	}{
		{"MOM_WZS", request("MOM_WZS", "SRP", "wti-daily.csv", map[string]any{"window": []any{25, 50, 100}}), momentumSteps([]any{25, 50, 100})},
		{"MOM_REV", request("MOM_REV", "MDD", "ffn-test-data.csv", map[string]any{"window": []any{5, 20}}), []map[string]any{
			step("r", "dlog", nil, "data"), step("c", "cs0", nil, "r"),
			step("z", "wzs", map[string]any{"window": []any{5, 20}}, "c"),
			step("k", "clip", map[string]any{"lo": -1, "hi": 1}, "z"), step("n", "neg", nil, "k"),
			step("out", "SIZE_BY_VOL", nil, "n", "data")}},
		{"CARRY", request("CARRY", "CLM", "crude-oil-wti-cushing.csv", map[string]any{"window": 60}), []map[string]any{
			// Listed out of order on purpose: the layout, not the listing,
			// decides the compile order.
			step("out", "SIZE_BY_VOL", nil, "k", "f"),
			step("k", "clip", map[string]any{"lo": -1, "hi": 1}, "z"),
			step("z", "wzs", map[string]any{"window": 60}, "s"),
			step("s", "sub", nil, "lf", "ln"),
			step("ln", "log", nil, "n"), step("lf", "log", nil, "f"),
			step("n", "col", map[string]any{"name": "C2"}, "data"),
			step("f", "col", map[string]any{"name": "C1"}, "data")}},
		{"VOL_TGT", request("VOL_TGT", "SRT", "vix-daily.csv", map[string]any{"target_vol": []any{0.1, 0.15}}), []map[string]any{
			step("one", "const", map[string]any{"value": 1}, "data"),
			step("out", "SIZE_BY_VOL", map[string]any{"target_vol": []any{0.1, 0.15}}, "one", "data")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fam := r.execute(t, tc.family)
			req := pipelineRequest(tc.family["metric"].(string), tc.family["data"].(string), "out", tc.steps...)
			pipe := r.executePipeline(t, req)
			if len(fam.Morphisms) != len(pipe.Morphisms) {
				t.Fatalf("%d morphisms, the family has %d", len(pipe.Morphisms), len(fam.Morphisms))
			}
			for i, fm := range fam.Morphisms {
				pm := pipe.Morphisms[i]
				if fm.Plan == nil || pm.Plan == nil {
					t.Fatalf("morphism %d: no plan (family %v, pipeline %v): %s", i, fm.Plan, pm.Plan, mustJSON(t, pm.Reasons))
				}
				fn, _ := json.Marshal(fam.Plans[fm.Plan.String()].Nodes)
				pn, _ := json.Marshal(pipe.Plans[pm.Plan.String()].Nodes)
				if string(fn) != string(pn) {
					t.Errorf("morphism %d: the nodes differ:\nfamily   %s\npipeline %s", i, fn, pn)
				}
				if fm.Program == nil || pm.Program == nil || *fm.Program != *pm.Program {
					t.Errorf("morphism %d: program %v, the family's %v", i, pm.Program, fm.Program)
				}
				if fm.Score != pm.Score {
					t.Errorf("morphism %d: score %v, the family's %v", i, pm.Score, fm.Score)
				}
				if !slices.Equal(fm.Artifacts, pm.Artifacts) {
					t.Errorf("morphism %d: artifacts %v, the family's %v", i, pm.Artifacts, fm.Artifacts)
				}
				if len(pm.Steps) != len(tc.steps) {
					t.Errorf("morphism %d: %d step runs, want %d", i, len(pm.Steps), len(tc.steps))
				}
			}
			if (fam.SelectedIndex == nil) != (pipe.SelectedIndex == nil) || (fam.SelectedIndex != nil && *fam.SelectedIndex != *pipe.SelectedIndex) {
				t.Errorf("selected %v, the family %v", pipe.SelectedIndex, fam.SelectedIndex)
			}
			rep, err := r.x.Replay(context.Background(), pipe.Hash)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Match {
				t.Errorf("replay: %s", mustJSON(t, rep))
			}
		})
	}
}

// widePipeline sums six rolling Sharpe ratios of the returns, each its own
// branch of one layer, then sizes the sum: the shape layered execution
// runs in parallel.
func widePipeline(data string) map[string]any {
	steps := []map[string]any{step("r", "dlog", nil, "data")}
	prev := ""
	for i, w := range []int{21, 42, 63, 126, 189, 252} {
		id := fmt.Sprintf("s%d", i)
		steps = append(steps, step(id, "rsharpe", map[string]any{"window": w}, "r"))
		if prev == "" {
			prev = id
			continue
		}
		sum := fmt.Sprintf("a%d", i)
		steps = append(steps, step(sum, "add", nil, prev, id))
		prev = sum
	}
	steps = append(steps,
		step("k", "clip", map[string]any{"lo": -1, "hi": 1}, prev),
		step("out", "SIZE_BY_VOL", nil, "k", "data"))
	return pipelineRequest("SRP", data, "out", steps...)
}

// TestLayeredParallelSameBytes: a wide pipeline's branches run in parallel
// and give the same execution hash as with one worker.
func TestLayeredParallelSameBytes(t *testing.T) {
	var hashes []string
	for _, workers := range []int{1, 2, 8} {
		r := newRig(t, realData, Options{Workers: workers})
		fp := r.executePipeline(t, widePipeline("sp500.csv.gz"))
		if fp.Morphisms[0].Score.Float() != fp.Morphisms[0].Score.Float() {
			t.Fatalf("workers %d: no score: %s", workers, mustJSON(t, fp.Morphisms[0].Reasons))
		}
		hashes = append(hashes, fp.Hash.String())
	}
	if hashes[0] != hashes[1] || hashes[0] != hashes[2] {
		t.Fatalf("execution hashes with 1, 2 and 8 workers: %v", hashes)
	}
}

// BenchmarkWidePipeline runs one wide pipeline (one morphism: all the
// parallelism is within its layers) on the 34-currency fx panel, with one
// worker and with every core: whole executions (parse, run, score, store),
// and the plan's evaluation alone.
// Compare: go test -run '^$' -bench WidePipeline -count 6 ./execution
func BenchmarkWidePipeline(b *testing.B) {
	req := widePipeline("fx-fed-h10/daily.csv")
	for _, workers := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run(fmt.Sprintf("execute/workers=%d", workers), func(b *testing.B) {
			r := newRig(b, bundledData, Options{Workers: workers})
			g := r.groundPipeline(b, req).Grounded
			if g == nil {
				b.Fatal("not admitted")
			}
			for b.Loop() {
				if _, err := r.x.Execute(context.Background(), g); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	r := newRig(b, bundledData, Options{})
	fp := r.executePipeline(b, req)
	plans, f := r.cleanPlans(b, &suiteRun{fp: fp})
	for _, workers := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run(fmt.Sprintf("plan/workers=%d", workers), func(b *testing.B) {
			for b.Loop() {
				if _, err := evalPlan(context.Background(), f, plans[0], nil, workers); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestPipelineGroundingPinsRegistryVersion: a pipeline grounding runs the
// steps it was admitted with. Edit a step's behaviour after grounding and
// the old grounding still executes to the same hash (and replays); a new
// grounding runs the new behaviour, and the diff names the step whose
// value changed.
func TestPipelineGroundingPinsRegistryVersion(t *testing.T) {
	r := newRig(t, realData, Options{})
	ctx := context.Background()
	req := pipelineRequest("SRP", "wti-daily.csv", "out", momentumSteps([]any{25, 50})...)
	g := r.groundPipeline(t, req).Grounded
	before, err := r.x.Execute(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := r.store.Current().Get("cs0")
	e := c.Entry
	e.Impl.Expr = "(cs1 (neg x))" // new behaviour, new identity
	if res, err := r.store.Put(ctx, e); err != nil || res.Capability.Identity == c.Identity {
		t.Fatalf("edit cs0: %+v %v", res, err)
	}
	after, err := r.x.Execute(ctx, g)
	if err != nil || after.Hash != before.Hash {
		t.Fatalf("the old grounding ran %v (%v), before the edit %s", after, err, before.Hash)
	}
	if rep, err := r.x.Replay(ctx, before.Hash); err != nil || !rep.Match || len(rep.Steps) != 0 {
		t.Fatalf("replay: %+v %v", rep, err)
	}
	now := r.executePipeline(t, req)
	if now.Hash == before.Hash {
		t.Fatal("a new grounding ran the old behaviour")
	}
	d, err := r.x.Diff(ctx, before.Hash, now.Hash)
	if err != nil {
		t.Fatal(err)
	}
	// The first change in each morphism is the edited step, in layer 2.
	if len(d.Steps) == 0 || d.Steps[0].Step != "c" || d.Steps[0].Layer != 2 || !slices.Contains(d.Steps[0].What, "plan") {
		t.Fatalf("diff steps: %s", mustJSON(t, d.Steps))
	}
	for _, s := range d.Steps {
		if s.Step == "r" {
			t.Fatalf("the diff names step r, which did not change: %s", mustJSON(t, d.Steps))
		}
	}
}

// TestLongPipelineBudget: a long pipeline's grid is charged by its plan's
// size before any plan is compiled: refused up front, nothing stored.
func TestLongPipelineBudget(t *testing.T) {
	r := newRig(t, realData, Options{MaxCells: 1 << 20})
	steps := []map[string]any{step("r", "dlog", nil, "data")}
	prev := "r"
	for i := range 28 {
		id := fmt.Sprintf("s%d", i)
		steps = append(steps, step(id, "rsharpe", map[string]any{"window": 20 + i}, prev))
		prev = id
	}
	steps = append(steps,
		step("z", "wzs", map[string]any{"window": []any{10, 20, 30, 40, 50, 60, 70, 80}}, prev),
		step("k", "clip", map[string]any{"lo": -1, "hi": 1}, "z"),
		step("out", "SIZE_BY_VOL", map[string]any{"target_vol": []any{0.05, 0.1, 0.15, 0.2}}, "k", "data"))
	g := r.groundPipeline(t, pipelineRequest("SRP", "wti-daily.csv", "out", steps...)).Grounded
	if g == nil {
		t.Fatal("not admitted")
	}
	fps, blobs := r.counts(t)
	_, err := r.x.Execute(context.Background(), g)
	if !errors.Is(err, ErrOverBudget) || !strings.Contains(err.Error(), "kernel nodes") {
		t.Fatalf("a 32-point grid of a 32-step pipeline under a 2^20-cell budget (a family-sized grid of 32 × 10,227 cells would pass): %v", err)
	}
	if f2, b2 := r.counts(t); f2 != fps || b2 != blobs {
		t.Fatalf("stored %d footprints and %d blobs on a refusal", f2-fps, b2-blobs)
	}
}

// TestParallelFailureIsTheFirstInPlanOrder: with several workers, levels
// run out of plan order; when nodes fail, the one reported is still the
// first in plan order (here node 2, in level 2, not node 3, in level 1),
// as one worker reports it.
func TestParallelFailureIsTheFirstInPlanOrder(t *testing.T) {
	src, err := readSource(os.DirFS(realData), "wti-daily.csv", DefaultMaxDataBytes)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parseSource(src, DefaultMaxDataBytes)
	if err != nil {
		t.Fatal(err)
	}
	nodes := []Node{
		{Op: "input", Args: []Arg{strArg("x")}},
		{Op: "dlog", Args: []Arg{nodeArg(0)}},
		{Op: "col", Args: []Arg{nodeArg(1), strArg("FIRST")}},  // level 2
		{Op: "col", Args: []Arg{nodeArg(0), strArg("SECOND")}}, // level 1
		{Op: "add", Args: []Arg{nodeArg(2), nodeArg(3)}},
	}
	cp := &compiled{plan: Plan{Nodes: nodes, Output: 4}, keys: contentKeys(nodes)}
	cp.schedule()
	var msgs []string
	for _, workers := range []int{1, 2} {
		_, err := evalPlan(context.Background(), f, cp, nil, workers)
		if err == nil {
			t.Fatalf("workers %d: no error", workers)
		}
		msgs = append(msgs, err.Error())
	}
	if msgs[0] != msgs[1] || !strings.Contains(msgs[0], "FIRST") {
		t.Fatalf("one worker reports %q, two %q", msgs[0], msgs[1])
	}
}
