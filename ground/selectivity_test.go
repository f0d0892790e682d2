package ground_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/groundgate/groundgate/reproducibility/experiments"
)

// The paper's selectivity experiments are defined once, in
// reproducibility/experiments; the gate's tests run them (an external test
// package, because experiments imports ground).

func selectivityEnv(t *testing.T) *experiments.Env {
	t.Helper()
	env, err := experiments.Open(context.Background(), filepath.Join(t.TempDir(), "g.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	return env
}

func checkSelectivity(t *testing.T, res *experiments.SelectivityResult) {
	t.Helper()
	for _, p := range res.Problems {
		t.Error(p)
	}
	t.Logf("%s: %d contexts, %d tuples (%d grounded): %v; codes checked on %d rejections, %d wrong; failure entries by code %v",
		res.Name, res.Contexts, res.Tuples, res.Grounded, res.Confusion, res.CodesChecked, res.CodesWrong, res.Failures)
	if !res.Pass {
		t.Fatalf("%s failed: %v", res.Name, res.Confusion)
	}
}

// TestSelectivity96 is the paper's Table 3: 96 tuples over 6 discovery
// contexts, 27 grounded (all admitted) and 69 not (all rejected, each with
// the right failure codes).
func TestSelectivity96(t *testing.T) {
	res, err := experiments.Selectivity96(context.Background(), selectivityEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	checkSelectivity(t, res)
	if res.Confusion != experiments.PaperTable3 || res.Tuples != 96 || res.Grounded != 27 {
		t.Fatalf("confusion %v over %d tuples (%d grounded); the paper's is %v over 96 (27)", res.Confusion, res.Tuples, res.Grounded, experiments.PaperTable3)
	}
}

// TestSelectivityGenerated: every family × metric (real and fabricated) ×
// context: the gate admits exactly the pairs the context's terms name.
func TestSelectivityGenerated(t *testing.T) {
	res, err := experiments.SelectivityGenerated(context.Background(), selectivityEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	checkSelectivity(t, res)
}
