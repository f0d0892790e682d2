package airline

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/internal/testio"
)

// TestDifferential replays the random calls testdata/differential.py
// ran through τ-bench's reference tools (the file $AIRLINE_DIFF names;
// opt-in, as it needs Python) and compares every output and the final
// digest.
func TestDifferential(t *testing.T) {
	f := os.Getenv("AIRLINE_DIFF")
	if f == "" {
		t.Skip("AIRLINE_DIFF unset: see testdata/differential.py")
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
	w, err := Load(filepath.Join(testio.SharedData(t, "tau-airline"), "db"))
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
