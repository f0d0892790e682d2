package discover_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/registry"
)

func ExampleExtractTerms() {
	vocab := discover.NewVocabulary("sharpe ratio", "time-series momentum", "max drawdown")
	terms, err := discover.ExtractTerms("Backtest time-series momentum on crude oil, then report its Sharpe's ratios and the max-drawdown.", vocab)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%q\n", terms)
	// Output: ["time series momentum" "crude" "oil" "sharpe ratios" "max drawdown"]
}

func ExampleDiscoverer_Discover() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "groundgate-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	s, err := registry.Open(ctx, filepath.Join(dir, "gg.db"), registry.Options{})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	catalog, err := registry.BuiltinCatalog()
	if err != nil {
		panic(err)
	}
	if _, err := s.Seed(ctx, catalog); err != nil {
		panic(err)
	}
	d, err := discover.New(ctx, s, s.Engine(), discover.Options{})
	if err != nil {
		panic(err)
	}
	defer d.Close()

	r, err := d.Discover(ctx, discover.Query{Prompt: "Momentum on crude oil, but the other way round; judge it by Sharpe's ratio."})
	if err != nil {
		panic(err)
	}
	fmt.Printf("terms %q\n", r.Terms)
	for _, m := range r.Matches {
		line := fmt.Sprintf("%q → %s (%s, %s, %.1f)", m.Term, m.Name, m.Kind, m.Mode, m.Confidence)
		if m.Inverts != "" {
			line += " inverts " + m.Inverts
		}
		fmt.Println(line)
	}
	fmt.Printf("unresolved %q, ok %v\n", r.Unresolved, r.OK)
	// The cue moves "momentum" to the opposite family: MOM_WZS is no
	// longer a match. "crude oil" was read by the relevance tier, which
	// found nothing relevant enough.
	//
	// Output:
	// terms ["momentum" "crude" "oil" "other way round" "sharpe ratio"]
	// "other way round" → MOM_REV (family, inversion, 0.4) inverts MOM_WZS
	// "sharpe ratio" → SRP (metric, alias, 0.9)
	// unresolved ["crude" "oil"], ok true
}
