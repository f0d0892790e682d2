package policy

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/policy/smt"
)

// benchRecorder passes queries to a solver and keeps them, so the
// benchmark can count the queries of a check and replay their exact text
// in a fresh solver process.
type benchRecorder struct {
	s  Solver
	mu sync.Mutex
	qs []smt.Query
}

func (r *benchRecorder) Check(ctx context.Context, q smt.Query) (smt.Result, error) {
	r.mu.Lock()
	r.qs = append(r.qs, q)
	r.mu.Unlock()
	return r.s.Check(ctx, q)
}

// benchShippedRequests: a MOM_WZS request every shipped policy governs and
// admits, at one grid point and over an 8 × 8 grid.
func benchShippedRequests() map[string]Request {
	base := func(p map[string][]Value) Request {
		return Request{Family: "MOM_WZS", Metric: "SRP", Data: "eia-nymex-futures/crude-oil-wti-cushing.csv", Params: p,
			Defaults: map[string]Value{"risk_window": Num(60), "leverage": Num(1), "target_vol": Num(0.1), "lag": Num(1)},
			Facts:    facts("last_date", 20220215, "rows", 9766)}
	}
	return map[string]Request{
		"1-point":  base(params("window", 40, "risk_window", 20, "leverage", 1.5)),
		"64-point": base(params("window", []float64{10, 20, 30, 40, 50, 60, 70, 80}, "risk_window", []float64{20, 25, 30, 35, 40, 45, 50, 55}, "leverage", 1.5)),
	}
}

// benchFreshText is the text a fresh solver process reads for query q:
// the options the pool starts its processes with, the query as the pool
// would send it, check-sat and, as the pool asks on unsat, the core.
func benchFreshText(q smt.Query) string {
	var b strings.Builder
	b.WriteString("(set-option :print-success false)\n(set-option :produce-unsat-cores true)\n(set-option :produce-models true)\n(set-option :smt.core.minimize true)\n")
	b.WriteString("(set-option :timeout 2000)\n")
	b.WriteString(q.Commands)
	if q.Goal != "" {
		b.WriteString("(assert " + q.Goal + ")\n")
	}
	b.WriteString("(check-sat)\n(get-unsat-core)\n")
	return b.String()
}

// BenchmarkCheckShipped: the latency of deciding a request against the
// shipped policy set (all five govern it, all five admit it) with a warm
// solver pool, next to a fresh solver process per check running the same
// query text, at one grid point and at 64. Reports p50/p99 per check and
// the solver queries per check (admission should cost one).
//
//	go test -run '^$' -bench CheckShipped -benchtime 300x -count 1 ./policy/
func BenchmarkCheckShipped(b *testing.B) {
	raw, err := os.ReadFile("testdata/trading.json")
	if err != nil {
		b.Fatal(err)
	}
	set, err := ParseFile("trading.json", raw)
	if err != nil {
		b.Fatal(err)
	}
	reqs := benchShippedRequests()
	for _, c := range set {
		if !c.AppliesTo("MOM_WZS", "SRP") {
			b.Fatalf("shipped policy %s does not govern a MOM_WZS request", c.Name)
		}
	}
	report := func(b *testing.B, lat []time.Duration) {
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[(len(lat)-1)*99/100].Microseconds()), "p99-µs")
	}
	for _, solver := range []smt.Solver{smt.Z3(), smt.CVC5()} {
		if err := solver.Available(); err != nil {
			b.Fatal(err)
		}
		pool := smt.NewPool(solver, 1)
		b.Cleanup(func() { pool.Close() })
		for _, shape := range []string{"1-point", "64-point"} {
			req := reqs[shape]
			rec := &benchRecorder{s: pool}
			k := NewChecker(rec, 0)
			// Warm the process and check the request is admitted.
			for range 3 {
				rs, err := k.Check(context.Background(), set, req)
				if err != nil || len(rs) != 0 {
					b.Fatalf("%s %s: %+v %v, want admitted", solver.Kind, shape, rs, err)
				}
			}
			queries := len(rec.qs) / 3
			if queries != 1 {
				b.Errorf("%s %s: admitting took %d solver queries, want one", solver.Kind, shape, queries)
			}
			text := benchFreshText(rec.qs[len(rec.qs)-1])

			b.Run(string(solver.Kind)+"/warm/"+shape, func(b *testing.B) {
				lat := make([]time.Duration, 0, b.N)
				for b.Loop() {
					start := time.Now()
					rs, err := k.Check(b.Context(), set, req)
					lat = append(lat, time.Since(start))
					if err != nil || len(rs) != 0 {
						b.Fatalf("%+v %v", rs, err)
					}
				}
				report(b, lat)
				b.ReportMetric(float64(queries), "queries/check")
			})
			if solver.Kind != smt.KindZ3 {
				continue
			}
			b.Run("z3/fresh/"+shape, func(b *testing.B) {
				file := filepath.Join(b.TempDir(), "check.smt2")
				if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
					b.Fatal(err)
				}
				lat := make([]time.Duration, 0, b.N)
				for b.Loop() {
					start := time.Now()
					out, err := exec.CommandContext(b.Context(), "z3", "-smt2", file).Output()
					lat = append(lat, time.Since(start))
					if err != nil || !bytes.HasPrefix(out, []byte("unsat")) {
						b.Fatalf("z3 -smt2 %s: %q %v, want unsat", file, out, err)
					}
				}
				report(b, lat)
				b.ReportMetric(1, "queries/check")
			})
		}
	}
}

// BenchmarkCheckDerive: a call to airline.cancel_reservation decided
// against ten policies that derive values from the reservation the
// session's state holds (read(), now), with a warm z3: the CEL programs
// are compiled once per policy version, so a check costs their evaluation
// (microseconds) and one solver query.
//
//	go test -run '^$' -bench CheckDerive -benchtime 500x -count 1 ./policy/
func BenchmarkCheckDerive(b *testing.B) {
	base := airlinePolicies(b)[0]
	var set []*Compiled
	for i := range 10 {
		p := base.Policy
		p.SMTLIB = strings.Replace(p.SMTLIB, "86400", strconv.Itoa(86400*(i+1)), 1)
		c, err := Compile(fmt.Sprintf("cancel_window_%d", i), p)
		if err != nil {
			b.Fatal(err)
		}
		set = append(set, c)
	}
	state := airlineState(b, map[string]map[string]any{
		"ZFA04Y": {"reservation_id": "ZFA04Y", "cabin": "economy", "insurance": "no", "created_at": "2024-05-14T09:00:00"},
	})
	req := airlineRequest(b, "ZFA04Y", state, time.Date(2024, 5, 14, 20, 0, 0, 0, time.UTC))
	pool := smt.NewPool(smt.Z3(), 1)
	b.Cleanup(func() { pool.Close() })
	k := NewChecker(pool, 0)
	for range 3 {
		if rs, err := k.Check(context.Background(), set, req); err != nil || len(rs) != 0 {
			b.Fatalf("%+v %v, want admitted", rs, err)
		}
	}
	lat := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		rs, err := k.Check(b.Context(), set, req)
		lat = append(lat, time.Since(start))
		if err != nil || len(rs) != 0 {
			b.Fatalf("%+v %v", rs, err)
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[(len(lat)-1)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkDeriveEval: the CEL half of BenchmarkCheckDerive alone, the
// three derived values of one policy over the call's state (built once
// per check, as Check does).
func BenchmarkDeriveEval(b *testing.B) {
	c := airlinePolicies(b)[0]
	state := airlineState(b, map[string]map[string]any{
		"ZFA04Y": {"reservation_id": "ZFA04Y", "cabin": "economy", "insurance": "no", "created_at": "2024-05-14T09:00:00"},
	})
	req := airlineRequest(b, "ZFA04Y", state, time.Date(2024, 5, 14, 20, 0, 0, 0, time.UTC))
	st, err := contract.ToolStateIn(req.Tool, req.Arguments, nil, req.Session)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, r := deriveValues(c, func() (contract.State, error) { return st, nil }); r != nil {
			b.Fatal(r)
		}
	}
}
