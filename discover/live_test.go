package discover

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/groundgate/groundgate/registry"
)

// probeTerms lists every alias, tag and name of the catalog, one term
// each: the queries the determinism tests repeat.
func probeTerms(snap *registry.Snapshot) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, c := range snap.Capabilities() {
		for _, a := range c.Disc.Aliases {
			add(a)
		}
	}
	for _, c := range snap.Capabilities() {
		for _, tg := range c.Disc.Tags {
			add(tg)
		}
		add(c.Name)
	}
	return out
}

// snapshotResults discovers every probe term alone, plus every prompt of
// the prompt sets, and returns the canonical result bytes keyed by query.
func snapshotResults(t testing.TB, d *Discoverer, terms []string, prompts []string) map[string][]byte {
	t.Helper()
	out := make(map[string][]byte, len(terms)+len(prompts))
	for _, term := range terms {
		r := mustDiscover(t, d, Query{Terms: []string{term}})
		out["term:"+term] = mustJSON(t, r)
	}
	for _, p := range prompts {
		r := mustDiscover(t, d, Query{Prompt: p})
		out["prompt:"+p] = mustJSON(t, r)
	}
	return out
}

func allPrompts(t testing.TB) []string {
	var out []string
	for _, f := range []string{"testdata/prompts.json", "testdata/prompts_holdout.json"} {
		for _, p := range loadPrompts(t, f) {
			out = append(out, p.Prompt)
		}
	}
	return out
}

func diffResults(t testing.TB, what string, a, b map[string][]byte) {
	t.Helper()
	bad := 0
	for k, v := range a {
		if !bytes.Equal(v, b[k]) {
			if bad++; bad <= 5 {
				t.Errorf("%s: %s differs:\n%s\n%s", what, k, v, b[k])
			}
		}
	}
	if len(a) != len(b) {
		t.Errorf("%s: %d vs %d results", what, len(a), len(b))
	}
	if bad > 5 {
		t.Errorf("%s: %d results differ in all", what, bad)
	}
}

// TestDeterminism: the same query against the same registry version gives
// byte-identical results across repetitions, Rederive, a process restart
// (the database closed and reopened, a new Discoverer) and an index
// rebuilt from scratch; tested over every alias, tag and name of the
// catalog and every prompt of the prompt sets.
func TestDeterminism(t *testing.T) {
	ctx := context.Background()
	s, path := mustOpenStore(t)
	d := mustNew(t, s)
	terms, prompts := probeTerms(s.Current()), allPrompts(t)
	first := snapshotResults(t, d, terms, prompts)
	t.Logf("%d queries", len(first))

	diffResults(t, "repetition", first, snapshotResults(t, d, terms, prompts))

	for _, term := range terms {
		r := mustDiscover(t, d, Query{Terms: []string{term}})
		re, err := d.Rederive(ctx, r.Terms, r.Version)
		if err != nil {
			t.Fatalf("Rederive(%q): %v", term, err)
		}
		if !bytes.Equal(mustJSON(t, re), first["term:"+term]) {
			t.Errorf("Rederive(%q) differs from Discover", term)
		}
	}

	// Restart: close everything, reopen the file, build a new Discoverer.
	d.Close()
	s.Close()
	s2, err := registry.Open(ctx, path, registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	d2 := mustNew(t, s2)
	diffResults(t, "restart", first, snapshotResults(t, d2, terms, prompts))

	// Stored evidence survives the restart and checks out.
	for _, term := range terms[:10] {
		r := mustDiscover(t, d2, Query{Terms: []string{term}})
		got, err := d2.Lookup(ctx, r.ID)
		if err != nil || !bytes.Equal(mustJSON(t, got), first["term:"+term]) {
			t.Errorf("Lookup(%q) after restart: %v", term, err)
		}
	}
}

// TestLiveRegistry: an entry added or changed is discoverable by the very
// next discovery, the reported version is the store's, and evidence made
// at an earlier version still re-derives at that version.
func TestLiveRegistry(t *testing.T) {
	ctx := context.Background()
	s, _ := mustOpenStore(t)
	d := mustNew(t, s)
	before := mustDiscover(t, d, Query{Prompt: "pairs trading on two oil majors, judged by Sharpe"})
	if fams := namesOfKind(before, registry.KindFamily); len(fams) != 0 {
		t.Fatalf("pairs trading discovers %v before it exists", fams)
	}

	pairs := pairsFamily()
	res, err := s.Put(ctx, pairs)
	if err != nil {
		t.Fatal(err)
	}
	after := mustDiscover(t, d, Query{Prompt: "pairs trading on two oil majors, judged by Sharpe"})
	if after.Version != res.Version || after.Registry != s.Current().Registry() {
		t.Errorf("reported version %d %s, store at %d %s", after.Version, after.Registry, res.Version, s.Current().Registry())
	}
	if !slices.Contains(namesOfKind(after, registry.KindFamily), "PAIRS") || !after.OK {
		t.Errorf("new family not discovered: %+v", after)
	}

	// Change only its discovery layer: the alias moves.
	pairs.Disc.Aliases = []string{"spread trading"}
	if _, err := s.Put(ctx, pairs); err != nil {
		t.Fatal(err)
	}
	r := mustDiscover(t, d, Query{Terms: []string{"pairs trading", "spread trading"}})
	if got := names(matchesOf(r, "pairs trading")); len(got) != 0 {
		t.Errorf("old alias still discovers %v", got)
	}
	if got := matchesOf(r, "spread trading"); len(got) != 1 || got[0].Name != "PAIRS" || got[0].Mode != ModeAlias {
		t.Errorf("new alias discovers %+v", got)
	}
	// The capability identity is unchanged, the disc digest is not.
	m := matchesOf(r, "spread trading")[0]
	old := matchesOf(after, "pairs trading")[0]
	if m.Capability != old.Capability || m.Disc == old.Disc {
		t.Errorf("identity %s→%s, disc %s→%s", old.Capability, m.Capability, old.Disc, m.Disc)
	}

	// Evidence from both earlier versions still re-derives identically.
	for _, ev := range []Result{before, after} {
		re, err := d.Rederive(ctx, ev.Terms, ev.Version)
		if err != nil {
			t.Fatal(err)
		}
		if re.ID != ev.ID || !resultsEqual(t, re, ev) {
			t.Errorf("version %d evidence re-derives differently", ev.Version)
		}
	}
}

// pairsFamily is a new family: a different expression from every built-in
// one.
func pairsFamily() registry.Entry {
	return registry.Entry{
		Name: "PAIRS",
		Kind: registry.KindFamily,
		Sem:  registry.Semantic{Pure: true, Deterministic: true, Orientation: registry.OrientPositive, Stateful: true},
		Alg:  registry.Algebraic{Inputs: []string{"frame"}, Outputs: []string{"pnl", "weights"}, Arity: 1},
		Impl: registry.Implementation{Engine: "groundgate/v1", IR: registry.IRStrategy,
			Expr: "(volsize (neg (clip (wzs (spread x $a $b) $window) -1 1)) (dlog x) $risk_window $target_vol $leverage $lag)"},
		Disc: registry.Discovery{Aliases: []string{"pairs trading"}, Description: "A relative-value bet on the spread between two columns reverting to its recent mean."},
	}
}

// TestIncrementalEqualsRebuild: after a series of registry changes, the
// incrementally updated index and one rebuilt from scratch give the same
// bytes for every probe term and prompt.
func TestIncrementalEqualsRebuild(t *testing.T) {
	ctx := context.Background()
	s, _ := mustOpenStore(t)
	d := mustNew(t, s)
	mustDiscover(t, d, Query{Terms: []string{"warm"}})

	mom, _ := s.Current().Get("MOM_WZS")
	rev, _ := s.Current().Get("MOM_REV")
	srp, _ := s.Current().Get("SRP")
	changes := []func() error{
		func() error { _, err := s.Put(ctx, pairsFamily()); return err },
		func() error { // add an alias and a tag to an existing family
			e := mom.Entry
			e.Disc.Aliases = append(slices.Clone(e.Disc.Aliases), "winners keep on winning")
			e.Disc.Tags = append(slices.Clone(e.Disc.Tags), "price persistence")
			_, err := s.Put(ctx, e)
			return err
		},
		func() error { // deprecate a family: only its exact name finds it now
			e := rev.Entry
			e.Disc.Deprecated = true
			_, err := s.Put(ctx, e)
			return err
		},
		func() error { // re-describe a metric
			e := srp.Entry
			e.Disc.Description = "Sharpe ratio: reward per unit of variability, annualised."
			_, err := s.Put(ctx, e)
			return err
		},
		func() error { // two entries in one version
			e1, e2 := rev.Entry, pairsFamily()
			e2.Disc.Tags = []string{"relative value"}
			_, _, err := s.Apply(ctx, []registry.Entry{e1, e2})
			return err
		},
	}
	terms := append(probeTerms(s.Current()), "pairs trading", "relative value", "winners keep winning", "price persistence", "reward per unit")
	prompts := allPrompts(t)
	for i, change := range changes {
		if err := change(); err != nil {
			t.Fatalf("change %d: %v", i, err)
		}
		inc := snapshotResults(t, d, terms, prompts)
		if d.cur.version() != s.Current().Version() || d.cur.updates == 0 {
			t.Fatalf("change %d: index at version %d after %d updates, store at %d", i, d.cur.version(), d.cur.updates, s.Current().Version())
		}
		fresh, err := New(ctx, s, s.Engine(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		diffResults(t, fmt.Sprintf("change %d", i), inc, snapshotResults(t, fresh, terms, prompts))
		fresh.Close()
	}
	r := mustDiscover(t, d, Query{Terms: []string{"mean reversion", "MOM_REV"}})
	if got := names(matchesOf(r, "mean reversion")); slices.Contains(got, "MOM_REV") {
		// MOM_REV was un-deprecated by the last change: it is back.
	} else {
		t.Errorf("mean reversion after un-deprecation: %v", got)
	}
}

// TestDeprecated: a deprecated entry is found by its exact name only.
func TestDeprecated(t *testing.T) {
	ctx := context.Background()
	s, _ := mustOpenStore(t)
	d := mustNew(t, s)
	rev, _ := s.Current().Get("MOM_REV")
	e := rev.Entry
	e.Disc.Deprecated = true
	if _, err := s.Put(ctx, e); err != nil {
		t.Fatal(err)
	}
	r := mustDiscover(t, d, Query{Terms: []string{"MOM_REV", "mean reversion", "momentum", "opposite"}})
	if got := names(matchesOf(r, "mom_rev")); !slices.Equal(got, []string{"MOM_REV"}) {
		t.Errorf("exact name: %v", got)
	}
	if got := names(matchesOf(r, "mean reversion")); len(got) != 0 {
		t.Errorf("alias of a deprecated entry: %v", got)
	}
	if got := names(matchesOf(r, "opposite")); len(got) != 0 {
		t.Errorf("inversion to a deprecated entry: %v", got)
	}
}

// TestConcurrent: discoveries racing with registry writes always report a
// version whose registry hash matches, and never fail.
func TestConcurrent(t *testing.T) {
	ctx := context.Background()
	s, _ := mustOpenStore(t)
	d := mustNew(t, s)
	versions := map[uint64]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 40; i++ {
				r, err := d.Discover(ctx, Query{Prompt: "pairs trading versus momentum, Sharpe"})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if prev, ok := versions[r.Version]; ok && prev != r.Registry.String() {
					t.Errorf("version %d reported with two registry hashes", r.Version)
				}
				versions[r.Version] = r.Registry.String()
				mu.Unlock()
			}
		}()
	}
	e := pairsFamily()
	for i := 0; i < 10; i++ {
		e.Disc.Description = fmt.Sprintf("Pairs trading, revision %d: bet on a spread reverting.", i)
		if _, err := s.Put(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	for v, h := range versions {
		snap, err := s.Version(ctx, v)
		if err != nil || snap.Registry().String() != h {
			t.Errorf("version %d: %v, hash %s vs %s", v, err, h, snap.Registry())
		}
	}
}

// TestIncrementalBatchEqualsRebuild: versions that add hundreds of entries
// at once, with names sorting before, among and after the catalog's (every
// entry after the first new name changes position), then edit, deprecate
// and add a few, updated incrementally, answer every probe term and prompt
// like an index built from scratch. The first batch is large enough that
// the phrase table folds its edits back into one array; the later edits
// stay apart from it.
func TestIncrementalBatchEqualsRebuild(t *testing.T) {
	ctx := t.Context()
	s, _ := mustOpenStore(t)
	d := mustNew(t, s)
	if _, err := d.Probe(ctx, Query{Terms: []string{"warm"}}); err != nil {
		t.Fatal(err)
	}
	syn := syntheticEntries(400)
	for i := range syn {
		syn[i].Name = fmt.Sprintf("%c_%04d", "AMZ"[i%3], i)
	}
	changes := []func() error{
		func() error { _, _, err := s.Apply(ctx, syn); return err },
		func() error { // edits: new aliases and tags for some, deprecation for others, and one new entry
			var es []registry.Entry
			for i := 0; i < 60; i += 3 {
				e := syn[i].Clone()
				if i%2 == 0 {
					e.Disc.Aliases = append(e.Disc.Aliases, fmt.Sprintf("batch alias %d", i))
					e.Disc.Tags = []string{"batch tag"}
				} else {
					e.Disc.Deprecated = true
				}
				es = append(es, e)
			}
			_, _, err := s.Apply(ctx, append(es, pairsFamily()))
			return err
		},
		func() error { _, err := s.Put(ctx, syntheticEntries(401)[400]); return err },
	}
	prompts := allPrompts(t)
	for i, change := range changes {
		if err := change(); err != nil {
			t.Fatalf("change %d: %v", i, err)
		}
		terms := append(probeTerms(s.Current()), "batch tag", "batch alias 0", "pairs trading")
		inc := probeResults(t, d, terms, prompts)
		if d.cur.version() != s.Current().Version() || d.cur.updates != i+1 {
			t.Fatalf("change %d: index at version %d after %d updates, store at %d", i, d.cur.version(), d.cur.updates, s.Current().Version())
		}
		if over := len(d.cur.terms.over); (i == 0) != (over == 0) {
			t.Errorf("change %d: %d phrases edited apart from the table's array", i, over)
		}
		fresh, err := New(ctx, s, s.Engine(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		diffResults(t, fmt.Sprintf("change %d", i), inc, probeResults(t, fresh, terms, prompts))
		fresh.Close()
	}
}

// probeResults is snapshotResults without storing evidence.
func probeResults(t testing.TB, d *Discoverer, terms []string, prompts []string) map[string][]byte {
	t.Helper()
	out := make(map[string][]byte, len(terms)+len(prompts))
	for _, q := range append(termQueries(terms), promptQueries(prompts)...) {
		r, err := d.Probe(t.Context(), q)
		if err != nil {
			t.Fatalf("Probe(%+v): %v", q, err)
		}
		out[fmt.Sprintf("%q %q", q.Terms, q.Prompt)] = mustJSON(t, r)
	}
	return out
}

func termQueries(terms []string) []Query {
	qs := make([]Query, len(terms))
	for i, term := range terms {
		qs[i] = Query{Terms: []string{term}}
	}
	return qs
}

func promptQueries(prompts []string) []Query {
	qs := make([]Query, len(prompts))
	for i, p := range prompts {
		qs[i] = Query{Prompt: p}
	}
	return qs
}
