package experiments

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
)

// ReplayConfig is one row of the paper's Table 4, run on bundled real data.
type ReplayConfig struct {
	Label       string         `json:"label"`        // the paper's "Family / Metric"
	PaperParams string         `json:"paper_params"` // the paper's "Parameters" column
	Family      string         `json:"family"`
	Metric      string         `json:"metric"`
	Data        string         `json:"data"` // a path in the bundled sample data
	Params      map[string]any `json:"params"`
	// Note says where the request departs from the paper's row.
	Note string `json:"note,omitempty"`
}

// ReplayConfigs are the paper's five Table 4 configurations (all four
// families, three metrics), each on a different bundled real series.
// (execution's TestReplayDeterminism runs five broader configurations —
// grids, five metrics — on the same files; this is the paper's set.)
var ReplayConfigs = []ReplayConfig{
	{Label: "Momentum / Sharpe", PaperParams: "window=25", Family: "MOM_WZS", Metric: "SRP",
		Data: "oil-spot/wti-daily.csv", Params: map[string]any{"window": 25}},
	{Label: "Carry / Sharpe", PaperParams: "(defaults)", Family: "CARRY", Metric: "SRP",
		Data: "eia-nymex-futures/crude-oil-wti-cushing.csv", Params: map[string]any{"window": 60},
		Note: "CARRY's signal window has no default in the catalog: window=60, defaults otherwise (front C1, next C2)"},
	{Label: "Mean-reversion / Sharpe", PaperParams: "window=25", Family: "MOM_REV", Metric: "SRP",
		Data: "equity-stocks-ffn/test_data.csv", Params: map[string]any{"window": 25}},
	{Label: "Vol-targeting / Volatility", PaperParams: "window=60", Family: "VOL_TGT", Metric: "AVOL",
		Data: "equity-index-arch/sp500.csv.gz", Params: map[string]any{"risk_window": 60},
		Note: "VOL_TGT has no signal window; its window is risk_window"},
	{Label: "Momentum / Max-drawdown", PaperParams: "window=50", Family: "MOM_WZS", Metric: "MDD",
		Data: "natural-gas/daily.csv", Params: map[string]any{"window": 50}},
}

// termFor is the discovery term that names a family or metric.
func termFor(name string) string {
	best := ""
	for t, n := range TermNames {
		if n == name && (best == "" || t < best) {
			best = t
		}
	}
	return best
}

// ReplayRow is one configuration's outcome.
type ReplayRow struct {
	Config ReplayConfig `json:"config"`
	Runs   int          `json:"runs"`
	// UniqueHashes counts the distinct execution hashes over the runs;
	// UniqueLayers the distinct digests of each layer.
	UniqueHashes   int            `json:"unique_hashes"`
	UniqueLayers   map[string]int `json:"unique_layers"`
	Replays        int            `json:"replays"`
	ReplaysMatched int            `json:"replays_matched"`
	Hash           hashing.Digest `json:"hash"`
	Morphisms      int            `json:"morphisms"`
	SelectedIndex  *int           `json:"selected_index"`
	Score          *float64       `json:"score"` // the selected morphism's
	Problems       []string       `json:"problems"`
	Pass           bool           `json:"pass"`
}

// ReplayResult is the replay-determinism experiment's outcome.
type ReplayResult struct {
	Name string      `json:"name"`
	Reps int         `json:"reps"`
	Rows []ReplayRow `json:"rows"`
	// PaperRuns and PaperUnique are the paper's figures: 10 runs per
	// configuration, 1 unique hash.
	PaperRuns   int  `json:"paper_runs"`
	PaperUnique int  `json:"paper_unique"`
	Pass        bool `json:"pass"`
}

// ReplayDeterminism runs every configuration reps times through the whole
// pipeline — discovery, the gate, execution (which recomputes every layer
// each time and finds the stored footprint by the recomputed hash) — and
// replays the footprint after each run. It passes when every run of a
// configuration gives one execution hash, identical at every layer, and
// every replay matches at every layer.
func ReplayDeterminism(ctx context.Context, env *Env, reps int) (*ReplayResult, error) {
	res := &ReplayResult{Name: "replay-determinism", Reps: reps, PaperRuns: 10, PaperUnique: 1, Pass: true}
	for _, cfg := range ReplayConfigs {
		row, err := replayRow(ctx, env, cfg, reps)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.Label, err)
		}
		res.Rows = append(res.Rows, *row)
		res.Pass = res.Pass && row.Pass
	}
	return res, nil
}

func replayRow(ctx context.Context, env *Env, cfg ReplayConfig, reps int) (*ReplayRow, error) {
	row := &ReplayRow{Config: cfg, UniqueLayers: map[string]int{}, Problems: []string{}}
	req, err := json.Marshal(map[string]any{"family": cfg.Family, "metric": cfg.Metric, "data": cfg.Data, "params": cfg.Params})
	if err != nil {
		return nil, err
	}
	hashes := map[hashing.Digest]bool{}
	layers := make([]map[hashing.Digest]bool, len(execution.LayerNames))
	for i := range layers {
		layers[i] = map[hashing.Digest]bool{}
	}
	for range reps {
		fp, err := groundAndExecute(ctx, env, req, termFor(cfg.Family), termFor(cfg.Metric))
		if err != nil {
			return nil, err
		}
		row.Runs++
		hashes[fp.Hash] = true
		for i, d := range fp.Layers.List() {
			layers[i][d] = true
		}
		if row.Hash.IsZero() {
			row.Hash, row.Morphisms, row.SelectedIndex = fp.Hash, len(fp.Morphisms), fp.SelectedIndex
			if fp.SelectedIndex != nil {
				if v, ok := fp.Morphisms[*fp.SelectedIndex].Score.Value(); ok {
					row.Score = &v
				}
			}
			if fp.Selected == nil {
				row.Problems = append(row.Problems, "nothing selected: no morphism has a score")
			}
		}
		rep, err := env.Exec.Replay(ctx, fp.Hash)
		if err != nil {
			return nil, fmt.Errorf("replay %s: %w", fp.Hash, err)
		}
		row.Replays++
		ok := rep.Match && rep.ReplayHash == fp.Hash && len(rep.Layers) == len(execution.LayerNames)
		for k, l := range rep.Layers {
			ok = ok && l.Layer == execution.LayerNames[k] && l.Match && l.Stored == l.Replayed
		}
		if ok {
			row.ReplaysMatched++
		} else {
			row.Problems = append(row.Problems, fmt.Sprintf("replay of %s differs: %+v", fp.Hash, rep.Layers))
		}
	}
	row.UniqueHashes = len(hashes)
	for i, name := range execution.LayerNames {
		row.UniqueLayers[name] = len(layers[i])
		if len(layers[i]) != 1 {
			row.Problems = append(row.Problems, fmt.Sprintf("layer %s: %d distinct digests over %d runs", name, len(layers[i]), reps))
		}
	}
	if row.UniqueHashes != 1 {
		row.Problems = append(row.Problems, fmt.Sprintf("%d distinct execution hashes over %d runs", row.UniqueHashes, reps))
	}
	row.Pass = len(row.Problems) == 0 && row.Runs == reps && row.ReplaysMatched == reps
	return row, nil
}

// groundAndExecute is the honest path to an execution: discovery over the
// terms, the gate, then the executor. A refusal is an error.
func groundAndExecute(ctx context.Context, env *Env, req []byte, terms ...string) (*execution.Footprint, error) {
	disc, err := env.discoverTerms(ctx, terms...)
	if err != nil {
		return nil, fmt.Errorf("discover %q: %w", terms, err)
	}
	out, err := env.Gate.Ground(ctx, ground.Proposal{Request: req, DiscoveryID: disc.ID})
	if err != nil {
		return nil, fmt.Errorf("ground: %w", err)
	}
	if out.Grounded == nil {
		return nil, fmt.Errorf("not admitted: %s: %+v", req, out.Record.Decision.Failures)
	}
	fp, err := env.Exec.Execute(ctx, out.Grounded)
	if err != nil {
		return nil, fmt.Errorf("execute %s: %w", req, err)
	}
	return fp, nil
}
