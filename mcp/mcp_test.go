package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/groundgate/groundgate/internal/app"
	"github.com/groundgate/groundgate/internal/app/apptest"
	"github.com/groundgate/groundgate/internal/testio"
	"github.com/groundgate/groundgate/mcp"
)

const (
	token  = "mcp-test-token"
	prompt = "momentum on WTI crude oil, scored by Sharpe ratio"
)

// request is what the agent proposes after discovering prompt.
const request = `{"family":"MOM_WZS","metric":"SRP","params":{"window":[25,50]},"data":"oil-spot/wti-daily.csv"}`

// stdioSession serves the engines over mcp.Stdio on in-process pipes and
// connects the SDK's own client to it.
func stdioSession(t *testing.T) *sdk.ClientSession {
	t.Helper()
	return stdioSessionOn(t, filepath.Join(t.TempDir(), "g.db"))
}

// stdioSessionOn is stdioSession on the database file db.
func stdioSessionOn(t *testing.T, db string) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e, err := app.OpenEngines(ctx, db, "")
	if err != nil {
		t.Fatal(err)
	}
	s, err := e.MCP(nil)
	if err != nil {
		t.Fatal(err)
	}
	toServer, clientOut := io.Pipe()
	clientIn, fromServer := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, mcp.Stdio(toServer, fromServer)) }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "groundgate-test", Version: "1"}, nil).
		Connect(ctx, &sdk.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		clientOut.Close()
		cancel()
		<-done
		fromServer.Close()
		e.Close()
	})
	return cs
}

// bearer adds the admin token to every request.
type bearer struct{ rt http.RoundTripper }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+token)
	return b.rt.RoundTrip(r)
}

// httpServer is a real groundgate server on a loopback port.
func httpServer(t *testing.T, adminToken string) string {
	t.Helper()
	m, _ := apptest.Serve(t, app.Config{AdminToken: adminToken})
	return "http://" + m.Addr()
}

func httpSession(t *testing.T, base string) *sdk.ClientSession {
	t.Helper()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "groundgate-test", Version: "1"}, nil).Connect(context.Background(),
		&sdk.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearer{http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestTransports(t *testing.T) {
	for _, tr := range []struct {
		name    string
		session func(*testing.T) *sdk.ClientSession
	}{
		{"stdio", stdioSession},
		{"http", func(t *testing.T) *sdk.ClientSession { return httpSession(t, httpServer(t, token)) }},
	} {
		t.Run(tr.name, func(t *testing.T) {
			cs := tr.session(t)
			t.Run("capabilities", func(t *testing.T) { capabilities(t, cs) })
			t.Run("tools", func(t *testing.T) { checkTools(t, cs) })
			var hash string
			t.Run("discover-ground-execute-replay", func(t *testing.T) { hash = workflow(t, cs) })
			t.Run("refusal", func(t *testing.T) { refusal(t, cs) })
			t.Run("resources", func(t *testing.T) { resources(t, cs, hash) })
			t.Run("bad-input", func(t *testing.T) { badInput(t, cs) })
		})
	}
}

// capabilities: initialize advertises exactly what the server implements
// (tools, resources and logging's setLevel; no list-change notifications,
// subscriptions, prompts or completions), and completion/complete, not
// advertised, answers -32601 (method not found), as the MCP conformance
// suite's completion-complete scenario finds it (tools/mcp-conformance.sh).
func capabilities(t *testing.T, cs *sdk.ClientSession) {
	got, err := json.Marshal(cs.InitializeResult().Capabilities)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"logging":{},"resources":{},"tools":{}}`; string(got) != want {
		t.Errorf("capabilities %s, want %s", got, want)
	}
	_, err = cs.Complete(context.Background(), &sdk.CompleteParams{
		Ref:      &sdk.CompleteReference{Type: "ref/resource", URI: "groundgate://capabilities/{name}"},
		Argument: sdk.CompleteParamsArgument{Name: "name", Value: "MOM"},
	})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != jsonrpc.CodeMethodNotFound {
		t.Errorf("completion/complete: %v, want method not found (-32601)", err)
	}
}

func checkTools(t *testing.T, cs *sdk.ClientSession) {
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if tool.InputSchema == nil || tool.OutputSchema == nil {
			t.Errorf("%s: input or output schema missing", tool.Name)
		}
		if tool.Description == "" || len(tool.Description) > 400 {
			t.Errorf("%s: description of %d bytes; keep it short and present", tool.Name, len(tool.Description))
		}
	}
	slices.Sort(names)
	if want := []string{"call", "diff", "discover", "execute", "get_capability", "ground", "replay"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	for _, tool := range res.Tools {
		if tool.Name == "discover" && !strings.HasPrefix(tool.Description, "Call this first.") {
			t.Errorf("discover must say it is the first call: %q", tool.Description)
		}
	}
}

// call calls a tool, checks its structured content against the output
// schema tools/list gave (with a JSON Schema validator the SDK does not
// use), and decodes it into out.
func call(t *testing.T, cs *sdk.ClientSession, name string, args any, out any) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := outputSchema(t, cs, name).Validate(inst); err != nil {
		t.Fatalf("%s (isError %v): the structured content does not match the output schema: %v\n%.600s", name, res.IsError, err, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: structured content %s: %v", name, b, err)
		}
	}
	return res
}

// outputSchema compiles the output schema tools/list gives for a tool.
func outputSchema(t *testing.T, cs *sdk.ClientSession, name string) *jsonschema.Schema {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(res.Tools, func(tool *sdk.Tool) bool { return tool.Name == name })
	if i < 0 {
		t.Fatalf("no tool %s", name)
	}
	b, err := json.Marshal(res.Tools[i].OutputSchema)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(name+".json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(name + ".json")
	if err != nil {
		t.Fatalf("%s: output schema: %v", name, err)
	}
	return sch
}

func mustSucceed(t *testing.T, name string, res *sdk.CallToolResult) {
	t.Helper()
	if res.IsError {
		t.Fatalf("%s: tool error: %v", name, text(res))
	}
}

func text(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// workflow is discover → ground → execute → replay → diff through MCP
// alone, and returns the execution hash.
func workflow(t *testing.T, cs *sdk.ClientSession) string {
	var d struct {
		ID      string `json:"id"`
		Matches []struct {
			Name string `json:"name"`
		} `json:"matches"`
	}
	mustSucceed(t, "discover", call(t, cs, "discover", map[string]any{"prompt": prompt}, &d))
	var g struct {
		ID       string `json:"id"`
		Decision struct {
			Admitted bool `json:"admitted"`
		} `json:"decision"`
	}
	mustSucceed(t, "ground", call(t, cs, "ground", map[string]any{"request": json.RawMessage(request), "discovery": d.ID}, &g))
	if !g.Decision.Admitted || g.ID == "" {
		t.Fatalf("grounding %+v not admitted", g)
	}
	var fp struct {
		Hash      string `json:"hash"`
		Grounding string `json:"grounding"`
	}
	res := call(t, cs, "execute", map[string]any{"grounding": g.ID}, &fp)
	mustSucceed(t, "execute", res)
	if fp.Grounding != g.ID || !strings.HasPrefix(fp.Hash, "sha256:") {
		t.Fatalf("footprint %+v for grounding %s", fp, g.ID)
	}
	if !json.Valid([]byte(text(res))) {
		t.Errorf("execute's text content is not the footprint's JSON")
	}
	var rep struct {
		Match bool   `json:"match"`
		Hash  string `json:"replay_hash"`
	}
	mustSucceed(t, "replay", call(t, cs, "replay", map[string]any{"hash": fp.Hash}, &rep))
	if !rep.Match || rep.Hash != fp.Hash {
		t.Fatalf("replay %+v of %s", rep, fp.Hash)
	}
	var diff struct {
		Same bool `json:"same"`
	}
	mustSucceed(t, "diff", call(t, cs, "diff", map[string]any{"a": fp.Hash, "b": fp.Hash}, &diff))
	if !diff.Same {
		t.Fatal("an execution differs from itself")
	}
	var c struct {
		Name     string `json:"name"`
		Identity string `json:"identity"`
	}
	mustSucceed(t, "get_capability", call(t, cs, "get_capability", map[string]any{"name": "MOM_WZS"}, &c))
	if c.Name != "MOM_WZS" || c.Identity == "" {
		t.Fatalf("capability %+v", c)
	}
	return fp.Hash
}

// refusal: the gate's refusal is a tool error carrying REST's problem,
// failures and codes included, and text that says what to do.
func refusal(t *testing.T, cs *sdk.ClientSession) {
	var d struct {
		ID string `json:"id"`
	}
	mustSucceed(t, "discover", call(t, cs, "discover", map[string]any{"prompt": prompt}, &d))
	wrong := strings.Replace(request, "MOM_WZS", "MOM_REV", 1) // exists, but "momentum" did not ask for it
	var p struct {
		Type     string `json:"type"`
		Status   int    `json:"status"`
		Failures []struct {
			Field string   `json:"field"`
			Code  string   `json:"code"`
			Codes []string `json:"codes"`
		} `json:"failures"`
		Grounding struct {
			ID string `json:"id"`
		} `json:"grounding"`
	}
	res := call(t, cs, "ground", map[string]any{"request": json.RawMessage(wrong), "discovery": d.ID}, &p)
	if !res.IsError {
		t.Fatal("an unwarranted family was admitted")
	}
	if p.Type != "urn:groundgate:problem:not-grounded" || p.Status != 422 || len(p.Failures) != 1 ||
		p.Failures[0].Field != "family" || p.Failures[0].Code != "F3" || p.Grounding.ID == "" {
		t.Fatalf("refusal %+v", p)
	}
	if txt := text(res); !strings.Contains(txt, "F3") || !strings.Contains(txt, "Next (F3)") {
		t.Errorf("refusal text does not guide the model: %q", txt)
	}
	// Executing a refused grounding is refused too, as a tool error.
	var p2 struct {
		Type string `json:"type"`
	}
	res = call(t, cs, "execute", map[string]any{"grounding": p.Grounding.ID}, &p2)
	if !res.IsError || p2.Type != "urn:groundgate:problem:not-admitted" {
		t.Fatalf("execute of a refused grounding: isError %v, %+v", res.IsError, p2)
	}
}

func resources(t *testing.T, cs *sdk.ClientSession, hash string) {
	ctx := context.Background()
	tpls, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, tpl := range tpls.ResourceTemplates {
		uris = append(uris, tpl.URITemplate)
	}
	slices.Sort(uris)
	if want := []string{"groundgate://capabilities/{name}", "groundgate://executions/{+hash}"}; !slices.Equal(uris, want) {
		t.Fatalf("templates %v, want %v", uris, want)
	}
	for uri, want := range map[string]string{
		"groundgate://executions/" + hash:   `"hash":"` + hash + `"`,
		"groundgate://capabilities/MOM_WZS": `"name":"MOM_WZS"`,
	} {
		res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatalf("%s: %v", uri, err)
		}
		if len(res.Contents) != 1 || !strings.Contains(res.Contents[0].Text, want) || res.Contents[0].MIMEType != "application/json" {
			t.Fatalf("%s: %+v", uri, res.Contents)
		}
	}
	_, err = cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "groundgate://executions/sha256:" + strings.Repeat("0", 64)})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != sdk.CodeResourceNotFound {
		t.Fatalf("a missing footprint: %v, want resource not found", err)
	}
}

// badInput: what REST answers 400 is a JSON-RPC invalid-params error, and
// the session goes on.
func badInput(t *testing.T, cs *sdk.ClientSession) {
	for _, c := range []struct {
		name, tool string
		args       any
		want       string
	}{
		{"unknown tool", "nope", map[string]any{}, `unknown tool "nope"`},
		{"wrong type", "discover", map[string]any{"prompt": 5}, "cannot unmarshal number"},
		{"unknown argument", "replay", map[string]any{"hash": "sha256:" + strings.Repeat("0", 64), "extra": 1}, `unknown field "extra"`},
		{"malformed digest", "execute", map[string]any{"grounding": "not-a-digest"}, "grounding"},
		{"oversized", "discover", map[string]any{"prompt": strings.Repeat("x", mcp.DefaultMaxArguments)}, "the limit is"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: c.tool, Arguments: c.args})
			var we *jsonrpc.Error
			if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams || !strings.Contains(we.Message, c.want) {
				t.Fatalf("got %v, want invalid params mentioning %q", err, c.want)
			}
		})
	}
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatalf("the session did not survive bad input: %v", err)
	}
}

// TestStdioMalformedFrames writes raw lines: each one that is not a
// JSON-RPC message gets JSON-RPC's error with a null id, and requests
// around them are still answered.
func TestStdioMalformedFrames(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, err := app.OpenEngines(ctx, filepath.Join(t.TempDir(), "g.db"), "")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s, err := e.MCP(nil)
	if err != nil {
		t.Fatal(err)
	}
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{bad json`,
		`[{"jsonrpc":"2.0","id":9,"method":"tools/list"}]`,
		`"a string"`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"no/such/method"}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"discover","arguments":"not an object"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"discover","arguments":{"prompt":"` + strings.Repeat("y", mcp.MaxFrame) + `"}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"get_capability","arguments":{"name":"MOM_WZS"}}}`,
	}
	// The input stays open until the last request is answered, as a
	// client's does: the session ends when its input does.
	in, w := io.Pipe()
	var out testio.SyncBuffer
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, mcp.Stdio(in, &out)) }()
	for _, l := range lines {
		if _, err := io.WriteString(w, l+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), `"id":6,`); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("request 6 not answered: %.2000s", out.String())
		}
	}
	w.Close()
	if err := <-done; err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("the session ended with %v", err)
	}
	var nullIDErrors []int64
	answered := map[float64]map[string]any{}
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("the server wrote a line that is not JSON: %.200s", sc.Text())
		}
		id, hasID := m["id"]
		switch {
		case hasID && id == nil:
			nullIDErrors = append(nullIDErrors, int64(m["error"].(map[string]any)["code"].(float64)))
		case hasID:
			answered[id.(float64)] = m
		default:
			t.Fatalf("a response without an id: %s", sc.Text())
		}
	}
	slices.Sort(nullIDErrors)
	// bad json → parse error; batch, a string, the oversized line → invalid request.
	if want := []int64{jsonrpc.CodeParseError, jsonrpc.CodeInvalidRequest, jsonrpc.CodeInvalidRequest, jsonrpc.CodeInvalidRequest}; !slices.Equal(nullIDErrors, slices.Sorted(slices.Values(want))) {
		t.Errorf("null-id errors %v, want %v", nullIDErrors, want)
	}
	for id, want := range map[float64]string{1: "result", 2: "result", 3: "error", 4: "error", 6: "result"} {
		if _, ok := answered[id][want]; !ok {
			t.Errorf("request %v: want a %s, got %v", id, want, answered[id])
		}
	}
	if _, ok := answered[5]; ok {
		t.Errorf("the oversized request was answered as a request")
	}
}

// TestHTTPAuthAndFrames: /mcp needs the admin token as registry writes
// do, refuses without one configured, and answers a malformed body with a
// 4xx, never a 5xx.
func TestHTTPAuthAndFrames(t *testing.T) {
	base := httpServer(t, token)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	post := func(base, body, auth string) (int, string) {
		req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if st, body := post(base, init, ""); st != 401 || !strings.Contains(body, "/mcp needs Authorization") {
		t.Errorf("no token: %d %s", st, body)
	}
	if st, _ := post(base, init, "wrong"); st != 401 {
		t.Errorf("wrong token: %d", st)
	}
	if st, body := post(base, init, token); st != 200 || !strings.Contains(body, `"serverInfo"`) {
		t.Errorf("initialize: %d %s", st, body)
	}
	for _, body := range []string{`{bad json`, `[]`, `"x"`, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"discover","arguments":{"prompt":"` + strings.Repeat("z", mcp.MaxFrame) + `"}}}`} {
		st, resp := post(base, body, token)
		if st < 400 || st >= 500 {
			t.Errorf("%.30s…: %d %.200s", body, st, resp)
		}
	}
	if st, _ := post(base, init, token); st != 200 {
		t.Errorf("the server does not answer after malformed bodies: %d", st)
	}
	off := httpServer(t, "")
	if st, body := post(off, init, "anything"); st != 403 || !strings.Contains(body, "stdio needs none") {
		t.Errorf("no admin token configured: %d %s", st, body)
	}
}

// TestSameExecutionOverRESTAndMCP: one engine, one gate — the same
// request grounded over REST and over MCP executes to the same hash.
func TestSameExecutionOverRESTAndMCP(t *testing.T) {
	base := httpServer(t, token)
	cs := httpSession(t, base)
	viaMCP := workflow(t, cs)
	rest := func(path, body string) map[string]any {
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode >= 300 {
			t.Fatalf("%s: %d %v %v", path, resp.StatusCode, m, err)
		}
		return m
	}
	d := rest("/v1/discover", fmt.Sprintf(`{"prompt":%q}`, prompt))
	g := rest("/v1/ground", fmt.Sprintf(`{"request":%s,"discovery":%q}`, request, d["id"]))
	x := rest("/v1/executions", fmt.Sprintf(`{"grounding":%q}`, g["id"]))
	if x["hash"] != viaMCP {
		t.Fatalf("REST executed %v, MCP %v", x["hash"], viaMCP)
	}
}
