package contract_test

import (
	"testing"

	"github.com/groundgate/groundgate/contract"
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
