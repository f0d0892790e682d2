package fuzz_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/fuzz"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/internal/app"
	"github.com/groundgate/groundgate/internal/testio"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/registry/registrytest"
)

// updateCases rewrites testdata/runtime from the findings of
// TestRuntimeSeededDivision.
var updateCases = flag.Bool("update-runtime-cases", false, "rewrite fuzz/testdata/runtime from TestRuntimeSeededDivision's findings")

// casesDir holds the minimised runtime findings kept as regression cases.
const casesDir = "testdata/runtime"

// rig is a registry seeded with the built-in catalog, discovery over it
// (the discoverability prober) and the runtime stack on a scratch copy.
type rig struct {
	store *registry.Store
	disc  *discover.Discoverer
}

func newRig(t testing.TB) *rig {
	t.Helper()
	s := registrytest.Seeded(t, filepath.Join(t.TempDir(), "r.db"), registry.Options{})
	d, err := discover.New(context.Background(), s, s.Engine(), discover.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return &rig{store: s, disc: d}
}

// newSmallRig is newRig over a slice of the built-in catalog: the
// families, the metrics, the operations the families' expressions name and
// the steps the harness pairs them with — a run takes about a second.
func newSmallRig(t testing.TB) *rig {
	t.Helper()
	cat, err := registry.BuiltinCatalog()
	if err != nil {
		t.Fatal(err)
	}
	keep := map[string]bool{"SIZE_BY_VOL": true, "dlog": true, "shift": true, "diff": true, "div": true, "cs0": true}
	for _, e := range cat {
		if e.Kind == registry.KindFamily {
			for _, sym := range strings.FieldsFunc(e.Impl.Expr, func(r rune) bool { return r == '(' || r == ')' || r == ' ' }) {
				keep[sym] = true
			}
		}
	}
	cat = slices.DeleteFunc(cat, func(e registry.Entry) bool {
		return e.Kind != registry.KindFamily && e.Kind != registry.KindMetric && !keep[e.Name]
	})
	s, err := registry.Open(context.Background(), filepath.Join(t.TempDir(), "small.db"), registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Seed(context.Background(), cat); err != nil {
		t.Fatal(err)
	}
	d, err := discover.New(context.Background(), s, s.Engine(), discover.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return &rig{store: s, disc: d}
}

// runtime opens the runtime stack on a scratch copy of the rig's
// database (made now: put entries first) over dataDir ("" for the bundled
// sample data).
func (g *rig) runtime(t testing.TB, dataDir string) *fuzz.Runtime {
	t.Helper()
	rt, closeRT, err := app.OpenFuzzRuntime(context.Background(), g.store.Engine(), dataDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := closeRT(); err != nil {
			t.Error(err)
		}
	})
	return rt
}

func (g *rig) run(t *testing.T, ctx context.Context, rt *fuzz.Runtime, seed uint64) *fuzz.Report {
	t.Helper()
	rep, err := fuzz.Run(ctx, g.store.Current(), g.disc, fuzz.Config{Seed: seed, Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func runtimeFindings(r *fuzz.Report) []fuzz.Finding {
	var out []fuzz.Finding
	for _, f := range r.Findings {
		if f.Kind == fuzz.KindRuntime || f.Rule == fuzz.RuleOutputsDisagree {
			out = append(out, f)
		}
	}
	return out
}

// TestRuntimeSeededDivision: a family whose expression divides by a
// series that can be zero — a percentage change written by hand, the
// price change over the previous price — and that lacks the built-in
// families' finite_outputs postcondition is found by a default run (the
// bundled data, the CLI's 60 s budget), minimised to one column of the
// rows around a bad print. The kernels make x/0 NA, but a denominator a
// hair above zero (a subnormal print) overflows to ±Inf; the P&L then
// holds an infinity that only the metric's own postcondition refuses, or
// none at all. Nothing else of the built-in catalog is a runtime or
// output-consistency finding, and every capability, metric and frame was
// exercised.
func TestRuntimeSeededDivision(t *testing.T) {
	g := newRig(t)
	ctx := context.Background()
	putPctVol(t, g)
	rt := g.runtime(t, "")
	rt.Save = t.TempDir()
	if *updateCases {
		if err := os.RemoveAll(casesDir); err != nil {
			t.Fatal(err)
		}
		rt.Save = casesDir
	}
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	began := time.Now()
	rep := g.run(t, rctx, rt, 1)
	took := time.Since(began)
	if !rep.Complete {
		t.Fatalf("the default run did not complete in 60 s (%v)", took)
	}
	t.Logf("a whole run (poisoning, discoverability, runtime: %d cases) took %v", rep.Runtime.Cases, took)
	checkCoverage(t, g.store.Current(), rep, true)
	var found *fuzz.Finding
	for _, f := range runtimeFindings(rep) {
		if f.Capability != "PCT_VOL" {
			t.Errorf("a finding for a capability other than the seeded one: %s %s: %s", f.Capability, f.Rule, f.Detail)
			continue
		}
		if f.Rule == fuzz.RuleNonFinite {
			found = &f
		}
	}
	if found == nil {
		t.Fatalf("the seeded division was not found; runtime summary %+v", rep.Runtime)
	}
	t.Logf("found: %s", found.Detail)
	// Minimised: the bad print and the rows the sizing needs before it,
	// on one column.
	if !strings.Contains(found.Detail, "near_zero (") || !strings.Contains(found.Detail, "× 1 columns)") || !strings.Contains(found.Detail, "infinite") {
		t.Errorf("detail does not name the minimised frame and the infinity: %s", found.Detail)
	}
	if files, _ := filepath.Glob(filepath.Join(rt.Save, "*.json")); len(files) != 1 {
		t.Errorf("saved cases %v", files)
	}
}

// TestRuntimeRegressionCases replays every saved case of testdata/runtime
// (the minimised findings, written by TestRuntimeSeededDivision with
// -update-runtime-cases) on the real stack: a case of the built-in catalog
// must now be a named rejection or a finite success. The seeded division's
// case must still break its rule while PCT_VOL lacks finite_outputs, and
// be refused by name once the clause is back: the fix the finding asks for.
func TestRuntimeRegressionCases(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(casesDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no regression cases in %s (%v)", casesDir, err)
	}
	ctx := context.Background()
	for _, file := range files {
		rc := readCase(t, file)
		t.Run(filepath.Base(file), func(t *testing.T) {
			if rc.Capability != "PCT_VOL" {
				g := newRig(t)
				if rules, err := g.runtime(t, "").Check(ctx, g.store.Current(), rc); err != nil || len(rules) > 0 {
					t.Errorf("%s %s: %v %v", rc.Capability, rc.Rule, rules, err)
				}
				return
			}
			for _, fixed := range []bool{false, true} {
				g := newRig(t)
				if _, err := g.store.Put(ctx, pctVol(t, g.store.Current(), fixed)); err != nil {
					t.Fatal(err)
				}
				rules, err := g.runtime(t, "").Check(ctx, g.store.Current(), rc)
				switch {
				case err != nil:
					t.Fatal(err)
				case !fixed && (len(rules) != 1 || !strings.HasPrefix(rules[0], rc.Rule+":")):
					t.Errorf("the defective entry: %v, want %s", rules, rc.Rule)
				case fixed && len(rules) != 0:
					t.Errorf("the fixed entry: %v", rules)
				}
			}
		})
	}
}

// FuzzRuntime drives one case at a time through the real stack — a
// capability (a family, or an operation or signal as a pipeline step), one
// parameter set to a fuzzed number, a fuzzed CSV frame — with Go's
// coverage-guided engine. Every case must end in a named rejection or a
// finite success. Seeds: the hostile frames across the capabilities;
// inputs the engine minimised to a failure are kept in
// testdata/fuzz/FuzzRuntime and replay on every `go test`.
func FuzzRuntime(f *testing.F) {
	g := newRig(f)
	rt := g.runtime(f, f.TempDir())
	snap := g.store.Current()
	var caps []registry.Capability
	for _, c := range snap.Capabilities() {
		runnable := c.Kind == registry.KindFamily || c.Kind == registry.KindOperation || c.Kind == registry.KindSignal
		if runnable && !slices.Contains(unrunnable, c.Name) {
			caps = append(caps, c)
		}
	}
	slices.SortFunc(caps, func(a, b registry.Capability) int { return strings.Compare(a.Name, b.Name) })
	frames := fuzz.HostileFrames()
	names := slices.Sorted(maps.Keys(frames))
	for i, name := range names {
		for k := i; k < len(caps); k += 23 {
			f.Add(frames[name], uint16(k), uint8(k), float64(k%7)-1)
		}
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, csv []byte, capIdx uint16, paramIdx uint8, value float64) {
		if len(csv) > 64<<10 || math.IsNaN(value) || math.IsInf(value, 0) {
			return // outside the domain: JSON carries no NaN or infinity; big frames only cost time
		}
		c := caps[int(capIdx)%len(caps)]
		params := map[string]ground.Scalar{}
		if ps := c.Alg.Params; len(ps) > 0 && paramIdx < 128 {
			p := ps[int(paramIdx)%len(ps)]
			if p.Type == registry.ParamInt || p.Type == registry.ParamFloat {
				params[p.Name] = ground.Number(value)
			}
		}
		rules, err := rt.Case(ctx, snap, c.Name, params, csv, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rules {
			t.Errorf("%s %v: %s", c.Name, params, r)
		}
	})
}

// unrunnable are the capabilities no pipeline can run: three take weights
// no step yields, VOL_WEIGHT yields weights no step takes.
var unrunnable = []string{"GROSS_EXP", "NET_EXP", "TURNOVER_SERIES", "VOL_WEIGHT"}

// checkCoverage: a complete run planned cases for every family, operation
// and signal but the four no pipeline can run (their reasons named), ran
// them all, scored with every metric, on every hostile frame (and, with
// bundled, every bundled file), and met every kind of named rejection.
func checkCoverage(t *testing.T, snap *registry.Snapshot, rep *fuzz.Report, bundled bool) {
	t.Helper()
	s := rep.Runtime
	if s == nil || !slices.Contains(rep.Tests, fuzz.KindRuntime) {
		t.Fatalf("no runtime tests in %v", rep.Tests)
	}
	var targets, metrics int
	for _, c := range snap.Capabilities() {
		switch c.Kind {
		case registry.KindFamily, registry.KindOperation, registry.KindSignal:
			targets++
		case registry.KindMetric:
			metrics++
		}
	}
	wantUntested := unrunnable
	var untested []string
	for _, u := range s.Untested {
		name, why, _ := strings.Cut(u, ": ")
		untested = append(untested, name)
		if why == "" {
			t.Errorf("untested without a reason: %q", u)
		}
	}
	if !slices.Equal(untested, wantUntested) || s.Capabilities != targets-len(wantUntested) {
		t.Errorf("untested %v (want %v), %d capabilities of %d", untested, wantUntested, s.Capabilities, targets)
	}
	if s.Ran != s.Cases || s.Cases < 3*targets || len(s.Metrics) != metrics {
		t.Errorf("ran %d of %d cases, metrics %v", s.Ran, s.Cases, s.Metrics)
	}
	for _, f := range slices.Sorted(maps.Keys(fuzz.HostileFrames())) {
		if !slices.Contains(s.Frames, f) {
			t.Errorf("frame %s not used", f)
		}
	}
	if bundled && !slices.Contains(s.Frames, "fx-fed-h10/daily.csv") {
		t.Errorf("bundled files not used: %v", s.Frames)
	}
	for _, o := range []string{"committed", "gate:F1", "gate:F9", "error:bad_data", "rejected:pre", "rejected:post", "rejected:data", "rejected:domain", "rejected:bounds", "rejected:leverage", "rejected:non_negative"} {
		if s.Outcomes[o] == 0 {
			t.Errorf("no case ended %s: %v", o, s.Outcomes)
		}
	}
}

// runtimeJSON is the runtime part of a report: its findings and summary.
func runtimeJSON(t *testing.T, r *fuzz.Report) string {
	t.Helper()
	b, err := json.Marshal(struct {
		F []fuzz.Finding
		S *fuzz.RuntimeSummary
	}{runtimeFindings(r), r.Runtime})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRuntimeDeterministic: a complete run's runtime findings and
// summary do not depend on the seed, which only orders the cases — so the
// same seed twice gives the same bytes too. The seeded division makes the
// findings non-empty. (TestRunDeterministic checks the whole report.)
func TestRuntimeDeterministic(t *testing.T) {
	t.Parallel()
	g := newSmallRig(t)
	putPctVol(t, g)
	rt := g.runtime(t, testio.ShortPriceRoot(t))
	a := g.run(t, context.Background(), rt, 7)
	b := g.run(t, context.Background(), rt, 8)
	if x, y := runtimeJSON(t, a), runtimeJSON(t, b); x != y {
		t.Errorf("seeds 7 and 8 differ:\n%s\n%s", x, y)
	}
	if len(runtimeFindings(a)) == 0 || !a.Complete || !b.Complete {
		t.Errorf("complete %v %v, findings %d", a.Complete, b.Complete, len(runtimeFindings(a)))
	}
}

// putPctVol puts the seeded division (see TestRuntimeSeededDivision);
// fixed restores the finite_outputs postcondition, which refuses the
// same runs by name.
func putPctVol(t *testing.T, g *rig) {
	t.Helper()
	if _, err := g.store.Put(context.Background(), pctVol(t, g.store.Current(), false)); err != nil {
		t.Fatal(err)
	}
}

func pctVol(t *testing.T, snap *registry.Snapshot, fixed bool) registry.Entry {
	t.Helper()
	vt, ok := snap.Get("VOL_TGT")
	if !ok {
		t.Fatal("no VOL_TGT")
	}
	e := vt.Entry
	e.Name = "PCT_VOL"
	e.Disc = registry.Discovery{Description: "Volatility-targeted long position sized on hand-made percentage returns.",
		Aliases: []string{"percent return vol target"}, Tags: []string{}, Examples: []string{}}
	e.Impl.Expr = "(volsize (const 1) (div (diff x 1) (shift x 1)) $risk_window $target_vol $leverage $lag)"
	if !fixed {
		c := *e.Sem.Contract
		c.Post = slices.DeleteFunc(slices.Clone(c.Post), func(cl contract.Clause) bool { return cl.Name == "finite_outputs" })
		e.Sem.Contract = &c
	}
	return e
}

// faulty wraps the real executor and injects one fault per capability:
// MOM_REV panics, CARRY fails with an error nothing names, MOM_WZS is
// over budget (a named error: no finding) except on the huge frame, where
// it runs until its context ends (a hang), VOL_TGT's first morphism comes
// back rejected by a kernel panic, and a pipeline stepping through dlog
// commits a null score. stuck, when set, makes VOL_TGT on the constant
// frame ignore its context until stuck is closed.
type faulty struct {
	fuzz.Executor
	stuck chan struct{}
}

func (f *faulty) Execute(ctx context.Context, g *ground.Grounded) (*execution.Footprint, error) {
	req := g.Request()
	switch {
	case f.stuck != nil:
		if req.Family == "VOL_TGT" && strings.HasSuffix(req.Data, "/constant.csv") {
			<-f.stuck
			return nil, errors.New("released")
		}
	case req.Family == "MOM_REV":
		panic("injected fault")
	case req.Family == "CARRY":
		return nil, errors.New("injected: the disk is on fire")
	case req.Family == "MOM_WZS" && strings.HasSuffix(req.Data, "/huge.csv"):
		<-ctx.Done()
		return nil, fmt.Errorf("execution: %w", ctx.Err())
	case req.Family == "MOM_WZS":
		return nil, fmt.Errorf("injected: %w", execution.ErrOverBudget)
	}
	fp, err := f.Executor.Execute(ctx, g)
	if err != nil || f.stuck != nil || len(fp.Morphisms) == 0 {
		return fp, err
	}
	m := &fp.Morphisms[0]
	switch {
	case req.Family == "VOL_TGT":
		m.Admissible, m.Rejected = false, []string{execution.PredDomain}
		panicked := &execution.PanicError{Op: "volsize", Value: "runtime error: index out of range [3] with length 3"}
		m.Reasons = []execution.Reason{{Predicate: execution.PredDomain, Detail: "run: " + panicked.Error()}}
		fp.RunErrors = map[int]error{0: panicked}
	case req.IsPipeline() && slices.ContainsFunc(req.Pipeline, func(s ground.Step) bool { return s.Capability == "dlog" }):
		m.Admissible, m.Rejected, m.Reasons, m.Score = true, []string{}, []execution.Reason{}, execution.ScoreOf(math.NaN())
	}
	return fp, nil
}

// TestRuntimeFaults: every rule is found, on the capability at fault
// only, named errors are not findings, unconditional faults minimise to
// one row of one column, and each finding's saved regression case
// replays: the same rule on the faulty stack, nothing on the real one.
func TestRuntimeFaults(t *testing.T) {
	g := newSmallRig(t)
	data := testio.ShortPriceRoot(t)
	rt := g.runtime(t, data)
	rt.Exec = &faulty{Executor: rt.Exec}
	rt.CaseTimeout = 300 * time.Millisecond
	rt.Save = t.TempDir()
	rep := g.run(t, context.Background(), rt, 3)
	if !rep.Complete {
		t.Fatal("incomplete")
	}
	want := map[string]string{"MOM_REV": fuzz.RulePanic, "CARRY": fuzz.RuleUnnamedError, "MOM_WZS": fuzz.RuleHang,
		"VOL_TGT": fuzz.RulePanic, "dlog": fuzz.RuleNonFinite}
	got := map[string]string{}
	for _, f := range runtimeFindings(rep) {
		got[f.Capability] = f.Rule
		if want[f.Capability] != f.Rule {
			t.Errorf("unexpected finding %s %s: %s", f.Capability, f.Rule, f.Detail)
			continue
		}
		if f.Rule != fuzz.RuleHang && !strings.Contains(f.Detail, "(1 rows × 1 columns)") {
			t.Errorf("%s %s not minimised: %s", f.Capability, f.Rule, f.Detail)
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("findings %v, want %v", got, want)
	}
	files, err := filepath.Glob(filepath.Join(rt.Save, "*.json"))
	if err != nil || len(files) != len(want) {
		t.Fatalf("saved %v (%v)", files, err)
	}
	real := g.runtime(t, data)
	snap := g.store.Current()
	for _, file := range files {
		rc := readCase(t, file)
		if rules, err := rt.Check(context.Background(), snap, rc); err != nil || len(rules) == 0 || !strings.HasPrefix(rules[0], rc.Rule+":") {
			t.Errorf("%s on the faulty stack: %v %v", filepath.Base(file), rules, err)
		}
		if rules, err := real.Check(context.Background(), snap, rc); err != nil || len(rules) != 0 {
			t.Errorf("%s on the real stack: %v %v", filepath.Base(file), rules, err)
		}
	}
}

func readCase(t *testing.T, file string) fuzz.RegressionCase {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var rc fuzz.RegressionCase
	if err := json.Unmarshal(raw, &rc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return rc
}

// TestRuntimeStuck: an execution that ignores its context holds the
// executor's slot; the run reports it as a hang of its capability and
// stops there, incomplete, instead of waiting for it.
func TestRuntimeStuck(t *testing.T) {
	g := newSmallRig(t)
	rt := g.runtime(t, testio.ShortPriceRoot(t))
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	rt.Exec = &faulty{Executor: rt.Exec, stuck: release}
	// Long enough that no sound case reaches it on a loaded box (100 ms did, at
	// a load average of 14 on 2 cores): only the stuck one may.
	rt.CaseTimeout = 2 * time.Second
	began := time.Now()
	rep := g.run(t, context.Background(), rt, 1)
	if rep.Complete || rep.Runtime.Ran >= rep.Runtime.Cases {
		t.Errorf("complete %v, ran %d of %d", rep.Complete, rep.Runtime.Ran, rep.Runtime.Cases)
	}
	fs := runtimeFindings(rep)
	if len(fs) != 1 || fs[0].Capability != "VOL_TGT" || fs[0].Rule != fuzz.RuleHang {
		t.Errorf("findings %+v", fs)
	}
	if d := time.Since(began); d > 20*time.Second {
		t.Errorf("took %v", d)
	}
}

// TestRuntimeCancelled: a run cancelled part-way stops promptly, says it
// is partial and keeps what it found (unminimised).
func TestRuntimeCancelled(t *testing.T) {
	g := newSmallRig(t)
	rt := g.runtime(t, testio.ShortPriceRoot(t))
	rt.Exec = &faulty{Executor: rt.Exec}
	rt.CaseTimeout = 300 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Progress counts the discovery probes, then the runtime cases: cancel
	// 100 cases into the runtime tests.
	var cancelled time.Time
	probes := -1
	progress := func(p fuzz.Progress) {
		if probes < 0 {
			probes = p.Total
		}
		if cancelled.IsZero() && p.Done >= probes+100 {
			cancelled = time.Now()
			cancel()
		}
	}
	rep, err := fuzz.Run(ctx, g.store.Current(), g.disc, fuzz.Config{Seed: 1, Runtime: rt, Progress: progress})
	if err != nil {
		t.Fatal(err)
	}
	if cancelled.IsZero() {
		t.Fatal("never cancelled")
	}
	if d := time.Since(cancelled); d > 2*time.Second {
		t.Errorf("stopped %v after the cancellation", d)
	}
	s := rep.Runtime
	if rep.Complete || s == nil || s.Ran < 100 || s.Ran > 101 || s.Cases < 300 {
		t.Fatalf("complete %v, summary %+v", rep.Complete, s)
	}
	if len(runtimeFindings(rep)) == 0 {
		t.Error("the findings of the cases that ran were not kept")
	}
}
