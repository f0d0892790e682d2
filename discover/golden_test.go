package discover

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/internal/testio"
)

var update = flag.Bool("update", false, "rewrite testdata/results.golden")

// TestGoldenResults pins every tier end to end: the id (the hash of the
// canonical bytes) and the matches of each prompt of the prompt sets
// against the built-in catalog. The same file must pass on every GOARCH
// and GOAMD64: tools/determinism.sh runs it on GOAMD64=v1, v3 and
// GOARCH=arm64 and compares what it printed (testio.PrintGolden).
func TestGoldenResults(t *testing.T) {
	s, _ := mustOpenStore(t)
	d := mustNew(t, s)
	var b strings.Builder
	for _, f := range []string{"prompts.json", "prompts_holdout.json", "prompts_blind.json"} {
		for _, p := range loadPrompts(t, filepath.Join("testdata", f)) {
			r, err := d.Probe(context.Background(), Query{Prompt: p.Prompt})
			if err != nil {
				t.Fatalf("%s: %v", p.ID, err)
			}
			fmt.Fprintf(&b, "%s %s", p.ID, r.ID)
			for _, m := range r.Matches {
				fmt.Fprintf(&b, " %s/%s/%g", m.Name, m.Mode, m.Confidence)
			}
			if r.Relevance != nil {
				fmt.Fprintf(&b, " relevance %s %s", r.Relevance.Scoring, r.Relevance.Index)
			}
			b.WriteByte('\n')
		}
	}
	testio.Golden(t, filepath.Join("testdata", "results.golden"), []byte(b.String()), *update)
}
