package discover

import (
	"context"
	"slices"
	"testing"

	"github.com/groundgate/groundgate/registry"
)

// Intent (issue 27): an inversion cue moves a request to the opposite
// family instead of adding it beside the one named; a lone word is not a
// request the relevance tier reads.
func TestIntent(t *testing.T) {
	s, _ := mustOpenStore(t)
	d := mustNew(t, s)
	for _, c := range []struct {
		prompt   string
		families []string
		mode     Mode // of the family match
	}{
		{"fade the momentum, judged by Sharpe", []string{"MOM_REV"}, ModeInversion},
		{"Fade momentum in crude oil and report the max drawdown", []string{"MOM_REV"}, ModeInversion},
		{"bet against recent winners, Sharpe ratio", []string{"MOM_REV"}, ModeInversion},
		{"momentum, but the other way round, by Sharpe", []string{"MOM_REV"}, ModeInversion},
		{"fade", []string{"MOM_REV"}, ModeAlias}, // nothing to invert: the alias
		{"momentum with a Sharpe ratio", []string{"MOM_WZS"}, ModeAlias},
		{"trend", nil, ""},
		{"trend following", nil, ""},
	} {
		r, err := d.Discover(context.Background(), Query{Prompt: c.prompt})
		if err != nil {
			t.Fatalf("%q: %v", c.prompt, err)
		}
		fams := namesOfKind(r, registry.KindFamily)
		if !slices.Equal(fams, c.families) {
			t.Errorf("%q: families %v, want %v (matches %+v)", c.prompt, fams, c.families, r.Matches)
			continue
		}
		for _, m := range r.Matches {
			if m.Kind == registry.KindFamily && m.Mode != c.mode {
				t.Errorf("%q: %s by %s, want %s", c.prompt, m.Name, m.Mode, c.mode)
			}
		}
	}
}
