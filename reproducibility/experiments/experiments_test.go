package experiments_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/groundgate/groundgate/reproducibility/experiments"
)

func mustEnv(t *testing.T) *experiments.Env {
	t.Helper()
	env, err := experiments.Open(context.Background(), filepath.Join(t.TempDir(), "x.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Close(); err != nil {
			t.Error(err)
		}
	})
	return env
}

// The selectivity experiments run in the gate's own tests
// (ground/selectivity_test.go); here the execution experiments.

func TestReplayDeterminism(t *testing.T) {
	reps := 10
	if testing.Short() {
		reps = 2
	}
	res, err := experiments.ReplayDeterminism(context.Background(), mustEnv(t), reps)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 5 {
		t.Fatalf("%d configurations, want 5", len(res.Rows))
	}
	fams := map[string]bool{}
	for _, r := range res.Rows {
		fams[r.Config.Family] = true
		for _, p := range r.Problems {
			t.Errorf("%s: %s", r.Config.Label, p)
		}
		t.Logf("%-28s %s: %d runs, %d unique, %d/%d replays matched, %d morphisms", r.Config.Label, r.Hash, r.Runs, r.UniqueHashes, r.ReplaysMatched, r.Replays, r.Morphisms)
	}
	if len(fams) != 4 {
		t.Errorf("configurations span %d families, want 4", len(fams))
	}
	if !res.Pass {
		t.Fatal("replay determinism failed")
	}
}

func TestDriftTable(t *testing.T) {
	res, err := experiments.DriftTable(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Table) != 4 {
		t.Fatalf("%d rows, want SPEC's 4", len(res.Table))
	}
	for _, r := range res.Table {
		for _, p := range r.Problems {
			t.Errorf("%s: %s", r.Change, p)
		}
		t.Logf("%-28s %v selected %v (base %v), paper row reproduced: %v", r.Change, r.Layers, deref(r.Selected), deref(r.BaseSelected), r.PaperReproduced)
		if !r.PaperReproduced {
			t.Errorf("%s: the paper's row is not reproduced: %v vs %v", r.Change, r.Layers, r.Paper)
		}
	}
	if !res.Pass {
		t.Fatal("drift table failed")
	}
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// The data row's edit keeps the header and the line endings, and drops
// rows: the file stays a valid series at the same path.
func TestDriftDataEdit(t *testing.T) {
	in := "Date,Price\r\n1999-12-31,25.6\r\n2009-12-31,79.36\r\n2010-01-04,81.52\r\n"
	want := "Date,Price\r\n1999-12-31,25.6\r\n2009-12-31,79.36\r\n"
	if got := string(experiments.DriftDataEdit([]byte(in))); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
