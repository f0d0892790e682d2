package discover

import (
	"testing"

	"github.com/groundgate/groundgate/registry"
)

// Opposite, the single-pair rule, pairs exactly what the index's inversion
// lookup pairs, over every pair of the built-in catalog's families.
func TestOppositeMatchesIndex(t *testing.T) {
	var fams []registry.Entry
	for _, e := range catalog(t) {
		if e.Kind == registry.KindFamily {
			fams = append(fams, e)
		}
	}
	s, _ := mustOpenStore(t)
	d, err := New(t.Context(), s, s.Engine(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	x := d.cur
	pairs := 0
	for _, a := range fams {
		want := map[string]bool{}
		for _, n := range x.opposites(a.Name) {
			want[n] = true
		}
		for _, b := range fams {
			if got := Opposite(a, b); got != want[b.Name] {
				t.Errorf("Opposite(%s, %s) = %v, index says %v", a.Name, b.Name, got, want[b.Name])
			}
			if Opposite(a, b) {
				pairs++
			}
		}
	}
	if pairs != 2 { // MOM_WZS ↔ MOM_REV, both ways
		t.Fatalf("%d opposite pairs among %d families, want 2", pairs, len(fams))
	}
	// Editing only the discovery layer never makes or breaks a pair;
	// changing behaviour beside the orientation does.
	var wzs, rev registry.Entry
	for _, f := range fams {
		switch f.Name {
		case "MOM_WZS":
			wzs = f
		case "MOM_REV":
			rev = f
		}
	}
	renamed := rev.Clone()
	renamed.Name, renamed.Disc.Description = "SOMETHING_ELSE", "no words in common"
	if !Opposite(wzs, renamed) {
		t.Error("a disc-only change broke the pair")
	}
	changed := rev.Clone()
	changed.Alg.Params = changed.Alg.Params[1:]
	if Opposite(wzs, changed) {
		t.Error("families with different parameter schemas paired")
	}
}
