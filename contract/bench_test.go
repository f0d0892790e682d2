package contract_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/hashing"
)

// BenchmarkClause is the cost of evaluating one catalog clause on a
// realistic state (a CARRY morphism on the WTI Cushing curve; the FX
// panel's 34 columns for the widest comprehension), the verdict and its
// formatted readings included: what a morphism pays per clause. Target:
// at most 10 µs per clause (issue 10).
//
//	go test ./contract -run '^$' -bench Clause -benchtime 20000x -count 5
func BenchmarkClause(b *testing.B) {
	fx := []string{"Australia", "Austria", "Belgium", "Brazil", "Canada", "China", "Denmark", "Euro", "Finland",
		"France", "Germany", "Greece", "Hong Kong", "India", "Ireland", "Italy", "Japan", "Malaysia", "Mexico",
		"Netherlands", "New Zealand", "Norway", "Portugal", "Singapore", "South Africa", "South Korea", "Spain",
		"Sri Lanka", "Sweden", "Switzerland", "Taiwan", "Thailand", "United Kingdom", "Venezuela"}
	wide := realisticState()
	na := make(map[string]float64, len(fx))
	for _, c := range fx {
		na[c] = 0.03
	}
	wide["data.columns"], wide["data.tradable_columns"], wide["result.assets"], wide["data.na_share"] = fx, fx, fx, na
	wide["result.unknown_assets"] = []string{}
	wide["data.assets"] = int64(len(fx))

	for _, tc := range []struct {
		bench, capability, clause string
		ph                        contract.Phase
		st                        contract.State
	}{
		{"param_compare", "MOM_WZS", "positive_leverage", contract.Pre, realisticState()},
		{"arithmetic", "MOM_WZS", "history_covers_window", contract.Pre, realisticState()},
		{"list_size", "MOM_WZS", "tradable_column", contract.Pre, realisticState()},
		{"list_membership", "CARRY", "curve_columns_present", contract.Pre, realisticState()},
		{"map_index", "CARRY", "front_has_prices", contract.Pre, realisticState()},
		{"double_size", "MOM_WZS", "gross_within_cap", contract.Post, realisticState()},
		{"consistency_1_asset", "MOM_WZS", "result_matches_data", contract.Post, realisticState()},
		{"consistency_34_assets", "MOM_WZS", "result_matches_data", contract.Post, wide},
		{"math_isFinite", "SRP", "finite_score", contract.Post, realisticState()},
		{"operation_column", "col", "column_present", contract.Pre, realisticState()},
	} {
		e := catalogEntryNamed(b, tc.capability)
		p, err := contract.Compile(e.Sem.Contract, e.Kind, e.params())
		if err != nil {
			b.Fatal(err)
		}
		var k *contract.Compiled
		for _, c := range p.Clauses(tc.ph) {
			if c.Clause.Name == tc.clause {
				k = c
			}
		}
		if k == nil {
			b.Fatalf("%s has no %s clause %s", tc.capability, tc.ph, tc.clause)
		}
		if v := k.Eval(tc.capability, tc.st); !v.Holds {
			b.Fatalf("%s.%s does not hold on the benchmark state: %s", tc.capability, tc.clause, v.Describe("F?"))
		}
		b.Run(tc.bench, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !k.Eval(tc.capability, tc.st).Holds {
					b.Fatal("does not hold")
				}
			}
		})
	}
}

// BenchmarkSession: a session's rules on a state near the 1 MiB bound
// (1000 reservations): decoding the state once per call, once more through
// the cache (the next phase of the call), and a clause that read()s one
// reservation and compares its booking time with now.
//
//	go test ./contract -run '^$' -bench Session -count 3
func BenchmarkSession(b *testing.B) {
	results := map[string]any{}
	for i := range 1000 {
		id := fmt.Sprintf("R%05d", i)
		results["reservation_id="+id] = map[string]any{"reservation_id": id, "cabin": "economy", "insurance": "no",
			"created_at": "2024-05-14T09:00:00", "flights": []any{map[string]any{"origin": "JFK", "destination": "SEA", "date": "2024-05-20", "price": 412}},
			"passengers": []any{map[string]any{"first_name": "Mia", "last_name": "Li", "dob": "1990-04-05"}}, "notes": strings.Repeat("x", 700)}
	}
	state, err := hashing.Canonical(map[string]any{"latest": map[string]any{}, "results": map[string]any{"airline.get_reservation_details": results}, "version": "groundgate.session-state/v1"})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("state: %d bytes", len(state))
	now := time.Date(2024, 5, 14, 20, 0, 0, 0, time.UTC)
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			if _, err := contract.DecodeSession(state, nil, now); err != nil {
				b.Fatal(err)
			}
		}
	})
	cache := contract.NewSessionCache(4)
	if _, err := cache.Decode(state, nil, now); err != nil {
		b.Fatal(err)
	}
	b.Run("cached", func(b *testing.B) {
		for b.Loop() {
			if _, err := cache.Decode(state, nil, now); err != nil {
				b.Fatal(err)
			}
		}
	})
	p, err := contract.Compile(&contract.Contract{Pre: []contract.Clause{{Name: "within_24h", Message: "m",
		Expr: `now - timestamp(read("airline.get_reservation_details", {"reservation_id": arguments.reservation_id}).created_at + "-05:00") < duration("24h")`}}}, contract.ToolKind, nil)
	if err != nil {
		b.Fatal(err)
	}
	s, _ := cache.Decode(state, nil, now)
	st, err := contract.ToolStateIn("airline.cancel_reservation", []byte(`{"reservation_id": "R00500"}`), nil, s)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("clause", func(b *testing.B) {
		for b.Loop() {
			if v := p.Pre[0].Eval("airline.cancel_reservation", st); !v.Holds {
				b.Fatalf("%+v", v)
			}
		}
	})
}
