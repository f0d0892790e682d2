package discover

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/groundgate/groundgate/registry"
)

// Benchmarks report the mean (ns/op) and, from per-operation timings of
// the final run, the median (p50-µs) and 99th percentile (p99-µs).
//
//	go test ./discover -run '^$' -bench . -benchtime 2000x -count 1

func BenchmarkDiscoverBuiltin(b *testing.B) {
	s, _ := mustOpenStore(b)
	benchDiscover(b, s)
}

// BenchmarkDiscover10k and BenchmarkDiscover100k run the same prompts
// against the built-in catalog plus synthetic entries, 10,000 and 100,000
// entries in all.
func BenchmarkDiscover10k(b *testing.B)  { benchSize(b, 10_000) }
func BenchmarkDiscover100k(b *testing.B) { benchSize(b, 100_000) }

func benchSize(b *testing.B, n int) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "big.db")
	s, err := registry.Open(ctx, path, registry.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	es := append(catalog(b), syntheticEntries(n-len(catalog(b)))...)
	start := time.Now()
	if _, err := s.Seed(ctx, es); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d entries in %v", len(es), time.Since(start))
	// Start again on the existing database, as a restarted server would.
	s.Close()
	start = time.Now()
	s, err = registry.Open(ctx, path, registry.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.Logf("registry reopened in %v", time.Since(start))
	benchDiscover(b, s)
}

// keywordTerms are terms that no equality tier resolves, so each runs the
// keyword tier's bleve phrase queries.
var keywordTerms = [][]string{
	{"rolling window", "trailing annualised volatility", "previous rows", "log price", "front contract"},
	{"signal window", "daily returns", "price series", "sample std", "target volatility"},
	{"running peak", "evaluation window", "weights counted", "contract columns", "unit annual risk"},
}

func benchDiscover(b *testing.B, s *registry.Store) {
	ctx := context.Background()
	start := time.Now()
	d, err := New(ctx, s, s.Engine(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	b.Logf("discover.New on %d entries: %v", len(s.Current().Capabilities()), time.Since(start))
	if _, err := d.cur.text.wait(ctx); err != nil {
		b.Fatal(err)
	}
	b.Logf("bleve text index and relevance index ready after %v", time.Since(start))
	var prompts, words []string
	for _, p := range loadPrompts(b, "testdata/prompts.json") {
		prompts = append(prompts, p.Prompt)
	}
	// The blind set's paraphrases: most of their words are left to the
	// relevance tier.
	for _, p := range loadPrompts(b, "testdata/prompts_blind.json") {
		words = append(words, p.Prompt)
	}
	// Store every evidence record once, so the timed runs measure
	// discovery, not the first fsync of each record.
	for _, ts := range keywordTerms {
		if _, err := d.Discover(ctx, Query{Terms: ts}); err != nil {
			b.Fatal(err)
		}
	}
	terms := make([][]string, len(prompts))
	for i, p := range prompts {
		r, err := d.Discover(ctx, Query{Prompt: p})
		if err != nil {
			b.Fatal(err)
		}
		terms[i] = r.Terms
	}
	b.Run("prompt", func(b *testing.B) {
		timed(b, func(i int) error {
			_, err := d.Discover(ctx, Query{Prompt: prompts[i%len(prompts)]})
			return err
		})
	})
	b.Run("relevance", func(b *testing.B) {
		timed(b, func(i int) error {
			_, err := d.Probe(ctx, Query{Prompt: words[i%len(words)]})
			return err
		})
	})
	b.Run("terms", func(b *testing.B) {
		timed(b, func(i int) error {
			_, err := d.Discover(ctx, Query{Terms: terms[i%len(terms)]})
			return err
		})
	})
	b.Run("keyword", func(b *testing.B) {
		timed(b, func(i int) error {
			_, err := d.Discover(ctx, Query{Terms: keywordTerms[i%len(keywordTerms)]})
			return err
		})
	})
	b.Run("rederive", func(b *testing.B) {
		v := s.Current().Version()
		timed(b, func(i int) error {
			_, err := d.Rederive(ctx, terms[i%len(terms)], v)
			return err
		})
	})
}

// timed runs op b.N times and reports the median and p99 latency.
func timed(b *testing.B, op func(i int) error) {
	lat := make([]time.Duration, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := op(i); err != nil {
			b.Fatal(err)
		}
		lat[i] = time.Since(t0)
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(lat[(len(lat)*99)/100].Nanoseconds())/1e3, "p99-µs")
}

// syntheticEntries returns n valid, distinct entries of every kind, with
// made-up names, aliases, tags and descriptions that mix invented words
// with the common words of real descriptions, so that keyword queries hit
// realistic posting lists. The same n always gives the same entries.
func syntheticEntries(n int) []registry.Entry {
	rng := rand.New(rand.NewPCG(1, 2))
	invented := make([]string, 6000)
	for i := range invented {
		invented[i] = wordN(i + 1000)
	}
	common := strings.Fields(`the of a and to in is by over with for on returns window signal
		rolling mean volatility price series column value log z-score weight position sized
		trailing annualised rows previous target leverage lag clip sum std sample spread front
		next contract long short rising falling average daily yearly risk return ratio curve`)
	word := func() string {
		if rng.IntN(3) == 0 {
			return common[rng.IntN(len(common))]
		}
		return invented[rng.IntN(len(invented))]
	}
	phrase := func(k int) string {
		w := make([]string, k)
		for i := range w {
			w[i] = invented[rng.IntN(len(invented))]
		}
		return strings.Join(w, " ")
	}
	out := make([]registry.Entry, 0, n)
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("SYN_%06d", i)
		desc := make([]string, 12+rng.IntN(14))
		for j := range desc {
			desc[j] = word()
		}
		e := registry.Entry{
			Name: name,
			Sem:  registry.Semantic{Pure: true, Deterministic: true, Orientation: registry.OrientNone},
			Alg:  registry.Algebraic{Inputs: []string{"series"}, Outputs: []string{"series"}, Arity: 1},
			Impl: registry.Implementation{Engine: "synthetic/v1", IR: registry.IRElementwise, Expr: fmt.Sprintf("(syn%d x)", i)},
			Disc: registry.Discovery{
				Aliases:     []string{phrase(2), phrase(3)},
				Tags:        []string{invented[rng.IntN(500)], phrase(2)},
				Description: phrase(2) + ": " + strings.Join(desc, " ") + ".",
			},
		}
		switch r := rng.IntN(100); {
		case r < 70:
			e.Kind = registry.KindOperation
		case r < 85:
			e.Kind = registry.KindSignal
		case r < 95:
			e.Kind = registry.KindRecipe
		case r < 98:
			e.Kind = registry.KindFamily
			e.Sem.Orientation = registry.OrientPositive
			e.Alg = registry.Algebraic{Inputs: []string{"frame"}, Outputs: []string{"pnl", "weights"}, Arity: 1}
			e.Impl.IR = registry.IRStrategy
			// Every family has a negated twin a few entries later.
			sig := fmt.Sprintf("(syn%d x)", i)
			if i%2 == 1 {
				sig = fmt.Sprintf("(neg (syn%d x))", i-1)
				e.Sem.Orientation = registry.OrientNegative
			}
			e.Impl.Expr = "(volsize " + sig + " (dlog x) $risk_window $target_vol $leverage $lag)"
		default:
			e.Kind = registry.KindMetric
			e.Sem.Orientation = registry.OrientMaximize
			e.Alg = registry.Algebraic{Inputs: []string{"pnl"}, Outputs: []string{"score"}, Arity: 1}
			e.Impl.IR = registry.IRReduce
		}
		// Aliases and tags must be unique within an entry.
		if strings.EqualFold(e.Disc.Aliases[0], e.Disc.Aliases[1]) {
			e.Disc.Aliases = e.Disc.Aliases[:1]
		}
		out = append(out, e)
	}
	return out
}
