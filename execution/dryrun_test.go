package execution

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/registry"
)

// dryRequest decodes a request the way the gate does.
func dryRequest(t *testing.T, req map[string]any) ground.Request {
	t.Helper()
	r, fails := ground.DecodeRequest([]byte(mustJSON(t, req)))
	if len(fails) > 0 {
		t.Fatalf("request: %+v", fails)
	}
	return r
}

// firstRows writes the header and the first n rows of a real file.
func firstRows(t *testing.T, dir, name, src string, n int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(realData, src))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(lines[:n+1], "")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// verdictOf finds one clause's verdict in a morphism's.
func verdictOf(t *testing.T, m MorphismCheck, capability string, ph contract.Phase, clause string) ClauseCheck {
	t.Helper()
	for _, v := range m.Verdicts {
		if v.Capability == capability && v.Phase == ph && v.Clause == clause {
			return v
		}
	}
	t.Fatalf("morphism %d has no verdict for %s %s.%s", m.Index, ph, capability, clause)
	return ClauseCheck{}
}

func TestCheckContracts(t *testing.T) {
	dir := t.TempDir()
	firstRows(t, dir, "wti-300.csv", "wti-daily.csv", 300)
	copyFile(t, dir, "cushing.csv", "crude-oil-wti-cushing.csv")
	if err := os.WriteFile(filepath.Join(dir, "broken.csv"), []byte("Date,A\n2020-01-02,1\n2020-01-01,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := newRig(t, dir, Options{})
	ctx := context.Background()

	type want struct {
		capability string
		phase      contract.Phase
		clause     string
		status     string
	}
	for _, tc := range []struct {
		name      string
		req       map[string]any
		data      bool
		morphisms int
		holds     bool
		// every morphism's verdicts include these
		want []want
		// the verdicts of this morphism include these
		at     int
		wantAt []want
	}{
		{
			name: "request only", req: request("MOM_WZS", "SRP", "wti-300.csv", map[string]any{"window": []any{25, 50}}),
			morphisms: 2, holds: true,
			want: []want{
				{"MOM_WZS", contract.Pre, "positive_leverage", StatusHolds},
				{"MOM_WZS", contract.Pre, "history_covers_window", StatusNeedsData},
				{"wzs", contract.Pre, "window_within_data", StatusNeedsData},
				{"MOM_WZS", contract.Post, "finite_outputs", StatusNeedsRun},
				{"SRP", contract.Pre, "enough_pnl_days", StatusNeedsRun},
				{"SRP", contract.Post, "finite_score", StatusNeedsRun},
			},
		},
		{
			name: "with data, the window fits", req: request("MOM_WZS", "SRP", "wti-300.csv", map[string]any{"window": 50}),
			data: true, morphisms: 1, holds: true,
			want: []want{
				{"MOM_WZS", contract.Pre, "history_covers_window", StatusHolds},
				{"MOM_WZS", contract.Pre, "tradable_column", StatusHolds},
				{"wzs", contract.Pre, "window_within_data", StatusHolds},
				{"MOM_WZS", contract.Post, "pnl_defined", StatusNeedsRun},
			},
		},
		{
			name: "with data, a window too long for it", req: request("MOM_WZS", "SRP", "wti-300.csv", map[string]any{"window": []any{50, 400}}),
			data: true, morphisms: 2, holds: false,
			at: 1, wantAt: []want{
				{"MOM_WZS", contract.Pre, "history_covers_window", StatusFails},
				{"wzs", contract.Pre, "window_within_data", StatusFails},
				{"MOM_WZS", contract.Pre, "positive_leverage", StatusHolds},
			},
		},
		{
			name: "CARRY with front == next", req: request("CARRY", "CLM", "cushing.csv", map[string]any{"window": 20, "front": "C1", "next": "C1"}),
			morphisms: 1, holds: false,
			want: []want{
				{"CARRY", contract.Pre, "distinct_curve_points", StatusFails},
				{"CARRY", contract.Pre, "curve_columns_present", StatusNeedsData},
			},
		},
		{
			name: "CARRY with a column the data lacks", req: request("CARRY", "CLM", "cushing.csv", map[string]any{"window": 20, "next": "C9"}),
			data: true, morphisms: 1, holds: false,
			want: []want{
				{"CARRY", contract.Pre, "distinct_curve_points", StatusHolds},
				{"CARRY", contract.Pre, "curve_columns_present", StatusFails},
				{"CARRY", contract.Pre, "front_has_prices", StatusHolds},
			},
		},
		{
			name: "a data file that is not there", req: request("MOM_WZS", "SRP", "nope.csv", map[string]any{"window": 50}),
			data: true, morphisms: 1, holds: true,
			want: []want{
				{"MOM_WZS", contract.Pre, "positive_leverage", StatusHolds},
				{"MOM_WZS", contract.Pre, "history_covers_window", StatusNeedsData},
			},
		},
		{
			// Ill-typed, the parameter is not bound (the gate refuses it F1,
			// the executor's schema predicate too): its clauses are not
			// checked, as an execution skips them.
			name: "a parameter of the wrong type", req: request("MOM_WZS", "SRP", "wti-300.csv", map[string]any{"window": 50, "leverage": "high"}),
			morphisms: 1, holds: true,
			want: []want{{"MOM_WZS", contract.Pre, "positive_leverage", StatusNotChecked}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := r.x.CheckContracts(ctx, dryRequest(t, tc.req), tc.data)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Morphisms) != tc.morphisms || rep.Holds != tc.holds {
				t.Fatalf("%d morphisms, holds %v; want %d, %v\n%s", len(rep.Morphisms), rep.Holds, tc.morphisms, tc.holds, mustJSON(t, rep))
			}
			if rep.Schema != contract.SchemaVersion || rep.RegistryVersion != r.store.Current().Version() || rep.Registry != r.store.Current().Registry() {
				t.Errorf("schema %q, registry %d %s", rep.Schema, rep.RegistryVersion, rep.Registry)
			}
			if (rep.Data != nil) != tc.data {
				t.Errorf("data %+v, asked for data: %v", rep.Data, tc.data)
			}
			total := 0
			for _, m := range rep.Morphisms {
				total += len(m.Verdicts)
				for _, w := range tc.want {
					if v := verdictOf(t, m, w.capability, w.phase, w.clause); v.Status != w.status {
						t.Errorf("morphism %d: %s.%s is %q, want %q: %+v", m.Index, w.capability, w.clause, v.Status, w.status, v)
					}
				}
			}
			for _, w := range tc.wantAt {
				if v := verdictOf(t, rep.Morphisms[tc.at], w.capability, w.phase, w.clause); v.Status != w.status {
					t.Errorf("morphism %d: %s.%s is %q, want %q: %+v", tc.at, w.capability, w.clause, v.Status, w.status, v)
				}
			}
			n := 0
			for _, c := range rep.Counts {
				n += c
			}
			if n != total {
				t.Errorf("counts add up to %d, %d verdicts", n, total)
			}
		})
	}

	t.Run("a failing verdict says why", func(t *testing.T) {
		rep, err := r.x.CheckContracts(ctx, dryRequest(t, request("MOM_WZS", "SRP", "wti-300.csv", map[string]any{"window": 400})), true)
		if err != nil {
			t.Fatal(err)
		}
		v := verdictOf(t, rep.Morphisms[0], "MOM_WZS", contract.Pre, "history_covers_window")
		if v.Message == "" || v.Expr == "" || v.Kind != registry.KindFamily {
			t.Errorf("%+v", v)
		}
		got := map[string]string{}
		for _, rd := range v.Values {
			got[rd.Key] = rd.Value
		}
		if got["data.rows"] != "300" || got["params.window"] != "400" || got["params.lag"] != "1" {
			t.Errorf("values %+v", v.Values)
		}
		op := verdictOf(t, rep.Morphisms[0], "wzs", contract.Pre, "window_within_data")
		if w, ok := op.Params["window"]; !ok || w.Float() != 400 {
			t.Errorf("the operation's bound params: %+v", op.Params)
		}
		if rep.Data == nil || rep.Data.Rows != 300 || rep.Data.Digest == nil || len(rep.Data.Columns) != 1 {
			t.Errorf("data %+v", rep.Data)
		}
	})

	t.Run("errors", func(t *testing.T) {
		big := ground.Request{Family: "MOM_WZS", Metric: "SRP", Data: "wti-300.csv", Params: map[string]ground.Param{}}
		for _, name := range []string{"window", "lag"} {
			p := ground.Param{List: true}
			for i := range 65 {
				p.Values = append(p.Values, ground.Number(float64(i+1)))
			}
			big.Params[name] = p
		}
		for _, tc := range []struct {
			name string
			req  ground.Request
			data bool
			want error
		}{
			{"unknown family", dryRequest(t, request("NOPE", "SRP", "wti-300.csv", nil)), false, registry.ErrNotFound},
			{"a metric as the family", dryRequest(t, request("SRP", "SRP", "wti-300.csv", nil)), false, registry.ErrNotFound},
			{"unknown metric", dryRequest(t, request("MOM_WZS", "NOPE", "wti-300.csv", nil)), false, registry.ErrNotFound},
			{"a family as the metric", dryRequest(t, request("MOM_WZS", "CARRY", "wti-300.csv", nil)), false, registry.ErrNotFound},
			{"a grid over the bound", big, false, ErrOverBudget},
			{"data that does not parse", dryRequest(t, request("MOM_WZS", "SRP", "broken.csv", map[string]any{"window": 5})), true, ErrBadData},
		} {
			t.Run(tc.name, func(t *testing.T) {
				rep, err := r.x.CheckContracts(ctx, tc.req, tc.data)
				if !errors.Is(err, tc.want) {
					t.Fatalf("err %v (report %v), want %v", err, rep != nil, tc.want)
				}
			})
		}
	})
}

// What the dry run decides, an execution decides the same way: every
// clause the footprint records as checked has the verdict the dry run
// gave it, whenever the dry run could evaluate it.
func TestCheckContractsAgreesWithExecution(t *testing.T) {
	dir := t.TempDir()
	firstRows(t, dir, "wti-300.csv", "wti-daily.csv", 300)
	r := newRig(t, dir, Options{})
	ctx := context.Background()
	req := request("MOM_WZS", "SRP", "wti-300.csv", map[string]any{"window": []any{20, 100, 280, 400}})
	fp := r.execute(t, req)
	rep, err := r.x.CheckContracts(ctx, dryRequest(t, req), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Morphisms) != len(fp.Morphisms) {
		t.Fatalf("%d morphisms, the execution has %d", len(rep.Morphisms), len(fp.Morphisms))
	}
	compared, failed := 0, 0
	for i, m := range rep.Morphisms {
		ran := map[string]bool{}
		for _, cv := range fp.Morphisms[i].Contracts {
			ran[cv.Capability+" "+string(cv.Phase)+" "+cv.Clause] = cv.Holds
		}
		for _, v := range m.Verdicts {
			holds, ok := ran[v.Capability+" "+string(v.Phase)+" "+v.Clause]
			if !ok || (v.Status != StatusHolds && v.Status != StatusFails) {
				continue
			}
			compared++
			if holds != (v.Status == StatusHolds) {
				t.Errorf("morphism %d: %s %s.%s: the dry run says %s, the execution held=%v", i, v.Phase, v.Capability, v.Clause, v.Status, holds)
			}
			if !holds {
				failed++
			}
		}
		if !m.Holds && !strings.Contains(strings.Join(fp.Morphisms[i].Rejected, ","), PredPre) {
			t.Errorf("morphism %d fails the dry run and the execution did not reject it with pre: %v", i, fp.Morphisms[i].Rejected)
		}
	}
	if compared == 0 || failed == 0 {
		t.Fatalf("compared %d verdicts, %d failing: the test checks nothing", compared, failed)
	}
}
