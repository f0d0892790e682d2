package execution

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/artifacts"
	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
)

// Fault injection for the contracts (SPEC §9), after ToolGate's Table 3:
// each case breaks one assumption — in the request, in the data, or in
// what a family's result says — and must be caught by the named clause
// with the right code: F9 at the gate (a precondition over the request
// alone), F9 "pre" at the executor (over the data or the family's verified
// result), F10 "post" (over a result or a score). The crafted files are in
// testdata/faults (README.md there says what each breaks); the real ones
// are the bundled sample data.

// sampleData is the bundled real data (sampledata/data), read in place.
const sampleData = "../sampledata/data"

type faultCategory string

// ToolGate's Table 3 categories, in its order.
const (
	catValue    faultCategory = "pre: value/entity hallucination"
	catSchema   faultCategory = "pre: schema/format"
	catState    faultCategory = "pre: missing state dependency"
	catEmpty    faultCategory = "post: empty/null result"
	catSemantic faultCategory = "post: semantic mismatch"
	catUpdate   faultCategory = "post: state-update inconsistency"
)

var faultCategories = []faultCategory{catValue, catSchema, catState, catEmpty, catSemantic, catUpdate}

// faultCode is where and how a fault must be caught.
type faultCode string

const (
	atGate faultCode = "F9 gate"  // Γ refuses the request: a failure with code F9
	atPre  faultCode = "F9 pre"   // every morphism rejected with "pre"
	atPost faultCode = "F10 post" // every morphism rejected with "post"
)

type faultCase struct {
	cat    faultCategory
	name   string
	req    map[string]any
	code   faultCode
	clause string // "CAPABILITY.clause" that must catch it
}

// faultRoot is a data root holding the bundled sample data at its usual
// paths and the crafted files under faults/.
func faultRoot(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	cp := func(src, dst string) {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	err := fs.WalkDir(os.DirFS(sampleData), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			cp(filepath.Join(sampleData, p), filepath.Join(dir, p))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	crafted, err := filepath.Glob(filepath.Join("testdata", "faults", "*.csv"))
	if err != nil || len(crafted) == 0 {
		t.Fatalf("no crafted files in testdata/faults: %v", err)
	}
	for _, p := range crafted {
		cp(p, filepath.Join(dir, "faults", filepath.Base(p)))
	}
	return dir
}

// customFamily is a family written into the registry for the faults a
// catalog family cannot commit: its expression breaks an assumption of
// the contract it carries (the base family's, plus extra post clauses).
type customFamily struct {
	name, base, expr string
	post             []contract.Clause
}

// customFamilies: semantic mismatches (a signal left unclipped, a
// constant signal outside [-1, 1], a leverage written into the
// expression) and state-update inconsistencies (a result that does not
// line up with the data or with what the family declares).
var customFamilies = []customFamily{
	{name: "MOM_RAW", base: "MOM_WZS",
		expr: "(volsize (wzs (cs0 (dlog x)) $window) (dlog x) $risk_window $target_vol $leverage $lag)"},
	{name: "VOL_X2", base: "VOL_TGT",
		expr: "(volsize (const 2) (dlog x) $risk_window $target_vol $leverage $lag)"},
	{name: "VOL_SHORT15", base: "VOL_TGT",
		expr: "(volsize (const -1.5) (dlog x) $risk_window $target_vol $leverage $lag)"},
	{name: "MOM_LEV5", base: "MOM_WZS",
		expr: "(volsize (clip (wzs (cs0 (dlog x)) $window) -1 1) (dlog x) $risk_window $target_vol 5 $lag)"},
	{name: "CARRY_NEXT", base: "CARRY",
		expr: "(volsize (clip (wzs (sub (log (col x $front)) (log (col x $next))) $window) -1 1) (dlog (col x $next)) $risk_window $target_vol $leverage $lag)",
		post: []contract.Clause{{Name: "trades_front", Expr: "result.assets == [params.front]",
			Message: "the family trades its front column and nothing else"}}},
	{name: "VOL_PRICED", base: "VOL_TGT",
		expr: "(volsize (const 1) (dlog x) $risk_window $target_vol $leverage $lag)",
		post: []contract.Clause{{Name: "trades_priced_columns", Expr: "result.assets.all(a, data.na_share[a] < 0.5)",
			Message: "every traded column has a price on most rows"}}},
	{name: "VOL_TRADABLE", base: "VOL_TGT",
		expr: "(volsize (const 1) (dlog x) $risk_window $target_vol $leverage $lag)",
		post: []contract.Clause{{Name: "trades_tradable_columns", Expr: "size(result.assets) <= size(data.tradable_columns)",
			// A membership test in all() is quadratic in the lists: over
			// the cost limit. Traded columns are data columns, so more of
			// them than tradable ones means one is empty or constant.
			Message: "every traded column moves: none is empty or constant"}}},
	{name: "VOL_SINGLE", base: "VOL_TGT",
		expr: "(volsize (const 1) (dlog x) $risk_window $target_vol $leverage $lag)",
		post: []contract.Clause{{Name: "single_asset", Expr: "size(result.assets) == 1",
			Message: "a single-asset strategy trades exactly one column"}}},
	{name: "MOM_W5", base: "MOM_WZS",
		expr: "(volsize (clip (wzs (cs0 (dlog x)) 5) -1 1) (dlog x) $risk_window $target_vol $leverage $lag)",
		post: []contract.Clause{{Name: "no_pnl_before_window", Expr: "result.pnl_rows <= data.rows - params.window - params.lag",
			Message: "no P&L before the declared signal window and lag have passed"}}},
}

// putCustomFamilies writes customFamilies into the rig's registry.
func (r *rig) putCustomFamilies(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	for _, cf := range customFamilies {
		base, ok := r.store.Current().Get(cf.base)
		if !ok || base.Sem.Contract == nil {
			t.Fatalf("no %s with a contract to base %s on", cf.base, cf.name)
		}
		e := base.Entry
		e.Name = cf.name
		e.Impl.Expr = cf.expr
		e.Disc = registry.Discovery{Description: "A test family for contract fault injection: " + strings.ToLower(cf.name) + "."}
		e.Sem.Contract = &contract.Contract{Pre: slices.Clone(base.Sem.Contract.Pre), Post: append(slices.Clone(base.Sem.Contract.Post), cf.post...)}
		if _, err := r.store.Put(ctx, e); err != nil {
			t.Fatalf("put %s: %v", cf.name, err)
		}
	}
}

func p(kv ...any) map[string]any {
	m := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// Sample data paths.
const (
	wti     = "oil-spot/wti-daily.csv"
	brent   = "oil-spot/brent-daily.csv"
	gas     = "natural-gas/daily.csv"
	cushing = "eia-nymex-futures/crude-oil-wti-cushing.csv"
	heating = "eia-nymex-futures/heating-oil-nyh.csv"
	ffn     = "equity-stocks-ffn/test_data.csv"
	sp500   = "equity-index-arch/sp500.csv.gz"
	vix     = "vix/vix-daily.csv"
	fx      = "fx-fed-h10/daily.csv"
	dgs10   = "us-treasury-rates/DGS10.csv"
	dtb3    = "us-treasury-rates/DTB3.csv"
)

func fault(name string) string { return "faults/" + name + ".csv" }

func faultCases() []faultCase {
	var cs []faultCase
	add := func(cat faultCategory, name string, req map[string]any, code faultCode, clause string) {
		cs = append(cs, faultCase{cat: cat, name: name, req: req, code: code, clause: clause})
	}

	// Value/entity hallucination: parameter values naming nothing real —
	// a leverage or volatility target of zero, a curve whose two points
	// are one column, columns the file does not have.
	v := func(name string, req map[string]any, code faultCode, clause string) {
		add(catValue, name, req, code, clause)
	}
	for _, c := range []struct{ fam, data string }{{"MOM_WZS", wti}, {"MOM_REV", ffn}, {"CARRY", cushing}, {"VOL_TGT", sp500}} {
		params := p("leverage", 0)
		if c.fam != "VOL_TGT" {
			params["window"] = 25
		}
		v(c.fam+" leverage 0", request(c.fam, "SRP", c.data, params), atGate, c.fam+".positive_leverage")
		params = p("target_vol", 0)
		if c.fam != "VOL_TGT" {
			params["window"] = 25
		}
		v(c.fam+" target_vol 0", request(c.fam, "MDD", c.data, params), atGate, c.fam+".positive_target_vol")
	}
	v("VOL_TGT leverage 0 inside a grid", request("VOL_TGT", "AVOL", gas, p("leverage", []any{1, 0.5, 0})), atGate, "VOL_TGT.positive_leverage")
	v("MOM_REV target_vol 0 inside a grid", request("MOM_REV", "HIT", vix, p("window", 20, "target_vol", []any{0.1, 0})), atGate, "MOM_REV.positive_target_vol")
	v("CARRY front = next = C1", request("CARRY", "SRP", cushing, p("window", 60, "front", "C1", "next", "C1")), atGate, "CARRY.distinct_curve_points")
	v("CARRY front = next = C2", request("CARRY", "CLM", heating, p("window", 60, "front", "C2", "next", "C2")), atGate, "CARRY.distinct_curve_points")
	v("CARRY next = C1 = default front", request("CARRY", "ARET", cushing, p("window", 60, "next", "C1")), atGate, "CARRY.distinct_curve_points")
	v("CARRY front = next inside a grid", request("CARRY", "TRET", heating, p("window", 60, "front", []any{"C1", "C3"}, "next", "C3")), atGate, "CARRY.distinct_curve_points")
	v("CARRY front = next = a fabricated name", request("CARRY", "SRP", cushing, p("window", 60, "front", "C7", "next", "C7")), atGate, "CARRY.distinct_curve_points")
	v("CARRY front C9 on a C1–C4 curve", request("CARRY", "SRP", cushing, p("window", 60, "front", "C9")), atPre, "CARRY.curve_columns_present")
	v("CARRY next C5 on a C1–C4 curve", request("CARRY", "MDD", heating, p("window", 60, "next", "C5")), atPre, "CARRY.curve_columns_present")
	v("CARRY front in the wrong case", request("CARRY", "SRP", cushing, p("window", 60, "front", "c1")), atPre, "CARRY.curve_columns_present")
	v("CARRY front is the date column", request("CARRY", "SRP", cushing, p("window", 60, "front", "Date")), atPre, "CARRY.curve_columns_present")
	v("CARRY front with a stray space", request("CARRY", "SRP", cushing, p("window", 60, "front", " C1")), atPre, "CARRY.curve_columns_present")
	v("CARRY defaults on a spot series", request("CARRY", "SRP", wti, p("window", 60)), atPre, "CARRY.curve_columns_present")
	v("CARRY next missing on a spot series", request("CARRY", "HIT", brent, p("window", 60, "front", "Price")), atPre, "CARRY.curve_columns_present")
	v("CARRY a ticker the file lacks", request("CARRY", "SRP", ffn, p("window", 60, "front", "AAPL", "next", "GOOG")), atPre, "CARRY.curve_columns_present")
	v("CARRY a field the file lacks", request("CARRY", "SRP", vix, p("window", 60, "front", "CLOSE", "next", "VIX")), atPre, "CARRY.curve_columns_present")
	v("CARRY a currency the file lacks", request("CARRY", "SRP", fx, p("window", 60, "front", "Euro", "next", "Swiss Franc")), atPre, "CARRY.curve_columns_present")
	v("CARRY on a single-asset file", request("CARRY", "SRP", fault("curve-single"), p("window", 20)), atPre, "CARRY.curve_columns_present")

	// Schema/format: the data is shaped wrong for the request — too few
	// rows for the windows, nothing tradable (constant, all NA), a gap of
	// months or years between rows, an empty front leg.
	s := func(name string, req map[string]any, clause string) { add(catSchema, name, req, atPre, clause) }
	for _, fam := range []string{"MOM_WZS", "MOM_REV", "VOL_TGT"} {
		params := map[string]any{}
		if fam != "VOL_TGT" {
			params["window"] = 20
		}
		s(fam+" on one row", request(fam, "SRP", fault("one-row"), params), fam+".history_covers_risk_window")
		s(fam+" on 30 rows", request(fam, "SRP", fault("short-30"), params), fam+".history_covers_risk_window")
		s(fam+" on a constant price", request(fam, "SRP", fault("constant"), params), fam+".tradable_column")
		s(fam+" on an all-NA column", request(fam, "SRP", fault("all-na"), params), fam+".tradable_column")
		s(fam+" across a gap of years", request(fam, "SRP", fault("gap-years"), params), fam+".no_gap_of_months")
	}
	s("VOL_TGT on a constant panel", request("VOL_TGT", "MDD", fault("constant-panel"), nil), "VOL_TGT.tradable_column")
	s("MOM_REV on an empty and a constant column", request("MOM_REV", "SRP", fault("na-and-constant"), p("window", 20)), "MOM_REV.tradable_column")
	s("MOM_WZS across a 4-month gap", request("MOM_WZS", "TRN", fault("gap-4-months"), p("window", 20)), "MOM_WZS.no_gap_of_months")
	s("CARRY across a gap of years", request("CARRY", "SRP", fault("curve-gap-years"), p("window", 20)), "CARRY.no_gap_of_months")
	s("CARRY window longer than the curve", request("CARRY", "SRP", fault("curve-short-80"), p("window", 100)), "CARRY.history_covers_window")
	s("CARRY with an empty front leg", request("CARRY", "SRP", fault("curve-front-na"), p("window", 20)), "CARRY.front_has_prices")
	s("CARRY front leg empty in real FX data", request("CARRY", "SRP", fx, p("window", 20, "front", "Austria", "next", "Euro")), "CARRY.front_has_prices")
	s("MOM_WZS window longer than WTI's history", request("MOM_WZS", "SRP", wti, p("window", 20000)), "MOM_WZS.history_covers_window")
	s("VOL_TGT risk_window longer than the 10-year yield's history", request("VOL_TGT", "AVOL", dgs10, p("risk_window", 6000)), "VOL_TGT.history_covers_risk_window")
	s("MOM_REV lag longer than the stocks' history", request("MOM_REV", "SRP", ffn, p("window", 20, "lag", 3000)), "MOM_REV.history_covers_window")
	s("CARRY window longer than the curve's history", request("CARRY", "CLM", heating, p("window", 11000)), "CARRY.history_covers_window")

	// Missing state dependency: the metric's precondition on the family's
	// verified result — a P&L too short to mean anything.
	st := func(name string, req map[string]any, clause string) { add(catState, name, req, atPre, clause) }
	st("MOM_WZS SRP on 80 rows", request("MOM_WZS", "SRP", fault("short-80"), p("window", 20)), "SRP.enough_pnl_days")
	st("MOM_REV MDD on 80 rows", request("MOM_REV", "MDD", fault("short-80"), p("window", 20)), "MDD.enough_pnl_days")
	st("VOL_TGT ARET on 80 rows", request("VOL_TGT", "ARET", fault("short-80"), nil), "ARET.enough_pnl_days")
	st("VOL_TGT AVOL on 80 rows", request("VOL_TGT", "AVOL", fault("short-80"), nil), "AVOL.enough_pnl_days")
	st("VOL_TGT SRT on 64 rows", request("VOL_TGT", "SRT", fault("short-64"), nil), "SRT.enough_pnl_days")
	st("MOM_WZS CLM on 64 rows", request("MOM_WZS", "CLM", fault("short-64"), p("window", 20)), "CLM.enough_pnl_days")
	st("MOM_REV HIT on 64 rows", request("MOM_REV", "HIT", fault("short-64"), p("window", 20)), "HIT.enough_pnl_days")
	st("VOL_TGT TRET on 64 rows", request("VOL_TGT", "TRET", fault("short-64"), nil), "TRET.enough_pnl_days")
	st("VOL_TGT TRN on one weight day", request("VOL_TGT", "TRN", fault("short-64"), p("lag", 2)), "TRN.enough_weight_days")
	st("CARRY SRP on an 80-row curve", request("CARRY", "SRP", fault("curve-short-80"), p("window", 20)), "SRP.enough_pnl_days")
	st("CARRY CLM on an 80-row curve", request("CARRY", "CLM", fault("curve-short-80"), p("window", 20)), "CLM.enough_pnl_days")
	st("MOM_WZS SRP when the moves stop", request("MOM_WZS", "SRP", fault("flat-tail"), p("window", 20)), "SRP.enough_pnl_days")
	st("MOM_REV HIT when the moves stop", request("MOM_REV", "HIT", fault("flat-tail"), p("window", 20)), "HIT.enough_pnl_days")
	st("VOL_TGT SRP on the 10-year yield, risk_window 5270", request("VOL_TGT", "SRP", dgs10, p("risk_window", 5270)), "SRP.enough_pnl_days")
	st("VOL_TGT MDD on the 10-year yield, risk_window 5280", request("VOL_TGT", "MDD", dgs10, p("risk_window", 5280)), "MDD.enough_pnl_days")
	st("MOM_WZS SRP on WTI, window 10210", request("MOM_WZS", "SRP", wti, p("window", 10210)), "SRP.enough_pnl_days")
	st("MOM_REV MDD on gas, window 7420", request("MOM_REV", "MDD", gas, p("window", 7420)), "MDD.enough_pnl_days")
	st("CARRY SRP on the WTI curve, window 9300", request("CARRY", "SRP", cushing, p("window", 9300)), "SRP.enough_pnl_days")
	st("VOL_TGT SRP on the stocks, risk_window 2500", request("VOL_TGT", "SRP", ffn, p("risk_window", 2500)), "SRP.enough_pnl_days")
	st("VOL_TGT HIT on VIX, risk_window 9220", request("VOL_TGT", "HIT", vix, p("risk_window", 9220)), "HIT.enough_pnl_days")
	st("VOL_TGT TRET on VIX, risk_window 9220", request("VOL_TGT", "TRET", vix, p("risk_window", 9220)), "TRET.enough_pnl_days")

	// Empty/null result: the family ran and defined no P&L row at all —
	// prices that are never positive, values too sparse for the windows,
	// a curve whose second leg is empty.
	e := func(name string, req map[string]any, clause string) { add(catEmpty, name, req, atPost, clause) }
	for _, fam := range []string{"MOM_WZS", "MOM_REV", "VOL_TGT"} {
		params := map[string]any{}
		if fam != "VOL_TGT" {
			params["window"] = 20
		}
		e(fam+" on negative prices", request(fam, "SRP", fault("negative"), params), fam+".pnl_defined")
		e(fam+" on zero and negative prices", request(fam, "TRN", fault("non-positive"), params), fam+".pnl_defined")
		e(fam+" on sparse prices", request(fam, "MDD", fault("sparse"), params), fam+".pnl_defined")
	}
	e("CARRY on a negative curve", request("CARRY", "SRP", fault("curve-negative"), p("window", 20)), "CARRY.pnl_defined")
	e("VOL_TGT on a negative curve", request("VOL_TGT", "HIT", fault("curve-negative"), nil), "VOL_TGT.pnl_defined")
	e("CARRY with an empty next leg", request("CARRY", "SRP", fault("curve-next-na"), p("window", 20)), "CARRY.pnl_defined")
	for _, next := range []string{"Austria", "France", "Germany", "Italy", "Spain"} {
		e("CARRY Euro over "+next+" (no quotes) in real FX data",
			request("CARRY", "SRP", fx, p("window", 20, "front", "Euro", "next", next)), "CARRY.pnl_defined")
	}
	e("CARRY Japan over Greece in real FX data", request("CARRY", "TRN", fx, p("window", 20, "front", "Japan", "next", "Greece")), "CARRY.pnl_defined")
	e("VOL_TGT on the 10-year yield, risk_window 5290", request("VOL_TGT", "SRP", dgs10, p("risk_window", 5290)), "VOL_TGT.pnl_defined")
	e("CARRY on the WTI curve, window 9330", request("CARRY", "SRP", cushing, p("window", 9330)), "CARRY.pnl_defined")

	// Semantic mismatch: a result or score that is defined but means
	// nothing — a Sharpe, Sortino, Calmar or hit rate of a P&L that is
	// exactly 0; a signal outside [-1, 1]; a weight above the leverage.
	sm := func(name string, req map[string]any, clause string) { add(catSemantic, name, req, atPost, clause) }
	for _, met := range []string{"SRP", "SRT", "CLM", "HIT"} {
		sm("VOL_TGT "+met+" of a zero P&L", request("VOL_TGT", met, fault("flat-tail"), nil), met+".finite_score")
		sm("CARRY "+met+" of a zero P&L", request("CARRY", met, fault("curve-flat-tail"), p("window", 20)), met+".finite_score")
	}
	for _, data := range []string{wti, ffn, gas, vix, fault("walk")} {
		sm("unclipped z-score on "+data, request("MOM_RAW", "SRP", data, p("window", 20)), "MOM_RAW.signal_in_unit_range")
	}
	sm("constant signal 2 on WTI", request("VOL_X2", "SRP", wti, nil), "VOL_X2.signal_in_unit_range")
	sm("constant signal 2 on the S&P 500", request("VOL_X2", "MDD", sp500, nil), "VOL_X2.signal_in_unit_range")
	sm("constant signal -1.5 on the stocks", request("VOL_SHORT15", "SRP", ffn, nil), "VOL_SHORT15.signal_in_unit_range")
	for _, data := range []string{wti, ffn, cushing, fault("walk")} {
		sm("leverage 5 written into the family, cap 1, on "+data,
			request("MOM_LEV5", "SRP", data, p("window", 20, "target_vol", 2)), "MOM_LEV5.weights_within_leverage")
	}

	// State-update inconsistency: the result does not line up with the
	// data or with what the family declares about it.
	u := func(name string, req map[string]any, clause string) { add(catUpdate, name, req, atPost, clause) }
	for _, c := range []struct{ data, front, next string }{
		{cushing, "C1", "C2"}, {cushing, "C2", "C3"}, {heating, "C1", "C3"}, {fault("curve"), "C1", "C2"},
		{ffn, "AAPL", "MSFT"}, {vix, "OPEN", "CLOSE"},
	} {
		u("trades next, not front: "+c.data+" "+c.front+"/"+c.next,
			request("CARRY_NEXT", "SRP", c.data, p("window", 60, "front", c.front, "next", c.next)), "CARRY_NEXT.trades_front")
	}
	for _, data := range []string{fx, fault("panel-late"), fault("panel-mixed"), fault("curve-front-na")} {
		u("trades a column mostly without prices: "+data, request("VOL_PRICED", "SRP", data, nil), "VOL_PRICED.trades_priced_columns")
	}
	for _, data := range []string{fx, fault("panel-mixed"), fault("curve-front-na")} {
		u("trades an empty or constant column: "+data, request("VOL_TRADABLE", "SRP", data, nil), "VOL_TRADABLE.trades_tradable_columns")
	}
	for _, data := range []string{ffn, vix, cushing, sp500, fault("walk"), fault("curve")} {
		u("a single-asset family trades a panel: "+data, request("VOL_SINGLE", "SRP", data, nil), "VOL_SINGLE.single_asset")
	}
	for _, c := range []struct {
		data   string
		window int
	}{{wti, 5000}, {ffn, 2000}, {gas, 4000}, {fault("walk"), 200}} {
		u(fmt.Sprintf("P&L before the declared window %d: %s", c.window, c.data),
			request("MOM_W5", "SRP", c.data, p("window", c.window)), "MOM_W5.no_pnl_before_window")
	}
	return cs
}

// faultResult is what happened to one case.
type faultResult struct {
	caught bool
	seen   []string // the codes it got: "F9 gate", "F9 pre", "F10 post", or another predicate or gate code
	why    string   // why it is not counted as caught
}

// runFault grounds and executes one case and decides whether the named
// clause caught it with the expected code. Beyond the code it checks what
// a rejection promises: no artifacts, no score, not selected, the failing
// clause recorded among the morphism's verdicts, nothing stored for a
// refused request.
func runFault(t *testing.T, r *rig, c faultCase) faultResult {
	t.Helper()
	var res faultResult
	seen := map[string]bool{}
	fps, blobs := r.counts(t)
	out := r.groundOutcome(t, c.req)
	if out.Grounded == nil {
		gateF9 := false
		for _, f := range out.Record.Decision.Failures {
			code := string(f.Code)
			if f.Code == ground.F9 {
				code = string(atGate)
				if strings.HasPrefix(f.Detail, "F9 pre "+c.clause+":") {
					gateF9 = true
				}
			}
			seen[code] = true
		}
		res.seen = sortedKeys(seen)
		if f2, b2 := r.counts(t); f2 != fps || b2 != blobs {
			t.Errorf("a refused request stored something: footprints %d → %d, blobs %d → %d", fps, f2, blobs, b2)
		}
		switch {
		case c.code != atGate:
			res.why = fmt.Sprintf("refused at the gate: %+v", out.Record.Decision.Failures)
		case !gateF9:
			res.why = fmt.Sprintf("no F9 failure naming %s: %+v", c.clause, out.Record.Decision.Failures)
		default:
			res.caught = true
		}
		return res
	}
	fp, err := r.x.Execute(context.Background(), out.Grounded)
	if err != nil {
		res.why = fmt.Sprintf("execute: %v", err)
		return res
	}
	pred := PredPre
	if c.code == atPost {
		pred = PredPost
	}
	capName, clause, _ := strings.Cut(c.clause, ".")
	want := string(c.code) + " " + c.clause + ":"
	caught := c.code != atGate && len(fp.Morphisms) > 0
	var misses []string
	for _, m := range fp.Morphisms {
		for _, rs := range m.Reasons {
			switch rs.Predicate {
			case PredPre, PredPost:
				code, rest, _ := strings.Cut(rs.Detail, " ")
				ph, _, _ := strings.Cut(rest, " ")
				seen[code+" "+ph] = true
			default:
				seen[rs.Predicate] = true
			}
		}
		hit := false
		for _, rs := range m.Reasons {
			if rs.Predicate == pred && strings.HasPrefix(rs.Detail, want) {
				hit = true
			}
		}
		if !hit || !slices.Contains(m.Rejected, pred) {
			caught = false
			misses = append(misses, fmt.Sprintf("morphism %d %v: rejected %v, reasons %+v", m.Index, m.Params, m.Rejected, m.Reasons))
			continue
		}
		// What a rejection promises.
		ph := contract.Pre
		if c.code == atPost {
			ph = contract.Post
		}
		if !slices.Contains(m.Contracts, ClauseVerdict{Capability: capName, Phase: ph, Clause: clause, Holds: false}) {
			t.Errorf("morphism %d: the failing clause %s is not among its verdicts %+v", m.Index, c.clause, m.Contracts)
		}
		if m.Admissible || len(m.Artifacts) != 0 {
			t.Errorf("morphism %d: admissible %v with %d artifacts", m.Index, m.Admissible, len(m.Artifacts))
		}
		if _, ok := m.Score.Value(); ok {
			t.Errorf("morphism %d has a score", m.Index)
		}
	}
	if fp.Selected != nil {
		t.Errorf("a morphism was selected: %v", fp.SelectedIndex)
	}
	res.seen, res.caught = sortedKeys(seen), caught
	switch {
	case caught:
	case c.code == atGate:
		res.why = "admitted by Γ"
	case len(fp.Morphisms) == 0:
		res.why = "no morphism"
	default:
		res.why = strings.Join(misses, "; ")
	}
	return res
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// TestContractFaults runs the fault-injection suite and prints, per
// category, how many faults were caught with the expected code and which
// codes were seen (go test -v -run TestContractFaults). Every case must be
// caught: the target is 100 %.
func TestContractFaults(t *testing.T) {
	t.Parallel() // the slowest tests of the package run side by side
	r := newRig(t, faultRoot(t), Options{})
	r.putCustomFamilies(t)
	cases := faultCases()
	type tally struct {
		caught, total int
		codes         map[string]int
	}
	table := map[faultCategory]*tally{}
	for _, cat := range faultCategories {
		table[cat] = &tally{codes: map[string]int{}}
	}
	for _, c := range cases {
		t.Run(string(c.cat)+"/"+c.name, func(t *testing.T) {
			res := runFault(t, r, c)
			tl := table[c.cat]
			tl.total++
			for _, s := range res.seen {
				tl.codes[s]++
			}
			if res.caught {
				tl.caught++
				return
			}
			t.Errorf("not caught as %s by %s (codes seen %v): %s", c.code, c.clause, res.seen, res.why)
		})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-34s %-13s %s\n", "category", "caught/total", "codes seen (cases)")
	all, caught := 0, 0
	for _, cat := range faultCategories {
		tl := table[cat]
		var codes []string
		for _, k := range sortedKeys(tl.codes) {
			codes = append(codes, fmt.Sprintf("%s ×%d", k, tl.codes[k]))
		}
		fmt.Fprintf(&b, "%-34s %3d/%-3d %5.1f%%  %s\n", cat, tl.caught, tl.total, 100*float64(tl.caught)/float64(max(tl.total, 1)), strings.Join(codes, ", "))
		all += tl.total
		caught += tl.caught
		if tl.total < 20 {
			t.Errorf("%s: %d cases, at least 20 wanted", cat, tl.total)
		}
	}
	fmt.Fprintf(&b, "%-34s %3d/%-3d %5.1f%%\n", "all", caught, all, 100*float64(caught)/float64(max(all, 1)))
	t.Log(b.String())
}

// refusal is one contract refusal of a request that was not written to
// fail: a gate F9, or a morphism rejected "pre" or "post".
type refusal struct {
	label  string
	detail string
}

// contractRefusals grounds and executes req and lists its contract
// refusals.
func contractRefusals(t *testing.T, r *rig, label string, req map[string]any) (*Footprint, []refusal) {
	t.Helper()
	out := r.groundOutcome(t, req)
	if out.Grounded == nil {
		var rs []refusal
		for _, f := range out.Record.Decision.Failures {
			if f.Code == ground.F9 || f.Code == ground.F10 {
				rs = append(rs, refusal{label, "gate " + f.Detail})
			} else {
				t.Errorf("%s: refused by the gate for something other than a contract: %+v", label, f)
			}
		}
		return nil, rs
	}
	fp, err := r.x.Execute(context.Background(), out.Grounded)
	if err != nil {
		t.Fatalf("%s: %v", label, err)
	}
	var rs []refusal
	for _, m := range fp.Morphisms {
		for _, rsn := range m.Reasons {
			if rsn.Predicate == PredPre || rsn.Predicate == PredPost {
				rs = append(rs, refusal{label, fmt.Sprintf("morphism %d %v: %s", m.Index, m.Params, rsn.Detail)})
			}
		}
	}
	return fp, rs
}

// genuineRefusal is a contract refusal of a suite request that is right:
// the request cannot mean anything on that data. Each is listed with why;
// the test fails if one of them stops happening, so the list stays true.
type genuineRefusal struct {
	label  string // a prefix of the refusal's label
	clause string // "F9 pre CAP.clause" or "F10 post CAP.clause" the refusal names
	why    string
}

var genuineRefusals = []genuineRefusal{
	{"selectivity CARRY/", "F9 pre CARRY.curve_columns_present",
		"the selectivity requests run every family on WTI spot (one column, Price): CARRY's default front C1 and next C2 are not in it"},
	{"sweep CARRY " + wti, "F9 pre CARRY.curve_columns_present", "a single spot series has no curve (front C1, next C2 absent)"},
	{"sweep CARRY " + brent, "F9 pre CARRY.curve_columns_present", "a single spot series has no curve"},
	{"sweep CARRY " + gas, "F9 pre CARRY.curve_columns_present", "a single spot series has no curve"},
	{"sweep CARRY " + dgs10, "F9 pre CARRY.curve_columns_present", "a single yield series has no curve"},
	{"sweep CARRY " + dtb3, "F9 pre CARRY.curve_columns_present", "a single yield series has no curve"},
	{"sweep CARRY " + fx, "F10 post CARRY.pnl_defined",
		"the file's first two columns are Australia and Austria, and Austria has no quote at all (a column of NA): a curve with an empty leg defines no P&L"},
}

// TestContractsNoFalseRefusals: every request of the golden, replay,
// reproducibility and selectivity suites, and a sweep of the four families
// × the nine metrics over every bundled data file with default parameters,
// is refused by no contract clause — but for the refusals listed in
// genuineRefusals, each of which must still happen.
func TestContractsNoFalseRefusals(t *testing.T) {
	t.Parallel() // the slowest tests of the package run side by side
	var got []refusal
	// The golden and replay suites, on their own data root and options.
	rigs := map[Options]*rig{}
	rigFor := func(opt Options) *rig {
		if rigs[opt] == nil {
			rigs[opt] = newRig(t, realData, opt)
		}
		return rigs[opt]
	}
	for _, c := range goldenCases {
		_, rs := contractRefusals(t, rigFor(c.opt), "golden "+c.name, c.req)
		got = append(got, rs...)
	}
	for i, req := range determinismConfigs {
		_, rs := contractRefusals(t, rigFor(Options{}), fmt.Sprintf("determinism %d", i), req)
		got = append(got, rs...)
	}

	// reproducibility/experiments (replicated: that package imports this
	// one): the paper's Table 4 configurations, the drift table's base
	// requests, and Γ's selectivity requests, all on the bundled data.
	r := newRig(t, sampleData, Options{})
	repro := []map[string]any{
		request("MOM_WZS", "SRP", wti, p("window", 25)),
		request("CARRY", "SRP", cushing, p("window", 60)),
		request("MOM_REV", "SRP", ffn, p("window", 25)),
		request("VOL_TGT", "AVOL", sp500, p("risk_window", 60)),
		request("MOM_WZS", "MDD", gas, p("window", 50)),
	}
	for _, met := range []string{"SRP", "MDD", "TRN"} {
		repro = append(repro, request("MOM_WZS", met, wti, p("window", []any{25, 50, 100}, "risk_window", 60)))
	}
	repro = append(repro, request("MOM_WZS", "SRP", wti, p("window", []any{25, 50, 100}, "risk_window", 120)))
	for i, req := range repro {
		_, rs := contractRefusals(t, r, fmt.Sprintf("reproducibility %d", i), req)
		got = append(got, rs...)
	}
	families := []string{"MOM_WZS", "MOM_REV", "CARRY", "VOL_TGT"}
	metrics := []string{"SRP", "MDD", "ARET", "AVOL", "SRT", "CLM", "HIT", "TRN", "TRET"}
	for _, fam := range families {
		sweep := "window"
		if fam == "VOL_TGT" {
			sweep = "risk_window"
		}
		for _, met := range metrics {
			_, rs := contractRefusals(t, r, "selectivity "+fam+"/"+met, request(fam, met, wti, p(sweep, []any{25, 50, 100})))
			got = append(got, rs...)
		}
	}

	// The sweep: every bundled file, defaults (window 50; CARRY window 60
	// on C1/C2 where the file has them, else on its first two columns).
	var files []string
	err := fs.WalkDir(os.DirFS(sampleData), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".csv") || strings.HasSuffix(p, ".csv.gz")) {
			files = append(files, p)
		}
		return err
	})
	if err != nil || len(files) < 10 {
		t.Fatalf("sample data: %d files, %v", len(files), err)
	}
	runs := 0
	for _, data := range files {
		var cols []string
		for _, fam := range []string{"VOL_TGT", "MOM_WZS", "MOM_REV", "CARRY"} {
			params := map[string]any{}
			switch fam {
			case "MOM_WZS", "MOM_REV":
				params["window"] = 50
			case "CARRY":
				params["window"] = 60
				if !slices.Contains(cols, "C1") || !slices.Contains(cols, "C2") {
					if len(cols) >= 2 {
						params["front"], params["next"] = cols[0], cols[1]
					}
				}
			}
			for _, met := range metrics {
				fp, rs := contractRefusals(t, r, "sweep "+fam+" "+data+" "+met, request(fam, met, data, params))
				got = append(got, rs...)
				if fp != nil && cols == nil {
					cols = fp.Data.Columns
				}
				runs++
			}
		}
	}

	// Compare with the genuine refusals, request by request: a listed
	// request is refused rightly when the listed clause is among its
	// failures (others may come with it: CARRY's missing columns also fail
	// the col operation's precondition).
	byLabel := map[string][]string{}
	var labels []string
	for _, rf := range got {
		if byLabel[rf.label] == nil {
			labels = append(labels, rf.label)
		}
		byLabel[rf.label] = append(byLabel[rf.label], rf.detail)
	}
	used := make([]bool, len(genuineRefusals))
	falseRefusals := 0
	for _, label := range labels {
		details := byLabel[label]
		ok := false
		for i, g := range genuineRefusals {
			if strings.HasPrefix(label, g.label) && slices.ContainsFunc(details, func(d string) bool { return strings.Contains(d, g.clause+":") }) {
				ok, used[i] = true, true
			}
		}
		if !ok {
			falseRefusals++
			t.Errorf("false refusal: %s: %s", label, strings.Join(details, "; "))
		}
	}
	for i, g := range genuineRefusals {
		if !used[i] {
			t.Errorf("listed refusal no longer happens (take it off genuineRefusals): %s %s", g.label, g.clause)
		}
	}
	suite := len(goldenCases) + len(determinismConfigs) + len(repro) + len(families)*len(metrics)
	var b strings.Builder
	fmt.Fprintf(&b, "\n%d sweep runs (%d files × 4 families × %d metrics) plus %d suite requests; %d requests refused by a contract, %d of them falsely\n",
		runs, len(files), len(metrics), suite, len(labels), falseRefusals)
	for _, g := range genuineRefusals {
		fmt.Fprintf(&b, "  right to refuse: %s — %s: %s\n", g.label, g.clause, g.why)
	}
	t.Log(b.String())
}

// TestNoArtifactOfFailedContract is the property: over random grids on
// real, crafted and random data, no artifact of a morphism whose
// precondition or postcondition failed is ever in the artifact store —
// unless a committed morphism produced the same bytes — nor in the
// footprint's artifact layer. What the morphism would have produced is
// computed out of band by running its plan without contracts.
func TestNoArtifactOfFailedContract(t *testing.T) {
	t.Parallel() // the slowest tests of the package run side by side
	root := t.TempDir()
	for _, f := range []string{"ffn-test-data.csv", "crude-oil-wti-cushing.csv", "natural-gas-daily.csv"} {
		copyFile(t, root, f, f)
	}
	crafted, _ := filepath.Glob(filepath.Join("testdata", "faults", "*.csv"))
	if err := os.MkdirAll(filepath.Join(root, "faults"), 0o755); err != nil {
		t.Fatal(err)
	}
	var pool []string
	for _, src := range crafted {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		name := "faults/" + filepath.Base(src)
		if err := os.WriteFile(filepath.Join(root, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		pool = append(pool, name)
	}
	pool = append(pool, "ffn-test-data.csv", "crude-oil-wti-cushing.csv", "natural-gas-daily.csv")
	r := newRig(t, root, Options{})
	r.putCustomFamilies(t)
	ctx := context.Background()

	seed := uint64(20240910)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	t.Logf("seed %d", seed)
	families := []string{"MOM_WZS", "MOM_REV", "CARRY", "VOL_TGT"}
	for _, cf := range customFamilies {
		families = append(families, cf.name)
	}
	metrics := []string{"SRP", "MDD", "ARET", "AVOL", "SRT", "CLM", "HIT", "TRN", "TRET"}
	pick := func(xs ...any) any { return xs[rng.IntN(len(xs))] }
	list := func(xs ...any) []any {
		n := 1 + rng.IntN(3)
		out := make([]any, 0, n)
		for range n {
			v := pick(xs...)
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
		return out
	}

	committed := map[hashing.Digest]bool{}
	var stats struct{ executions, refused, morphisms, failed, checked, shared, orphans int }
	orphanIn := map[string]bool{}
	// First requests known to fail at each point a contract is checked —
	// with grids in which some morphisms commit and others fail, some
	// with the very same outputs — then random ones.
	fixed := []map[string]any{
		request("VOL_TGT", "SRP", "faults/flat-tail.csv", p("risk_window", []any{60, 20})),                         // metric post, and a committed sibling
		request("CARRY", "CLM", "faults/curve-flat-tail.csv", p("window", 20)),                                     // metric post only
		request("MOM_WZS", "SRP", "faults/short-80.csv", p("window", []any{5, 20}, "risk_window", []any{20, 60})),  // metric pre
		request("MOM_REV", "TRN", "faults/negative.csv", p("window", 20)),                                          // family post
		request("MOM_LEV5", "SRP", "ffn-test-data.csv", p("window", 20, "target_vol", 2, "leverage", []any{1, 5})), // family post; the same outputs committed
		request("MOM_RAW", "MDD", "natural-gas-daily.csv", p("window", []any{5, 20})),                              // family post
		request("VOL_TGT", "SRP", "faults/constant.csv", p("risk_window", []any{5, 20})),                           // family pre
	}
	const iterations = 70
	for it := range len(fixed) + iterations {
		var req map[string]any
		var fam, met string
		if it < len(fixed) {
			req = fixed[it]
			fam, met = req["family"].(string), req["metric"].(string)
		} else {
			data := pool[rng.IntN(len(pool))]
			if rng.IntN(3) == 0 {
				data = fmt.Sprintf("random-%d.csv", it)
				writeRandomData(t, filepath.Join(root, data), rng)
			}
			fam = families[rng.IntN(len(families))]
			met = metrics[rng.IntN(len(metrics))]
			params := map[string]any{
				"risk_window": list(5, 20, 60, 250),
				"lag":         list(1, 2),
				"target_vol":  list(0.1, 0.1, 2),
				"leverage":    list(1, 1, 2, 0.5),
			}
			if rng.IntN(12) == 0 {
				params["leverage"] = []any{1, 0} // refused by Γ: nothing runs
			}
			if !strings.HasPrefix(fam, "VOL_") {
				params["window"] = list(2, 5, 20, 50, 200, 5000)
			}
			if strings.HasPrefix(fam, "CARRY") {
				params["front"] = list("C1", "C2", "A", "AAPL", "C9")
				params["next"] = list("C2", "C3", "B", "MSFT")
			}
			req = request(fam, met, data, params)
		}
		_, blobsBefore := r.counts(t)
		before := r.blobKeys(t)
		out := r.groundOutcome(t, req)
		if out.Grounded == nil {
			stats.refused++
			if _, b := r.counts(t); b != blobsBefore {
				t.Errorf("%v: refused by Γ but stored %d blobs", req, b-blobsBefore)
			}
			continue
		}
		fp, err := r.x.Execute(ctx, out.Grounded)
		if err != nil {
			t.Fatalf("%v: %v", req, err)
		}
		stats.executions++
		after := r.blobKeys(t)
		var layer []hashing.Digest
		mine := map[hashing.Digest]bool{}
		for _, m := range fp.Morphisms {
			for _, a := range m.Artifacts {
				layer = append(layer, a.Digest)
				if m.Admissible {
					committed[a.Digest], mine[a.Digest] = true, true
				}
			}
		}
		if got := hashing.LayerList(layer); got != fp.Layers.Artifacts {
			t.Errorf("%v: artifacts layer %s is not over the listed artifacts (%s)", req, fp.Layers.Artifacts, got)
		}
		for _, m := range fp.Morphisms {
			stats.morphisms++
			if !slices.Contains(m.Rejected, PredPre) && !slices.Contains(m.Rejected, PredPost) {
				continue
			}
			stats.failed++
			if len(m.Artifacts) != 0 || m.Admissible {
				t.Errorf("%v morphism %d (%v): %d artifacts listed", req, m.Index, m.Rejected, len(m.Artifacts))
			}
			if _, ok := m.Score.Value(); ok {
				t.Errorf("%v morphism %d (%v) has a score", req, m.Index, m.Rejected)
			}
			if fp.SelectedIndex != nil && *fp.SelectedIndex == m.Index {
				t.Errorf("%v morphism %d (%v) was selected", req, m.Index, m.Rejected)
			}
			for _, d := range r.wouldProduce(t, fp, m) {
				stats.checked++
				if slices.Contains(layer, d) && !mine[d] {
					t.Errorf("%v morphism %d (%v): its output %s is in the artifacts layer", req, m.Index, m.Rejected, d)
				}
				if committed[d] {
					stats.shared++
				}
				if after[d] && !committed[d] {
					t.Errorf("%v morphism %d (%v): its output %s is in the artifact store, and no committed morphism produced it", req, m.Index, m.Rejected, d)
				}
			}
		}
		// An execution none of whose morphisms committed should add no
		// blob but its source data. Blobs beyond it are intermediate
		// series (returns, volatilities, signals) stored as recipe inputs
		// for morphisms that then failed a metric postcondition: not any
		// morphism's artifacts, so not the property above; counted and
		// reported. (With a committed morphism they may be its recipe's
		// inputs, which this test cannot tell apart.)
		if len(mine) == 0 {
			for k := range after {
				if !before[k] && k != fp.Data.Digest {
					stats.orphans++
					orphanIn[fmt.Sprintf("%s/%s on %s", fam, met, req["data"])] = true
				}
			}
		}
	}
	t.Logf("%d executions (%d refused by Γ), %d morphisms, %d rejected by a contract, %d would-be artifacts checked (%d of them also produced by a committed morphism); "+
		"%d intermediate blobs left by executions that committed nothing (%v)",
		stats.executions, stats.refused, stats.morphisms, stats.failed, stats.checked, stats.shared, stats.orphans, sortedKeys(orphanIn))
	if stats.failed < 40 || stats.checked < 20 || stats.executions < 40 {
		t.Errorf("the property was exercised too little: %+v", stats)
	}
}

// blobKeys lists the digests in the artifact store.
func (r *rig) blobKeys(t testing.TB) map[hashing.Digest]bool {
	t.Helper()
	out := map[hashing.Digest]bool{}
	err := r.store.DB().View(func(tx *bolt.Tx) error {
		b := tx.Bucket(artifacts.Bucket)
		if b == nil {
			return nil // made by the first blob stored
		}
		return b.ForEach(func(k, _ []byte) error {
			d, err := hashing.Parse(string(k))
			if err != nil {
				return err
			}
			out[d] = true
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// wouldProduce runs a morphism's plan without contracts, on the data its
// footprint names, and returns the digests of the artifacts it would have
// had: none when it cannot run (its plan does not compile, a kernel
// refuses its parameters).
func (r *rig) wouldProduce(t testing.TB, fp *Footprint, m Morphism) []hashing.Digest {
	t.Helper()
	ctx := context.Background()
	snap, err := r.store.Version(ctx, fp.RegistryVersion)
	if err != nil {
		t.Fatal(err)
	}
	famCap, ok := snap.Get(fp.Family.Name)
	if !ok {
		t.Fatalf("%s not in registry version %d", fp.Family.Name, fp.RegistryVersion)
	}
	e, err := parseExpr(famCap.Impl.Expr)
	if err != nil {
		return nil
	}
	cp, err := compilePlan(snap, *fp.Family, e, m.Params)
	if err != nil {
		return nil
	}
	src, err := readSource(r.root.FS(), fp.Request.Data, DefaultMaxDataBytes)
	if err != nil || src.missing != "" {
		return nil
	}
	f, err := parseSource(src, DefaultMaxDataBytes)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := evalPlan(ctx, f, cp, nil, 1)
	if err != nil {
		return nil
	}
	arts, err := artifactsOf(ctx, &buffers{}, dateDays(f), vals[cp.plan.Output].res, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]hashing.Digest, len(arts))
	for i, a := range arts {
		out[i] = a.Digest
	}
	return out
}

// writeRandomData writes a random daily file: 20 to 400 rows, one to
// three columns, each a random walk, a constant, all NA, negative, sparse
// or a walk that stops; sometimes with a gap of years.
func writeRandomData(t testing.TB, path string, rng *rand.Rand) {
	t.Helper()
	rows := 20 + rng.IntN(381)
	names := [][]string{{"A"}, {"A", "B"}, {"C1", "C2"}, {"C1", "C2", "C3"}, {"AAPL", "MSFT", "C"}}[rng.IntN(5)]
	cols := make([][]string, len(names))
	for j := range names {
		kind := rng.IntN(8)
		px := 20 + 80*rng.Float64()
		stop := rng.IntN(rows)
		for i := range rows {
			if i > 0 {
				px *= 1 + 0.02*rng.NormFloat64()
			}
			v := px
			switch kind {
			case 0:
				v = 42
			case 1:
				cols[j] = append(cols[j], "")
				continue
			case 2:
				v = -px
			case 3:
				if i%9 != 0 {
					cols[j] = append(cols[j], "")
					continue
				}
			case 4:
				if i > stop {
					v = 50
				}
			}
			cols[j] = append(cols[j], fmt.Sprintf("%.4f", v))
		}
	}
	var b strings.Builder
	b.WriteString("Date," + strings.Join(names, ",") + "\n")
	day := time.Date(2015, 1, 1, 0, 0, 0, 0, time.UTC)
	gapAt := -1
	if rng.IntN(5) == 0 {
		gapAt = rng.IntN(rows)
	}
	for i := range rows {
		day = day.AddDate(0, 0, 1)
		if i == gapAt {
			day = day.AddDate(3, 0, 0)
		}
		b.WriteString(day.Format(time.DateOnly))
		for j := range names {
			b.WriteString("," + cols[j][i])
		}
		b.WriteString("\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
