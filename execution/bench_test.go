package execution

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/internal/testio"
	"github.com/groundgate/groundgate/registry"
)

// grid100 is the benchmark grid: MOM_WZS over window × risk_window ×
// leverage, 5 × 4 × 5 = 100 morphisms.
var grid100 = map[string][]float64{
	"window":      {20, 40, 60, 120, 250},
	"risk_window": {20, 60, 120, 250},
	"leverage":    {0.5, 1, 2, 3, 5},
}

// benchInput builds the executor's input for the grid on a panel without
// going through the gate (the gate is not what is timed).
func benchInput(b testing.TB, snap *registry.Snapshot, path string, raw []byte, metric string) input {
	req := ground.Request{Family: "MOM_WZS", Metric: metric, Data: path, Params: map[string]ground.Param{}}
	for name, vs := range grid100 {
		p := ground.Param{List: true}
		for _, v := range vs {
			p.Values = append(p.Values, ground.Number(v))
		}
		req.Params[name] = p
	}
	return input{snap: snap, req: req, src: source{path: path, raw: raw},
		risk: RiskPolicy{MaxLeverage: DefaultMaxLeverage, Predicates: Predicates()}, maxBytes: DefaultMaxDataBytes}
}

// refGrid lists the grid in the executor's order (schema order: window,
// risk_window, leverage; first slowest) as reference.py configs.
func refGrid() []map[string]any {
	var out []map[string]any
	for _, w := range grid100["window"] {
		for _, rw := range grid100["risk_window"] {
			for _, l := range grid100["leverage"] {
				out = append(out, map[string]any{"family": "MOM_WZS", "window": w, "risk_window": rw, "leverage": l})
			}
		}
	}
	return out
}

const benchRows, benchCols = 10000, 30

var (
	benchOnce  sync.Once
	benchPanel []byte
)

func benchPanelCSV(b testing.TB) []byte {
	benchOnce.Do(func() { benchPanel = testio.PanelCSV(benchRows, benchCols) })
	return benchPanel
}

// BenchmarkGrid100 times the executor's compute over a 100-morphism grid
// on a 30-asset × 10,000-day panel (about 40 years of weekdays): CSV
// parsing, expansion, planning, risk filter, run, score, select and the
// layer hashes; no artifact encoding and no storage. Sub-benchmarks vary
// the workers and whether morphisms share node values.
func BenchmarkGrid100(b *testing.B) {
	snap := seededSnapshot(b)
	in := benchInput(b, snap, "panel.csv", benchPanelCSV(b), "SRP")
	for _, ro := range []runOptions{
		{workers: 1, share: true},
		{workers: 2, share: true},
		{workers: 1, share: false},
		{workers: 2, share: false},
	} {
		b.Run(fmt.Sprintf("workers=%d/share=%v", ro.workers, ro.share), func(b *testing.B) {
			cpu := cpuSeconds()
			for b.Loop() {
				out, err := compute(context.Background(), in, ro)
				if err != nil {
					b.Fatal(err)
				}
				if len(out.fp.Morphisms) != 100 || out.fp.Selected == nil {
					b.Fatalf("%d morphisms, selected %v", len(out.fp.Morphisms), out.fp.Selected)
				}
			}
			b.ReportMetric((cpuSeconds()-cpu)/float64(b.N), "cpu-s/op")
		})
	}
}

// BenchmarkExecuteGrid100 is the whole Execute — with artifact encoding
// and one bbolt transaction storing the footprint, the data and 200
// artifacts — on a smaller 5-asset × 5,000-day panel. Each iteration
// changes one cell so that nothing is found already stored.
func BenchmarkExecuteGrid100(b *testing.B) {
	dir := b.TempDir()
	r := newRig(b, dir, Options{})
	raw := testio.PanelCSV(5000, 5)
	params := map[string]any{}
	for k, v := range grid100 {
		params[k] = v
	}
	g := r.ground(b, request("MOM_WZS", "SRP", "panel.csv", params))
	i := 0
	for b.Loop() {
		b.StopTimer()
		v := append([]byte(nil), raw...)
		v = append(v, fmt.Sprintf("2100-01-01,%d,1,1,1,1\n", i+1)...)
		i++
		os.WriteFile(filepath.Join(dir, "panel.csv"), v, 0o644)
		b.StartTimer()
		if _, err := r.x.Execute(context.Background(), g); err != nil {
			b.Fatal(err)
		}
	}
}

// pandasResult is what reference.py --grid-bench prints.
type pandasResult struct {
	LoadSeconds    float64    `json:"load_seconds"`
	GridSeconds    float64    `json:"grid_seconds"`
	LoadCPUSeconds float64    `json:"load_cpu_seconds"`
	GridCPUSeconds float64    `json:"grid_cpu_seconds"`
	Start          *int       `json:"start"`
	Scores         []*float64 `json:"scores"`
}

// BenchmarkGrid100VsPandas times the same grid in Go and in the pandas
// reference (execution/kernel/testdata/reference.py --grid-bench), in the
// same run, checks that both give the same scores (1e-9 relative), and
// reports the ratio: of wall times, and of CPU times (user + system, every
// thread), which a busy shared machine distorts less. Run it with a
// single iteration:
//
//	go test ./execution -run '^$' -bench Grid100VsPandas -benchtime 1x
func BenchmarkGrid100VsPandas(b *testing.B) {
	py := testio.Python(b, "pandas", "numpy")
	dir := b.TempDir()
	raw := benchPanelCSV(b)
	csv := filepath.Join(dir, "panel.csv")
	gridFile := filepath.Join(dir, "grid.json")
	os.WriteFile(csv, raw, 0o644)
	gb, _ := json.Marshal(refGrid())
	os.WriteFile(gridFile, gb, 0o644)

	var stdout, stderr bytes.Buffer
	cmd := exec.Command(py, filepath.Join("kernel", "testdata", "reference.py"), "--grid-bench", "SRP", csv, gridFile)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("reference.py: %v\n%s", err, stderr.String())
	}
	var ref pandasResult
	if err := json.Unmarshal(stdout.Bytes(), &ref); err != nil {
		b.Fatal(err)
	}

	snap := seededSnapshot(b)
	in := benchInput(b, snap, "panel.csv", raw, "SRP")
	ro := runOptions{workers: 1, share: true}
	var out *outcome
	for b.Loop() {
		var err error
		if out, err = compute(context.Background(), in, ro); err != nil {
			b.Fatal(err)
		}
	}
	goSeconds := b.Elapsed().Seconds() / float64(b.N)

	// The same grid, the same scores.
	if len(ref.Scores) != len(out.fp.Morphisms) {
		b.Fatalf("pandas scored %d morphisms, Go %d", len(ref.Scores), len(out.fp.Morphisms))
	}
	if ref.Start == nil || out.fp.Evaluation.Start == nil || *ref.Start != *out.fp.Evaluation.Start {
		b.Fatalf("evaluation start: pandas %v, Go %v", ref.Start, out.fp.Evaluation.Start)
	}
	for i, m := range out.fp.Morphisms {
		got, ok := m.Score.Value()
		if want := ref.Scores[i]; want == nil || !ok || math.Abs(got-*want) > 1e-9*math.Abs(*want) {
			b.Fatalf("morphism %d %v: Go %v, pandas %v", i, m.Params, got, ref.Scores[i])
		}
	}

	// One worker, shared node values; like for like, also the unshared
	// run: every morphism from scratch, as pandas runs them.
	t0, c0 := time.Now(), cpuSeconds()
	if _, err := compute(context.Background(), in, runOptions{workers: 1, share: false}); err != nil {
		b.Fatal(err)
	}
	unshared, unsharedCPU := time.Since(t0).Seconds(), cpuSeconds()-c0
	pandasTotal := ref.LoadSeconds + ref.GridSeconds
	pandasCPU := ref.LoadCPUSeconds + ref.GridCPUSeconds
	b.ReportMetric(pandasTotal, "pandas-s")
	b.ReportMetric(goSeconds, "go-s")
	b.ReportMetric(pandasTotal/goSeconds, "speedup")
	b.ReportMetric(unshared, "go-unshared-s")
	b.ReportMetric(pandasTotal/unshared, "speedup-unshared")
	b.ReportMetric(pandasCPU, "pandas-cpu-s")
	b.ReportMetric(unsharedCPU, "go-unshared-cpu-s")
	if unsharedCPU > 0 {
		b.ReportMetric(pandasCPU/unsharedCPU, "speedup-unshared-cpu")
	}
	b.Logf("100-morphism MOM_WZS grid, %d assets × %d rows, one core: pandas %.2fs (load %.2fs + grid %.2fs; CPU %.2fs); Go %.3fs (%.1f× faster); Go without shared nodes %.2fs (%.1f× faster; CPU %.2fs, %.1f× less)",
		benchCols, benchRows, pandasTotal, ref.LoadSeconds, ref.GridSeconds, pandasCPU, goSeconds, pandasTotal/goSeconds,
		unshared, pandasTotal/unshared, unsharedCPU, pandasCPU/unsharedCPU)
}

// BenchmarkGrid100Contracts is BenchmarkGrid100 (two workers, sharing)
// with the built-in catalog's contracts (16 clauses per morphism: the
// family's and its operations' preconditions, its postconditions, the
// metric's pre- and postcondition, with the facts they read) and without
// them (the previous release's catalog): the cost of checking contracts.
func BenchmarkGrid100Contracts(b *testing.B) {
	ctx := context.Background()
	legacy := func() *registry.Snapshot {
		cat, err := registry.LoadCatalog(os.DirFS(filepath.Join("testdata", "legacy", "catalog")), ".")
		if err != nil {
			b.Fatal(err)
		}
		s, err := registry.Open(ctx, filepath.Join(b.TempDir(), "legacy.db"), registry.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		if _, err := s.Seed(ctx, cat); err != nil {
			b.Fatal(err)
		}
		return s.Current()
	}()
	for _, c := range []struct {
		name string
		snap *registry.Snapshot
	}{{"contracts=off", legacy}, {"contracts=on", seededSnapshot(b)}} {
		in := benchInput(b, c.snap, "panel.csv", benchPanelCSV(b), "SRP")
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				out, err := compute(ctx, in, runOptions{workers: 2, share: true})
				if err != nil {
					b.Fatal(err)
				}
				if out.fp.Selected == nil {
					b.Fatal("nothing selected")
				}
			}
		})
	}
}
