package agent

import (
	"slices"
	"testing"
)

func TestClassify(t *testing.T) {
	cat := builtinCatalog(t)
	c01 := promptByID(t, "C01") // MOM_WZS/SRP, confusable
	u01 := promptByID(t, "U01") // no family/SRP
	m01 := promptByID(t, "M01") // MOM_WZS or CARRY/SRP
	prop := func(f, m string) Proposal {
		return Proposal{Family: f, Metric: m, Data: "x.csv", Params: map[string]any{"window": 50}}
	}
	ran := &ExecFacts{Status: ExecRan, Morphisms: 3, Admissible: 3}
	admitted := &Decision{Admitted: true}
	refused := func(codes ...string) *Decision {
		return &Decision{Failures: []Failure{{Field: "family", Code: codes[0], Codes: codes}}}
	}
	tests := []struct {
		name      string
		p         Prompt
		f         Facts
		code      string
		codes     []string
		outcome   string
		intent    string
		inversion bool
	}{
		{"correct", c01, Facts{Proposal: prop("MOM_WZS", "SRP"), Gate: admitted, Exec: ran}, "F0", []string{"F0"}, OutcomeExecuted, "F0", false},
		{"multi-family second family", m01, Facts{Proposal: prop("CARRY", "SRP"), Gate: admitted, Exec: ran}, "F0", []string{"F0"}, OutcomeExecuted, "F0", false},
		{"malformed output", c01, Facts{Proposal: Proposal{Malformed: "no JSON"}}, "F1", []string{"F1"}, OutcomeMalformed, "", false},
		{"abstained with intent", c01, Facts{Proposal: Proposal{Abstain: true}}, CodeAbstained, []string{}, OutcomeAbstained, "", false},
		{"abstained undiscoverable", u01, Facts{Proposal: Proposal{Abstain: true}}, CodeCorrectRefusal, []string{}, OutcomeAbstained, "", false},
		{"schema F2", c01, Facts{Proposal: prop("TREND_FOLLOW", "SRP"), Schema: &Check{Failures: []Failure{{Field: "family", Code: "F2"}}}}, "F2", []string{"F2"}, OutcomeBlocked, "F3", false},
		{"schema F1", c01, Facts{Proposal: prop("MOM_WZS", "SRP"), Schema: &Check{Failures: []Failure{{Field: "params.window", Code: "F1"}}}}, "F1", []string{"F1"}, OutcomeBlocked, "F0", false},
		{"gate F2 undiscoverable stays F2", u01, Facts{Proposal: prop("TREND", "SRP"), Gate: refused("F2", "F5")}, "F2", []string{"F2", "F5"}, OutcomeRefused, "F3", false},
		{"gate F1 params", c01, Facts{Proposal: prop("MOM_WZS", "SRP"), Gate: refused("F1")}, "F1", []string{"F1"}, OutcomeRefused, "F0", false},
		{"gate F8 evidence", c01, Facts{Proposal: prop("MOM_WZS", "SRP"), Gate: refused("F8")}, "F8", []string{"F8"}, OutcomeRefused, "F0", false},
		{"gate caught inversion", c01, Facts{Proposal: prop("MOM_REV", "SRP"), Gate: refused("F3", "F5")}, CodeRefused, []string{"F3", "F5"}, OutcomeRefused, "F3", true},
		{"gate false block", c01, Facts{Proposal: prop("MOM_WZS", "SRP"), Gate: refused("F3")}, CodeRefused, []string{"F3"}, OutcomeRefused, "F0", false},
		{"gate correct refusal", u01, Facts{Proposal: prop("MOM_WZS", "SRP"), Gate: refused("F3", "F5")}, CodeCorrectRefusal, []string{"F3", "F5"}, OutcomeRefused, "F3", false},
		{"F3 inversion executed", c01, Facts{Proposal: prop("MOM_REV", "SRP"), Gate: admitted, Exec: ran}, "F3", []string{"F3", "F5"}, OutcomeExecuted, "F3", true},
		{"F3 plain executed", c01, Facts{Proposal: prop("CARRY", "SRP"), Gate: admitted, Exec: ran}, "F3", []string{"F3", "F5"}, OutcomeExecuted, "F3", false},
		{"F3 and F4", c01, Facts{Proposal: prop("CARRY", "MDD"), Gate: admitted, Exec: ran}, "F3", []string{"F3", "F4"}, OutcomeExecuted, "F3", false},
		{"F3 undiscoverable executed", u01, Facts{Proposal: prop("MOM_WZS", "SRP"), Gate: admitted, Exec: ran}, "F3", []string{"F3", "F5"}, OutcomeExecuted, "F3", false},
		{"F4 metric swap", c01, Facts{Proposal: prop("MOM_WZS", "SRT"), Gate: admitted, Exec: ran}, "F4", []string{"F4", "F5"}, OutcomeExecuted, "F4", false},
		{"F6 risk filter", c01, Facts{Proposal: prop("MOM_WZS", "SRP"), Gate: admitted, Exec: &ExecFacts{Status: ExecRan, Morphisms: 3}}, "F6", []string{"F0", "F6"}, OutcomeExecuted, "F0", false},
		{"F3 beats F6", u01, Facts{Proposal: prop("CARRY", "SRP"), Gate: admitted, Exec: &ExecFacts{Status: ExecRan, Morphisms: 3}}, "F3", []string{"F3", "F5", "F6"}, OutcomeExecuted, "F3", false},
		{"F7 audit", c01, Facts{Proposal: prop("MOM_WZS", "SRP"), Gate: admitted, Exec: &ExecFacts{Status: ExecRan, Morphisms: 1, Admissible: 1, Audit: []string{"F7: drift"}}}, "F7", []string{"F0", "F7"}, OutcomeExecuted, "F0", false},
		{"F8 audit", c01, Facts{Proposal: prop("MOM_WZS", "SRP"), Gate: admitted, Exec: &ExecFacts{Status: ExecRan, Morphisms: 1, Admissible: 1, Audit: []string{"F8: gap"}}}, "F8", []string{"F0", "F8"}, OutcomeExecuted, "F0", false},
		{"no executor", c01, Facts{Proposal: prop("MOM_WZS", "SRP"), Gate: admitted, Exec: &ExecFacts{Status: ExecUnavailable}}, "F0", []string{"F0"}, OutcomeAdmitted, "F0", false},
		{"no executor wrong family", c01, Facts{Proposal: prop("MOM_REV", "SRP"), Gate: admitted, Exec: &ExecFacts{Status: ExecUnavailable}}, "F3", []string{"F3", "F5"}, OutcomeAdmitted, "F3", true},
		{"execution failed", c01, Facts{Proposal: prop("MOM_WZS", "SRP"), Gate: admitted, Exec: &ExecFacts{Status: ExecFailed}}, CodeExecutionFailed, []string{"F0"}, OutcomeFailed, "F0", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Classify(tc.p, tc.f, cat.Opposite)
			if c.Code != tc.code || !slices.Equal(c.Codes, tc.codes) || c.Outcome != tc.outcome || c.Intent != tc.intent || c.Inversion != tc.inversion {
				t.Errorf("got code %s codes %v outcome %s intent %q inversion %v; want %s %v %s %q %v (%s)",
					c.Code, c.Codes, c.Outcome, c.Intent, c.Inversion, tc.code, tc.codes, tc.outcome, tc.intent, tc.inversion, c.Detail)
			}
			if c.Detail == "" {
				t.Error("empty detail")
			}
		})
	}
}

func TestOpposite(t *testing.T) {
	cat := builtinCatalog(t)
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"MOM_WZS", "MOM_REV", true},
		{"MOM_REV", "MOM_WZS", true},
		{"MOM_WZS", "MOM_WZS", false},
		{"CARRY", "VOL_TGT", false},
		{"MOM_WZS", "CARRY", false},
		{"SRP", "MDD", false},
		{"MOM_WZS", "NOPE", false},
	} {
		if got := cat.Opposite(tc.a, tc.b); got != tc.want {
			t.Errorf("Opposite(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
