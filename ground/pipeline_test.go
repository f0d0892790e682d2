package ground

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/pipeline"
	"github.com/groundgate/groundgate/registry"
)

// clean is a well-formed pipeline the terms below ground.
const clean = `{"pipeline": [
  {"id": "r", "capability": "dlog", "inputs": ["data"]},
  {"id": "z", "capability": "wzs", "params": {"window": [25, 50]}, "inputs": ["r"]},
  {"id": "k", "capability": "clip", "params": {"lo": -2, "hi": 2}, "inputs": ["z"]},
  {"id": "out", "capability": "SIZE_BY_VOL", "params": {"target_vol": 0.1}, "inputs": ["k", "data"]}],
 "output": "out", "metric": "SRP", "data": "oil/wti.csv"}`

var pipelineTerms = []string{"dlog", "wzs", "clip", "SIZE_BY_VOL", "SRP", "col", "neg"}

// edit applies f to the clean pipeline's document.
func edit(t *testing.T, f func(doc map[string]any, steps []any)) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(clean), &doc); err != nil {
		t.Fatal(err)
	}
	f(doc, doc["pipeline"].([]any))
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func stepAt(steps []any, i int) map[string]any { return steps[i].(map[string]any) }

type want struct {
	field string
	code  Code
}

func TestPipelineGate(t *testing.T) {
	r := newRig(t)
	ev := r.discover(t, pipelineTerms...)
	cases := []struct {
		name    string
		req     []byte
		mode    RepairMode
		fails   []want   // every failure, in order; nil when admitted
		repairs []string // rules of the repairs, in order
	}{
		{name: "clean", req: []byte(clean)},
		{name: "listed out of order", req: edit(t, func(_ map[string]any, s []any) { slices.Reverse(s) })},
		{name: "hallucinated step", req: edit(t, func(_ map[string]any, s []any) { stepAt(s, 1)["capability"] = "zscore_fast" }),
			fails: []want{{"pipeline[1].capability", F2}}},
		{name: "family as a step", req: edit(t, func(_ map[string]any, s []any) { stepAt(s, 1)["capability"] = "MOM_WZS" }),
			fails: []want{{"pipeline[1].capability", F2}}},
		{name: "undiscovered step", req: edit(t, func(_ map[string]any, s []any) { stepAt(s, 1)["capability"] = "rmean" }),
			fails: []want{{"pipeline[1].capability", F3}}},
		{name: "undiscovered metric", req: edit(t, func(d map[string]any, _ []any) { d["metric"] = "MDD" }),
			fails: []want{{"metric", F4}}},
		{name: "cycle", req: edit(t, func(_ map[string]any, s []any) { stepAt(s, 0)["inputs"] = []any{"k"} }),
			fails: []want{{"pipeline[1].inputs", F1}}},
		{name: "dangling input", req: edit(t, func(_ map[string]any, s []any) { stepAt(s, 2)["inputs"] = []any{"zz"} }),
			fails: []want{{"pipeline[2].inputs[0]", F1}}},
		{name: "dead step", req: edit(t, func(_ map[string]any, s []any) {
			stepAt(s, 3)["inputs"] = []any{"z", "data"}
		}), fails: []want{{"pipeline[2]", F1}}},
		{name: "output not a pnl", req: edit(t, func(d map[string]any, s []any) {
			d["pipeline"] = s[:3]
			d["output"] = "k"
		}), fails: []want{{"output", F1}}},
		{name: "series where a frame is needed", req: edit(t, func(_ map[string]any, s []any) {
			stepAt(s, 2)["capability"] = "col"
			stepAt(s, 2)["params"] = map[string]any{"name": "Price"}
		}), fails: []want{{"pipeline[2].inputs[0]", F1}}},
		{name: "a step reads the P&L", req: edit(t, func(d map[string]any, s []any) {
			d["pipeline"] = append(s, map[string]any{"id": "n", "capability": "neg", "inputs": []any{"out"}})
			d["output"] = "n"
		}), fails: []want{{"pipeline[4].inputs[0]", F1}, {"output", F1}}},
		{name: "missing param", req: edit(t, func(_ map[string]any, s []any) { delete(stepAt(s, 1), "params") }),
			fails: []want{{"pipeline[1].params.window", F1}}},
		{name: "wrong arity", req: edit(t, func(_ map[string]any, s []any) { stepAt(s, 3)["inputs"] = []any{"k"} }),
			fails: []want{{"pipeline[3].inputs", F1}}},
		{name: "out of bounds", req: edit(t, func(_ map[string]any, s []any) {
			stepAt(s, 1)["params"] = map[string]any{"window": []any{1, 50}}
		}), fails: []want{{"pipeline[1].params.window", F1}}},
		{name: "unrepairable type", req: edit(t, func(_ map[string]any, s []any) {
			stepAt(s, 1)["params"] = map[string]any{"window": "fifty"}
		}), fails: []want{{"pipeline[1].params.window", F1}}},
		{name: "family and pipeline", req: edit(t, func(d map[string]any, _ []any) { d["family"] = "MOM_WZS" }),
			fails: []want{{"family", F1}}},
		{name: "params at the top", req: edit(t, func(d map[string]any, _ []any) { d["params"] = map[string]any{"window": 5} }),
			fails: []want{{"params", F1}}},

		// Repairs: each rule, only where the schema refuses.
		{name: "string number", req: edit(t, func(_ map[string]any, s []any) {
			stepAt(s, 1)["params"] = map[string]any{"window": []any{"25", 50}}
		}), repairs: []string{pipeline.RuleStringToNumber}},
		{name: "misspelled param", req: edit(t, func(_ map[string]any, s []any) {
			stepAt(s, 1)["params"] = map[string]any{"windw": []any{25, 50}}
		}), repairs: []string{pipeline.RuleParamSpelling}},
		{name: "misspelled field", req: edit(t, func(_ map[string]any, s []any) {
			st := stepAt(s, 2)
			st["Capability"] = st["capability"]
			delete(st, "capability")
		}), repairs: []string{pipeline.RuleFieldSpelling}},
		{name: "input as a string", req: edit(t, func(_ map[string]any, s []any) { stepAt(s, 2)["inputs"] = "z" }),
			repairs: []string{pipeline.RuleInputsList}},
		{name: "repair off", mode: RepairNone, req: edit(t, func(_ map[string]any, s []any) { stepAt(s, 2)["inputs"] = "z" }),
			fails: []want{{"pipeline[2].inputs", F1}}},
		{name: "a name too short to spell is refused", req: edit(t, func(_ map[string]any, s []any) {
			stepAt(s, 2)["params"] = map[string]any{"lo": -2, "hi": 2, "h": 1}
		}), fails: []want{{"pipeline[2].params.h", F1}}},
		{name: "repair never grounds", req: edit(t, func(_ map[string]any, s []any) {
			stepAt(s, 2)["capability"] = "clip_sym"
			stepAt(s, 2)["params"] = map[string]any{"cap": "2"}
		}), fails: []want{{"pipeline[2].capability", F3}}, repairs: []string{pipeline.RuleStringToNumber}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := r.gate.Ground(context.Background(), Proposal{Request: tc.req, DiscoveryID: ev.ID, Repair: tc.mode})
			if err != nil {
				t.Fatal(err)
			}
			var got []want
			for _, f := range out.Record.Decision.Failures {
				got = append(got, want{f.Field, f.Code})
			}
			if !slices.Equal(got, tc.fails) {
				t.Errorf("failures %v, want %v\n%s", got, tc.fails, failureText(out))
			}
			var rules []string
			for _, rp := range out.Record.Request.Repairs {
				rules = append(rules, rp.Rule)
			}
			if !slices.Equal(rules, tc.repairs) {
				t.Errorf("repairs %v, want %v", rules, tc.repairs)
			}
			if (tc.fails == nil) != (out.Grounded != nil) {
				t.Errorf("admitted %v with failures %v", out.Grounded != nil, got)
			}
		})
	}
}

func failureText(out Outcome) string {
	var b strings.Builder
	for _, f := range out.Record.Decision.Failures {
		b.WriteString(f.Field + " " + string(f.Code) + ": " + f.Detail + "\n")
	}
	return b.String()
}

// TestCleanPipelineIsNeverRepaired: repair runs only on a refusal, and a
// valid request's record holds the request exactly as proposed.
func TestCleanPipelineIsNeverRepaired(t *testing.T) {
	r := newRig(t)
	ev := r.discover(t, pipelineTerms...)
	out := r.ground(t, []byte(clean), ev.ID)
	if out.Grounded == nil {
		t.Fatalf("not admitted: %s", failureText(out))
	}
	if len(out.Record.Request.Repairs) != 0 {
		t.Fatalf("repairs on a clean pipeline: %+v", out.Record.Request.Repairs)
	}
	want, _ := DecodeRequest([]byte(clean))
	a, _ := want.Canonical()
	b, _ := out.Grounded.Request().Canonical()
	if string(a) != string(b) {
		t.Fatalf("the admitted request is not the proposed one:\n%s\n%s", a, b)
	}
}

// TestRepairIsHashed: a repaired request records its repairs, and they
// are part of the request's hash — the same pipeline proposed clean and
// proposed broken-then-repaired are two different requests.
func TestRepairIsHashed(t *testing.T) {
	r := newRig(t)
	ev := r.discover(t, pipelineTerms...)
	broken := edit(t, func(_ map[string]any, s []any) { stepAt(s, 2)["params"] = map[string]any{"lo": "-2", "hi": 2} })
	fixed := r.ground(t, broken, ev.ID)
	plain := r.ground(t, []byte(clean), ev.ID)
	if fixed.Grounded == nil || plain.Grounded == nil {
		t.Fatalf("not admitted: %s %s", failureText(fixed), failureText(plain))
	}
	rp := fixed.Record.Request.Repairs
	if len(rp) != 1 || rp[0].Step != "k" || rp[0].Field != "params.lo" || rp[0].From != "-2" || rp[0].To != -2.0 {
		t.Fatalf("repairs %+v", rp)
	}
	h1, _ := fixed.Grounded.Request().Hash()
	h2, _ := plain.Grounded.Request().Hash()
	if h1 == h2 {
		t.Fatal("the repairs are not in the request's hash")
	}
	fixed.Record.Request.Repairs = nil
	h3, _ := fixed.Record.Request.Hash()
	if h3 != h2 {
		t.Fatal("the repaired request differs from the clean one by more than its repairs")
	}
}

// TestClientCannotClaimRepairs: repairs are the gate's record, never input.
func TestClientCannotClaimRepairs(t *testing.T) {
	r := newRig(t)
	ev := r.discover(t, pipelineTerms...)
	req := edit(t, func(d map[string]any, _ []any) {
		d["repairs"] = []any{map[string]any{"step": "k", "field": "x", "from": 1, "to": 2, "rule": "string_to_number"}}
	})
	out := r.ground(t, req, ev.ID)
	if out.Grounded != nil || len(out.Record.Decision.Failures) != 1 || out.Record.Decision.Failures[0].Field != "request.repairs" {
		t.Fatalf("want an F1 on request.repairs, got %s", failureText(out))
	}
}

// TestMovedIdentityIsStale: evidence matched clip with one identity; the
// registry then gave clip new behaviour and the old behaviour a new name.
// The old identity still exists, but the name no longer means it: F7,
// for a pipeline step as for a family.
func TestMovedIdentityIsStale(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	ev := r.discover(t, pipelineTerms...)
	old, _ := r.store.Current().Get("clip")
	moved := old.Entry
	moved.Name = "clipx"
	moved.Disc.Aliases = nil
	changed := old.Entry
	changed.Impl.Expr = "(clip (neg x) $lo $hi)"
	for _, e := range []registry.Entry{changed, moved} {
		if _, err := r.store.Put(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if c, _ := r.store.Current().Get("clipx"); c.Identity != old.Identity {
		t.Fatal("the old identity is not back under the new name")
	}
	out := r.ground(t, []byte(clean), ev.ID)
	if out.Grounded != nil || !slices.ContainsFunc(out.Record.Decision.Failures, func(f Failure) bool {
		return f.Field == "discovery" && f.Code == F7 && strings.Contains(f.Value, "clip")
	}) {
		t.Fatalf("a step whose name now means other behaviour was not refused: %s", failureText(out))
	}
}
