package execution

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/registry"
)

// changedLayers names the layers whose digests differ between a and b.
func changedLayers(a, b *Footprint) map[string]bool {
	out := map[string]bool{}
	la, lb := a.Layers.List(), b.Layers.List()
	for i, name := range LayerNames {
		if la[i] != lb[i] {
			out[name] = true
		}
	}
	return out
}

func layerRow(changed map[string]bool) string {
	var b strings.Builder
	for _, name := range LayerNames {
		mark := "="
		if changed[name] {
			mark = "Δ"
		}
		fmt.Fprintf(&b, " %s %s |", name, mark)
	}
	return b.String()
}

// TestDriftTable runs SPEC §6's drift table row by row on real data: a
// 3-morphism MOM_WZS sweep, window ∈ {25, 50, 100}, on the WTI spot series,
// each row one targeted edit against the same base execution.
func TestDriftTable(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, dir, "wti.csv", "wti-daily.csv")
	r := newRig(t, dir, Options{})
	ctx := context.Background()
	baseParams := map[string]any{"window": []any{25, 50, 100}, "risk_window": 60}
	base := r.execute(t, request("MOM_WZS", "SRP", "wti.csv", baseParams))
	if len(base.Morphisms) != 3 || base.Selected == nil {
		t.Fatalf("base: %d morphisms, selected %v", len(base.Morphisms), base.Selected)
	}

	type row struct {
		name string
		run  func(t *testing.T) *Footprint
		// want: layer → "Δ", "=", or "best" (Δ exactly when the selected
		// grid index differs from the base's)
		want map[string]string
	}
	rows := []row{
		{
			name: "scoring metric (SRP → MDD)",
			run: func(t *testing.T) *Footprint {
				return r.execute(t, request("MOM_WZS", "MDD", "wti.csv", baseParams))
			},
			want: map[string]string{"registry": "=", "request": "Δ", "morphisms": "=", "plans": "=", "artifacts": "=", "score": "Δ", "selection": "best", "data": "="},
		},
		{
			// Turnover falls as the window grows: here the best differs.
			name: "scoring metric (SRP → TRN)",
			run: func(t *testing.T) *Footprint {
				fp := r.execute(t, request("MOM_WZS", "TRN", "wti.csv", baseParams))
				if *fp.SelectedIndex == *base.SelectedIndex {
					t.Errorf("TRN selects index %d like SRP: the row does not show a changed selection", *fp.SelectedIndex)
				}
				return fp
			},
			want: map[string]string{"registry": "=", "request": "Δ", "morphisms": "=", "plans": "=", "artifacts": "=", "score": "Δ", "selection": "best", "data": "="},
		},
		{
			name: "a parameter value (risk_window 60 → 120)",
			run: func(t *testing.T) *Footprint {
				return r.execute(t, request("MOM_WZS", "SRP", "wti.csv", map[string]any{"window": []any{25, 50, 100}, "risk_window": 120}))
			},
			want: map[string]string{"registry": "=", "request": "Δ", "morphisms": "Δ", "plans": "Δ", "artifacts": "Δ", "score": "Δ", "selection": "Δ", "data": "="},
		},
		{
			name: "data at the same path (the file loses its last 1000 rows)",
			run: func(t *testing.T) *Footprint {
				path := filepath.Join(dir, "wti.csv")
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				lines := strings.SplitAfter(string(b), "\n")
				if err := os.WriteFile(path, []byte(strings.Join(lines[:len(lines)-1001], "")), 0o644); err != nil {
					t.Fatal(err)
				}
				return r.execute(t, request("MOM_WZS", "SRP", "wti.csv", baseParams))
			},
			want: map[string]string{"registry": "=", "request": "=", "morphisms": "=", "plans": "=", "artifacts": "Δ", "score": "Δ", "selection": "best", "data": "Δ"},
		},
		{
			name: "aliases, tags, descriptions of five capabilities the pipeline uses",
			run: func(t *testing.T) *Footprint {
				copyFile(t, dir, "wti.csv", "wti-daily.csv") // back to the base data
				v0 := r.store.Current().Version()
				redescribe(t, r.store, "MOM_WZS", "dlog", "cs0", "wzs", "clip")
				if v := r.store.Current().Version(); v != v0+1 {
					t.Fatalf("registry version %d after the edit, want %d", v, v0+1)
				}
				if r.store.Current().Registry() != base.Registry {
					t.Fatal("a discovery-only edit changed the registry hash")
				}
				return r.execute(t, request("MOM_WZS", "SRP", "wti.csv", baseParams))
			},
			want: map[string]string{"registry": "=", "request": "=", "morphisms": "=", "plans": "=", "artifacts": "=", "score": "=", "selection": "=", "data": "="},
		},
	}
	t.Logf("base %s, selected index %d", base.Hash, *base.SelectedIndex)
	for _, rw := range rows {
		t.Run(rw.name, func(t *testing.T) {
			fp := rw.run(t)
			changed := changedLayers(base, fp)
			sameBest := fp.SelectedIndex != nil && *fp.SelectedIndex == *base.SelectedIndex
			for _, name := range LayerNames {
				want := rw.want[name]
				if want == "best" {
					want = "="
					if !sameBest {
						want = "Δ"
					}
				}
				if got := map[bool]string{true: "Δ", false: "="}[changed[name]]; got != want {
					t.Errorf("layer %s: %s, want %s", name, got, want)
				}
			}
			if (fp.Hash != base.Hash) != (len(changed) > 0) {
				t.Errorf("execution hash changed=%v with changed layers %v", fp.Hash != base.Hash, changed)
			}
			t.Logf("%-70s |%s selected %v (base %d)", rw.name, layerRow(changed), deref(fp.SelectedIndex), *base.SelectedIndex)
			// Whatever changed, the stored footprint replays.
			rep, err := r.x.Replay(ctx, fp.Hash)
			if err != nil || !rep.Match {
				t.Fatalf("replay: %v %+v", err, rep)
			}
		})
	}
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// redescribe adds an alias and a tag to each named capability and rewrites
// its description, as one registry version: the discovery layer only.
func redescribe(t *testing.T, s *registry.Store, names ...string) {
	t.Helper()
	var entries []registry.Entry
	for _, n := range names {
		c, ok := s.Current().Get(n)
		if !ok {
			t.Fatalf("no capability %s", n)
		}
		e := c.Entry
		e.Disc.Aliases = append(e.Disc.Aliases, "audit alias for "+strings.ToLower(n))
		e.Disc.Tags = append(e.Disc.Tags, "audited "+strings.ToLower(n))
		e.Disc.Description = "Re-described for the drift test. " + e.Disc.Description
		entries = append(entries, e)
	}
	if _, changed, err := s.Apply(context.Background(), entries); err != nil || len(changed) != len(names) {
		t.Fatalf("apply: %v, changed %v", err, changed)
	}
}
