package agent

import (
	"math"
	"testing"
)

func TestFisherExact(t *testing.T) {
	for _, tc := range []struct {
		a, n1, b, n2 int
		want         float64
	}{
		{9, 90, 21, 90, 0.0266196},     // the paper's Table 7 overall: p = 0.027
		{0, 12, 12, 12, 7.396023e-07},  // undiscoverable, 0/12 vs 12/12
		{3, 10, 3, 10, 1},              // equal proportions
		{1, 4, 3, 4, 0.4857142857},     // a small classic table
		{0, 0, 0, 5, 1},                // nothing observed
		{10, 10, 0, 10, 1.0825088e-05}, // complete separation
		{5, 24, 3, 24, 0.700776},       // adversarial 5/24 vs 3/24
	} {
		got := FisherExact(tc.a, tc.n1, tc.b, tc.n2)
		if math.Abs(got-tc.want) > 1e-4*math.Max(tc.want, 1e-3) && math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("FisherExact(%d/%d, %d/%d) = %.8g, want %.8g", tc.a, tc.n1, tc.b, tc.n2, got, tc.want)
		}
	}
}

func TestSummarise(t *testing.T) {
	tr := func(cat, pl, code, outcome, intent string, inv bool, ran bool) Trial {
		t := Trial{Category: cat, Pipeline: pl, Classification: Classification{Code: code, Outcome: outcome, Intent: intent, Inversion: inv}}
		if ran {
			t.Execution = &Execution{Status: ExecRan, Morphisms: 1, Admissible: 1}
		}
		return t
	}
	trials := []Trial{
		tr("confusable", PipelineVerified, "F3", OutcomeExecuted, "F3", true, true),
		tr("confusable", PipelineVerified, "F0", OutcomeExecuted, "F0", false, true),
		tr("confusable", PipelineVerified, CodeRefused, OutcomeRefused, "F0", false, false),
		tr("confusable", PipelineAssertionOnly, "F3", OutcomeExecuted, "F3", false, false),
		tr("undiscoverable", PipelineVerified, CodeCorrectRefusal, OutcomeAbstained, "", false, false),
	}
	rows := Summarise(trials)
	if len(rows) != 2*(len(Categories)+1) {
		t.Fatalf("%d rows", len(rows))
	}
	get := func(cat, pl string) Row {
		for _, r := range rows {
			if r.Category == cat && r.Pipeline == pl {
				return r
			}
		}
		t.Fatalf("no row %s %s", cat, pl)
		return Row{}
	}
	a := get("confusable", PipelineVerified)
	if a.N != 3 || a.F3 != 1 || a.Inversions != 1 || a.F3Ran != 1 || a.Reached != 2 || a.Ran != 2 || a.FalseBlocks != 1 || a.Counts[CodeRefused] != 1 {
		t.Errorf("confusable A: %+v", a)
	}
	b := get("confusable", PipelineAssertionOnly)
	if b.F3 != 1 || b.F3Ran != 0 || b.Rate() != 1 {
		t.Errorf("confusable B: %+v", b)
	}
	o := get("overall", PipelineVerified)
	if o.N != 4 || o.Counts[CodeCorrectRefusal] != 1 || o.Rate() != 0.25 {
		t.Errorf("overall A: %+v", o)
	}
	if r := get("multi-family", PipelineVerified); r.N != 0 || r.Rate() != 0 {
		t.Errorf("empty row %+v", r)
	}
}

func TestPaperTable7(t *testing.T) {
	var a, b Row
	for _, r := range PaperTable7 {
		if r.Category == "overall" && r.Pipeline == PipelineVerified {
			a = r
		}
		if r.Category == "overall" && r.Pipeline == PipelineAssertionOnly {
			b = r
		}
	}
	if math.Abs(a.Rate()-0.100) > 1e-9 || math.Abs(b.Rate()-0.2333) > 1e-4 {
		t.Errorf("paper overall rates %.4f, %.4f; want 10.0%% and 23.3%%", a.Rate(), b.Rate())
	}
	sum := map[string]int{}
	for _, r := range PaperTable7 {
		if r.Category != "overall" {
			sum[r.Pipeline] += r.F3
		}
	}
	if sum[PipelineVerified] != a.F3 || sum[PipelineAssertionOnly] != b.F3 {
		t.Errorf("categories add up to %v, overall says %d and %d", sum, a.F3, b.F3)
	}
}
