package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// contractData is a data root holding the first 300 rows of the bundled
// WTI series, the bundled Cushing futures curve, and a file that does not
// parse.
func contractData(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile("../../sampledata/data/oil-spot/wti-daily.csv")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	files := map[string]string{"wti-300.csv": strings.Join(lines[:301], ""), "broken.csv": "Date,A\n2020-01-02,1\n2020-01-01,2\n"}
	if b, err = os.ReadFile("../../sampledata/data/eia-nymex-futures/crude-oil-wti-cushing.csv"); err != nil {
		t.Fatal(err)
	}
	files["cushing.csv"] = string(b)
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// verdictStatus returns a clause's status in one morphism of a report
// body, "" when the morphism has no such verdict.
func verdictStatus(rep map[string]any, morphism int, capability, phase, clause string) (string, map[string]any) {
	m := rep["morphisms"].([]any)[morphism].(map[string]any)
	for _, v := range m["verdicts"].([]any) {
		v := v.(map[string]any)
		if v["capability"] == capability && v["phase"] == phase && v["clause"] == clause {
			return v["status"].(string), v
		}
	}
	return "", nil
}

// POST /v1/contracts/check on a real server: the verdicts, the problems,
// every response checked against the OpenAPI document.
func TestContractCheckOverREST(t *testing.T) {
	dir := contractData(t)
	ts := startServerOn(t, "", dir)
	type clause struct{ capability, phase, clause, status string }
	for _, tc := range []struct {
		name      string
		body      string
		holds     bool
		morphisms int
		at        int
		want      []clause
	}{
		{
			name:  "a request that meets every clause it can be checked on",
			body:  `{"request":{"family":"MOM_WZS","metric":"SRP","params":{"window":[25,50]},"data":"wti-300.csv"}}`,
			holds: true, morphisms: 2, at: 1,
			want: []clause{
				{"MOM_WZS", "pre", "positive_leverage", "holds"},
				{"MOM_WZS", "pre", "history_covers_window", "needs data"},
				{"wzs", "pre", "window_within_data", "needs data"},
				{"MOM_WZS", "post", "finite_outputs", "needs a run"},
				{"SRP", "pre", "enough_pnl_days", "needs a run"},
			},
		},
		{
			name:  "the same with the data's facts",
			body:  `{"request":{"family":"MOM_WZS","metric":"SRP","params":{"window":[25,50]},"data":"wti-300.csv"},"data":true}`,
			holds: true, morphisms: 2, at: 1,
			want: []clause{
				{"MOM_WZS", "pre", "history_covers_window", "holds"},
				{"wzs", "pre", "window_within_data", "holds"},
				{"SRP", "post", "finite_score", "needs a run"},
			},
		},
		{
			name:  "a CARRY curve whose front and next are one column",
			body:  `{"request":{"family":"CARRY","metric":"CLM","params":{"window":20,"front":"C1","next":"C1"},"data":"cushing.csv"}}`,
			holds: false, morphisms: 1,
			want: []clause{
				{"CARRY", "pre", "distinct_curve_points", "fails"},
				{"CARRY", "pre", "curve_columns_present", "needs data"},
			},
		},
		{
			name:  "a window the data cannot cover",
			body:  `{"request":{"family":"MOM_WZS","metric":"SRP","params":{"window":[50,400]},"data":"wti-300.csv"},"data":true}`,
			holds: false, morphisms: 2, at: 1,
			want: []clause{
				{"MOM_WZS", "pre", "history_covers_window", "fails"},
				{"wzs", "pre", "window_within_data", "fails"},
				{"MOM_WZS", "pre", "positive_leverage", "holds"},
			},
		},
		{
			name:  "a data file that is not there",
			body:  `{"request":{"family":"MOM_WZS","metric":"SRP","params":{"window":50},"data":"nope.csv"},"data":true}`,
			holds: true, morphisms: 1,
			want: []clause{{"MOM_WZS", "pre", "history_covers_window", "needs data"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.do("POST", "/v1/contracts/check", tc.body)
			if r.status != 200 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			rep := r.json(t)
			if rep["holds"] != tc.holds || len(rep["morphisms"].([]any)) != tc.morphisms {
				t.Fatalf("holds %v, %d morphisms; want %v, %d\n%.2000s", rep["holds"], len(rep["morphisms"].([]any)), tc.holds, tc.morphisms, r.body)
			}
			for _, w := range tc.want {
				if got, v := verdictStatus(rep, tc.at, w.capability, w.phase, w.clause); got != w.status {
					t.Errorf("morphism %d: %s %s.%s is %q, want %q: %v", tc.at, w.phase, w.capability, w.clause, got, w.status, v)
				}
			}
		})
	}

	t.Run("a failing clause names its message and the values it read", func(t *testing.T) {
		rep := ts.do("POST", "/v1/contracts/check", `{"request":{"family":"MOM_WZS","metric":"SRP","params":{"window":400},"data":"wti-300.csv"},"data":true}`).json(t)
		_, v := verdictStatus(rep, 0, "MOM_WZS", "pre", "history_covers_window")
		vals, _ := json.Marshal(v["values"])
		if v["message"] == "" || !strings.Contains(string(vals), `{"key":"data.rows","value":"300"}`) || !strings.Contains(string(vals), `{"key":"params.window","value":"400"}`) {
			t.Errorf("verdict %v", v)
		}
		if d := rep["data"].(map[string]any); d["rows"] != float64(300) || !strings.HasPrefix(d["digest"].(string), "blake3:") {
			t.Errorf("data %v", d)
		}
	})

	for _, tc := range []struct {
		name, method, body string
		status             int
		typ, detail        string
	}{
		{"an unknown family", "POST", `{"request":{"family":"NOPE","metric":"SRP","params":{"window":50},"data":"wti-300.csv"}}`, 404, "not-found", `no family named "NOPE"`},
		{"a metric named as the family", "POST", `{"request":{"family":"SRP","metric":"SRP","params":{"window":50},"data":"wti-300.csv"}}`, 404, "not-found", `"SRP" is a metric`},
		{"an unknown metric", "POST", `{"request":{"family":"MOM_WZS","metric":"NOPE","params":{"window":50},"data":"wti-300.csv"}}`, 404, "not-found", `no metric named "NOPE"`},
		{"not JSON", "POST", `{"request":`, 400, "malformed-request", ""},
		{"an array", "POST", `[]`, 400, "malformed-request", "not a JSON object"},
		{"an unknown field", "POST", `{"request":{"family":"MOM_WZS","metric":"SRP","data":"wti-300.csv"},"run":true}`, 400, "malformed-request", "run"},
		{"data not a boolean", "POST", `{"request":{"family":"MOM_WZS","metric":"SRP","data":"wti-300.csv"},"data":"yes"}`, 400, "malformed-request", ""},
		{"no request", "POST", `{"data":true}`, 400, "malformed-request", "request is missing"},
		{"a request missing its family", "POST", `{"request":{"metric":"SRP","data":"wti-300.csv"}}`, 400, "malformed-request", "family is missing"},
		{"a grid over the bound", "POST", `{"request":{"family":"MOM_WZS","metric":"SRP","data":"wti-300.csv","params":{"window":[` + numbers(64) + `],"lag":[` + numbers(64) + `],"risk_window":[2,3]}}}`, 400, "malformed-request", "more than 4096"},
		{"data that does not parse", "POST", `{"request":{"family":"MOM_WZS","metric":"SRP","params":{"window":5},"data":"broken.csv"},"data":true}`, 422, "bad-data", "broken.csv"},
		{"GET", "GET", "", 405, "method-not-allowed", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.do(tc.method, "/v1/contracts/check", tc.body)
			if r.status != tc.status {
				t.Fatalf("%d, want %d: %s", r.status, tc.status, r.body)
			}
			p := r.json(t)
			if p["type"] != "urn:groundgate:problem:"+tc.typ || !strings.Contains(p["detail"].(string), tc.detail) {
				t.Errorf("problem %s", r.body)
			}
		})
	}
	// A malformed request's problem lists every bad field with F1.
	p := ts.do("POST", "/v1/contracts/check", `{"request":{"family":"","params":{"window":"x","lag":null},"data":"wti-300.csv"}}`).json(t)
	fs, _ := p["failures"].([]any)
	fields := map[string]bool{}
	for _, f := range fs {
		f := f.(map[string]any)
		if f["code"] != "F1" {
			t.Errorf("failure %v", f)
		}
		fields[f["field"].(string)] = true
	}
	if !fields["family"] || !fields["metric"] || !fields["params.lag"] {
		t.Errorf("failures %v", fs)
	}
}

// numbers lists n distinct valid window values, for a grid too large.
func numbers(n int) string {
	out := make([]string, n)
	for i := range out {
		out[i] = strconv.Itoa(i + 2)
	}
	return strings.Join(out, ",")
}

// The CLI prints the REST body for the same request and exits 1 when a
// clause fails.
func TestContractCheckCLI(t *testing.T) {
	dir := contractData(t)
	ts := startServerOn(t, "", dir)
	work := t.TempDir()
	db := filepath.Join(work, "g.db")
	for _, tc := range []struct {
		name, req string
		withData  bool
		code      int
	}{
		{"holds", `{"family":"MOM_WZS","metric":"SRP","params":{"window":[25,50]},"data":"wti-300.csv"}`, true, 0},
		{"a window too long", `{"family":"MOM_WZS","metric":"SRP","params":{"window":[50,400]},"data":"wti-300.csv"}`, true, 1},
		{"front == next", `{"family":"CARRY","metric":"CLM","params":{"window":20,"front":"C2","next":"C2"},"data":"cushing.csv"}`, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(work, "req.json")
			if err := os.WriteFile(file, []byte(tc.req), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"contract", "check", "--db", db, "--data", dir, file}
			if tc.withData {
				args = append(args, "--with-data")
			}
			code, out, stderr := runCLI(t, args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %s", code, tc.code, stderr)
			}
			if tc.code != 0 && !strings.Contains(stderr, "fail") {
				t.Errorf("stderr %q", stderr)
			}
			var cli, rest any
			if err := json.Unmarshal([]byte(out), &cli); err != nil {
				t.Fatalf("stdout is not JSON: %v\n%s", err, out)
			}
			r := ts.do("POST", "/v1/contracts/check", `{"request":`+tc.req+`,"data":`+strconv.FormatBool(tc.withData)+`}`)
			if err := json.Unmarshal(r.body, &rest); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cli, rest) {
				t.Errorf("the CLI and REST disagree:\nCLI  %.1500s\nREST %.1500s", out, r.body)
			}
		})
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"no subcommand", []string{"contract"}, 2, "usage: groundgate contract check"},
		{"an unknown subcommand", []string{"contract", "prove", "x.json"}, 2, "unknown subcommand"},
		{"no request file", []string{"contract", "check", "--db", db}, 2, "one request file"},
		{"a malformed request", []string{"contract", "check", "--db", db, "-"}, 1, "request is missing"},
		{"an unknown family", []string{"contract", "check", "--db", db, writeFile(t, work, "nope.json", `{"family":"NOPE","metric":"SRP","data":"x.csv"}`)}, 3, `no family named "NOPE"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.err) {
				t.Errorf("exit %d, stderr %q; want %d, %q", code, stderr, tc.code, tc.err)
			}
		})
	}
}

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
