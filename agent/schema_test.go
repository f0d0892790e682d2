package agent

import (
	"slices"
	"testing"
)

func TestValidator(t *testing.T) {
	cat := builtinCatalog(t)
	v := mustValidator(t, cat)
	ok := func(f, m string, params map[string]any) Proposal {
		return Proposal{Family: f, Metric: m, Params: params, Data: "oil-spot/wti-daily.csv"}
	}
	tests := []struct {
		name   string
		p      Proposal
		passed bool
		codes  []string // per failure, in order
		fields []string
	}{
		{"valid grid", ok("MOM_WZS", "SRP", map[string]any{"window": []any{25, 50}}), true, nil, nil},
		{"valid defaults", ok("VOL_TGT", "MDD", nil), true, nil, nil},
		{"valid column param", ok("CARRY", "SRP", map[string]any{"window": 20, "front": "C1"}), true, nil, nil},
		// Validation passes MOM_REV for anything: it knows no intent.
		{"unwarranted but valid", ok("MOM_REV", "SRP", map[string]any{"window": 50}), true, nil, nil},
		{"hallucinated family", ok("TREND_FOLLOW", "SRP", nil), false, []string{"F2"}, []string{"family"}},
		{"metric as family", ok("SRP", "SRP", nil), false, []string{"F2"}, []string{"family"}},
		{"hallucinated metric", ok("MOM_WZS", "TRACKING_ERR", map[string]any{"window": 50}), false, []string{"F2"}, []string{"metric"}},
		{"missing window", ok("MOM_WZS", "SRP", nil), false, []string{"F1"}, []string{"params"}},
		{"unknown param", ok("VOL_TGT", "SRP", map[string]any{"window": 50}), false, []string{"F1"}, []string{"params"}},
		{"wrong type", ok("MOM_WZS", "SRP", map[string]any{"window": "fifty"}), false, []string{"F1"}, []string{"params.window"}},
		{"empty family", ok("", "SRP", nil), false, []string{"F1"}, []string{"family"}},
		{"empty data", Proposal{Family: "VOL_TGT", Metric: "SRP"}, false, []string{"F1"}, []string{"data"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := v.Validate(tc.p)
			if c.Passed != tc.passed {
				t.Fatalf("passed %v, want %v: %+v", c.Passed, tc.passed, c.Failures)
			}
			var codes, fields []string
			for _, f := range c.Failures {
				codes = append(codes, f.Code)
				fields = append(fields, f.Field)
				if f.Detail == "" {
					t.Error("failure without detail")
				}
			}
			if !slices.Equal(codes, tc.codes) || !slices.Equal(fields, tc.fields) {
				t.Errorf("codes %v fields %v, want %v %v (%+v)", codes, fields, tc.codes, tc.fields, c.Failures)
			}
		})
	}
}

func TestSchemaDocumentEnums(t *testing.T) {
	cat := builtinCatalog(t)
	doc := SchemaDocument(cat)
	props := doc["properties"].(map[string]any)
	if n := len(props["family"].(map[string]any)["enum"].([]any)); n != 4 {
		t.Errorf("%d families in the enum, want 4", n)
	}
	if n := len(props["metric"].(map[string]any)["enum"].([]any)); n != 9 {
		t.Errorf("%d metrics in the enum, want 9", n)
	}
}
