package ground_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/registry/registrytest"
)

// contractRig is a gate over a seeded registry, with the discovery
// evidence for "momentum" and "sharpe".
type contractRig struct {
	gate     *ground.Gate
	evidence discover.Result
}

// newContractRig seeds a registry with the built-in catalog; with
// contracts false, it then PUTs MOM_WZS and SRP again without their
// contracts, so the two rigs differ in nothing else.
func newContractRig(b *testing.B, contracts bool) *contractRig {
	b.Helper()
	ctx := context.Background()
	s := registrytest.Seeded(b, filepath.Join(b.TempDir(), "g.db"), registry.Options{})
	for _, name := range []string{"MOM_WZS", "SRP"} {
		c, ok := s.Current().Get(name)
		if !ok || c.Sem.Contract.Empty() {
			b.Fatalf("the catalog's %s has no contract", name)
		}
		if contracts {
			continue
		}
		e := c.Entry.Clone()
		e.Sem.Contract = nil
		if _, err := s.Put(ctx, e); err != nil {
			b.Fatalf("put %s without its contract: %v", name, err)
		}
		if c, _ := s.Current().Get(name); !c.Sem.Contract.Empty() {
			b.Fatalf("%s still has a contract", name)
		}
	}
	d, err := discover.New(ctx, s, s.Engine(), discover.Options{})
	if err != nil {
		b.Fatal(err)
	}
	g, err := ground.New(s, d, s.Engine())
	if err != nil {
		b.Fatal(err)
	}
	res, err := d.Discover(ctx, discover.Query{Terms: []string{"momentum", "sharpe"}})
	if err != nil {
		b.Fatal(err)
	}
	return &contractRig{gate: g, evidence: res}
}

// BenchmarkGateContracts is Γ's latency on one proposal, with the
// catalog's contracts and without them. The proposals are 64 distinct
// 9-point grids (window × leverage) for MOM_WZS scored by SRP, each
// grounded once before timing, so every timed call runs the whole check
// chain and finds its record already stored (content-addressed: one read,
// no fsync, the same in both rigs). With contracts, Γ decides MOM_WZS's
// request-only preconditions (positive_leverage over the three leverages,
// positive_target_vol) on every call. "refused" is a proposal the
// contracts refuse (leverage 0: F9). Target: p99 at most 1 ms (issue 10).
//
//	go test ./ground -run '^$' -bench GateContracts -benchtime 5000x -count 5
func BenchmarkGateContracts(b *testing.B) {
	ctx := context.Background()
	proposals := func(r *contractRig, leverage string) []ground.Proposal {
		out := make([]ground.Proposal, 64)
		for i := range out {
			req := fmt.Sprintf(`{"family":"MOM_WZS","metric":"SRP","params":{"window":[%d,%d,%d],"leverage":%s},"data":"oil-spot/wti-daily.csv"}`,
				10+i, 60+i, 110+i, leverage)
			out[i] = ground.Proposal{Request: []byte(req), DiscoveryID: r.evidence.ID}
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		contracts bool
		leverage  string
		admitted  bool
	}{
		{"contracts=off", false, "[0.5,1,2]", true},
		{"contracts=on", true, "[0.5,1,2]", true},
		{"contracts=on/refused", true, "[0,1,2]", false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			r := newContractRig(b, tc.contracts)
			ps := proposals(r, tc.leverage)
			for _, p := range ps { // warm: store every record, fill the caches
				out, err := r.gate.Ground(ctx, p)
				if err != nil {
					b.Fatal(err)
				}
				checkOutcome(b, out, tc.admitted)
			}
			lat := make([]time.Duration, 0, b.N)
			i := 0
			for b.Loop() {
				start := time.Now()
				out, err := r.gate.Ground(ctx, ps[i%len(ps)])
				lat = append(lat, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				if out.Record.Decision.Admitted != tc.admitted {
					b.Fatalf("admitted %v: %+v", out.Record.Decision.Admitted, out.Record.Decision.Failures)
				}
				i++
			}
			slices.Sort(lat)
			q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Nanoseconds()) / 1e3 }
			b.ReportMetric(q(0.50), "p50-µs")
			b.ReportMetric(q(0.99), "p99-µs")
		})
	}
}

// checkOutcome checks a warm-up decision: admitted, or refused by the
// contract check alone (F9 on params.leverage, naming the clause).
func checkOutcome(b *testing.B, out ground.Outcome, admitted bool) {
	b.Helper()
	d := out.Record.Decision
	if d.Admitted != admitted || out.ID.IsZero() {
		b.Fatalf("admitted %v (want %v), id %s: %+v", d.Admitted, admitted, out.ID, d.Failures)
	}
	if admitted {
		return
	}
	if len(d.Failures) != 1 || d.Failures[0].Code != ground.F9 || d.Failures[0].Field != "params.leverage" {
		b.Fatalf("failures %+v, want one F9 on params.leverage", d.Failures)
	}
}
