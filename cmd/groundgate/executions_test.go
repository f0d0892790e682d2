package main

import (
	"fmt"
	"strings"
	"testing"
)

// groundFor discovers prompt and grounds req against it over REST,
// returning the grounding id.
func (ts *testServer) groundFor(prompt, req string) string {
	ts.t.Helper()
	d := ts.do("POST", "/v1/discover", fmt.Sprintf(`{"prompt":%q}`, prompt))
	if d.status != 200 {
		ts.t.Fatalf("discover: %d %s", d.status, d.body)
	}
	g := ts.do("POST", "/v1/ground", fmt.Sprintf(`{"request":%s,"discovery":%q}`, req, d.json(ts.t)["id"]))
	if g.status != 200 {
		ts.t.Fatalf("ground: %d %s", g.status, g.body)
	}
	return g.json(ts.t)["id"].(string)
}

// The whole path over REST: discover → ground → execute → get → replay →
// diff, on the bundled sample data.
func TestExecutionsOverREST(t *testing.T) {
	ts := startServerWithData(t, "")
	const prompt = "momentum on WTI crude oil, scored by Sharpe ratio"
	gid := ts.groundFor(prompt, `{"family":"MOM_WZS","metric":"SRP","params":{"window":[25,50,100]},"data":"oil-spot/wti-daily.csv"}`)

	ex := ts.do("POST", "/v1/executions", fmt.Sprintf(`{"grounding":%q}`, gid))
	if ex.status != 201 {
		t.Fatalf("execute: %d %s", ex.status, ex.body)
	}
	fp := ex.json(t)
	hash := fp["hash"].(string)
	if ex.header.Get("Location") != "/v1/executions/"+hash || len(fp["morphisms"].([]any)) != 3 || fp["selected"] == nil {
		t.Fatalf("footprint: %.600s", ex.body)
	}
	if got := ts.do("GET", "/v1/executions/"+hash, ""); got.status != 200 || !strings.Contains(string(got.body), hash) {
		t.Fatalf("get: %d", got.status)
	}
	rp := ts.do("POST", "/v1/executions/"+hash+"/replay", "")
	if rp.status != 200 || !rp.json(t)["match"].(bool) {
		t.Fatalf("replay: %d %s", rp.status, rp.body)
	}

	// Another metric: a second footprint whose diff shows request and score.
	gid2 := ts.groundFor("momentum on WTI crude oil, judged by max drawdown", `{"family":"MOM_WZS","metric":"MDD","params":{"window":[25,50,100]},"data":"oil-spot/wti-daily.csv"}`)
	ex2 := ts.do("POST", "/v1/executions", fmt.Sprintf(`{"grounding":%q}`, gid2))
	if ex2.status != 201 {
		t.Fatalf("execute 2: %d %s", ex2.status, ex2.body)
	}
	hash2 := ex2.json(t)["hash"].(string)
	df := ts.do("GET", "/v1/diff/"+hash+"/"+hash2, "")
	if df.status != 200 {
		t.Fatalf("diff: %d %s", df.status, df.body)
	}
	same := map[string]bool{}
	for _, l := range df.json(t)["layers"].([]any) {
		m := l.(map[string]any)
		same[m["layer"].(string)] = m["same"].(bool)
	}
	for layer, want := range map[string]bool{"registry": true, "request": false, "morphisms": true, "plans": true, "score": false, "data": true} {
		if same[layer] != want {
			t.Errorf("diff of a metric change: layer %s same=%v, want %v", layer, same[layer], want)
		}
	}
}

// Only a grounding id the server issued and admitted executes.
func TestExecutionsRefuseWhatWasNotAdmitted(t *testing.T) {
	ts := startServerWithData(t, "")
	// A bare request.
	bare := ts.do("POST", "/v1/executions", `{"request":{"family":"MOM_WZS","metric":"SRP","params":{"window":50},"data":"oil-spot/wti-daily.csv"}}`)
	if bare.status != 400 || !strings.Contains(string(bare.body), "bare request never executes") {
		t.Fatalf("bare request: %d %s", bare.status, bare.body)
	}
	// An unknown (or foreign) grounding id.
	if r := ts.do("POST", "/v1/executions", `{"grounding":"sha256:`+strings.Repeat("ab", 32)+`"}`); r.status != 404 {
		t.Fatalf("unknown grounding: %d %s", r.status, r.body)
	}
	// A discovery id is not a grounding id.
	d := ts.do("POST", "/v1/discover", `{"prompt":"momentum scored by sharpe"}`).json(t)
	if r := ts.do("POST", "/v1/executions", fmt.Sprintf(`{"grounding":%q}`, d["id"])); r.status != 404 {
		t.Fatalf("discovery id as grounding: %d %s", r.status, r.body)
	}
	// A refused grounding is stored but never executes.
	g := ts.do("POST", "/v1/ground", fmt.Sprintf(`{"request":{"family":"MOM_REV","metric":"SRP","params":{"window":50},"data":"oil-spot/wti-daily.csv"},"discovery":%q}`, d["id"]))
	if g.status != 422 {
		t.Fatalf("ground MOM_REV: %d", g.status)
	}
	rid := g.json(t)["grounding"].(map[string]any)["id"].(string)
	if r := ts.do("POST", "/v1/executions", fmt.Sprintf(`{"grounding":%q}`, rid)); r.status != 422 || !strings.Contains(string(r.body), "not-admitted") {
		t.Fatalf("refused grounding: %d %s", r.status, r.body)
	}
	if r := ts.do("GET", "/v1/executions/sha256:"+strings.Repeat("cd", 32), ""); r.status != 404 {
		t.Fatalf("unknown execution: %d", r.status)
	}
}
