package execution

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/registry"
)

func layerOf(t *testing.T, d *DiffReport, name string) LayerDiff {
	t.Helper()
	for _, l := range d.Layers {
		if l.Layer == name {
			return l
		}
	}
	t.Fatalf("no layer %s", name)
	return LayerDiff{}
}

func diffLayers(d *DiffReport) string {
	var out []string
	for _, l := range d.Layers {
		if !l.Same {
			out = append(out, l.Layer)
		}
	}
	return strings.Join(out, ",")
}

// Diff says which layers differ and what inside them.
func TestDiff(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, dir, "px.csv", "ffn-test-data.csv")
	r := newRig(t, dir, Options{})
	ctx := context.Background()
	params := map[string]any{"window": []any{10, 20, 40}}
	base := r.execute(t, request("MOM_WZS", "SRP", "px.csv", params))
	diff := func(b *Footprint) *DiffReport {
		t.Helper()
		d, err := r.x.Diff(ctx, base.Hash, b.Hash)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Layers) != len(LayerNames) {
			t.Fatalf("%d layers", len(d.Layers))
		}
		return d
	}

	t.Run("itself", func(t *testing.T) {
		d := diff(base)
		if !d.Same || diffLayers(d) != "" {
			t.Fatalf("%s", mustJSON(t, d))
		}
	})

	t.Run("metric", func(t *testing.T) {
		d := diff(r.execute(t, request("MOM_WZS", "ARET", "px.csv", params)))
		if got := diffLayers(d); !strings.HasPrefix(got, "request,score") || strings.Contains(got, "morphisms") {
			t.Fatalf("layers %s", got)
		}
		req := layerOf(t, d, "request").Request
		if len(req) != 1 || req[0].Pointer != "/metric" || string(req[0].A) != `"SRP"` || string(req[0].B) != `"ARET"` {
			t.Fatalf("request diff %s", mustJSON(t, req))
		}
		if n := len(layerOf(t, d, "score").Morphisms); n != 3 {
			t.Fatalf("%d score differences, want 3", n)
		}
	})

	t.Run("parameter", func(t *testing.T) {
		d := diff(r.execute(t, request("MOM_WZS", "SRP", "px.csv", map[string]any{"window": []any{10, 30, 40}, "lag": 2})))
		req := layerOf(t, d, "request").Request
		if mustJSON(t, req) != mustJSON(t, []FieldDiff{
			{Pointer: "/params/lag", B: json.RawMessage("2")},
			{Pointer: "/params/window/1", A: json.RawMessage("20"), B: json.RawMessage("30")},
		}) {
			t.Fatalf("request diff %s", mustJSON(t, req))
		}
		ms := layerOf(t, d, "morphisms").Morphisms
		if len(ms) != 3 || mustJSON(t, ms[1].Params) != mustJSON(t, []FieldDiff{
			{Pointer: "/lag", A: json.RawMessage("1"), B: json.RawMessage("2")},
			{Pointer: "/window", A: json.RawMessage("20"), B: json.RawMessage("30")},
		}) {
			t.Fatalf("morphism diff %s", mustJSON(t, ms))
		}
		if got := diffLayers(d); got != "request,morphisms,plans,artifacts,score,selection" {
			t.Fatalf("layers %s", got)
		}
	})

	t.Run("data", func(t *testing.T) {
		// Drop the first 100 rows and change one price.
		b, _ := os.ReadFile(filepath.Join(dir, "px.csv"))
		lines := strings.SplitAfter(string(b), "\n")
		body := append([]string{lines[0]}, lines[101:]...)
		body[1000] = strings.Replace(body[1000], ",", ",1", 1)
		os.WriteFile(filepath.Join(dir, "px.csv"), []byte(strings.Join(body, "")), 0o644)
		d := diff(r.execute(t, request("MOM_WZS", "SRP", "px.csv", params)))
		if got := diffLayers(d); !strings.Contains(got, "data") || strings.Contains(got, "morphisms") || strings.Contains(got, "request") {
			t.Fatalf("layers %s", got)
		}
		dd := layerOf(t, d, "data").Data
		if !dd.Compared || dd.DatesOnlyA != 100 || dd.DatesOnlyB != 0 || dd.RowsA-dd.RowsB != 100 || *dd.FirstOnlyA != "2004-03-10" {
			t.Fatalf("data diff %s", mustJSON(t, dd))
		}
		if len(dd.Changed) != 1 || dd.Changed[0].Column != "AAPL" || dd.Changed[0].Cells != 1 {
			t.Fatalf("changed cells %s", mustJSON(t, dd.Changed))
		}
		if len(dd.ColumnsAdded)+len(dd.ColumnsRemoved) != 0 || *dd.FromB == *dd.FromA {
			t.Fatalf("columns or range %s", mustJSON(t, dd))
		}
		copyFile(t, dir, "px.csv", "ffn-test-data.csv")
	})

	// A registry change to a capability no plan uses moves the registry
	// hash (and, through it, every morphism hash and the selection) but no
	// plan, no artifact and no score; the diff says it was not used and the
	// dependencies are the same.
	t.Run("registry change unused", func(t *testing.T) {
		flipFusable(t, r.store, "sq")
		d := diff(r.execute(t, request("MOM_WZS", "SRP", "px.csv", params)))
		if got := diffLayers(d); got != "registry,morphisms,selection" {
			t.Fatalf("layers %s", got)
		}
		rd := layerOf(t, d, "registry").Registry
		if rd == nil || len(rd.Changed) != 1 || rd.Changed[0].Name != "sq" || rd.Changed[0].Used || rd.Used != 0 || !rd.DependenciesSame {
			t.Fatalf("registry diff %s", mustJSON(t, rd))
		}
	})

	// A change to a capability the plans use moves the plans too, and the
	// diff says so.
	t.Run("registry change used", func(t *testing.T) {
		flipFusable(t, r.store, "clip")
		d := diff(r.execute(t, request("MOM_WZS", "SRP", "px.csv", params)))
		if got := diffLayers(d); got != "registry,morphisms,plans,selection" {
			t.Fatalf("layers %s", got)
		}
		rd := layerOf(t, d, "registry").Registry
		var clip *CapChange
		for i := range rd.Changed {
			if rd.Changed[i].Name == "clip" {
				clip = &rd.Changed[i]
			}
		}
		if clip == nil || !clip.Used || rd.Used != 1 || rd.DependenciesSame {
			t.Fatalf("registry diff %s", mustJSON(t, rd))
		}
	})

	// Discovery-only edits: same execution, but the diff against an
	// execution on another registry version lists them as re-described.
	t.Run("discovery only", func(t *testing.T) {
		before := r.execute(t, request("MOM_WZS", "SRP", "px.csv", params))
		redescribe(t, r.store, "MOM_WZS", "dlog", "cs0", "wzs", "clip")
		after := r.execute(t, request("MOM_WZS", "SRP", "px.csv", params))
		if after.Hash != before.Hash {
			t.Fatal("a discovery-only edit changed the execution")
		}
		// Another request on the new version: its diff against the
		// execution on the old version lists the five re-described
		// capabilities, all used, and no identity change.
		other := r.execute(t, request("MOM_WZS", "SRP", "px.csv", map[string]any{"window": []any{10, 20}}))
		if other.RegistryVersion != before.RegistryVersion+1 {
			t.Fatalf("versions %d, %d", before.RegistryVersion, other.RegistryVersion)
		}
		d, err := r.x.Diff(ctx, before.Hash, other.Hash)
		if err != nil {
			t.Fatal(err)
		}
		l := layerOf(t, d, "registry")
		rd := l.Registry
		if !l.Same || rd == nil || len(rd.Redescribed) != 5 || len(rd.Changed)+len(rd.Added)+len(rd.Removed) != 0 || !rd.DependenciesSame {
			t.Fatalf("registry diff %s", mustJSON(t, l))
		}
		for _, c := range rd.Redescribed {
			if !c.Used || *c.A != *c.B {
				t.Fatalf("re-described %s", mustJSON(t, c))
			}
		}
	})
}

// flipFusable changes a capability's impl.fusable flag: a new identity for
// an engine that runs it the same way.
func flipFusable(t *testing.T, s *registry.Store, name string) {
	t.Helper()
	c, ok := s.Current().Get(name)
	if !ok {
		t.Fatalf("no %s", name)
	}
	e := c.Entry
	e.Impl.Fusable = !e.Impl.Fusable
	if _, err := s.Put(context.Background(), e); err != nil {
		t.Fatal(err)
	}
}
