package discover

import (
	"encoding/json"
	"testing"
)

func TestSmoke(t *testing.T) {
	s, _ := mustOpenStore(t)
	d := mustNew(t, s)
	for _, q := range []Query{
		{Terms: []string{"momentum", "Sharpe's"}},
		{Terms: []string{"log returns", "z-score", "trend", "carry", "mean-reversion"}},
		{Prompt: "Test a momentum strategy but the other way round, judged by Sharpe ratios and max drawdown."},
		{Prompt: "I'd like to bet against recent winners on crude oil; evaluate with the Sortino ratio"},
		{Prompt: "trend-following strategy on gold, scored by sharpe"},
	} {
		r := mustDiscover(t, d, q)
		b, _ := json.MarshalIndent(r, "", " ")
		t.Logf("%+v\n%s", q, b)
	}
}
