package ground

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/registry/registrytest"
)

type rig struct {
	store *registry.Store
	disc  *discover.Discoverer
	gate  *Gate
}

func newRig(t testing.TB) *rig {
	t.Helper()
	s := registrytest.Seeded(t, filepath.Join(t.TempDir(), "g.db"), registry.Options{})
	r := rigOver(t, s)
	keepsEntries(t, s.Current())
	return r
}

// rigOver is discovery and a gate over s.
func rigOver(t testing.TB, s *registry.Store) *rig {
	t.Helper()
	d, err := discover.New(context.Background(), s, s.Engine(), discover.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(s, d, s.Engine())
	if err != nil {
		t.Fatal(err)
	}
	return &rig{store: s, disc: d, gate: g}
}

// keepsEntries checks, when the test ends, that snap's entries are what
// they were when it began: the checks read them shared, uncopied
// (Admission.capability), and must never modify them.
func keepsEntries(t testing.TB, snap *registry.Snapshot) {
	t.Helper()
	var want []registry.Capability
	for _, c := range snap.Capabilities() {
		cp, err := snap.Lookup(c.Name) // a deep copy
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, cp)
	}
	t.Cleanup(func() {
		for i, c := range snap.Capabilities() {
			if !reflect.DeepEqual(c, want[i]) {
				t.Errorf("the gate modified registry entry %s:\nnow    %+v\nbefore %+v", c.Name, c, want[i])
			}
		}
	})
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

// The paper's selectivity experiments (Table 3's 96 tuples and the larger
// generated set) are defined once in reproducibility/experiments and run
// by selectivity_test.go.

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
	f.Add([]byte(clean))
	f.Add([]byte(`{"pipeline":[{"id":"a","capability":"dlog","inputs":["b"]},{"id":"b","capability":"neg","inputs":["a"]}],"output":"b","metric":"SRP","data":"x"}`))
	f.Add([]byte(`{"pipeline":[{"id":"a","capabilty":"dlog","inputs":"data","params":{"k":["1",[2]]}}],"output":"a","metric":"SRP","data":"x"}`))
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

// Groundings decided at the same time share commits (store Batch): each returns only with its record stored, and after the
// file is closed and opened again every record is there, the bytes its id
// hashes, loading as the grounding that was returned.
func TestConcurrentGroundingsDurable(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	res := r.discover(t, "momentum", "sharpe")
	const n = 40
	outs := make([]Outcome, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req := fmt.Appendf(nil, `{"family":"MOM_WZS","metric":"SRP","params":{"window":[%d,%d]},"data":"oil/wti.csv"}`, 10+i, 100+i)
			out, err := r.gate.Ground(ctx, Proposal{Request: req, DiscoveryID: res.ID})
			if err != nil || !out.Record.Decision.Admitted || out.ID.IsZero() {
				t.Errorf("grounding %d: %v %+v", i, err, out.Record.Decision.Failures)
			}
			outs[i] = out
		})
	}
	wg.Wait()
	path := r.store.DB().Path()
	r.disc.Close()
	if err := r.store.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := registry.Open(ctx, path, registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r = rigOver(t, s)
	defer r.disc.Close()
	ids := map[hashing.Digest]bool{}
	for i, out := range outs {
		ids[out.ID] = true
		loaded, err := r.gate.Load(ctx, out.ID)
		if err != nil {
			t.Fatalf("grounding %d (%s) after reopening: %v", i, out.ID, err)
		}
		a, _ := loaded.Request().Canonical()
		b, _ := out.Grounded.Request().Canonical()
		if string(a) != string(b) {
			t.Errorf("grounding %d loads as %s, was %s", i, a, b)
		}
	}
	if len(ids) != n {
		t.Errorf("%d distinct ids for %d distinct requests", len(ids), n)
	}
}
