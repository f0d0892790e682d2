package airline

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/internal/testio"
)

// TestDifferential runs testdata/differential.py, which makes random
// calls of the 14 tools (errors included) through τ-bench's own reference
// tools on the shared world, then replays them here and compares every
// output and the final digest. $AIRLINE_DIFF names a file of calls made
// beforehand (other seeds, more calls) instead.
func TestDifferential(t *testing.T) {
	src := testio.SharedData(t, "tau-airline")
	f := os.Getenv("AIRLINE_DIFF")
	if f == "" {
		f = referenceCalls(t, src, 1, 2000)
	}
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Calls []struct {
			Name      string         `json:"name"`
			Arguments jsontext.Value `json:"arguments"`
			Output    *string        `json:"output"`
		} `json:"calls"`
		FinalDB string `json:"final_db"`
	}
	if err := hashing.DecodeFields(b, &d); err != nil {
		t.Fatal(err)
	}
	w, err := Load(filepath.Join(src, "db"))
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for i, c := range d.Calls {
		want := "None"
		if c.Output != nil {
			want = *c.Output
		}
		if got := w.Call(c.Name, c.Arguments); got != want {
			bad++
			if bad <= 10 {
				t.Errorf("call %d %s%s:\n got %.300s\nwant %.300s", i, c.Name, c.Arguments, got, want)
			}
		}
	}
	if got := w.Digest(); got != d.FinalDB {
		t.Errorf("digest %s want %s", got, d.FinalDB)
	}
	t.Logf("%d calls, %d differ", len(d.Calls), bad)
}

// referenceCalls runs differential.py with seed and n calls against the
// reference tools in src and returns the file it wrote. The reference
// imports tau_bench.envs.tool.Tool, a base class it does not use: an
// empty stand-in is enough.
func referenceCalls(t *testing.T, src string, seed, n int) string {
	t.Helper()
	py := testio.Python(t)
	dir := t.TempDir()
	stub := filepath.Join(dir, "tau_bench", "envs")
	if err := os.MkdirAll(stub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stub, "tool.py"), []byte("class Tool:\n    pass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "calls.json")
	cmd := exec.Command(py, filepath.Join("testdata", "differential.py"), strconv.Itoa(seed), strconv.Itoa(n), out)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+dir, "TAU_AIRLINE="+src)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("differential.py: %v\n%s", err, b)
	}
	return out
}
