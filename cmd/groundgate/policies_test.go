package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// shipped reads one policy of the shipped trading set as a JSON body.
func shipped(t *testing.T, name string) string {
	t.Helper()
	raw, err := os.ReadFile("../../policy/testdata/trading.json")
	if err != nil {
		t.Fatal(err)
	}
	var set map[string]json.RawMessage
	if err := json.Unmarshal(raw, &set); err != nil {
		t.Fatal(err)
	}
	return string(set[name])
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Policies over REST: admin-only writes, clear 422s for bad policies, F11
// refusals at the gate, the set's digest in records and footprints, and a
// data source pinned by the facts a policy read.
func TestPoliciesOverREST(t *testing.T) {
	data := t.TempDir()
	const src = "eia-nymex-futures/crude-oil-wti-cushing.csv"
	copyFile(t, filepath.Join("../../sampledata/data", src), filepath.Join(data, src))
	ts := startServerOn(t, "", data)
	auth := []string{"Authorization", "Bearer " + testToken}
	healthy := func(what string) {
		t.Helper()
		if r := ts.do("GET", "/healthz", ""); r.status != 200 {
			t.Fatalf("after %s: healthz %d", what, r.status)
		}
	}

	if r := ts.do("PUT", "/v1/policies/holdout_embargo", shipped(t, "holdout_embargo")); r.status != 401 {
		t.Fatalf("PUT without the token: %d", r.status)
	}
	bad := []struct {
		name, body, field, want string
	}{
		{"malformed SMT-LIB", `{"smtlib": "(declare-const x Int", "bind": {}, "allow": "x", "applies_to": ["family"]}`, "smtlib", "unclosed '('"},
		{"allow not Bool", `{"smtlib": "(declare-const x Int)", "bind": {}, "allow": "x", "applies_to": ["family"]}`, "allow", "allow must be a Bool constant"},
		{"pointer to a missing field", `{"smtlib": "(declare-const w Int)\n(define-fun allow () Bool (< w 10))", "bind": {"w": "/params/windw"}, "allow": "allow", "applies_to": ["MOM_WZS"]}`,
			"bind.w", "no capability this policy applies to (MOM_WZS) declares"},
		{"pointer outside the request", `{"smtlib": "(declare-const w Int)\n(define-fun allow () Bool (< w 10))", "bind": {"w": "/request/secret"}, "allow": "allow", "applies_to": ["family"]}`,
			"bind.w", "points to no field a policy can bind"},
		{"ill-sorted, as the solver says", `{"smtlib": "(declare-const w Int)\n(define-fun allow () Bool (< w \"ten\"))", "bind": {"w": "/params/window"}, "allow": "allow", "applies_to": ["family"]}`,
			"smtlib", "solver rejected it"},
		{"a kind no request names", `{"smtlib": "(declare-const w Int)\n(define-fun allow () Bool (< w 10))", "bind": {"w": "/params/window"}, "allow": "allow", "applies_to": ["recipe"]}`,
			"applies_to[0]", "no request names a capability of kind recipe"},
		{"a recipe by name", `{"smtlib": "(declare-const w Int)\n(define-fun allow () Bool (< w 10))", "bind": {"w": "/params/window"}, "allow": "allow", "applies_to": ["MOM_WZS_25_SRP"]}`,
			"applies_to[0]", "MOM_WZS_25_SRP is a capability of kind recipe"},
		{"a step parameter no operation it names declares", `{"smtlib": "(declare-const w Int)\n(define-fun allow () Bool (< w 10))", "bind": {"w": "/params/window"}, "allow": "allow", "applies_to": ["dlog"]}`,
			"bind.w", "no capability this policy applies to (dlog) declares"},
		{"a command that drives the solver", `{"smtlib": "(declare-const w Int)\n(check-sat)\n(define-fun allow () Bool true)", "bind": {"w": "/params/window"}, "allow": "allow", "applies_to": ["family"]}`,
			"smtlib", `command "check-sat" is not allowed`},
	}
	for _, b := range bad {
		r := ts.do("PUT", "/v1/policies/bad", b.body, auth...)
		var p struct {
			Type   string `json:"type"`
			Errors []struct{ Field, Problem string }
		}
		if err := json.Unmarshal(r.body, &p); err != nil || r.status != 422 || p.Type != "urn:groundgate:problem:invalid-policy" ||
			len(p.Errors) == 0 || p.Errors[0].Field != b.field || !strings.Contains(p.Errors[0].Problem, b.want) {
			t.Errorf("%s: %d %s, want 422 invalid-policy on %s containing %q", b.name, r.status, r.body, b.field, b.want)
		}
		healthy(b.name)
	}
	if r := ts.do("GET", "/v1/policies/bad", ""); r.status != 404 {
		t.Errorf("a refused policy was stored: %d", r.status)
	}

	var put struct {
		ID      string `json:"id"`
		Version int    `json:"version"`
		Digest  string `json:"digest"`
	}
	for i, name := range []string{"holdout_embargo", "leverage_by_asset_class"} {
		r := ts.do("PUT", "/v1/policies/"+name, shipped(t, name), auth...)
		if r.status != 201 || json.Unmarshal(r.body, &put) != nil || put.Version != i+1 || !strings.HasPrefix(put.ID, "sha256:") {
			t.Fatalf("PUT %s: %d %s", name, r.status, r.body)
		}
	}
	if r := ts.do("PUT", "/v1/policies/leverage_by_asset_class", shipped(t, "leverage_by_asset_class"), auth...); r.status != 200 || !strings.Contains(string(r.body), `"changed":false`) {
		t.Errorf("re-PUT of the same policy: %d %s", r.status, r.body)
	}
	var set struct {
		Version  int    `json:"version"`
		Digest   string `json:"digest"`
		Policies []struct{ Name, ID string }
	}
	if r := ts.do("GET", "/v1/policies", ""); json.Unmarshal(r.body, &set) != nil || set.Digest != put.Digest || len(set.Policies) != 2 {
		t.Fatalf("GET /v1/policies: %s", r.body)
	}
	if r := ts.do("GET", "/v1/policies/versions/1", ""); !strings.Contains(string(r.body), `"holdout_embargo"`) || strings.Contains(string(r.body), "leverage_by") {
		t.Errorf("version 1: %s", r.body)
	}
	if r := ts.do("POST", "/v1/policies/lint?name=risk_lookback", shipped(t, "risk_lookback")); r.status != 200 || !strings.Contains(string(r.body), `"clean":true`) {
		t.Errorf("lint: %d %s", r.status, r.body)
	}

	disc := ts.do("POST", "/v1/discover", `{"terms": ["momentum", "sharpe ratio"]}`).json(t)["id"].(string)
	ground := func(params string) response {
		return ts.do("POST", "/v1/ground", `{"request": {"family": "MOM_WZS", "metric": "SRP", "params": `+params+`, "data": "`+src+`"}, "discovery": "`+disc+`"}`)
	}
	r := ground(`{"window": 20, "leverage": [1, 2.5]}`)
	var refused struct {
		Failures []struct {
			Field, Code, Policy, Value string
			Core                       []string
		}
	}
	if r.status != 422 || json.Unmarshal(r.body, &refused) != nil || len(refused.Failures) != 1 ||
		refused.Failures[0].Code != "F11" || refused.Failures[0].Policy != "leverage_by_asset_class" ||
		!slices.Equal(refused.Failures[0].Core, []string{"commodity_leverage_at_most_2"}) || refused.Failures[0].Field != "params.leverage" {
		t.Fatalf("leverage 2.5 on crude: %d %s", r.status, r.body)
	}
	r = ground(`{"window": 20, "leverage": 1.5}`)
	var rec struct {
		ID         string `json:"id"`
		Policies   string `json:"policies"`
		DataDigest string `json:"data_digest"`
	}
	if r.status != 200 || json.Unmarshal(r.body, &rec) != nil || rec.Policies != put.Digest || rec.DataDigest == "" {
		t.Fatalf("admitted grounding: %d %s", r.status, r.body)
	}

	// The embargo read the source's facts: the grounding runs on those bytes only.
	path := filepath.Join(data, src)
	orig, _ := os.ReadFile(path)
	if err := os.WriteFile(path, append(append([]byte{}, orig...), orig[len(orig)-30:]...), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := ts.do("POST", "/v1/executions", `{"grounding": "`+rec.ID+`"}`); r.status != 409 || !strings.Contains(string(r.body), "data-changed") {
		t.Errorf("execution on changed data: %d %s", r.status, r.body)
	}
	if err := os.WriteFile(path, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	r = ts.do("POST", "/v1/executions", `{"grounding": "`+rec.ID+`"}`)
	if r.status != 201 || r.json(t)["policies"] != put.Digest {
		t.Errorf("execution: %d %.300s", r.status, r.body)
	}

	// A rule put in force afterwards applies to the next run of the same grounding.
	strict := `{"smtlib": "(declare-const leverage Real)\n(define-fun allow () Bool true)\n(assert (! (<= leverage 1.0) :named unlevered))", "bind": {"leverage": "/params/leverage"}, "allow": "allow", "applies_to": ["family"]}`
	if r := ts.do("PUT", "/v1/policies/unlevered", strict, auth...); r.status != 201 {
		t.Fatalf("PUT unlevered: %d %s", r.status, r.body)
	}
	if r := ts.do("POST", "/v1/executions", `{"grounding": "`+rec.ID+`"}`); r.status != 422 || !strings.Contains(string(r.body), "policy-refused") ||
		!strings.Contains(string(r.body), `"core":["unlevered"]`) {
		t.Errorf("execution under a stricter set: %d %s", r.status, r.body)
	}
	if r := ts.do("DELETE", "/v1/policies/unlevered", "", auth...); r.status != 200 {
		t.Errorf("DELETE: %d %s", r.status, r.body)
	}

	// A solver that dies while idle is replaced before the next check.
	if n := killSolvers(); n == 0 {
		t.Fatal("no solver process to kill: the checks above ran none?")
	}
	time.Sleep(100 * time.Millisecond)
	if r := ground(`{"window": 20, "leverage": 1.5}`); r.status != 200 {
		t.Errorf("ground after the solvers died idle: %d %s", r.status, r.body)
	}
	// One that dies mid-query (deciding a pigeonhole formula over free
	// constants, which keeps z3 busy for seconds): the check is a 503,
	// never an admission, nothing is stored, the server stays healthy and
	// the next check runs on a fresh process.
	if r := ts.do("PUT", "/v1/policies/pigeons", pigeonPolicy(11), auth...); r.status != 201 {
		t.Fatalf("PUT pigeons: %d %s", r.status, r.body)
	}
	killed := make(chan int, 1)
	time.AfterFunc(300*time.Millisecond, func() { killed <- killSolvers() })
	r = ts.do("POST", "/v1/ground", `{"request": {"family": "MOM_REV", "metric": "SRP", "params": {"window": 20}, "data": "`+src+`"}, "discovery": "`+
		ts.do("POST", "/v1/discover", `{"terms": ["mean reversion", "sharpe ratio"]}`).json(t)["id"].(string)+`"}`)
	if n := <-killed; n == 0 || r.status != 503 || !strings.Contains(string(r.body), "solver-unavailable") || r.header.Get("Retry-After") == "" {
		t.Errorf("ground whose solver was killed mid-query (%d killed): %d %s", n, r.status, r.body)
	}
	healthy("a solver killed mid-query")
	// The kill reached the idle processes too; as above, give the reaper
	// the moment it needs to see them gone (on a loaded machine the next
	// request can otherwise beat it to a process that is dead but unreaped).
	time.Sleep(100 * time.Millisecond)
	if r := ts.do("DELETE", "/v1/policies/pigeons", "", auth...); r.status != 200 {
		t.Fatalf("DELETE pigeons: %d", r.status)
	}
	if r := ground(`{"window": 20, "leverage": 1.5}`); r.status != 200 {
		t.Errorf("after the crash: %d %s", r.status, r.body)
	}
}

// pigeonPolicy is a policy whose rules are the pigeonhole formula over n
// pigeons, as free constants: deciding it needs a proof that n pigeons do
// not fit n-1 holes, which takes z3 seconds for n = 11.
func pigeonPolicy(n int) string {
	var b strings.Builder
	b.WriteString("(declare-const w Int)\\n(define-fun allow () Bool true)\\n")
	for i := range n {
		for j := range n - 1 {
			fmt.Fprintf(&b, "(declare-const p%d_%d Bool)\\n", i, j)
		}
	}
	for i := range n {
		b.WriteString("(assert (or")
		for j := range n - 1 {
			fmt.Fprintf(&b, " p%d_%d", i, j)
		}
		b.WriteString("))\\n")
	}
	for j := range n - 1 {
		for a := range n {
			for c := a + 1; c < n; c++ {
				fmt.Fprintf(&b, "(assert (or (not p%d_%d) (not p%d_%d)))\\n", a, j, c, j)
			}
		}
	}
	return `{"smtlib": "` + b.String() + `", "bind": {"w": "/params/window"}, "allow": "allow", "applies_to": ["MOM_REV"]}`
}

// killSolvers kills the solver processes this test process started and
// returns how many; other packages' solvers are left alone.
func killSolvers() int {
	me := strconv.Itoa(os.Getpid())
	n := 0
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil {
			continue
		}
		// pid (comm) state ppid …
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || !strings.HasSuffix(s[:i+1], " (z3)") {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 || f[1] != me {
			continue
		}
		pid, _ := strconv.Atoi(strings.Fields(s)[0])
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// The command line: lint, diff, put and list.
func TestPolicyCLI(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "g.db")
	const set = "../../policy/testdata/trading.json"
	code, out, errs := runCLI(t, "policy", "lint", set)
	if code != 0 || !strings.Contains(out, `"clean": true`) || strings.Contains(out, `"clean": false`) {
		t.Fatalf("lint of the shipped set: %d\n%s\n%s", code, out, errs)
	}
	raw, _ := os.ReadFile(set)
	looser := strings.Replace(string(raw), `(<= leverage 2.0)`, `(<= leverage 2.5)`, -1)
	if err := os.WriteFile(filepath.Join(dir, "looser.json"), []byte(looser), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCLI(t, "policy", "diff", set, filepath.Join(dir, "looser.json"))
	var diff struct {
		Equivalent bool     `json:"equivalent"`
		AdmittedBy string   `json:"admitted_by"`
		RefusedBy  []string `json:"refused_by"`
	}
	if code != 1 || json.Unmarshal([]byte(out), &diff) != nil || diff.Equivalent || diff.AdmittedBy != "new" || !slices.Equal(diff.RefusedBy, []string{"leverage_by_asset_class"}) {
		t.Errorf("diff: %d %s", code, out)
	}
	if code, out, _ = runCLI(t, "policy", "diff", set, set); code != 0 || !strings.Contains(out, `"equivalent": true`) {
		t.Errorf("diff of a set with itself: %d %s", code, out)
	}
	if code, out, errs = runCLI(t, "policy", "put", "--db", db, set); code != 0 || !strings.Contains(out, `"holdout_embargo"`) {
		t.Fatalf("put: %d %s %s", code, out, errs)
	}
	if code, out, _ = runCLI(t, "policy", "list", "--db", db); code != 0 || strings.Count(out, `"smtlib"`) != 5 {
		t.Errorf("list: %d %s", code, out)
	}
	if code, _, errs = runCLI(t, "policy", "lint", filepath.Join(dir, "nope.json")); code != 1 || !strings.Contains(errs, "no such file") {
		t.Errorf("lint of a missing file: %d %s", code, errs)
	}
}

// With a policy in force and no solver installed, the server does not
// start: one line, naming the package.
func TestServeRefusesWithoutSolver(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	if code, _, errs := runCLI(t, "policy", "put", "--db", db, "../../policy/testdata/trading.json"); code != 0 {
		t.Fatalf("put: %s", errs)
	}
	bin, err := exec.LookPath("groundgate")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve", "--addr", "127.0.0.1:0", "--db", db)
	cmd.Env = []string{"PATH=" + filepath.Dir(bin), "GROUNDGATE_ADMIN_TOKEN="}
	var errb strings.Builder
	cmd.Stderr = &errb
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("serve without a solver: %v (it started?)", err)
	}
	checkOneLine(t, "no solver", ee.ExitCode(), 8, errb.String(), "groundgate serve: ", "5 policies are in force and no SMT solver can check them")
	if !strings.Contains(errb.String(), "apt-get install z3") {
		t.Errorf("the line does not name the package: %s", errb.String())
	}
}
