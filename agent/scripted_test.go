package agent

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func allInput(cat *Catalog, prompt string) Input {
	return Input{Prompt: prompt, Data: "d.csv", Scope: ScopeAll, Families: cat.Families, Metrics: cat.Metrics}
}

func TestScriptedRules(t *testing.T) {
	cat := builtinCatalog(t)
	tests := []struct {
		name, prompt   string
		family, metric string
		params         map[string]any
		rule           string
	}{
		{"plain", "Backtest a momentum strategy on WTI with 25, 50 and 100 day windows, ranked by Sharpe ratio.",
			"MOM_WZS", "SRP", map[string]any{"window": []any{25, 50, 100}}, "rule 2"},
		// Rule 2's natural mistake: the later qualifier wins.
		{"reversal qualifier", "A momentum strategy that captures reversals, ranked by Sharpe.",
			"MOM_REV", "SRP", map[string]any{"window": []any{25, 50, 100}}, "rule 2"},
		{"sortino vs sharpe", "Momentum on the curve, ranked by downside-risk-adjusted return.",
			"MOM_WZS", "SRP", map[string]any{"window": []any{25, 50, 100}}, "rule 2"},
		{"longer cue breaks a tie", "Mean reversion judged by return over max drawdown.",
			"MOM_REV", "CLM", map[string]any{"window": []any{25, 50, 100}}, "rule 2"},
		{"vol target params", "Volatility targeting at a 10% target with a 20-day risk window; hit rate.",
			"VOL_TGT", "HIT", map[string]any{"risk_window": 20, "target_vol": 0.1}, "rule 2"},
		{"no cue falls back to names", "Trend-following on crude, ranked by Sharpe.",
			"CARRY", "SRP", map[string]any{"window": []any{25, 50, 100}}, "rule 3"},
		{"single window", "Time-series momentum with a 60-day lookback, Calmar ratio please.",
			"MOM_WZS", "CLM", map[string]any{"window": 60}, "rule 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ScriptedProposer{}.Propose(context.Background(), allInput(cat, tc.prompt))
			if err != nil {
				t.Fatal(err)
			}
			if p.Family != tc.family || p.Metric != tc.metric {
				t.Errorf("got %s/%s, want %s/%s (%s)", p.Family, p.Metric, tc.family, tc.metric, p.Rationale)
			}
			if !reflect.DeepEqual(p.Params, tc.params) {
				t.Errorf("params %#v, want %#v", p.Params, tc.params)
			}
			if p.Proposer != ScriptedLabel || p.Data != "d.csv" || p.Abstain || p.Malformed != "" {
				t.Errorf("bad proposal %+v", p)
			}
			if !strings.Contains(p.Rationale, "family "+tc.family+": "+tc.rule) {
				t.Errorf("rationale %q does not cite %s", p.Rationale, tc.rule)
			}
		})
	}
}

func TestScriptedAbstainsWithoutOptions(t *testing.T) {
	cat := builtinCatalog(t)
	for _, in := range []Input{
		{Prompt: "trend following by Sharpe", Scope: ScopeDiscovered, Metrics: cat.Select(KindMetric, []string{"SRP"})},
		{Prompt: "momentum", Scope: ScopeDiscovered, Families: cat.Select(KindFamily, []string{"MOM_WZS"})},
	} {
		p, err := ScriptedProposer{}.Propose(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if !p.Abstain || p.Family != "" || p.Proposer != ScriptedLabel || !strings.Contains(p.Rationale, "rule 4") {
			t.Errorf("want an abstention, got %+v", p)
		}
	}
}

// TestScriptedOnlyChoosesOffered: restricted to discovered names, the
// scripted proposer never leaves them, even when a cue of another option
// appears later in the prompt.
func TestScriptedOnlyChoosesOffered(t *testing.T) {
	cat := builtinCatalog(t)
	in := Input{Prompt: "A momentum strategy that captures reversals, ranked by Sharpe.", Data: "d.csv", Scope: ScopeDiscovered,
		Families: cat.Select(KindFamily, []string{"MOM_WZS"}), Metrics: cat.Select(KindMetric, []string{"SRP"})}
	p, _ := ScriptedProposer{}.Propose(context.Background(), in)
	if p.Family != "MOM_WZS" || p.Metric != "SRP" {
		t.Errorf("got %s/%s", p.Family, p.Metric)
	}
}

// TestScriptedDeterministic: every prompt of the bundled set, in both
// scopes, gives byte-identical proposals on repeated calls, and every
// proposal names offered options only.
func TestScriptedDeterministic(t *testing.T) {
	cat := builtinCatalog(t)
	for _, pr := range mustPrompts(t).Prompts {
		in := allInput(cat, pr.Prompt)
		in.Data = pr.Data
		var first []byte
		for i := 0; i < 3; i++ {
			p, err := ScriptedProposer{}.Propose(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(p)
			if i == 0 {
				first = b
				if !slices.Contains(names(cat.Families), p.Family) || !slices.Contains(names(cat.Metrics), p.Metric) {
					t.Errorf("%s: proposed unoffered %s/%s", pr.ID, p.Family, p.Metric)
				}
				if v := mustValidator(t, cat).Validate(p); !v.Passed {
					t.Errorf("%s: scripted proposal fails the schema: %+v", pr.ID, v.Failures)
				}
			} else if string(b) != string(first) {
				t.Fatalf("%s: proposal %d differs:\n%s\n%s", pr.ID, i, first, b)
			}
		}
	}
}

func TestDayNumbers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
	}{
		{"25, 50 and 100 day windows", []int{25, 50, 100}},
		{"a 60-day lookback", []int{60}},
		{"20 days or 40 days", []int{20, 40}},
		{"10-year notes at 10%", nil},
		{"buy new 50-day highs", []int{50}},
	} {
		if got := dayNumbers(words(tc.in)); !slices.Equal(got, tc.want) {
			t.Errorf("dayNumbers(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func mustValidator(t testing.TB, cat *Catalog) *Validator {
	t.Helper()
	v, err := NewValidator(cat)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
