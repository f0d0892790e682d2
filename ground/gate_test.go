package ground

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
)

type rig struct {
	store *registry.Store
	disc  *discover.Discoverer
	gate  *Gate
}

func newRig(t testing.TB) *rig {
	t.Helper()
	ctx := context.Background()
	s, err := registry.Open(ctx, filepath.Join(t.TempDir(), "g.db"), registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	cat, err := registry.BuiltinCatalog()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Seed(ctx, cat); err != nil {
		t.Fatal(err)
	}
	d, err := discover.New(ctx, s, s.DB(), discover.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(s, d, s.DB())
	if err != nil {
		t.Fatal(err)
	}
	return &rig{store: s, disc: d, gate: g}
}

func (r *rig) discover(t testing.TB, terms ...string) discover.Result {
	t.Helper()
	res, err := r.disc.Discover(context.Background(), discover.Query{Terms: terms})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// reqJSON proposes family and metric with a 3-point sweep over a parameter
// the family takes (VOL_TGT has no signal window: it sweeps risk_window).
func reqJSON(family, metric string) []byte {
	sweep := "window"
	if family == "VOL_TGT" {
		sweep = "risk_window"
	}
	return []byte(fmt.Sprintf(`{"family":%q,"metric":%q,"params":{%q:[25,50,100]},"data":"oil/wti.csv"}`, family, metric, sweep))
}

func (r *rig) ground(t testing.TB, req []byte, id hashing.Digest) Outcome {
	t.Helper()
	out, err := r.gate.Ground(context.Background(), Proposal{Request: req, DiscoveryID: id})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// termNames is the test's own statement of what each term means, written
// from DOMAIN.md, independent of the discovery implementation.
var termNames = map[string]string{
	"momentum": "MOM_WZS", "mean reversion": "MOM_REV", "carry": "CARRY", "vol targeting": "VOL_TGT",
	"sharpe": "SRP", "max drawdown": "MDD", "drawdown": "MDD", "sortino": "SRT", "calmar": "CLM",
	"hit rate": "HIT", "turnover": "TRN", "total return": "TRET", "annualized volatility": "AVOL",
	"annualized return": "ARET",
}

var families = []string{"MOM_WZS", "MOM_REV", "CARRY", "VOL_TGT"}
var metrics = []string{"SRP", "MDD", "ARET", "AVOL", "SRT", "CLM", "HIT", "TRN", "TRET"}

// Fabricated names: plausible but nonexistent, and plainly made up.
var fakeFamilies = []string{"TREND_FOLLOW", "MOM_XSEC", "PAIRS_TRADE", "mom_wzs", "MOMENTUM"}
var fakeMetrics = []string{"TRACKING_ERR", "SHARPE", "INFO_RATIO", "srp"}

type context6 struct {
	terms              []string
	families, metrics  []string // the 4 × 4 proposals for this context
	wantFams, wantMets int      // how many of them are grounded
}

// The paper's selectivity experiment: 96 tuples over 6 discovery contexts
// across all four families, 27 grounded and 69 not (cross-family, semantic
// inversion, plausible nonexistent names, undiscovered families in
// multi-family contexts, fabricated names).
var contexts6 = []context6{
	{[]string{"momentum", "sharpe"}, []string{"MOM_WZS", "MOM_REV", "CARRY", "TREND_FOLLOW"}, []string{"SRP", "MDD", "TRACKING_ERR", "SHARPE"}, 1, 1},
	{[]string{"mean reversion", "drawdown", "sortino"}, []string{"MOM_REV", "MOM_WZS", "VOL_TGT", "PAIRS_TRADE"}, []string{"MDD", "SRT", "SRP", "INFO_RATIO"}, 1, 2},
	{[]string{"carry", "sharpe", "calmar", "hit rate"}, []string{"CARRY", "MOM_WZS", "VOL_TGT", "MOM_XSEC"}, []string{"SRP", "CLM", "HIT", "TRACKING_ERR"}, 1, 3},
	{[]string{"vol targeting", "momentum", "sharpe", "max drawdown"}, []string{"VOL_TGT", "MOM_WZS", "MOM_REV", "CARRY"}, []string{"SRP", "MDD", "SRT", "srp"}, 2, 2},
	{[]string{"momentum", "carry", "mean reversion", "sharpe", "turnover", "total return"}, []string{"MOM_WZS", "CARRY", "MOM_REV", "VOL_TGT"}, []string{"SRP", "TRN", "TRET", "MDD"}, 3, 3},
	{[]string{"vol targeting", "carry", "sharpe", "sortino", "calmar", "annualized volatility"}, []string{"VOL_TGT", "CARRY", "MOM_WZS", "mom_wzs"}, []string{"SRP", "SRT", "CLM", "AVOL"}, 2, 4},
}

// expected says whether family and metric are grounded in terms, from the
// test's own table.
func expected(terms []string, family, metric string) bool {
	var fam, met bool
	for _, t := range terms {
		fam = fam || termNames[t] == family
		met = met || termNames[t] == metric
	}
	return fam && met
}

type confusion struct{ tp, fn, fp, tn int }

func (c confusion) String() string {
	return fmt.Sprintf("grounded: %d admitted, %d rejected; ungrounded: %d admitted, %d rejected", c.tp, c.fn, c.fp, c.tn)
}

func TestSelectivity96(t *testing.T) {
	r := newRig(t)
	var cm confusion
	grounded := 0
	for ci, cx := range contexts6 {
		res := r.discover(t, cx.terms...)
		want := 0
		for _, f := range cx.families {
			for _, m := range cx.metrics {
				exp := expected(cx.terms, f, m)
				if exp {
					want++
				}
				out := r.ground(t, reqJSON(f, m), res.ID)
				got := out.Record.Decision.Admitted
				switch {
				case exp && got:
					cm.tp++
				case exp && !got:
					cm.fn++
					t.Errorf("context %d %v: %s/%s falsely rejected: %+v", ci, cx.terms, f, m, out.Record.Decision.Failures)
				case !exp && got:
					cm.fp++
					t.Errorf("context %d %v: %s/%s falsely admitted", ci, cx.terms, f, m)
				default:
					cm.tn++
					checkCodes(t, out, f, m, cx.terms)
				}
			}
		}
		if want != cx.wantFams*cx.wantMets {
			t.Fatalf("context %d: table says %d grounded, design says %d", ci, want, cx.wantFams*cx.wantMets)
		}
		grounded += want
	}
	if cm.tp+cm.fn+cm.fp+cm.tn != 96 || grounded != 27 {
		t.Fatalf("experiment has %d tuples, %d grounded; want 96 and 27", cm.tp+cm.fn+cm.fp+cm.tn, grounded)
	}
	t.Logf("96-tuple selectivity: %v", cm)
}

// checkCodes verifies a rejection's codes: F2 for names not in the
// registry, F3/F4 for real but undiscovered ones, F5 beside the failing
// field when the other one is grounded.
func checkCodes(t *testing.T, out Outcome, family, metric string, terms []string) {
	t.Helper()
	famOK := slices.ContainsFunc(terms, func(x string) bool { return termNames[x] == family })
	metOK := slices.ContainsFunc(terms, func(x string) bool { return termNames[x] == metric })
	byField := map[string]Failure{}
	for _, f := range out.Record.Decision.Failures {
		byField[f.Field] = f
	}
	want := func(field, name string, ok bool, kindList []string, unwarranted Code, otherOK bool) {
		f, failed := byField[field]
		if ok {
			if failed {
				t.Errorf("%s %s is grounded but failed: %+v", field, name, f)
			}
			return
		}
		if !failed {
			t.Errorf("%s %s is not grounded but has no failure", field, name)
			return
		}
		code := unwarranted
		if !slices.Contains(kindList, name) {
			code = F2
		}
		if f.Code != code {
			t.Errorf("%s %s: code %s, want %s (%s)", field, name, f.Code, code, f.Detail)
		}
		if otherOK != slices.Contains(f.Codes, F5) {
			t.Errorf("%s %s: codes %v, F5 expected=%v", field, name, f.Codes, otherOK)
		}
	}
	want("family", family, famOK, families, F3, metOK)
	want("metric", metric, metOK, metrics, F4, famOK)
}

// Every family × metric (real and fabricated) × context: the gate admits
// exactly the pairs the context's terms name.
func TestSelectivityGenerated(t *testing.T) {
	r := newRig(t)
	ctxs := [][]string{}
	for _, c := range contexts6 {
		ctxs = append(ctxs, c.terms)
	}
	// One context per family × metric, and some with no family at all.
	for f := range termNames {
		ctxs = append(ctxs, []string{f})
	}
	ctxs = append(ctxs, []string{"trend", "sharpe"}, []string{"pairs trading", "drawdown"}, []string{"momentum", "mean reversion", "carry", "vol targeting", "sharpe", "max drawdown", "sortino", "calmar", "hit rate", "turnover", "total return", "annualized volatility", "annualized return"})
	allF := append(slices.Clone(families), fakeFamilies...)
	allM := append(slices.Clone(metrics), fakeMetrics...)
	var cm confusion
	for _, terms := range ctxs {
		res := r.discover(t, terms...)
		for _, f := range allF {
			for _, m := range allM {
				exp := expected(terms, f, m)
				got := r.ground(t, reqJSON(f, m), res.ID).Record.Decision.Admitted
				switch {
				case exp && got:
					cm.tp++
				case exp:
					cm.fn++
					t.Errorf("%v: %s/%s falsely rejected", terms, f, m)
				case got:
					cm.fp++
					t.Errorf("%v: %s/%s falsely admitted", terms, f, m)
				default:
					cm.tn++
				}
			}
		}
	}
	t.Logf("generated selectivity over %d contexts, %d tuples: %v", len(ctxs), cm.tp+cm.fn+cm.fp+cm.tn, cm)
	if cm.fp != 0 || cm.fn != 0 || cm.tp == 0 {
		t.Fatalf("confusion %v", cm)
	}
}

func TestAdmittedCarriesExactRequest(t *testing.T) {
	r := newRig(t)
	res := r.discover(t, "momentum", "sharpe")
	req := []byte(`{"data":"oil/wti.csv","params":{"window":[25,50,100],"leverage":2,"lag":1},"metric":"SRP","family":"MOM_WZS"}`)
	out := r.ground(t, req, res.ID)
	if !out.Record.Decision.Admitted || out.Grounded == nil || !out.Grounded.Valid() {
		t.Fatalf("not admitted: %+v", out.Record.Decision)
	}
	got := out.Grounded.Request()
	if got.Family != "MOM_WZS" || got.Metric != "SRP" || len(got.Params["window"].Values) != 3 || got.Params["leverage"].List {
		t.Fatalf("grounded request %+v", got)
	}
	// Mutating the copy does not touch the grounded value.
	got.Params["window"].Values[0] = Number(999)
	if out.Grounded.Request().Params["window"].Values[0].Float() != 25 {
		t.Fatal("Request() leaks the grounded value")
	}
	loaded, err := r.gate.Load(context.Background(), out.ID)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := loaded.Request().Canonical()
	b, _ := out.Grounded.Request().Canonical()
	if string(a) != string(b) || loaded.ID() != out.ID || loaded.Discovery() != res.ID || out.Record.Discovery == nil {
		t.Fatalf("loaded grounding differs:\n%s\n%s", a, b)
	}
	// A refused decision is stored but never loads as grounded.
	bad := r.ground(t, reqJSON("MOM_REV", "SRP"), res.ID)
	if bad.ID.IsZero() || bad.Grounded != nil {
		t.Fatalf("refusal: %+v", bad)
	}
	if _, err := r.gate.Load(context.Background(), bad.ID); !errors.Is(err, ErrNotAdmitted) {
		t.Fatalf("Load(refused) = %v", err)
	}
	if _, err := r.gate.Load(context.Background(), hashing.SumSHA256([]byte("nope"))); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Load(unknown) = %v", err)
	}
	var zero Grounded
	if zero.Valid() || (*Grounded)(nil).Valid() {
		t.Fatal("a zero Grounded is valid")
	}
}

func TestEveryFailingFieldReported(t *testing.T) {
	r := newRig(t)
	res := r.discover(t, "momentum", "sharpe")
	out := r.ground(t, []byte(`{"family":"TREND_FOLLOW","metric":"MDD","params":{"window":"fifty","speed":3},"data":"x.csv"}`), res.ID)
	got := map[string]Code{}
	for _, f := range out.Record.Decision.Failures {
		got[f.Field] = f.Code
	}
	// TREND_FOLLOW is no family, so its params cannot be checked.
	want := map[string]Code{"family": F2, "metric": F4}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s, want %s (all: %+v)", k, got[k], v, out.Record.Decision.Failures)
		}
	}
	out = r.ground(t, []byte(`{"family":"MOM_WZS","metric":"MDD","params":{"window":"fifty","speed":3,"lag":1.5},"data":"x.csv"}`), res.ID)
	got = map[string]Code{}
	codes := map[string][]Code{}
	for _, f := range out.Record.Decision.Failures {
		got[f.Field] = f.Code
		codes[f.Field] = f.Codes
	}
	want = map[string]Code{"metric": F4, "params.window": F1, "params.speed": F1, "params.lag": F1}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s, want %s (all: %+v)", k, got[k], v, out.Record.Decision.Failures)
		}
	}
	if !slices.Equal(codes["metric"], []Code{F4, F5}) {
		t.Errorf("metric codes %v, want [F4 F5] (family grounded)", codes["metric"])
	}
	// Malformed documents: F1 for every bad field, nothing stored.
	for _, tc := range []struct{ doc, field string }{
		{``, "request"},
		{`[1]`, "request"},
		{`{"family":1,"metric":"SRP","data":"x"}`, "family"},
		{`{"family":"MOM_WZS","data":"x"}`, "metric"},
		{`{"family":"MOM_WZS","metric":"SRP","data":""}`, "data"},
		{`{"family":"MOM_WZS","metric":"SRP","data":"x","extra":1}`, "request.extra"},
		{`{"family":"MOM_WZS","metric":"SRP","data":"x","params":{"window":[]}}`, "params.window"},
		{`{"family":"MOM_WZS","metric":"SRP","data":"x","params":{"window":[true]}}`, "params.window"},
		{`{"family":"MOM_WZS","metric":"SRP","data":"x","params":{"window":null}}`, "params.window"},
		{`{"family":"MOM_WZS","metric":"SRP","data":"x","family":"MOM_REV"}`, "request"},
		{`{"family":"MOM_WZS","metric":"SRP","data":"x","params":{"a":[1,2,3,4,5,6,7,8],"b":[1,2,3,4,5,6,7,8],"c":[1,2,3,4,5,6,7,8],"d":[1,2,3,4,5,6,7,8,9]}}`, "params"},
	} {
		out := r.ground(t, []byte(tc.doc), res.ID)
		if out.Record.Decision.Admitted || !out.ID.IsZero() {
			t.Errorf("%s: admitted=%v id=%s; want refused and not stored", tc.doc, out.Record.Decision.Admitted, out.ID)
		}
		found := false
		for _, f := range out.Record.Decision.Failures {
			found = found || (f.Field == tc.field && f.Code == F1)
		}
		if !found {
			t.Errorf("%s: no F1 on %s: %+v", tc.doc, tc.field, out.Record.Decision.Failures)
		}
	}
}

func (r *rig) groundInline(t testing.TB, req, evidence []byte) Outcome {
	t.Helper()
	out, err := r.gate.Ground(context.Background(), Proposal{Request: req, Inline: evidence})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func onlyFailure(t *testing.T, out Outcome, field string, code Code, detail string) {
	t.Helper()
	if out.Record.Decision.Admitted {
		t.Fatalf("admitted; want %s on %s", code, field)
	}
	for _, f := range out.Record.Decision.Failures {
		if f.Field == field && f.Code == code && strings.Contains(f.Detail, detail) {
			return
		}
	}
	t.Fatalf("no %s on %s mentioning %q: %+v", code, field, detail, out.Record.Decision.Failures)
}

// Forged, altered, foreign and stale evidence is refused with a reason.
func TestForgedEvidenceRefused(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	mom := r.discover(t, "momentum", "sharpe")
	req := reqJSON("MOM_WZS", "SRP")
	genuine, _ := json.Marshal(mom)
	if out := r.groundInline(t, req, genuine); !out.Record.Decision.Admitted {
		t.Fatalf("genuine inline evidence refused: %+v", out.Record.Decision.Failures)
	}

	// An added match: the agent claims mean reversion was discovered too.
	forged := mom
	forged.Matches = append(slices.Clone(mom.Matches), discover.Match{Term: "momentum", Name: "MOM_REV", Kind: registry.KindFamily, Mode: "alias", Confidence: 0.9,
		Capability: mustCap(t, r, "MOM_REV").Identity, Disc: mom.Matches[0].Disc})
	forged.ID, _ = discover.ComputeID(forged) // even with a consistent id
	b, _ := json.Marshal(forged)
	onlyFailure(t, r.groundInline(t, reqJSON("MOM_REV", "SRP"), b), "discovery", F8, "matches claimed")

	// A changed confidence.
	altered := mom
	altered.Matches = slices.Clone(mom.Matches)
	altered.Matches[0].Confidence = 1
	b, _ = json.Marshal(altered)
	onlyFailure(t, r.groundInline(t, req, b), "discovery", F8, "confidence")

	// Same content, wrong id.
	wrongID := mom
	wrongID.ID = hashing.SumSHA256([]byte("x"))
	b, _ = json.Marshal(wrongID)
	onlyFailure(t, r.groundInline(t, req, b), "discovery", F8, "does not match the content")

	// Another prompt's id: genuine evidence, but it grounds other names.
	other := r.discover(t, "mean reversion", "drawdown")
	out := r.ground(t, req, other.ID)
	onlyFailure(t, out, "family", F3, "not discovered")
	onlyFailure(t, out, "metric", F4, "not discovered")

	// An unknown id.
	onlyFailure(t, r.ground(t, req, hashing.SumSHA256([]byte("never"))), "discovery", F8, "never produced")

	// Foreign evidence: a registry version this server does not have.
	foreign := mom
	foreign.Version = 99
	b, _ = json.Marshal(foreign)
	onlyFailure(t, r.groundInline(t, req, b), "discovery", F8, "does not exist")

	// Extra fields are not a discovery result.
	onlyFailure(t, r.groundInline(t, req, []byte(strings.Replace(string(genuine), `"ok":`, `"trusted":true,"ok":`, 1))), "discovery", F8, "unknown field")

	// Both and neither.
	out, _ = r.gate.Ground(ctx, Proposal{Request: req, DiscoveryID: mom.ID, Inline: genuine})
	onlyFailure(t, out, "discovery", F1, "not both")
	out, _ = r.gate.Ground(ctx, Proposal{Request: req})
	onlyFailure(t, out, "discovery", F1, "missing")

	// Stale: MOM_WZS changes behaviour after discovery. Its old identity is
	// gone, so the old evidence grounds nothing, by id or inline (the
	// inline copy still re-derives genuinely at version 1).
	e := mustCap(t, r, "MOM_WZS").Entry
	for i := range e.Alg.Params {
		if e.Alg.Params[i].Name == "lag" {
			e.Alg.Params[i].Default = 2.0
		}
	}
	if _, err := r.store.Put(ctx, e); err != nil {
		t.Fatal(err)
	}
	onlyFailure(t, r.ground(t, req, mom.ID), "discovery", F7, "MOM_WZS")
	onlyFailure(t, r.groundInline(t, req, genuine), "discovery", F7, "MOM_WZS")
	// Fresh discovery grounds it again.
	if out := r.ground(t, req, r.discover(t, "momentum", "sharpe").ID); !out.Record.Decision.Admitted {
		t.Fatalf("fresh evidence refused: %+v", out.Record.Decision.Failures)
	}
}

// A discovery-layer edit keeps old evidence valid: identities are stable.
func TestDiscEditKeepsEvidence(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	mom := r.discover(t, "momentum", "sharpe")
	e := mustCap(t, r, "MOM_WZS").Entry
	e.Disc.Aliases = append(e.Disc.Aliases, "zz new alias")
	e.Disc.Description += " Edited."
	if _, err := r.store.Put(ctx, e); err != nil {
		t.Fatal(err)
	}
	if out := r.ground(t, reqJSON("MOM_WZS", "SRP"), mom.ID); !out.Record.Decision.Admitted {
		t.Fatalf("evidence from before a disc-only edit refused: %+v", out.Record.Decision.Failures)
	}
}

func mustCap(t testing.TB, r *rig, name string) registry.Capability {
	t.Helper()
	c, ok := r.store.Current().Get(name)
	if !ok {
		t.Fatalf("no %s in the catalog", name)
	}
	return c
}

func FuzzDecodeRequest(f *testing.F) {
	f.Add([]byte(`{"family":"MOM_WZS","metric":"SRP","params":{"window":[25,50,100]},"data":"oil/wti.csv"}`))
	f.Add([]byte(`{"family":"CARRY","metric":"MDD","params":{"front":"C1","next":"C2","window":60},"data":"f.csv"}`))
	f.Add([]byte(`{"family":"","params":{"w":[1e308,-0.0]}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, in []byte) {
		r, fails := DecodeRequest(in)
		if len(fails) > 0 {
			for _, fl := range fails {
				if fl.Code != F1 || fl.Detail == "" || fl.Field == "" {
					t.Fatalf("decode failure not a described F1: %+v", fl)
				}
			}
			return
		}
		// A clean request has one canonical form, stable under re-decoding.
		c1, err := r.Canonical()
		if err != nil {
			t.Fatal(err)
		}
		r2, fails := DecodeRequest(c1)
		if len(fails) > 0 {
			t.Fatalf("canonical form %s does not decode: %+v", c1, fails)
		}
		c2, _ := r2.Canonical()
		if string(c1) != string(c2) {
			t.Fatalf("canonical form not stable:\n%s\n%s", c1, c2)
		}
	})
}

// Arbitrary bytes as inline evidence never panic and never ground anything
// but what genuine evidence grounds.
func FuzzInlineEvidence(f *testing.F) {
	r := newRig(f)
	mom := r.discover(f, "momentum", "sharpe")
	genuine, _ := json.Marshal(mom)
	f.Add(genuine)
	f.Add([]byte(strings.Replace(string(genuine), "0.9", "1", 1)))
	f.Add([]byte(`{"id":"sha256:` + strings.Repeat("0", 64) + `","version":1,"terms":["momentum"]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, ev []byte) {
		out, err := r.gate.Ground(context.Background(), Proposal{Request: reqJSON("MOM_REV", "SRP"), Inline: ev})
		if err != nil {
			t.Fatal(err)
		}
		if out.Record.Decision.Admitted {
			t.Fatalf("MOM_REV admitted on inline evidence %s", ev)
		}
		out, err = r.gate.Ground(context.Background(), Proposal{Request: reqJSON("MOM_WZS", "SRP"), Inline: ev})
		if err != nil {
			t.Fatal(err)
		}
		if out.Record.Decision.Admitted {
			var claimed discover.Result
			if json.Unmarshal(ev, &claimed) != nil || claimed.ID != mom.ID {
				t.Fatalf("admitted on evidence that is not the genuine record: %s", ev)
			}
		}
	})
}
