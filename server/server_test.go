package server_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/groundgate/groundgate/internal/app"
	"github.com/groundgate/groundgate/internal/app/apptest"
	"github.com/groundgate/groundgate/internal/testio"
	"github.com/groundgate/groundgate/server"
)

const token = "t0ken"

// api is the real wired server (app.Open: bbolt file, catalog, discovery,
// gate, executor on the bundled sample data) on a loopback port.
type api struct {
	t    *testing.T
	m    *app.Main
	addr string
	base string
	logs *testio.SyncBuffer
}

func start(t *testing.T, adminToken string) *api {
	t.Helper()
	return startWith(t, app.Config{AdminToken: adminToken})
}

// startWith starts the server with cfg, on a loopback port and a fresh
// database in a temp dir, logging to the api's buffer.
func startWith(t *testing.T, cfg app.Config) *api {
	t.Helper()
	logs := &testio.SyncBuffer{}
	cfg.Addr, cfg.DB, cfg.Logger = "", "", slog.New(slog.NewTextHandler(logs, nil))
	m, _ := apptest.Serve(t, cfg)
	return &api{t: t, m: m, addr: m.Addr(), base: "http://" + m.Addr(), logs: logs}
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) problem(t *testing.T) map[string]any {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("status %d with Content-Type %q, want application/problem+json: %s", r.status, ct, r.body)
	}
	var p map[string]any
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("problem is not JSON: %v: %s", err, r.body)
	}
	if p["status"] != float64(r.status) {
		t.Errorf("problem status %v, HTTP status %d", p["status"], r.status)
	}
	return p
}

// do sends one request; hdr is name, value pairs. A JSON Content-Type is
// set for a body unless hdr sets one.
func (a *api) do(method, path string, body []byte, hdr ...string) reply {
	a.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, a.base+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatal(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

func (a *api) json(method, path, body string, want int) map[string]any {
	a.t.Helper()
	r := a.do(method, path, []byte(body))
	if r.status != want {
		a.t.Fatalf("%s %s: %d, want %d: %s", method, path, r.status, want, r.body)
	}
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		a.t.Fatal(err)
	}
	return m
}

// trail is one discover → ground → execute on the bundled sample data.
type trail struct{ discovery, grounding, execution string }

func (a *api) execute() trail {
	a.t.Helper()
	d := a.json("POST", "/v1/discover", `{"prompt":"momentum on WTI crude oil, scored by Sharpe ratio"}`, 200)
	g := a.json("POST", "/v1/ground", fmt.Sprintf(`{"request":{"family":"MOM_WZS","metric":"SRP","params":{"window":[25,50]},"data":"oil-spot/wti-daily.csv"},"discovery":%q}`, d["id"]), 200)
	e := a.json("POST", "/v1/executions", fmt.Sprintf(`{"grounding":%q}`, g["id"]), 201)
	return trail{discovery: d["id"].(string), grounding: g["id"].(string), execution: e["hash"].(string)}
}

const entry = `{"kind":"signal",
 "sem":{"pure":true,"deterministic":true,"commutative":false,"associative":false,"idempotent":false,"orientation":"none","stateful":true},
 "alg":{"inputs":["series"],"outputs":["series"],"arity":1,"reversible":false},
 "impl":{"engine":"groundgate/v1","ir":"pipeline","fusable":false,"expr":"(rmean (abs (dlog x)) 9)"},
 "disc":{"description":"Nine-day mean absolute log move.","aliases":["nine day chop"]}}`

// Bodies that are JSON but not an object, and other odd input, are 4xx
// problems naming the trouble, never a 500, and change nothing.
func TestOddBodiesAre4xx(t *testing.T) {
	a := start(t, token)
	before := a.do("GET", "/v1/registry", nil).body
	auth := []string{"Authorization", "Bearer " + token}
	deepArray := strings.Repeat("[", 200000) + strings.Repeat("]", 200000)
	deepObject := strings.Repeat(`{"a":`, 100000) + "1" + strings.Repeat("}", 100000)
	type tc struct {
		method, path, body string
		status             int
		detail             string
	}
	var cases []tc
	for _, path := range []string{"/v1/discover", "/v1/ground", "/v1/executions"} {
		for _, c := range []struct{ body, detail string }{
			{"null", "the body is null, not a JSON object"},
			{"[]", "the body is an array, not a JSON object"},
			{`"x"`, "the body is a string, not a JSON object"},
			{"1e999", "the body is a number, not a JSON object"},
			{" true", "the body is a boolean, not a JSON object"},
			{deepArray, "not a JSON object"},
			{deepObject, ""},
			{"{\"prompt\":\"\xff\xfe\"}", ""},
			{`{"prompt":1e400}`, ""},
			{`{"prompt":"a"} {}`, ""},
			{"\xef\xbb\xbf{}", ""},
			{`{"grounding":{"request":{}},"discovery":[1],"request":null}`, ""},
		} {
			cases = append(cases, tc{"POST", path, c.body, 400, c.detail})
		}
	}
	cases = append(cases,
		tc{"POST", "/v1/discover", `{"terms":"momentum"}`, 400, "terms"},
		tc{"POST", "/v1/discover", `{"terms":[1]}`, 400, ""},
		tc{"POST", "/v1/discover", `{}`, 400, "give a prompt or terms"},
		tc{"POST", "/v1/executions", `{"grounding":5}`, 400, "grounding"},
		tc{"POST", "/v1/executions", `{"grounding":null}`, 400, "grounding is missing"},
		tc{"POST", "/v1/executions", `{"grounding":"sha256:1"}`, 400, "grounding"},
		tc{"POST", "/v1/executions", `{}`, 400, "grounding is missing"},
		tc{"POST", "/v1/ground", `{"request":{},"discovery":5}`, 422, ""},
		tc{"POST", "/v1/ground", `{"request":{"family":1e308,"params":{"window":1e308}},"discovery":null}`, 422, ""},
		tc{"POST", "/v1/ground", `{}`, 422, ""},
	)
	for _, c := range []struct{ body, detail string }{
		{"null", "the body is null, not a JSON object"},
		{"[]", "the body is an array, not a JSON object"},
		{`"x"`, "the body is a string, not a JSON object"},
		{"12", "the body is a number, not a JSON object"},
		{"false", "the body is a boolean, not a JSON object"},
		{`{"name":5}`, "name: must be a string"},
		{`{"name":null}`, "name: must be a string"},
		{`{"name":"OTHER"}`, `the body names "OTHER" but the path names "X"`},
		{deepObject, ""},
		{"{\"kind\":\"\xff\"}", ""},
	} {
		cases = append(cases, tc{"PUT", "/v1/registry/capabilities/X", c.body, 400, c.detail})
	}
	cases = append(cases,
		tc{"PUT", "/v1/registry/capabilities/X", `{}`, 422, "layer is missing"},
		tc{"PUT", "/v1/registry/capabilities/X", strings.Replace(entry, `"arity":1`, `"arity":1e300`, 1), 422, "arity"},
		tc{"PUT", "/v1/registry/capabilities/X", strings.Replace(entry, `"arity":1`, `"arity":"one"`, 1), 422, "arity"},
		tc{"PUT", "/v1/registry/capabilities/X", strings.Replace(entry, `"sem":{`, `"sem":null,"x":{`, 1), 400, `unknown field "x"`},
	)
	for _, c := range cases {
		r := a.do(c.method, c.path, []byte(c.body), auth...)
		if r.status != c.status {
			t.Errorf("%s %s %.40q: %d, want %d: %.300s", c.method, c.path, c.body, r.status, c.status, r.body)
			continue
		}
		if p := r.problem(t); !strings.Contains(fmt.Sprint(p["detail"]), c.detail) {
			t.Errorf("%s %s %.40q: detail %q, want it to contain %q", c.method, c.path, c.body, p["detail"], c.detail)
		}
	}
	if after := a.do("GET", "/v1/registry", nil).body; !bytes.Equal(before, after) {
		t.Error("refused requests changed the registry")
	}
	if strings.Contains(a.logs.String(), "level=ERROR") {
		t.Errorf("odd input was logged as a server error:\n%s", a.logs)
	}
}

// rawRequest writes head (a request without its body) on a fresh
// connection and returns the first response line and how long it took.
func rawRequest(t *testing.T, addr, head string) (string, time.Duration, *bufio.Reader, net.Conn) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	// Generous for a refusal, which must come at once; short enough that
	// a regression (net/http waiting ReadTimeout for the body) fails fast.
	conn.SetDeadline(time.Now().Add(3 * time.Second))
	startAt := time.Now()
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("no answer after %v: %v", time.Since(startAt), err)
	}
	return strings.TrimSpace(line), time.Since(startAt), br, conn
}

// A request that is refused answers at once, without asking for (or
// waiting for) a body the client announced with Expect: 100-continue.
func TestExpectContinueRefusalsAnswerAtOnce(t *testing.T) {
	a := start(t, token)
	off := start(t, "")
	for _, c := range []struct {
		name, addr, head, status string
	}{
		{"415 media type", a.addr, "POST /v1/discover HTTP/1.1\r\nContent-Type: text/xml\r\n", "415"},
		{"415 content coding", a.addr, "POST /v1/discover HTTP/1.1\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n", "415"},
		{"401 no token", a.addr, "PUT /v1/registry/capabilities/X HTTP/1.1\r\nContent-Type: application/json\r\n", "401"},
		{"403 writes off", off.addr, "PUT /v1/registry/capabilities/X HTTP/1.1\r\nAuthorization: Bearer x\r\nContent-Type: application/json\r\n", "403"},
		{"404 no such path", a.addr, "POST /v1/nothing HTTP/1.1\r\nContent-Type: application/json\r\n", "404"},
		{"405 wrong method", a.addr, "DELETE /v1/registry HTTP/1.1\r\nContent-Type: application/json\r\n", "405"},
		{"413 declared too large", a.addr, "POST /v1/discover HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 5000000\r\n", "413"},
	} {
		head := c.head + "Host: x\r\nExpect: 100-continue\r\n"
		if !strings.Contains(head, "Content-Length") {
			head += "Content-Length: 100\r\n"
		}
		line, took, _, _ := rawRequest(t, c.addr, head+"\r\n")
		if !strings.HasPrefix(line, "HTTP/1.1 "+c.status+" ") || took > time.Second {
			t.Errorf("%s: %q after %v, want %s at once", c.name, line, took, c.status)
		}
	}
	// The control: an acceptable request is asked for its body, and answered
	// once it arrives.
	body := `{"prompt":"momentum on WTI"}`
	line, _, br, conn := rawRequest(t, a.addr, fmt.Sprintf("POST /v1/discover HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n", len(body)))
	if line != "HTTP/1.1 100 Continue" {
		t.Fatalf("accepted request: %q, want 100 Continue", line)
	}
	io.WriteString(conn, body)
	for line == "HTTP/1.1 100 Continue" || line == "" {
		var err error
		if line, err = br.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		line = strings.TrimSpace(line)
	}
	if !strings.HasPrefix(line, "HTTP/1.1 200 ") {
		t.Fatalf("after the body: %q", line)
	}
}

// Path parameters are percent-decoded on every route that has them.
func TestPercentEncodedPathParams(t *testing.T) {
	a := start(t, token)
	tr := a.execute()
	enc := func(d string) string { return strings.Replace(d, ":", "%3A", 1) }
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/v1/registry/capabilities/MOM%5FWZS", 200},
		{"GET", "/v1/registry/capabilities/%4D%4F%4D_WZS", 200},
		{"GET", "/v1/registry/versions/%31", 200},
		{"GET", "/v1/discoveries/" + enc(tr.discovery), 200},
		{"GET", "/v1/groundings/" + enc(tr.grounding), 200},
		{"GET", "/v1/executions/" + enc(tr.execution), 200},
		{"GET", "/v1/executions/" + strings.Replace(tr.execution, ":", "%3a", 1), 200},
		{"POST", "/v1/executions/" + enc(tr.execution) + "/replay", 200},
		{"GET", "/v1/diff/" + enc(tr.execution) + "/" + enc(tr.execution), 200},
		// Decoded exactly once: %254D names the literal "%4D", not "M".
		{"GET", "/v1/registry/capabilities/%254DOM_WZS", 404},
		// An encoded slash stays inside its segment and is refused there.
		{"GET", "/v1/executions/sha256%2F" + strings.Repeat("0", 64), 400},
	} {
		if r := a.do(c.method, c.path, nil); r.status != c.status {
			t.Errorf("%s %s: %d, want %d: %.300s", c.method, c.path, r.status, c.status, r.body)
		}
	}
	r := a.do("PUT", "/v1/registry/capabilities/CHOP%5F9", []byte(strings.Replace(entry, "{", `{"name":"CHOP_9",`, 1)), "Authorization", "Bearer "+token)
	if r.status != 201 {
		t.Fatalf("PUT CHOP%%5F9 naming CHOP_9: %d %s", r.status, r.body)
	}
	if r := a.do("GET", "/v1/registry/capabilities/CHOP_9", nil); r.status != 200 {
		t.Fatalf("stored under the decoded name: %d", r.status)
	}
}

// HEAD is answered wherever GET is, with GET's status and headers and no
// body; and every GET route registers HEAD, now and in future.
func TestHeadOnGetRoutes(t *testing.T) {
	a := start(t, token)
	tr := a.execute()
	paths := []string{
		"/healthz", "/readyz", "/metrics", "/openapi.json", "/v1/registry", "/v1/registry/history",
		"/v1/registry/capabilities/MOM_WZS", "/v1/registry/versions/1",
		"/v1/discoveries/" + tr.discovery, "/v1/groundings/" + tr.grounding,
		"/v1/executions/" + tr.execution, "/v1/diff/" + tr.execution + "/" + tr.execution,
		// the gateway's: public, and admin only without the token
		"/v1/upstreams", "/v1/upstreams/nope", "/v1/calls/" + tr.execution,
		"/v1/calls/" + tr.execution + "/attestation", "/v1/calls/" + tr.execution + "/diff/" + tr.execution,
		// errors too
		"/v1/registry/capabilities/NOPE", "/v1/registry/versions/x", "/v1/nothing",
	}
	for _, p := range paths {
		get, head := a.do("GET", p, nil), a.do("HEAD", p, nil)
		if head.status != get.status || head.status == 405 {
			t.Errorf("HEAD %s: %d, GET: %d", p, head.status, get.status)
		}
		if len(head.body) != 0 {
			t.Errorf("HEAD %s sent a %d-byte body", p, len(head.body))
		}
		for _, h := range []string{"Content-Type", "Content-Length", "Allow"} {
			if p == "/metrics" && h == "Content-Length" {
				continue // the scrape itself changes between the two requests
			}
			if head.header.Get(h) != get.header.Get(h) {
				t.Errorf("HEAD %s: %s %q, GET: %q", p, h, head.header.Get(h), get.header.Get(h))
			}
		}
	}
	routes := map[string]bool{}
	for _, r := range server.New(server.Deps{}, server.Config{}).Echo().Routes() {
		routes[r.Method+" "+r.Path] = true
	}
	for r := range routes {
		if p, ok := strings.CutPrefix(r, "GET "); ok && !routes["HEAD "+p] {
			t.Errorf("GET %s has no HEAD", p)
		}
	}
}

// Header fields over the server's limit are a 431 problem, not net/http's
// text/plain.
func TestHeaderTooLargeIsProblem(t *testing.T) {
	a := start(t, token)
	big := strings.Repeat("a", 100<<10)
	for _, path := range []string{"/healthz", "/v1/registry/capabilities/MOM_WZS", "/v1/nothing"} {
		r := a.do("GET", path, nil, "X-Big", big)
		if r.status != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("GET %s with a 100 KiB header: %d %.200s", path, r.status, r.body)
		}
		if p := r.problem(t); p["type"] != "urn:groundgate:problem:header-too-large" || !strings.Contains(p["detail"].(string), "65536") {
			t.Errorf("problem: %s", r.body)
		}
	}
	// Just under the limit is served.
	if r := a.do("GET", "/healthz", nil, "X-Big", strings.Repeat("a", 60<<10)); r.status != 200 {
		t.Errorf("60 KiB header: %d", r.status)
	}
	// Many fields count as much as one long one.
	req, _ := http.NewRequest("GET", a.base+"/healthz", nil)
	for i := range 2000 {
		req.Header.Set(fmt.Sprintf("X-F%d", i), strings.Repeat("b", 40))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 431 || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("2000 header fields: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

// History starts at version 1.
func TestRegistryVersionBounds(t *testing.T) {
	a := start(t, token)
	for _, c := range []struct {
		n      string
		status int
		detail string
	}{
		{"1", 200, ""},
		{"0", 404, "history starts at 1"},
		{"2", 404, "not found"},
		{"-1", 400, "not a non-negative integer"},
		{"x", 400, "not a non-negative integer"},
		{"1.0", 400, "not a non-negative integer"},
		{"18446744073709551616", 400, "out of range"},
		{"99999999999999999999999", 400, "out of range"},
		{"18446744073709551615", 404, "not found"},
	} {
		r := a.do("GET", "/v1/registry/versions/"+c.n, nil)
		if r.status != c.status {
			t.Errorf("version %s: %d, want %d: %s", c.n, r.status, c.status, r.body)
			continue
		}
		if c.status != 200 {
			if p := r.problem(t); !strings.Contains(p["detail"].(string), c.detail) {
				t.Errorf("version %s: %s", c.n, r.body)
			}
		}
	}
}

// A client that goes away mid-request is a 499 logged at INFO: not an
// error of ours, and never a 500 in the metrics. The request context is
// cancelled before the handler runs, exactly as net/http cancels it when
// the connection drops, so the real handlers meet a cancelled context.
func TestClientCancellationIs499(t *testing.T) {
	a := start(t, token)
	tr := a.execute()
	before := a.logs.String()
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/discover", `{"prompt":"momentum on WTI"}`},
		{"POST", "/v1/ground", fmt.Sprintf(`{"request":{"family":"MOM_WZS","metric":"SRP","params":{"window":[25,50]},"data":"oil-spot/wti-daily.csv"},"discovery":%q}`, tr.discovery)},
		{"POST", "/v1/executions", fmt.Sprintf(`{"grounding":%q}`, tr.grounding)},
		{"POST", "/v1/executions/" + tr.execution + "/replay", ""},
		{"GET", "/v1/discoveries/" + tr.discovery, ""},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		req := httptest.NewRequest(c.method, c.path, strings.NewReader(c.body)).WithContext(ctx)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		a.m.Handler().ServeHTTP(rec, req)
		if rec.Code != server.StatusClientClosedRequest {
			t.Errorf("%s %s with the client gone: %d, want 499: %s", c.method, c.path, rec.Code, rec.Body)
		}
	}
	logs := strings.TrimPrefix(a.logs.String(), before)
	if strings.Contains(logs, "level=ERROR") {
		t.Errorf("a client cancellation was logged as an error:\n%s", logs)
	}
	if n := strings.Count(logs, `level=INFO msg="client closed request"`); n != 5 {
		t.Errorf("%d INFO lines about the client closing, want 5:\n%s", n, logs)
	}
	metrics := string(a.do("GET", "/metrics", nil).body)
	if strings.Contains(metrics, `status="Internal Server Error"`) {
		t.Error("a client cancellation was counted as a 500")
	}
	if !strings.Contains(metrics, `groundgate_http_requests_total{method="POST",route="/v1/executions",status="Client Closed Request"} 1`) {
		t.Errorf("no 499 counted for /v1/executions:\n%s", grep(metrics, "groundgate_http_requests_total"))
	}
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// A compressed body is refused as such, not misread as broken JSON.
func TestContentEncodingRefused(t *testing.T) {
	a := start(t, token)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	io.WriteString(zw, `{"prompt":"momentum on WTI"}`)
	zw.Close()
	for _, enc := range []string{"gzip", "br", "deflate", "GZIP", "identity, gzip", "x-custom"} {
		r := a.do("POST", "/v1/discover", gz.Bytes(), "Content-Encoding", enc)
		if r.status != 415 {
			t.Errorf("Content-Encoding %q: %d %s", enc, r.status, r.body)
			continue
		}
		p := r.problem(t)
		if p["type"] != "urn:groundgate:problem:unsupported-media-type" || !strings.Contains(p["detail"].(string), "Content-Encoding") || r.header.Get("Accept-Encoding") != "identity" {
			t.Errorf("Content-Encoding %q: %v %s", enc, r.header, r.body)
		}
	}
	if r := a.do("PUT", "/v1/registry/capabilities/X", gz.Bytes(), "Content-Encoding", "gzip", "Authorization", "Bearer "+token); r.status != 415 {
		t.Errorf("PUT gzip: %d", r.status)
	}
	for _, enc := range []string{"identity", "Identity", ""} {
		if r := a.do("POST", "/v1/discover", []byte(`{"prompt":"momentum on WTI"}`), "Content-Encoding", enc); r.status != 200 {
			t.Errorf("Content-Encoding %q: %d %s", enc, r.status, r.body)
		}
	}
}

// variants returns doc with the value at each path (every object field and
// the first element of every array, recursively) replaced in turn by each
// of odd.
func variants(doc any, odd []any) []any {
	var out []any
	var walk func(v any, set func(any) any)
	walk = func(v any, set func(any) any) {
		switch v := v.(type) {
		case map[string]any:
			for k, child := range v {
				walk(child, func(x any) any {
					m := make(map[string]any, len(v))
					for kk, vv := range v {
						m[kk] = vv
					}
					m[k] = x
					return set(m)
				})
			}
		case []any:
			if len(v) > 0 {
				walk(v[0], func(x any) any {
					s := append([]any{x}, v[1:]...)
					return set(s)
				})
			}
		}
		for _, o := range odd {
			out = append(out, set(o))
		}
	}
	walk(doc, func(x any) any { return x })
	return out
}

// Every field of every body, given a value of the wrong type, a huge
// number, an empty or nested value: the answer is never a 5xx.
func TestWrongTypesEveryField(t *testing.T) {
	a := start(t, token)
	tr := a.execute()
	evidence := a.do("GET", "/v1/discoveries/"+tr.discovery, nil).body
	odd := []any{nil, true, 0, -1, 1e308, json.Number("18446744073709551616"), json.Number("1e-400"), "", "x", "\u0000",
		[]any{}, map[string]any{}, []any{[]any{}}, map[string]any{"": nil}}
	bodies := []struct{ method, path, body string }{
		{"POST", "/v1/discover", `{"prompt":"momentum on WTI","terms":["momentum"]}`},
		{"POST", "/v1/ground", fmt.Sprintf(`{"request":{"family":"MOM_WZS","metric":"SRP","params":{"window":[25,50]},"data":"oil-spot/wti-daily.csv"},"discovery":%q}`, tr.discovery)},
		{"POST", "/v1/ground", fmt.Sprintf(`{"request":{"family":"MOM_WZS","metric":"SRP","params":{"window":[25,50]},"data":"oil-spot/wti-daily.csv"},"discovery":%s}`, evidence)},
		{"POST", "/v1/executions", fmt.Sprintf(`{"grounding":%q}`, tr.grounding)},
		{"PUT", "/v1/registry/capabilities/ODD_1", `{"name":"ODD_1",` + entry[1:]},
	}
	n := 0
	for _, b := range bodies {
		var doc any
		if err := json.Unmarshal([]byte(b.body), &doc); err != nil {
			t.Fatal(err)
		}
		for _, v := range variants(doc, odd) {
			body, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			n++
			r := a.do(b.method, b.path, body, "Authorization", "Bearer "+token)
			if r.status >= 500 {
				t.Errorf("%s %s %.200s: %d %s", b.method, b.path, body, r.status, r.body)
			} else if r.status >= 400 {
				r.problem(t)
			}
		}
	}
	if strings.Contains(a.logs.String(), "level=ERROR") {
		t.Errorf("odd input was logged as a server error:\n%.2000s", a.logs)
	}
	t.Logf("%d requests", n)
}
