package ground

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
)

// Preconditions over the request alone are decided by Γ: F9 for the first
// grid point that breaks a clause, beside the request's other failures;
// clauses that read data are left to the executor.
func TestContractCheckF9(t *testing.T) {
	r := newRig(t)
	mom := r.discover(t, "momentum", "sharpe")
	carry := r.discover(t, "carry", "sharpe")
	cases := []struct {
		name  string
		id    func() hashing.Digest
		req   string
		codes []string // "field code" of each failure, in order
		value string   // the first F9 failure's reported grid point
	}{
		{"admitted: every clause holds", func() hashing.Digest { return mom.ID },
			`{"family":"MOM_WZS","metric":"SRP","params":{"window":[25,50],"leverage":[1,2]},"data":"oil/wti.csv"}`, nil, ""},
		{"leverage 0 somewhere in the grid", func() hashing.Digest { return mom.ID },
			`{"family":"MOM_WZS","metric":"SRP","params":{"window":[25,50],"leverage":[1,0]},"data":"oil/wti.csv"}`,
			[]string{"params.leverage F9"}, "params.leverage=0"},
		{"two clauses fail", func() hashing.Digest { return mom.ID },
			`{"family":"MOM_WZS","metric":"SRP","params":{"window":25,"leverage":0,"target_vol":0},"data":"oil/wti.csv"}`,
			[]string{"params.leverage F9", "params.target_vol F9"}, "params.leverage=0"},
		{"a default is a request fact too", func() hashing.Digest { return carry.ID },
			`{"family":"CARRY","metric":"SRP","params":{"window":60,"front":["C1","C2"]},"data":"cl.csv"}`,
			[]string{"params.front F9"}, `params.front="C2" params.next="C2"`},
		{"data clauses are the executor's: a window longer than any file passes", func() hashing.Digest { return mom.ID },
			`{"family":"MOM_WZS","metric":"SRP","params":{"window":100000},"data":"oil/wti.csv"}`, nil, ""},
		{"beside a metric swap", func() hashing.Digest { return mom.ID },
			`{"family":"MOM_WZS","metric":"MDD","params":{"window":25,"leverage":0},"data":"oil/wti.csv"}`,
			[]string{"metric F4", "params.leverage F9"}, "params.leverage=0"},
		{"a malformed request is not judged", func() hashing.Digest { return mom.ID },
			`{"family":"MOM_WZS","metric":"SRP","params":{"window":25,"leverage":0},"data":""}`,
			[]string{"data F1"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := r.ground(t, []byte(c.req), c.id())
			var got []string
			var first *Failure
			for i, f := range out.Record.Decision.Failures {
				got = append(got, f.Field+" "+string(f.Code))
				if f.Code == F9 && first == nil {
					first = &out.Record.Decision.Failures[i]
				}
			}
			if strings.Join(got, ", ") != strings.Join(c.codes, ", ") {
				t.Fatalf("failures %v, want %v: %+v", got, c.codes, out.Record.Decision.Failures)
			}
			if out.Record.Decision.Admitted != (len(c.codes) == 0) {
				t.Fatalf("admitted %v", out.Record.Decision.Admitted)
			}
			if first == nil {
				return
			}
			if first.Value != c.value {
				t.Errorf("value %q, want %q", first.Value, c.value)
			}
			if !strings.HasPrefix(first.Detail, "F9 pre ") || !strings.Contains(first.Detail, ": ") {
				t.Errorf("detail %q does not name the code, capability and clause", first.Detail)
			}
		})
	}
}

// The check is in the decision record, and a family written without a
// contract is judged by the other checks alone.
func TestContractCheckRecordedAndOptional(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	base, _ := r.store.Current().Get("MOM_WZS")
	e := base.Entry.Clone()
	e.Name, e.Sem.Contract = "MOM_PLAIN", nil
	e.Sem.Idempotent = true // another identity than MOM_WZS's
	e.Disc = registry.Discovery{Description: "Momentum without a contract, for a test."}
	if _, err := r.store.Put(ctx, e); err != nil {
		t.Fatal(err)
	}
	res := r.discover(t, "MOM_PLAIN", "sharpe")
	out := r.ground(t, []byte(`{"family":"MOM_PLAIN","metric":"SRP","params":{"window":25,"leverage":0},"data":"oil/wti.csv"}`), res.ID)
	if !out.Record.Decision.Admitted {
		t.Fatalf("refused: %+v", out.Record.Decision.Failures)
	}
	var names []string
	for _, c := range out.Record.Decision.Checks {
		names = append(names, c.Name)
	}
	if names[len(names)-1] != "contracts" {
		t.Fatalf("checks %v", names)
	}
	// The same clause written into the contract refuses it.
	e.Sem.Contract = &contract.Contract{Pre: []contract.Clause{{Name: "positive_leverage", Expr: "params.leverage > 0.0", Message: "m"}}}
	if _, err := r.store.Put(ctx, e); err != nil {
		t.Fatal(err)
	}
	res = r.discover(t, "MOM_PLAIN", "sharpe")
	out = r.ground(t, []byte(`{"family":"MOM_PLAIN","metric":"SRP","params":{"window":25,"leverage":0},"data":"oil/wti.csv"}`), res.ID)
	if out.Record.Decision.Admitted || out.Record.Decision.Failures[0].Code != F9 {
		t.Fatalf("admitted: %+v", out.Record.Decision)
	}
}

// A request whose contracts would cost more than MaxContractCost to decide
// over its grid is refused F9 for that reason, in bounded time.
func TestContractCheckBudget(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	base, _ := r.store.Current().Get("MOM_WZS")
	e := base.Entry.Clone()
	e.Name, e.Sem.Idempotent = "MOM_COSTLY", true
	e.Disc = registry.Discovery{Description: "Momentum with a costly request-only clause, for a test."}
	var lits []string
	for i := range 300 {
		lits = append(lits, strconv.Itoa(i))
	}
	e.Sem.Contract = &contract.Contract{Pre: []contract.Clause{{Name: "costly",
		Expr: "[" + strings.Join(lits, ",") + "].all(x, x < params.window + 1000 && params.leverage >= 0.0)", Message: "m"}}}
	if _, err := r.store.Put(ctx, e); err != nil {
		t.Fatal(err)
	}
	res := r.discover(t, "MOM_COSTLY", "sharpe")
	grid := func(n int, from float64) string {
		var vs []string
		for i := range n {
			vs = append(vs, strconv.FormatFloat(from+float64(i), 'g', -1, 64))
		}
		return "[" + strings.Join(vs, ",") + "]"
	}
	small := r.ground(t, []byte(`{"family":"MOM_COSTLY","metric":"SRP","params":{"window":`+grid(4, 2)+`,"leverage":`+grid(4, 1)+`},"data":"oil/wti.csv"}`), res.ID)
	if !small.Record.Decision.Admitted {
		t.Fatalf("a small grid: %+v", small.Record.Decision.Failures)
	}
	start := time.Now()
	big := r.ground(t, []byte(`{"family":"MOM_COSTLY","metric":"SRP","params":{"window":`+grid(64, 2)+`,"leverage":`+grid(64, 1)+`},"data":"oil/wti.csv"}`), res.ID)
	fs := big.Record.Decision.Failures
	if big.Record.Decision.Admitted || len(fs) != 1 || fs[0].Code != F9 || !strings.Contains(fs[0].Detail, "exceeds the gate's budget") {
		t.Fatalf("a 4096-point grid: %+v", fs)
	}
	t.Logf("refused in %v", time.Since(start))
}
