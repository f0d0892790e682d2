package execution

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/execution/kernel"
	"github.com/groundgate/groundgate/hashing"
)

// The data facts of a small crafted file, every key checked.
func TestDataFacts(t *testing.T) {
	raw := []byte("date,A,B,C,D\n" +
		"2020-01-01,1,5,NA,2\n" +
		"2020-01-02,2,5,NA,-1\n" +
		"2020-01-03,3,5,NA,NA\n" +
		"2021-06-30,4,NA,NA,3\n")
	f, err := parseSource(source{path: "x.csv", raw: raw}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	d := hashing.SumBLAKE3(raw)
	st := dataFacts(f, d)
	want := map[string]string{
		"data.rows":             "4",
		"data.assets":           "4",
		"data.columns":          `["A", "B", "C", "D"]`,
		"data.first_date":       `"2020-01-01"`,
		"data.last_date":        `"2021-06-30"`,
		"data.span_days":        "546",
		"data.max_gap_days":     "544",
		"data.na_share":         `{"A": 0, "B": 0.25, "C": 1, "D": 0.25}`,
		"data.constant_columns": `["B"]`,
		"data.tradable_columns": `["A", "D"]`,
		"data.min_price":        "-1",
		"data.non_positive":     "true",
		"data.digest":           `"` + d.String() + `"`,
	}
	for _, k := range contract.Keys() {
		if k.Scope != contract.ScopeData {
			continue
		}
		w, ok := want[k.Name]
		if !ok {
			t.Errorf("the test does not check %s", k.Name)
			continue
		}
		if got := contract.Format(st[k.Name]); got != w {
			t.Errorf("%s = %s, want %s", k.Name, got, w)
		}
	}
	if len(st) != len(want) {
		t.Errorf("%d facts, want %d", len(st), len(want))
	}
}

// The result facts of a hand-made result.
func TestResultFacts(t *testing.T) {
	nan := math.NaN()
	res := &kernel.Result{
		Assets:  []string{"A", "B"},
		Weights: [][]float64{{nan, 0.5, -1, 1}, {nan, 0.25, 0.25, math.Inf(1)}},
		PnL:     []float64{nan, nan, 0.01, -0.02},
	}
	st := resultFacts(contract.State{"data.rows": int64(4)}, res, -0.5, 0.75, nil)
	want := map[string]string{
		"result.rows":           "4",
		"result.assets":         `["A", "B"]`,
		"result.pnl_rows":       "2",
		"result.finite_share":   "0.875", // 7 of the 8 defined values
		"result.max_abs_weight": "+Inf",
		"result.gross_exposure": "+Inf",
		"result.signal_min":     "-0.5",
		"result.signal_max":     "0.75",
	}
	for k, w := range want {
		if got := contract.Format(st[k]); got != w {
			t.Errorf("%s = %s, want %s", k, got, w)
		}
	}
	if _, ok := st["result.turnover"].(float64); !ok {
		t.Error("no turnover")
	}
	if st["data.rows"] != int64(4) {
		t.Error("the result state lost the data facts")
	}
}

// Every clause verdict is in the footprint, replay reproduces them, and
// a morphism whose postcondition failed left no artifact anywhere.
func TestContractVerdictsReplay(t *testing.T) {
	r := newRig(t, realData, Options{})
	fp := r.execute(t, request("MOM_WZS", "SRP", "wti-daily.csv", map[string]any{"window": []any{25, 50}}))
	for _, m := range fp.Morphisms {
		var names []string
		for _, v := range m.Contracts {
			if !v.Holds {
				t.Errorf("morphism %d: %s.%s does not hold", m.Index, v.Capability, v.Clause)
			}
			names = append(names, string(v.Phase)+" "+v.Capability+"."+v.Clause)
		}
		for _, want := range []string{"pre MOM_WZS.history_covers_window", "pre wzs.window_within_data", "post MOM_WZS.finite_outputs", "pre SRP.enough_pnl_days", "post SRP.finite_score"} {
			if !slices.Contains(names, want) {
				t.Errorf("morphism %d: no verdict for %s in %v", m.Index, want, names)
			}
		}
	}
	rep, err := r.x.Replay(context.Background(), fp.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Match || !rep.Contracts || len(rep.Morphisms) != 0 {
		t.Fatalf("replay: match %v, contracts %v, morphisms %v", rep.Match, rep.Contracts, rep.Morphisms)
	}

	// A footprint whose recorded verdicts the replay does not reproduce
	// is reported, morphism by morphism.
	fp.Morphisms[1].Contracts[0].Holds = false
	canon, err := hashing.Canonical(fp)
	if err != nil {
		t.Fatal(err)
	}
	putLegacy(t, r.store.DB(), fp.Hash, canon) // with its record digest, Get would refuse it first
	if rep, err = r.x.Replay(context.Background(), fp.Hash); err != nil {
		t.Fatal(err)
	}
	if rep.Contracts || !slices.Equal(rep.Morphisms, []int{1}) {
		t.Fatalf("altered verdicts: contracts %v, morphisms %v", rep.Contracts, rep.Morphisms)
	}
	fp.Morphisms[1].Contracts[0].Holds = true // leave the file as the executor wrote it
	canon, _ = hashing.Canonical(fp)
	putLegacy(t, r.store.DB(), fp.Hash, canon)
}

// Every weight at the leverage cap on 20 assets: the gross exposure, a
// float sum of 20 × 0.1, is 2.0000000000000004, and gross_within_cap must
// not call that a violation (it once did: a false F10).
func TestGrossExposureRounding(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("date")
	for j := range 20 {
		fmt.Fprintf(&b, ",A%02d", j)
	}
	b.WriteString("\n")
	rng := rand.New(rand.NewPCG(1, 2))
	px := make([]float64, 20)
	for j := range px {
		px[j] = 100
	}
	day := time.Date(2000, 1, 3, 0, 0, 0, 0, time.UTC)
	for range 300 {
		b.WriteString(day.Format(time.DateOnly))
		for j := range px {
			px[j] *= math.Exp(0.02 * rng.NormFloat64())
			fmt.Fprintf(&b, ",%.6f", px[j])
		}
		b.WriteString("\n")
		day = day.AddDate(0, 0, 1)
	}
	if err := os.WriteFile(filepath.Join(dir, "panel.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	r := newRig(t, dir, Options{})
	fp := r.execute(t, request("VOL_TGT", "SRP", "panel.csv", map[string]any{"leverage": 0.1, "target_vol": 5, "risk_window": 20}))
	m := fp.Morphisms[0]
	if !m.Admissible {
		t.Fatalf("rejected %v: %+v", m.Rejected, m.Reasons)
	}
}
