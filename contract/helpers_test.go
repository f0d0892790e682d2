package contract_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/groundgate/groundgate/contract"
)

// catalogEntry is the part of a built-in catalog entry a contract is
// checked against. The tests read the catalog's JSON directly rather than
// through the registry package, which imports this one.
type catalogEntry struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	Sem  struct {
		Contract *contract.Contract `json:"contract"`
	} `json:"sem"`
	Alg struct {
		Params []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"params"`
	} `json:"alg"`
}

func (e catalogEntry) params() []contract.Param {
	out := make([]contract.Param, len(e.Alg.Params))
	for i, p := range e.Alg.Params {
		out[i] = contract.Param{Name: p.Name, Type: p.Type}
	}
	return out
}

// catalogContracts returns the built-in catalog's entries that declare a
// contract, in file order.
func catalogContracts(tb testing.TB) []catalogEntry {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join("..", "registry", "catalog", "*.json"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("catalog files: %v (%d)", err, len(files))
	}
	var out []catalogEntry
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		var es []catalogEntry
		if err := json.Unmarshal(raw, &es); err != nil {
			tb.Fatalf("%s: %v", f, err)
		}
		for _, e := range es {
			if !e.Sem.Contract.Empty() {
				out = append(out, e)
			}
		}
	}
	if len(out) == 0 {
		tb.Fatal("the catalog declares no contract")
	}
	return out
}

func catalogEntryNamed(tb testing.TB, name string) catalogEntry {
	tb.Helper()
	for _, e := range catalogContracts(tb) {
		if e.Name == name {
			return e
		}
	}
	tb.Fatalf("no catalog contract for %s", name)
	return catalogEntry{}
}

// realisticState is the state of a CARRY morphism on the EIA WTI Cushing
// curve (9766 rows, four contracts) after the family and the metric have
// run: every schema key, typed as the schema says, plus the family's
// parameters.
func realisticState() contract.State {
	return contract.State{
		"request.family": "CARRY",
		"request.metric": "SRP",
		"request.data":   "eia-nymex-futures/crude-oil-wti-cushing.csv",

		"data.rows":             int64(9766),
		"data.columns":          []string{"C1", "C2", "C3", "C4"},
		"data.assets":           int64(4),
		"data.first_date":       "1983-03-30",
		"data.last_date":        "2022-01-18",
		"data.span_days":        int64(14174),
		"data.max_gap_days":     int64(5),
		"data.na_share":         map[string]float64{"C1": 0.0007, "C2": 0.0012, "C3": 0.0003, "C4": 0.0041},
		"data.constant_columns": []string{},
		"data.tradable_columns": []string{"C1", "C2", "C3", "C4"},
		"data.min_price":        -36.98,
		"data.non_positive":     true,
		"data.digest":           "blake3:4f1c0e5d9a3b7c2e8f6a1d0b5c4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6",

		"result.rows":           int64(9766),
		"result.assets":         []string{"C1"},
		"result.unknown_assets": []string{},
		"result.pnl_rows":       int64(9704),
		"result.finite_share":   1.0,
		"result.max_abs_weight": 1.0,
		"result.gross_exposure": 1.0,
		"result.turnover":       0.0132,
		"result.signal_min":     -1.0,
		"result.signal_max":     1.0,

		"result.score":           0.4121,
		"result.evaluation_rows": int64(9704),

		"params.window":      int64(50),
		"params.front":       "C1",
		"params.next":        "C2",
		"params.risk_window": int64(60),
		"params.leverage":    1.0,
		"params.target_vol":  0.1,
		"params.lag":         int64(1),
		// The operations' parameters, as their plan binds them.
		"params.k":    int64(1),
		"params.a":    "C1",
		"params.b":    "C2",
		"params.lo":   -1.0,
		"params.hi":   1.0,
		"params.name": "C1",
	}
}

var nan = math.NaN()
