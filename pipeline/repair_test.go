package pipeline

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/groundgate/groundgate/registry"
)

func ptr(v float64) *float64 { return &v }

// lookup is a small registry: wzs (window int ≥ 2), clip (lo, hi floats),
// col (name column).
func lookup(name string) (registry.Capability, bool) {
	caps := map[string]registry.Capability{
		"wzs":  {Entry: registry.Entry{Name: "wzs", Kind: registry.KindOperation, Alg: registry.Algebraic{Params: []registry.Param{{Name: "window", Type: registry.ParamInt, Min: ptr(2)}}}}},
		"clip": {Entry: registry.Entry{Name: "clip", Kind: registry.KindOperation, Alg: registry.Algebraic{Params: []registry.Param{{Name: "lo", Type: registry.ParamFloat}, {Name: "hi", Type: registry.ParamFloat}}}}},
		"col":  {Entry: registry.Entry{Name: "col", Kind: registry.KindOperation, Alg: registry.Algebraic{Params: []registry.Param{{Name: "name", Type: registry.ParamColumn}}}}},
		"FAM":  {Entry: registry.Entry{Name: "FAM", Kind: registry.KindFamily, Alg: registry.Algebraic{Params: []registry.Param{{Name: "window", Type: registry.ParamInt}}}}},
	}
	c, ok := caps[name]
	return c, ok
}

func TestRepairRequest(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want string   // the repaired document; "" when nothing is repaired
		rule []string // the rules of the repairs, in order
	}{
		{"valid is untouched", `{"pipeline":[{"id":"z","capability":"wzs","params":{"window":5},"inputs":["data"]}],"output":"z"}`, "", nil},
		{"family request is never repaired", `{"family":"FAM","params":{"window":"5"},"metrc":"SRP"}`, "", nil},
		{"string to number", `{"pipeline":[{"id":"z","capability":"wzs","params":{"window":"5"},"inputs":["data"]}]}`,
			`{"pipeline":[{"capability":"wzs","id":"z","inputs":["data"],"params":{"window":5}}]}`, []string{RuleStringToNumber}},
		{"string to number in a list", `{"pipeline":[{"id":"k","capability":"clip","params":{"lo":["-1",-2],"hi":"2.5"},"inputs":["data"]}]}`,
			`{"pipeline":[{"capability":"clip","id":"k","inputs":["data"],"params":{"hi":2.5,"lo":[-1,-2]}}]}`, []string{RuleStringToNumber, RuleStringToNumber}},
		{"not a whole number for an int", `{"pipeline":[{"id":"z","capability":"wzs","params":{"window":"5.5"},"inputs":["data"]}]}`, "", nil},
		{"not a number", `{"pipeline":[{"id":"z","capability":"wzs","params":{"window":" 5"},"inputs":["data"]}]}`, "", nil},
		{"hex is not JSON", `{"pipeline":[{"id":"z","capability":"wzs","params":{"window":"0x10"},"inputs":["data"]}]}`, "", nil},
		{"a column stays a string", `{"pipeline":[{"id":"c","capability":"col","params":{"name":"1"},"inputs":["data"]}]}`, "", nil},
		{"param spelling", `{"pipeline":[{"id":"z","capability":"wzs","params":{"Windw":5},"inputs":["data"]}]}`,
			`{"pipeline":[{"capability":"wzs","id":"z","inputs":["data"],"params":{"window":5}}]}`, []string{RuleParamSpelling}},
		{"param spelling, taken", `{"pipeline":[{"id":"z","capability":"wzs","params":{"windw":5,"window":6},"inputs":["data"]}]}`, "", nil},
		{"short names are not guessed", `{"pipeline":[{"id":"k","capability":"clip","params":{"l":1,"hi":2},"inputs":["data"]}]}`, "", nil},
		{"field spelling", `{"pipline":[{"ID":"z","capabilty":"wzs","params":{"window":5},"input":["data"]}],"outptu":"z"}`,
			`{"output":"z","pipeline":[{"capability":"wzs","id":"z","inputs":["data"],"params":{"window":5}}]}`,
			[]string{RuleFieldSpelling, RuleFieldSpelling, RuleFieldSpelling, RuleFieldSpelling, RuleFieldSpelling}},
		{"inputs list", `{"pipeline":[{"id":"z","capability":"wzs","params":{"window":5},"inputs":"data"}]}`,
			`{"pipeline":[{"capability":"wzs","id":"z","inputs":["data"],"params":{"window":5}}]}`, []string{RuleInputsList}},
		{"unknown capability: params untouched", `{"pipeline":[{"id":"z","capability":"nosuch","params":{"window":"5"},"inputs":["data"]}]}`, "", nil},
		{"duplicate keys are the gate's to refuse", `{"pipeline":[{"id":"z","capability":"wzs","params":{"window":"5","window":6},"inputs":["data"]}]}`, "", nil},
		{"trailing data is the gate's to refuse", `{"pipeline":[{"id":"z","capability":"wzs","params":{"window":"5"},"inputs":["data"]}]} {"x":1}`, "", nil},
		{"a family is not a step", `{"pipeline":[{"id":"z","capability":"FAM","params":{"window":"5"},"inputs":["data"]}]}`, "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, reps, err := RepairRequest([]byte(tc.in), lookup)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if out != nil || reps != nil {
					t.Fatalf("repaired %s: %+v", out, reps)
				}
				return
			}
			var got, want any
			_ = json.Unmarshal(out, &got)
			_ = json.Unmarshal([]byte(tc.want), &want)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("repaired to\n%s\nwant\n%s", out, tc.want)
			}
			var rules []string
			for _, r := range reps {
				rules = append(rules, r.Rule)
			}
			if !reflect.DeepEqual(rules, tc.rule) {
				t.Fatalf("rules %v, want %v (%+v)", rules, tc.rule, reps)
			}
			// Repair is idempotent: the repaired document needs none.
			if again, reps2, _ := RepairRequest(out, lookup); again != nil {
				t.Fatalf("repairing twice changed it again: %+v", reps2)
			}
		})
	}
}

// FuzzRepairRequest: any document either is left alone or is repaired to
// a JSON document that needs no further repair; never a panic.
func FuzzRepairRequest(f *testing.F) {
	f.Add([]byte(`{"pipeline":[{"id":"z","capabilty":"wzs","params":{"windw":["5",6]},"inputs":"data"}],"output":"z"}`))
	f.Add([]byte(`{"pipeline":[1,null,{"params":[]}]}`))
	f.Add([]byte(`{"pipeline":[{"capability":"clip","params":{"lo":"1e400","hi":"-0"}}]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		out, reps, err := RepairRequest(in, lookup)
		if err != nil || out == nil {
			return
		}
		if len(reps) == 0 || !json.Valid(out) {
			t.Fatalf("repaired to %q with %d repairs", out, len(reps))
		}
		if again, _, _ := RepairRequest(out, lookup); again != nil {
			t.Fatalf("not idempotent: %s → %s", out, again)
		}
	})
}
