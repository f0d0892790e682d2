package discover

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
)

// matchesOf returns the matches made from one term.
func matchesOf(r Result, term string) []Match {
	var out []Match
	for _, m := range r.Matches {
		if m.Term == term {
			out = append(out, m)
		}
	}
	return out
}

func names(ms []Match) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}

// TestDomainTable is DOMAIN.md's "Discovery behaviour the catalog must
// show", mode by mode, with each term given alone.
func TestDomainTable(t *testing.T) {
	s, _ := mustOpenStore(t)
	d := mustNew(t, s)
	tests := []struct {
		term  string
		modes []Mode // any of these
		// exactly: these names and nothing else; otherwise include: these
		// names among the matches, and no family or metric beside them.
		exactly, include []string
		// includeKind: at least one match of this kind (z-score → a
		// z-scored signal block).
		includeKind registry.Kind
		noFamily    bool
	}{
		{term: "momentum", modes: []Mode{ModeAlias}, exactly: []string{"MOM_WZS"}},
		{term: "mean reversion", modes: []Mode{ModeAlias}, exactly: []string{"MOM_REV"}},
		{term: "mean-reversion", modes: []Mode{ModeAlias}, exactly: []string{"MOM_REV"}},
		{term: "carry", modes: []Mode{ModeExact, ModeAlias}, exactly: []string{"CARRY"}},
		{term: "vol targeting", modes: []Mode{ModeAlias}, exactly: []string{"VOL_TGT"}},
		{term: "volatility targeting", modes: []Mode{ModeAlias}, exactly: []string{"VOL_TGT"}},
		{term: "sharpe", modes: []Mode{ModeAlias}, exactly: []string{"SRP"}},
		{term: "sharpe ratio", modes: []Mode{ModeAlias}, exactly: []string{"SRP"}},
		{term: "max drawdown", modes: []Mode{ModeAlias}, exactly: []string{"MDD"}},
		{term: "drawdown", modes: []Mode{ModeAlias}, exactly: []string{"MDD"}},
		{term: "z-score", modes: []Mode{ModeTag}, include: []string{"REL_MOM_Z"}, includeKind: registry.KindSignal},
		{term: "log returns", modes: []Mode{ModeKeyword}, include: []string{"dlog"}},
		{term: "trend", noFamily: true},
		// The analyzer's equivalences: case, possessives, hyphens, plurals.
		{term: "Sharpe's", modes: []Mode{ModeAlias}, exactly: []string{"SRP"}},
		{term: "sharpe-ratio", modes: []Mode{ModeAlias}, exactly: []string{"SRP"}},
		{term: "Sharpe ratios", modes: []Mode{ModeAlias}, exactly: []string{"SRP"}},
		{term: "SHARPE’S RATIO", modes: []Mode{ModeAlias}, exactly: []string{"SRP"}},
		{term: "Momentum", modes: []Mode{ModeAlias}, exactly: []string{"MOM_WZS"}},
		{term: "mom_wzs", modes: []Mode{ModeExact}, exactly: []string{"MOM_WZS"}},
		{term: "drawdowns", modes: []Mode{ModeAlias}, exactly: []string{"MDD"}},
		{term: "Log-returns", modes: []Mode{ModeKeyword}, include: []string{"dlog"}},
		{term: "trend following", noFamily: true},
		{term: "trend-following strategy", noFamily: true},
		{term: "trends", noFamily: true},
	}
	for _, tc := range tests {
		t.Run(tc.term, func(t *testing.T) {
			r := mustDiscover(t, d, Query{Terms: []string{tc.term}})
			if len(r.Terms) != 1 {
				t.Fatalf("terms %q", r.Terms)
			}
			ms := matchesOf(r, r.Terms[0])
			if tc.noFamily {
				for _, m := range ms {
					if m.Kind == registry.KindFamily || m.Kind == registry.KindRecipe {
						t.Errorf("%q discovers the %s %s by %s", tc.term, m.Kind, m.Name, m.Mode)
					}
				}
				return
			}
			if len(ms) == 0 {
				t.Fatalf("%q discovers nothing (unresolved %q)", tc.term, r.Unresolved)
			}
			for _, m := range ms {
				if !slices.Contains(tc.modes, m.Mode) {
					t.Errorf("%q: %s by %s, want mode %v", tc.term, m.Name, m.Mode, tc.modes)
				}
				if m.Confidence != m.Mode.confidence() {
					t.Errorf("%q: %s confidence %v for mode %s", tc.term, m.Name, m.Confidence, m.Mode)
				}
			}
			got := names(ms)
			if tc.exactly != nil && !slices.Equal(got, tc.exactly) {
				t.Errorf("%q discovers %v, want exactly %v", tc.term, got, tc.exactly)
			}
			for _, w := range tc.include {
				if !slices.Contains(got, w) {
					t.Errorf("%q: %s not among %v", tc.term, w, got)
				}
			}
			if tc.include != nil {
				for _, m := range ms {
					if m.Kind == registry.KindFamily || m.Kind == registry.KindMetric {
						t.Errorf("%q also discovers the %s %s", tc.term, m.Kind, m.Name)
					}
				}
			}
			if tc.includeKind != "" && !slices.ContainsFunc(ms, func(m Match) bool { return m.Kind == tc.includeKind }) {
				t.Errorf("%q: no %s among %v", tc.term, tc.includeKind, got)
			}
		})
	}
}

// TestResultShape checks the pinned JSON shape: field names, empty arrays
// rather than null, the id as the hash of the rest, and the order of
// matches.
func TestResultShape(t *testing.T) {
	s, _ := mustOpenStore(t)
	d := mustNew(t, s)

	r := mustDiscover(t, d, Query{Terms: []string{"no such thing at all"}})
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"matches":[]`, `"unresolved":["no such thing at all"]`, `"ok":false`, `"version":1`} {
		if !bytes.Contains(raw, []byte(want)) {
			t.Errorf("%s lacks %s", raw, want)
		}
	}
	var generic map[string]json.RawMessage
	if err := json.Unmarshal(raw, &generic); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range generic {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"id", "matches", "ok", "registry", "terms", "unresolved", "version"}; !slices.Equal(keys, want) {
		t.Errorf("result keys %v, want %v", keys, want)
	}

	r = mustDiscover(t, d, Query{Terms: []string{"sharpe", "momentum", "z-score", "the other way round", "nothing here"}})
	if !r.OK {
		t.Errorf("ok = false for %v", r.Matches)
	}
	id, err := ComputeID(r)
	if err != nil || id != r.ID {
		t.Errorf("ComputeID = %v, %v; result id %v", id, err, r.ID)
	}
	canon, _ := r.Canonical()
	if bytes.Contains(canon, []byte(`"id"`)) {
		t.Errorf("canonical bytes contain the id: %s", canon)
	}
	if hashing.SumSHA256(canon) != r.ID {
		t.Error("id is not the SHA-256 of the canonical bytes")
	}
	pos := map[string]int{}
	for i, term := range r.Terms {
		pos[term] = i
	}
	for i := 1; i < len(r.Matches); i++ {
		a, b := r.Matches[i-1], r.Matches[i]
		ka := []int{pos[a.Term], a.Mode.tier()}
		kb := []int{pos[b.Term], b.Mode.tier()}
		if c := slices.Compare(ka, kb); c > 0 || c == 0 && a.Name >= b.Name {
			t.Errorf("matches out of order at %d: %+v before %+v", i, a, b)
		}
	}
	for _, m := range r.Matches {
		c, ok := s.Current().Get(m.Name)
		if !ok {
			t.Fatalf("match %s not in registry", m.Name)
		}
		dd, _ := c.DiscoveryDigest()
		if m.Capability != c.Identity || m.Disc != dd {
			t.Errorf("%s: capability/disc %s %s, want %s %s", m.Name, m.Capability, m.Disc, c.Identity, dd)
		}
	}
	if got := matchesOf(r, "the other way round"); len(got) != 1 || got[0].Name != "MOM_REV" || got[0].Mode != ModeInversion || got[0].Inverts != "MOM_WZS" || got[0].Confidence != ConfidenceInversion {
		t.Errorf("inversion matches %+v", got)
	}
	if !slices.Equal(r.Unresolved, []string{"nothing here"}) {
		t.Errorf("unresolved %q", r.Unresolved)
	}
}

// TestOK: ok needs a family and a metric; an inversion match counts.
func TestOK(t *testing.T) {
	s, _ := mustOpenStore(t)
	d := mustNew(t, s)
	for _, tc := range []struct {
		terms []string
		ok    bool
	}{
		{[]string{"momentum", "sharpe"}, true},
		{[]string{"momentum"}, false},
		{[]string{"sharpe"}, false},
		{[]string{"dlog", "sharpe"}, false},
		{[]string{"carry", "max drawdown"}, true},
		{[]string{"reverse", "sharpe"}, false},                  // a cue with nothing to invert
		{[]string{"momentum", "opposite", "sortino"}, true},     // alias + inversion
		{[]string{"trend following", "sharpe ratio"}, false},    // no such family
		{[]string{"MOM_WZS", "SRP", "nothing else"}, true},      // exact names
		{[]string{"mom wzs", "srp"}, true},                      // a name read as words is a keyword
		{[]string{"vol-targeting", "Calmar's ratio"}, true},     // folding
		{[]string{"mean reverting", "annualized return"}, true}, // US spelling
	} {
		r := mustDiscover(t, d, Query{Terms: tc.terms})
		if r.OK != tc.ok {
			t.Errorf("%q: ok = %v, want %v (matches %v)", tc.terms, r.OK, tc.ok, names(r.Matches))
		}
	}
}

// TestInversionCues: a cue surfaces the opposite of the family of the
// nearest family term, as its own match; a cue with no invertible family
// is unresolved; prompts and explicit terms agree.
func TestInversionCues(t *testing.T) {
	s, _ := mustOpenStore(t)
	d := mustNew(t, s)
	for _, tc := range []struct {
		prompt string
		want   map[string]string // opposite → inverted family
	}{
		{"momentum, but the other way round", map[string]string{"MOM_REV": "MOM_WZS"}},
		{"the opposite of mean reversion", map[string]string{"MOM_WZS": "MOM_REV"}},
		{"Do the reverse of TSMOM.", map[string]string{"MOM_REV": "MOM_WZS"}},
		{"Bet against the momentum strategy", map[string]string{"MOM_REV": "MOM_WZS"}},
		{"carry, flipped", map[string]string{}},
		{"opposite", map[string]string{}},
		{"momentum and carry", map[string]string{}},
		{"carry with the opposite of momentum", map[string]string{"MOM_REV": "MOM_WZS"}}, // both at distance 1; carry has no opposite
	} {
		r := mustDiscover(t, d, Query{Prompt: tc.prompt})
		got := map[string]string{}
		for _, m := range r.Matches {
			if m.Mode == ModeInversion {
				got[m.Name] = m.Inverts
				if m.Confidence != ConfidenceInversion || m.Kind != registry.KindFamily {
					t.Errorf("%q: inversion match %+v", tc.prompt, m)
				}
			}
		}
		if len(got) != len(tc.want) {
			t.Errorf("%q: inversions %v, want %v (terms %q)", tc.prompt, got, tc.want, r.Terms)
			continue
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%q: inversions %v, want %v", tc.prompt, got, tc.want)
			}
		}
		// The same terms given explicitly re-derive the same result.
		again := mustDiscover(t, d, Query{Terms: r.Terms})
		if again.ID != r.ID {
			t.Errorf("%q: prompt and its terms give different evidence", tc.prompt)
		}
	}
}

// TestBadQuery: malformed queries are ErrBadQuery and store nothing.
func TestBadQuery(t *testing.T) {
	s, _ := mustOpenStore(t)
	d, err := New(context.Background(), s, s.Engine(), Options{MaxPromptBytes: 64, MaxTerms: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for name, q := range map[string]Query{
		"empty":              {},
		"both":               {Prompt: "momentum", Terms: []string{"sharpe"}},
		"blank prompt":       {Prompt: " \t\n "},
		"long prompt":        {Prompt: strings.Repeat("momentum ", 8)},
		"invalid prompt":     {Prompt: "momentum \xff"},
		"too many terms":     {Terms: []string{"a1", "b2", "c3", "d4"}},
		"prompt, many terms": {Prompt: "alpha beta gamma delta"},
		"empty term":         {Terms: []string{"momentum", ""}},
		"blank term":         {Terms: []string{" - "}},
		"invalid term":       {Terms: []string{"\xc3"}},
		"huge term":          {Terms: []string{strings.Repeat("x", MaxTermBytes+1)}},
	} {
		if _, err := d.Discover(context.Background(), q); !errors.Is(err, ErrBadQuery) {
			t.Errorf("%s: err = %v, want ErrBadQuery", name, err)
		}
	}
	if _, err := d.Rederive(context.Background(), nil, 1); !errors.Is(err, ErrBadQuery) {
		t.Errorf("Rederive of no terms: %v", err)
	}
	var n int
	s.DB().View(func(tx *bolt.Tx) error {
		if b := tx.Bucket([]byte(spaceEvidence.Name)); b != nil { // made by the first write
			n = b.Stats().KeyN
		}
		return nil
	})
	if n != 0 {
		t.Errorf("%d evidence records stored by bad queries", n)
	}
	// Duplicates fold away; a symbol-only term is kept as itself.
	r := mustDiscover(t, d, Query{Terms: []string{"Sharpe", "sharpe's", "SHARPE"}})
	if !slices.Equal(r.Terms, []string{"sharpe"}) {
		t.Errorf("terms %q", r.Terms)
	}
	r = mustDiscover(t, d, Query{Terms: []string{"+"}})
	if !slices.Equal(r.Terms, []string{"+"}) || !slices.Equal(r.Unresolved, []string{"+"}) {
		t.Errorf("symbol term: %+v", r)
	}
}

// TestEvidence: Discover stores a record that Lookup returns and checks,
// Rederive reproduces it byte for byte, and storing is idempotent.
func TestEvidence(t *testing.T) {
	ctx := context.Background()
	s, _ := mustOpenStore(t)
	d := mustNew(t, s)
	r := mustDiscover(t, d, Query{Prompt: "Momentum on crude oil, but the other way round; Sharpe's ratio and max drawdown please."})
	got, err := d.Lookup(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !resultsEqual(t, got, r) {
		t.Errorf("Lookup differs:\n%s\n%s", mustJSON(t, got), mustJSON(t, r))
	}
	re, err := d.Rederive(ctx, r.Terms, r.Version)
	if err != nil {
		t.Fatal(err)
	}
	if !resultsEqual(t, re, r) {
		t.Errorf("Rederive differs:\n%s\n%s", mustJSON(t, re), mustJSON(t, r))
	}
	// Idempotent: the same discovery again stores nothing new.
	r2 := mustDiscover(t, d, Query{Prompt: "Momentum on crude oil, but the other way round; Sharpe's ratio and max drawdown please."})
	if r2.ID != r.ID {
		t.Errorf("ids differ: %s %s", r.ID, r2.ID)
	}
	// Unknown and foreign ids.
	if _, err := d.Lookup(ctx, hashing.SumSHA256([]byte("nothing"))); !errors.Is(err, ErrNotFound) {
		t.Errorf("Lookup(unknown) = %v", err)
	}
	if _, err := d.Lookup(ctx, hashing.SumBLAKE3([]byte("nothing"))); !errors.Is(err, ErrNotFound) {
		t.Errorf("Lookup(blake3) = %v", err)
	}
	// Rederive at a version that does not exist.
	if _, err := d.Rederive(ctx, r.Terms, 99); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("Rederive at version 99: %v", err)
	}
	// Corrupt the stored bytes: Lookup refuses them.
	var good []byte
	err = s.DB().Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(spaceEvidence.Name))
		good = append([]byte(nil), b.Get(r.ID.Key())...)
		return b.Put(r.ID.Key(), bytes.Replace(good, []byte(`"MOM_REV"`), []byte(`"MOM_WZS"`), 1))
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Lookup(ctx, r.ID); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Lookup(corrupt) = %v", err)
	}
	// Bytes that hash to their key but are not a result are corrupt too.
	junk := []byte(`{"not":"a result"}`)
	junkID := hashing.SumSHA256(junk)
	err = s.DB().Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(spaceEvidence.Name))
		if err := b.Put(junkID.Key(), junk); err != nil {
			return err
		}
		return b.Put(r.ID.Key(), good)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Lookup(ctx, junkID); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Lookup(junk) = %v", err)
	}
	if _, err := d.Lookup(ctx, r.ID); err != nil {
		t.Errorf("Lookup after repair: %v", err)
	}
}

func resultsEqual(t testing.TB, a, b Result) bool {
	t.Helper()
	return bytes.Equal(mustJSON(t, a), mustJSON(t, b))
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := hashing.Canonical(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStartup: building the discoverer on an existing database is fast.
func TestStartup(t *testing.T) {
	s, path := mustOpenStore(t)
	s.Close()
	start := time.Now()
	s2, err := registry.Open(context.Background(), path, registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	opened := time.Since(start)
	d := mustNew(t, s2)
	total := time.Since(start)
	t.Logf("registry open %v, discoverer ready %v (%d entries)", opened, total-opened, len(s2.Current().Capabilities()))
	if total-opened > time.Second {
		t.Errorf("discover.New took %v", total-opened)
	}
	mustDiscover(t, d, Query{Terms: []string{"momentum"}})
}
