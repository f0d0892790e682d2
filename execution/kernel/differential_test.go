package kernel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/groundgate/groundgate/execution/frame"
	"github.com/groundgate/groundgate/internal/testio"
)

// diffTolerance is the relative tolerance of the pandas comparison: the two
// implementations sum in different orders (numpy pairwise, Go left to
// right) and use different libm logs and exps, so the last bits may differ.
const diffTolerance = 1e-9

// refConfig is one morphism of a grid, as reference.py reads it. Zero
// fields are left out and take DOMAIN.md's defaults on both sides.
type refConfig struct {
	Family     string  `json:"family"`
	Window     int     `json:"window,omitempty"`
	RiskWindow int     `json:"risk_window,omitempty"`
	Leverage   float64 `json:"leverage,omitempty"`
	TargetVol  float64 `json:"target_vol,omitempty"`
	Lag        int     `json:"lag,omitempty"`
}

func (c refConfig) params() Params {
	p := DefaultParams()
	p.Window = c.Window
	if c.RiskWindow != 0 {
		p.RiskWindow = c.RiskWindow
	}
	if c.Leverage != 0 {
		p.Leverage = c.Leverage
	}
	if c.TargetVol != 0 {
		p.TargetVol = c.TargetVol
	}
	if c.Lag != 0 {
		p.Lag = c.Lag
	}
	return p
}

type refJob struct {
	Data string      `json:"data"`
	Grid []refConfig `json:"grid"`
}

type refGrid struct {
	Data    string   `json:"data"`
	Dates   []string `json:"dates"`
	Start   *int     `json:"start"`
	Results []struct {
		Assets  []string            `json:"assets"`
		Weights [][]*float64        `json:"weights"`
		PnL     []*float64          `json:"pnl"`
		Metrics map[string]*float64 `json:"metrics"`
	} `json:"results"`
}

func diffJobs() []refJob {
	grids := func(families ...string) [][]refConfig {
		var out [][]refConfig
		for _, fam := range families {
			// A window sweep with the defaults, and a sweep that moves every
			// other parameter too.
			out = append(out,
				[]refConfig{{Family: fam, Window: 20}, {Family: fam, Window: 120}},
				[]refConfig{
					{Family: fam, Window: 60, RiskWindow: 20, Leverage: 2, TargetVol: 0.2, Lag: 2},
					{Family: fam, Window: 5, RiskWindow: 250, Leverage: 0.5, TargetVol: 0.05, Lag: 1},
				})
		}
		return out
	}
	var jobs []refJob
	add := func(file string, gs [][]refConfig) {
		for _, g := range gs {
			jobs = append(jobs, refJob{Data: file, Grid: g})
		}
	}
	add("wti-daily.csv", grids("MOM_WZS", "MOM_REV", "VOL_TGT"))
	add("ffn-test-data.csv", grids("MOM_WZS", "MOM_REV", "VOL_TGT"))
	add("vix-daily.csv", grids("MOM_WZS", "MOM_REV", "VOL_TGT"))
	add("natural-gas-daily.csv", grids("MOM_WZS", "VOL_TGT"))
	add("sp500.csv.gz", grids("MOM_WZS"))
	add("crude-oil-wti-cushing.csv", grids("MOM_WZS", "MOM_REV", "CARRY", "VOL_TGT"))
	return jobs
}

// TestDifferentialPandas runs the four families and nine metrics on real
// data through testdata/reference.py, an independent pandas/numpy
// implementation of DOMAIN.md, and compares every weight, every P&L row and
// every metric to 1e-9 relative (NA equal to NA).
func TestDifferentialPandas(t *testing.T) {
	t.Parallel() // mostly waiting for reference.py
	py := testio.Python(t, "pandas", "numpy")
	jobs := diffJobs()
	for i := range jobs {
		abs, err := filepath.Abs(filepath.Join(realData, jobs[i].Data))
		if err != nil {
			t.Fatal(err)
		}
		jobs[i].Data = abs
	}
	spec, err := json.Marshal(jobs)
	if err != nil {
		t.Fatal(err)
	}
	specFile := filepath.Join(t.TempDir(), "jobs.json")
	if err := os.WriteFile(specFile, spec, 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(py, filepath.Join("testdata", "reference.py"), "--batch", specFile)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("reference.py: %v\n%s", err, stderr.String())
	}
	var ref []refGrid
	if err := json.Unmarshal(stdout.Bytes(), &ref); err != nil {
		t.Fatalf("reference.py output: %v", err)
	}
	if len(ref) != len(jobs) {
		t.Fatalf("reference.py returned %d grids for %d jobs", len(ref), len(jobs))
	}

	var series, scores comparer
	frames := map[string]*frame.Frame{}
	for gi, job := range jobs {
		f := frames[job.Data]
		if f == nil {
			if f, err = frame.LoadFile(job.Data); err != nil {
				t.Fatal(err)
			}
			frames[job.Data] = f
		}
		name := filepath.Base(job.Data)
		rg := ref[gi]
		if len(rg.Dates) != f.Len() {
			t.Fatalf("%s: pandas read %d rows, Go %d", name, len(rg.Dates), f.Len())
		}
		for i, d := range f.Dates() {
			if d.String() != rg.Dates[i] {
				t.Fatalf("%s row %d: pandas date %s, Go %s", name, i, rg.Dates[i], d)
			}
		}
		results := make([]Result, len(job.Grid))
		pnls := make([][]float64, len(job.Grid))
		for k, c := range job.Grid {
			if results[k], err = RunFamily(c.Family, f, c.params()); err != nil {
				t.Fatalf("%s %+v: %v", name, c, err)
			}
			pnls[k] = results[k].PnL
		}
		start := CommonStart(pnls...)
		if rs := rg.Start; (rs == nil) != (start < 0) || (rs != nil && *rs != start) {
			t.Errorf("%s grid %d: common start Go %d, pandas %v", name, gi, start, rg.Start)
			continue
		}
		for k, c := range job.Grid {
			label := name + " " + c.Family + " " + string(mustJSON(c))
			got, want := results[k], rg.Results[k]
			if len(got.Assets) != len(want.Assets) {
				t.Errorf("%s: assets %v, pandas %v", label, got.Assets, want.Assets)
				continue
			}
			for a := range got.Assets {
				if got.Assets[a] != want.Assets[a] {
					t.Errorf("%s: asset %d %q, pandas %q", label, a, got.Assets[a], want.Assets[a])
				}
				series.series(t, label+" weights "+got.Assets[a], got.Weights[a], want.Weights[a])
			}
			series.series(t, label+" pnl", got.PnL, want.PnL)
			defined := 0
			for _, m := range Metrics() {
				score, err := Evaluate(m.Name, got.PnL, got.Weights, start)
				if err != nil {
					t.Fatal(err)
				}
				scores.value(t, label+" "+m.Name, -1, score, want.Metrics[m.Name], 0)
				if !math.IsNaN(score) {
					defined++
				}
			}
			if defined < 7 {
				t.Errorf("%s: only %d metrics defined; the comparison is too weak", label, defined)
			}
		}
	}
	t.Logf("%d grids; %d weights and P&L values (%d NA on both sides), %d metric values (%d NA on both sides)",
		len(jobs), series.n, series.na, scores.n, scores.na)
	t.Logf("metrics: max relative difference %.3g at %s", scores.maxRel, scores.maxAt)
	t.Logf("series: max difference relative to max(|value|, series RMS) %.3g at %s", series.maxRel, series.maxAt)
	t.Logf("series: max plain element-wise relative difference %.3g at %s", series.maxElem, series.elemAt)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// comparer compares Go values with the reference's. A metric is compared
// relative to its own size. A series element is compared relative to the
// larger of its own size and the series' scale (the root mean square of the
// reference's defined values): elements near zero come out of cancellation
// (ln x_t − ln x_p for a float32-noise price change of 1e-8, a carry
// z-score x_t − m where x_t ≈ m), and the last-bit differences of two libms
// and two summation orders are large relative to them but not to the series.
// The largest plain element-wise relative difference is recorded too.
type comparer struct {
	n, na   int
	maxRel  float64 // the compared (scaled) relative difference
	maxAt   string
	maxElem float64 // plain |a−b|/max(|a|,|b|), for the record
	elemAt  string
}

// value compares one value; label and row (-1 for none) name it in errors.
func (c *comparer) value(t *testing.T, label string, row int, got float64, want *float64, scale float64) bool {
	t.Helper()
	name := func() string { // built only when needed
		if row < 0 {
			return label
		}
		return fmt.Sprintf("%s row %d", label, row)
	}
	c.n++
	if want == nil || math.IsNaN(got) {
		if want == nil && math.IsNaN(got) {
			c.na++
			return true
		}
		t.Errorf("%s: Go %v, pandas %v", name(), got, deref(want))
		return false
	}
	w := *want
	if got == w {
		return true
	}
	size := math.Max(math.Abs(got), math.Abs(w))
	if elem := math.Abs(got-w) / size; elem > c.maxElem {
		c.maxElem, c.elemAt = elem, name()
	}
	rel := math.Abs(got-w) / math.Max(size, scale)
	if rel > c.maxRel {
		c.maxRel, c.maxAt = rel, name()
	}
	if rel > diffTolerance {
		t.Errorf("%s: Go %.17g, pandas %.17g (relative difference %.3g, series scale %.3g)", name(), got, w, rel, scale)
		return false
	}
	return true
}

func (c *comparer) series(t *testing.T, label string, got []float64, want []*float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d rows, pandas %d", label, len(got), len(want))
		return
	}
	var ss float64
	var n int
	for _, w := range want {
		if w != nil {
			ss += float64(*w * *w)
			n++
		}
	}
	scale := 0.0
	if n > 0 {
		scale = math.Sqrt(ss / float64(n))
	}
	bad := 0
	for i := range got {
		if !c.value(t, label, i, got[i], want[i], scale) {
			if bad++; bad >= 5 {
				t.Errorf("%s: more differences not shown", label)
				return
			}
		}
	}
}

func deref(p *float64) any {
	if p == nil {
		return "NA"
	}
	return *p
}
