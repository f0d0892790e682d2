package airline

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/groundgate/groundgate/hashing"
)

// fixtureOracle is testdata/oracle.json: τ-bench's reference tools
// (shared/data/tau-airline/reference, run by testdata/make_fixture.py)
// on the small world of testdata/db, cut from τ-bench's for nine tasks;
// its outputs are the tools' strings as returned, and probes are single
// calls (errors among them) on a fresh world.
type fixtureOracle struct {
	InitialDB string `json:"initial_db"`
	Tasks     []struct {
		Index   int `json:"index"`
		Actions []struct {
			Name      string         `json:"name"`
			Arguments jsontext.Value `json:"arguments"`
		} `json:"actions"`
		Outputs []string `json:"outputs"`
		FinalDB string   `json:"final_db"`
	} `json:"tasks"`
	Probes []struct {
		Name      string         `json:"name"`
		Arguments jsontext.Value `json:"arguments"`
		Output    string         `json:"output"`
		FinalDB   string         `json:"final_db"`
	} `json:"probes"`
}

// TestFixture is TestOracle on the repository's own small world, for a
// machine without shared/, plus error probes.
func TestFixture(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "oracle.json"))
	if err != nil {
		t.Fatal(err)
	}
	var orc fixtureOracle
	if err := hashing.DecodeStrict(b, &orc); err != nil {
		t.Fatal(err)
	}
	raw := readDB(t, filepath.Join("testdata", "db"))
	fresh := func() *World {
		w, err := Parse(raw[0], raw[1], raw[2])
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	if got := fresh().Digest(); got != orc.InitialDB {
		t.Errorf("initial digest %s, want %s", got, orc.InitialDB)
	}
	for _, task := range orc.Tasks {
		w := fresh()
		for j, a := range task.Actions {
			if got := w.Call(a.Name, a.Arguments); got != task.Outputs[j] {
				t.Errorf("task %d action %d %s:\n got %.300s\nwant %.300s", task.Index, j, a.Name, got, task.Outputs[j])
			}
		}
		if got := w.Digest(); got != task.FinalDB {
			t.Errorf("task %d: digest %s, want %s", task.Index, got, task.FinalDB)
		}
	}
	for _, p := range orc.Probes {
		w := fresh()
		if got := w.Call(p.Name, p.Arguments); got != p.Output {
			t.Errorf("%s%s:\n got %.300s\nwant %.300s", p.Name, p.Arguments, got, p.Output)
		}
		if got := w.Digest(); got != p.FinalDB {
			t.Errorf("%s%s: digest %s, want %s", p.Name, p.Arguments, got, p.FinalDB)
		}
	}
	if len(orc.Tasks) == 0 || len(orc.Probes) == 0 {
		t.Fatal("empty fixture")
	}
}
