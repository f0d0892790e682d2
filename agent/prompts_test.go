package agent

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/sampledata"
)

// TestPromptSet checks the bundled set against the paper's design: 30
// prompts, 6/8/8/4/4 by category, every expected name a registered family
// or metric, every data file bundled, and CARRY only on files with futures
// contract columns.
func TestPromptSet(t *testing.T) {
	set := mustPrompts(t)
	cat := builtinCatalog(t)
	if len(set.Prompts) != 30 {
		t.Errorf("%d prompts, want 30", len(set.Prompts))
	}
	want := map[string]int{"straightforward": 6, "confusable": 8, "adversarial": 8, "undiscoverable": 4, "multi-family": 4}
	got := map[string]int{}
	for _, p := range set.Prompts {
		got[p.Category]++
		for _, f := range p.Acceptable() {
			if !cat.Has(KindFamily, f) {
				t.Errorf("%s: %s is not a family", p.ID, f)
			}
		}
		if !cat.Has(KindMetric, p.ExpectedMetric) {
			t.Errorf("%s: %s is not a metric", p.ID, p.ExpectedMetric)
		}
		if _, err := fs.Stat(sampledata.FS(), p.Data); err != nil {
			t.Errorf("%s: data %s: %v", p.ID, p.Data, err)
		}
		if p.Probe == "" {
			t.Errorf("%s: no probe", p.ID)
		}
		if (p.Category == "multi-family") != (len(p.AlsoAcceptable) > 0) {
			t.Errorf("%s: also_acceptable is for multi-family prompts only", p.ID)
		}
		for _, f := range p.Acceptable() {
			if f == "CARRY" && !strings.HasPrefix(p.Data, "eia-nymex-futures/") {
				t.Errorf("%s: CARRY needs front and next contract columns; %s has none", p.ID, p.Data)
			}
		}
	}
	for c, n := range want {
		if got[c] != n {
			t.Errorf("%s: %d prompts, want %d", c, got[c], n)
		}
	}
}

func TestParsePromptsRefuses(t *testing.T) {
	for name, doc := range map[string]string{
		"not json":          `{`,
		"unknown field":     `{"name":"x","prompts":[{"id":"a","category":"straightforward","prompt":"p","data":"d","expected_family":"F","expected_metric":"M","probe":"","extra":1}]}`,
		"no prompts":        `{"name":"x","prompts":[]}`,
		"bad category":      `{"name":"x","prompts":[{"id":"a","category":"easy","prompt":"p","data":"d","expected_family":"F","expected_metric":"M"}]}`,
		"duplicate id":      `{"name":"x","prompts":[{"id":"a","category":"straightforward","prompt":"p","data":"d","expected_family":"F","expected_metric":"M"},{"id":"a","category":"straightforward","prompt":"p","data":"d","expected_family":"F","expected_metric":"M"}]}`,
		"null family":       `{"name":"x","prompts":[{"id":"a","category":"confusable","prompt":"p","data":"d","expected_family":null,"expected_metric":"M"}]}`,
		"undiscoverable":    `{"name":"x","prompts":[{"id":"a","category":"undiscoverable","prompt":"p","data":"d","expected_family":"F","expected_metric":"M"}]}`,
		"no metric":         `{"name":"x","prompts":[{"id":"a","category":"straightforward","prompt":"p","data":"d","expected_family":"F"}]}`,
		"no data":           `{"name":"x","prompts":[{"id":"a","category":"straightforward","prompt":"p","expected_family":"F","expected_metric":"M"}]}`,
		"acceptable orphan": `{"name":"x","prompts":[{"id":"a","category":"undiscoverable","prompt":"p","data":"d","expected_family":null,"also_acceptable":["F"],"expected_metric":"M"}]}`,
	} {
		if _, err := ParsePrompts([]byte(doc)); !errors.Is(err, ErrPrompts) {
			t.Errorf("%s: err %v, want ErrPrompts", name, err)
		}
	}
}
