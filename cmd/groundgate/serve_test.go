package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/groundgate/groundgate/internal/app"
	"github.com/groundgate/groundgate/internal/app/apptest"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/server"
)

const testToken = "s3cret-admin-token"

type testServer struct {
	t      *testing.T
	m      *app.Main
	base   string
	db     string
	cancel context.CancelFunc
	done   chan error
	api    *openAPI
}

// startServer runs the real server on a loopback port with a bbolt file in
// a temp dir (or the given one), as `groundgate serve` would.
func startServer(t *testing.T, db string) *testServer {
	t.Helper()
	return startServerOn(t, db, t.TempDir())
}

// startServerWithData uses data as the data root ("" for the bundled
// sample data).
func startServerWithData(t *testing.T, data string) *testServer {
	t.Helper()
	return startServerOn(t, "", data)
}

func startServerOn(t *testing.T, db, data string) *testServer {
	t.Helper()
	if db == "" {
		db = filepath.Join(t.TempDir(), "groundgate.db")
	}
	ctx, cancel := context.WithCancel(context.Background())
	m, err := app.Open(ctx, app.Config{Addr: "127.0.0.1:0", DB: db, Data: data, AdminToken: testToken,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	ts := &testServer{t: t, m: m, base: "http://" + m.Addr(), db: db, cancel: cancel, done: make(chan error, 1), api: loadOpenAPI(t)}
	go func() { ts.done <- m.Run(ctx) }()
	t.Cleanup(func() { ts.stop() })
	return ts
}

func (ts *testServer) stop() error {
	if ts.cancel == nil {
		return nil
	}
	ts.cancel()
	ts.cancel = nil
	select {
	case err := <-ts.done:
		return err
	case <-time.After(20 * time.Second):
		ts.t.Fatal("server did not stop")
		return nil
	}
}

type response struct {
	status int
	ctype  string
	body   []byte
	header http.Header
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, r.body)
	}
	return m
}

// do sends a request and validates the response against the OpenAPI
// document (route, method, status, media type and schema).
func (ts *testServer) do(method, path, body string, hdr ...string) response {
	ts.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, ts.base+path, rd)
	if err != nil {
		ts.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := response{status: resp.StatusCode, ctype: resp.Header.Get("Content-Type"), body: b, header: resp.Header}
	ts.api.check(ts.t, method, path, r)
	if r.status >= 400 && r.ctype != "application/problem+json" {
		ts.t.Errorf("%s %s: %d with Content-Type %q, want application/problem+json", method, path, r.status, r.ctype)
	}
	return r
}

func TestDiscoverGroundRoundTrip(t *testing.T) {
	ts := startServer(t, "")
	h := ts.do("GET", "/healthz", "")
	if h.status != 200 {
		t.Fatalf("healthz: %d", h.status)
	}
	// Readiness: 503 not-ready (checked against the OpenAPI document like
	// every answer here) until the text index is built, then 200.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r := ts.do("GET", "/readyz", "")
		if r.status == 200 {
			if r.json(t)["status"] != "ready" {
				t.Fatalf("readyz: %s", r.body)
			}
			break
		}
		if r.status != 503 || r.header.Get("Retry-After") == "" || time.Now().After(deadline) {
			t.Fatalf("readyz: %d %s", r.status, r.body)
		}
	}
	reg := ts.do("GET", "/v1/registry", "").json(t)
	if reg["version"].(float64) != 1 || len(reg["capabilities"].([]any)) < 200 {
		t.Fatalf("registry: version %v, %d capabilities", reg["version"], len(reg["capabilities"].([]any)))
	}

	d := ts.do("POST", "/v1/discover", `{"prompt":"Run a momentum strategy on WTI and score it by Sharpe ratio"}`)
	if d.status != 200 {
		t.Fatalf("discover: %d %s", d.status, d.body)
	}
	disc := d.json(t)
	id := disc["id"].(string)
	if !disc["ok"].(bool) {
		t.Fatalf("discovery not ok: %s", d.body)
	}
	if again := ts.do("GET", "/v1/discoveries/"+id, ""); again.status != 200 || !bytes.Equal(normalise(t, again.body), normalise(t, d.body)) {
		t.Fatalf("stored discovery differs: %s", again.body)
	}

	ok := ts.do("POST", "/v1/ground", fmt.Sprintf(`{"request":{"family":"MOM_WZS","metric":"SRP","params":{"window":[25,50,100]},"data":"oil/wti.csv"},"discovery":%q}`, id))
	if ok.status != 200 {
		t.Fatalf("ground: %d %s", ok.status, ok.body)
	}
	g := ok.json(t)
	gid := g["id"].(string)
	if !g["decision"].(map[string]any)["admitted"].(bool) || g["discovery"] != id {
		t.Fatalf("grounding: %s", ok.body)
	}
	if rec := ts.do("GET", "/v1/groundings/"+gid, ""); rec.status != 200 {
		t.Fatalf("grounding record: %d", rec.status)
	}

	// The motivating failure: a real family the researcher never asked for.
	no := ts.do("POST", "/v1/ground", fmt.Sprintf(`{"request":{"family":"MOM_REV","metric":"SRP","params":{"window":50},"data":"oil/wti.csv"},"discovery":%q}`, id))
	if no.status != 422 {
		t.Fatalf("ungrounded: %d %s", no.status, no.body)
	}
	p := no.json(t)
	fails := p["failures"].([]any)
	if p["type"] != "urn:groundgate:problem:not-grounded" || len(fails) != 1 || fails[0].(map[string]any)["code"] != "F3" {
		t.Fatalf("refusal: %s", no.body)
	}

	// Inline evidence works, and forged inline evidence does not.
	inline := ts.do("POST", "/v1/ground", fmt.Sprintf(`{"request":{"family":"MOM_WZS","metric":"SRP","params":{"window":50},"data":"oil/wti.csv"},"discovery":%s}`, d.body))
	if inline.status != 200 {
		t.Fatalf("inline: %d %s", inline.status, inline.body)
	}
	forged := strings.Replace(string(d.body), `"confidence":0.9`, `"confidence":1`, 1)
	if forged == string(d.body) {
		t.Fatalf("no alias match to forge in %s", d.body)
	}
	if f := ts.do("POST", "/v1/ground", fmt.Sprintf(`{"request":{"family":"MOM_WZS","metric":"SRP","params":{"window":50},"data":"x"},"discovery":%s}`, forged)); f.status != 422 || !strings.Contains(string(f.body), `"F8"`) {
		t.Fatalf("forged inline: %d %s", f.status, f.body)
	}
}

// normalise re-encodes JSON so that formatting differences do not count.
func normalise(t *testing.T, b []byte) []byte {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(v)
	return out
}

const entryBody = `{"kind":"signal",
 "sem":{"pure":true,"deterministic":true,"commutative":false,"associative":false,"idempotent":false,"orientation":"none","stateful":true},
 "alg":{"inputs":["series"],"outputs":["series"],"arity":1,"reversible":false},
 "impl":{"engine":"groundgate/v1","ir":"pipeline","fusable":false,"expr":"(rmean (abs (dlog x)) 7)"},
 "disc":{"description":"Seven-day mean absolute log move, a crude choppiness gauge.","aliases":["choppiness gauge"]}}`

func TestRegistryWritesAuthAndLiveDiscovery(t *testing.T) {
	ts := startServer(t, "")
	put := func(token, body string) response {
		if token == "" {
			return ts.do("PUT", "/v1/registry/capabilities/CHOP_7", body)
		}
		return ts.do("PUT", "/v1/registry/capabilities/CHOP_7", body, "Authorization", token)
	}
	if r := put("", entryBody); r.status != 401 || r.header.Get("WWW-Authenticate") == "" {
		t.Fatalf("no token: %d %s", r.status, r.body)
	}
	if r := put("Bearer wrong", entryBody); r.status != 401 {
		t.Fatalf("wrong token: %d", r.status)
	}
	if r := put(testToken, entryBody); r.status != 401 {
		t.Fatalf("token without Bearer: %d", r.status)
	}
	if r := ts.do("GET", "/v1/registry/capabilities/CHOP_7", ""); r.status != 404 {
		t.Fatalf("refused writes stored something: %d", r.status)
	}

	// Not yet discoverable.
	before := ts.do("POST", "/v1/discover", `{"terms":["choppiness gauge"]}`).json(t)
	if len(before["matches"].([]any)) != 0 {
		t.Fatalf("matched before it existed: %v", before)
	}
	r := put("Bearer "+testToken, entryBody)
	if r.status != 201 {
		t.Fatalf("put: %d %s", r.status, r.body)
	}
	res := r.json(t)
	if res["version"].(float64) != 2 || !res["changed"].(bool) {
		t.Fatalf("put result: %s", r.body)
	}
	// Discoverable by the very next request, without a restart.
	after := ts.do("POST", "/v1/discover", `{"terms":["choppiness gauge"]}`).json(t)
	ms := after["matches"].([]any)
	if len(ms) != 1 || ms[0].(map[string]any)["name"] != "CHOP_7" || ms[0].(map[string]any)["mode"] != "alias" || after["version"].(float64) != 2 {
		t.Fatalf("after put: %v", after)
	}
	// Same bytes again: 200, unchanged, no new version.
	if r := put("Bearer "+testToken, entryBody); r.status != 200 || r.json(t)["changed"].(bool) {
		t.Fatalf("idempotent put: %d %s", r.status, r.body)
	}
	// A twin under another name is a 409 naming the existing entry.
	twin := ts.do("PUT", "/v1/registry/capabilities/CHOP_TWIN", entryBody, "Authorization", "Bearer "+testToken)
	if twin.status != 409 || twin.json(t)["existing"] != "CHOP_7" {
		t.Fatalf("twin: %d %s", twin.status, twin.body)
	}
	// An invalid entry is a 422 listing the fields; the name must match.
	bad := ts.do("PUT", "/v1/registry/capabilities/CHOP_8", strings.Replace(entryBody, `"arity":1`, `"arity":4`, 1), "Authorization", "Bearer "+testToken)
	if bad.status != 422 || !strings.Contains(string(bad.body), "alg.arity") {
		t.Fatalf("invalid: %d %s", bad.status, bad.body)
	}
	mismatch := ts.do("PUT", "/v1/registry/capabilities/CHOP_8", `{"name":"OTHER",`+entryBody[1:], "Authorization", "Bearer "+testToken)
	if mismatch.status != 400 {
		t.Fatalf("name mismatch: %d %s", mismatch.status, mismatch.body)
	}
	if v := ts.do("GET", "/v1/registry", "").json(t)["version"].(float64); v != 2 {
		t.Fatalf("refused writes changed the version to %v", v)
	}
	if v1 := ts.do("GET", "/v1/registry/versions/1", ""); v1.status != 200 || strings.Contains(string(v1.body), "CHOP_7") {
		t.Fatalf("version 1: %d", v1.status)
	}
}

func TestWritesRefusedWithoutToken(t *testing.T) {
	m, stop := apptest.Serve(t, app.Config{})
	req, _ := http.NewRequest("PUT", "http://"+m.Addr()+"/v1/registry/capabilities/X", strings.NewReader(entryBody))
	req.Header.Set("Authorization", "Bearer ")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || !strings.Contains(string(b), "writes-disabled") {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	stop()
}

// Malformed input is a 4xx problem a person can act on: never a 500, never
// a state change.
func TestErrorFormat(t *testing.T) {
	ts := startServer(t, "")
	before := ts.do("GET", "/v1/registry", "").body
	for _, tc := range []struct {
		method, path, body string
		status             int
		typ, detail        string
	}{
		{"POST", "/v1/discover", `{"prompt":`, 400, "malformed-request", "canonical JSON"},
		{"POST", "/v1/discover", `{"prompt":"x","speed":1}`, 400, "malformed-request", "unknown field"},
		{"POST", "/v1/discover", `{"prompt":5}`, 400, "malformed-request", "prompt"},
		{"POST", "/v1/discover", `{}`, 400, "bad-query", ""},
		{"POST", "/v1/discover", `{"prompt":"a","terms":["b"]}`, 400, "bad-query", ""},
		{"POST", "/v1/discover", `[]`, 400, "malformed-request", ""},
		{"POST", "/v1/discover", "", 400, "malformed-request", "empty"},
		{"POST", "/v1/discover", `{"prompt":"` + strings.Repeat("momentum ", 200000) + `"}`, 413, "body-too-large", ""},
		{"POST", "/v1/ground", `{"request":{},"discovery":"sha256:zz"}`, 400, "malformed-request", "discovery"},
		{"POST", "/v1/ground", `{"request":{"family":"MOM_WZS"},"discovery":"sha256:` + strings.Repeat("0", 64) + `"}`, 422, "not-grounded", ""},
		{"POST", "/v1/ground", `{"discovery":null,"request":null}`, 422, "not-grounded", ""},
		{"GET", "/v1/registry/versions/x", "", 400, "malformed-request", "not a non-negative integer"},
		{"GET", "/v1/registry/versions/999", "", 404, "not-found", "999"},
		{"GET", "/v1/registry/capabilities/NOPE", "", 404, "not-found", "NOPE"},
		{"GET", "/v1/discoveries/sha256:abc", "", 400, "malformed-request", "hex digits"},
		{"GET", "/v1/discoveries/sha256:" + strings.Repeat("0", 64), "", 404, "not-found", ""},
		{"GET", "/v1/groundings/sha256:" + strings.Repeat("0", 64), "", 404, "not-found", ""},
		{"GET", "/v1/nothing", "", 404, "not-found", ""},
		{"DELETE", "/v1/registry", "", 405, "method-not-allowed", ""},
	} {
		r := ts.do(tc.method, tc.path, tc.body)
		if r.status != tc.status {
			t.Errorf("%s %s %.60q: status %d, want %d: %s", tc.method, tc.path, tc.body, r.status, tc.status, r.body)
			continue
		}
		p := r.json(t)
		if p["type"] != "urn:groundgate:problem:"+tc.typ || !strings.Contains(p["detail"].(string), tc.detail) || p["request_id"] == "" {
			t.Errorf("%s %s: problem %s", tc.method, tc.path, r.body)
		}
	}
	// Wrong media type.
	req, _ := http.NewRequest("POST", ts.base+"/v1/discover", strings.NewReader(`{"prompt":"momentum"}`))
	req.Header.Set("Content-Type", "text/xml")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 415 {
		t.Errorf("text/xml: %d", resp.StatusCode)
	}
	if after := ts.do("GET", "/v1/registry", "").body; !bytes.Equal(before, after) {
		t.Error("malformed requests changed the registry")
	}
	metrics := ts.do("GET", "/metrics", "")
	if !strings.Contains(string(metrics.body), "groundgate_http_requests_total") {
		t.Error("metrics missing request counter")
	}
}

// Shutdown lets in-flight requests finish and closes the database cleanly:
// every acknowledged write is there after a restart, and the file verifies.
func TestShutdownWithoutDataLoss(t *testing.T) {
	ts := startServer(t, "")
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked := map[string]bool{}
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			name := fmt.Sprintf("CHOP_%d", 10+i)
			body := strings.Replace(entryBody, "(rmean (abs (dlog x)) 7)", fmt.Sprintf("(rmean (abs (dlog x)) %d)", 10+i), 1)
			body = strings.Replace(body, "choppiness gauge", "gauge "+name, 1)
			req, _ := http.NewRequest("PUT", ts.base+"/v1/registry/capabilities/"+name, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+testToken)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return // refused during shutdown: not acknowledged
			}
			resp.Body.Close()
			if resp.StatusCode == 201 {
				mu.Lock()
				acked[name] = true
				mu.Unlock()
			}
		}(i)
	}
	time.Sleep(5 * time.Millisecond)
	if err := ts.stop(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	wg.Wait()
	if rep, err := registry.VerifyFile(context.Background(), ts.db); err != nil {
		t.Fatalf("verify after shutdown: %v %v", err, rep.Problems)
	}
	ts2 := startServer(t, ts.db)
	for name := range acked {
		if r := ts2.do("GET", "/v1/registry/capabilities/"+name, ""); r.status != 200 {
			t.Errorf("acknowledged %s lost across restart", name)
		}
	}
	t.Logf("%d writes acknowledged before shutdown, all present after restart", len(acked))
}

// openAPI validates responses against server/openapi.json.
type openAPI struct {
	doc      map[string]any
	compiler *jsonschema.Compiler
	mu       sync.Mutex
	cache    map[string]*jsonschema.Schema
}

var (
	apiOnce sync.Once
	apiDoc  *openAPI
)

func loadOpenAPI(t *testing.T) *openAPI {
	apiOnce.Do(func() {
		var doc map[string]any
		if err := json.Unmarshal(server.OpenAPI, &doc); err != nil {
			panic(err)
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		docAny, err := jsonschema.UnmarshalJSON(bytes.NewReader(server.OpenAPI))
		if err != nil {
			panic(err)
		}
		if err := c.AddResource("openapi.json", docAny); err != nil {
			panic(err)
		}
		apiDoc = &openAPI{doc: doc, compiler: c, cache: map[string]*jsonschema.Schema{}}
	})
	return apiDoc
}

var templateParam = regexp.MustCompile(`\{[^}]+\}`)

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func (a *openAPI) check(t *testing.T, method, path string, r response) {
	t.Helper()
	paths := a.doc["paths"].(map[string]any)
	path, _, _ = strings.Cut(path, "?") // templates have no query
	var tpl string
	for p := range paths {
		// A literal segment wins over a parameter, as in the router
		// (/v1/policies/lint, not /v1/policies/{name}).
		if ok, _ := regexp.MatchString("^"+templateParam.ReplaceAllString(p, `[^/]+`)+"$", path); ok &&
			(tpl == "" || strings.Count(p, "{") < strings.Count(tpl, "{")) {
			tpl = p
		}
	}
	if tpl == "" {
		if r.status == 404 && r.ctype == "application/problem+json" {
			return // unknown paths answer with a problem, checked by the caller
		}
		t.Errorf("%s %s: path not in openapi.json", method, path)
		return
	}
	op, ok := paths[tpl].(map[string]any)[strings.ToLower(method)].(map[string]any)
	if !ok {
		if r.status == 405 {
			return
		}
		t.Errorf("%s %s: method not in openapi.json", method, tpl)
		return
	}
	st := fmt.Sprint(r.status)
	resp, ok := op["responses"].(map[string]any)[st].(map[string]any)
	if !ok {
		t.Errorf("%s %s: status %d not documented", method, tpl, r.status)
		return
	}
	ct := strings.TrimSpace(strings.Split(r.ctype, ";")[0])
	if _, ok := resp["content"].(map[string]any)[ct]; !ok {
		t.Errorf("%s %s %d: content type %q not documented", method, tpl, r.status, ct)
		return
	}
	if !strings.Contains(ct, "json") {
		return
	}
	ptr := "openapi.json#/paths/" + escapePointer(tpl) + "/" + strings.ToLower(method) + "/responses/" + st + "/content/" + escapePointer(ct) + "/schema"
	a.mu.Lock()
	sch, ok := a.cache[ptr]
	if !ok {
		var err error
		sch, err = a.compiler.Compile(ptr)
		if err != nil {
			a.mu.Unlock()
			t.Fatalf("compile %s: %v", ptr, err)
		}
		a.cache[ptr] = sch
	}
	a.mu.Unlock()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(r.body))
	if err != nil {
		t.Errorf("%s %s: body is not JSON: %v", method, path, err)
		return
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("%s %s %d: response does not match openapi.json: %v\n%.500s", method, tpl, r.status, err, r.body)
	}
}

// An inversion cue surfaces the opposite family as evidence of its own mode,
// and the response still matches the OpenAPI document.
func TestInversionOverREST(t *testing.T) {
	ts := startServer(t, "")
	r := ts.do("POST", "/v1/discover", `{"prompt":"a momentum strategy but the other way round, scored by sharpe"}`)
	if r.status != 200 || !strings.Contains(string(r.body), `"mode":"inversion"`) || !strings.Contains(string(r.body), `"MOM_REV"`) {
		t.Fatalf("%d %s", r.status, r.body)
	}
}
