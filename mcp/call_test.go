package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/groundgate/groundgate/gateway/upstreamtest"
	"github.com/groundgate/groundgate/internal/app"
	"github.com/groundgate/groundgate/internal/app/apptest"
)

// rest sends one admin request to a running server and returns its
// status and body.
func rest(t *testing.T, base, method, path, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// TestCallTool: the call tool goes through the gateway's Γ, over /mcp and
// over stdio (groundgate mcp on the same database, its upstreams started
// by the engines): an exempt read answers with the upstream's content and
// the footprint's hash, an undiscovered write is refused with F3, an
// unknown tool with F2, and an upstream that answers garbage is a tool
// error naming the upstream's problem type.
func TestCallTool(t *testing.T) {
	bin := upstreamtest.Build(t)
	db := filepath.Join(t.TempDir(), "g.db")
	m, stop := apptest.Serve(t, app.Config{AdminToken: token, DB: db})
	base := "http://" + m.Addr()
	for name, cfg := range map[string]string{
		"items": `{"transport": "stdio", "command": [` + quote(bin) + `], "ground": "writes"}`,
		"junk":  `{"transport": "stdio", "command": [` + quote(bin) + `, "--garbage", "echo"], "ground": "writes"}`,
	} {
		if st, b := rest(t, base, "PUT", "/v1/upstreams/"+name, cfg); st != 201 {
			t.Fatalf("PUT %s: %d %s", name, st, b)
		}
		if st, b := rest(t, base, "POST", "/v1/upstreams/"+name+"/sync", `{"apply": true}`); st != 200 || !strings.Contains(string(b), `"applied":true`) {
			t.Fatalf("sync %s: %d %s", name, st, b)
		}
	}
	t.Run("http", func(t *testing.T) { callChecks(t, httpSession(t, base)) })
	stop()
	t.Run("stdio", func(t *testing.T) { callChecks(t, stdioSessionOn(t, db)) })
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func callChecks(t *testing.T, cs *sdk.ClientSession) {
	// A gateway just started has not listed its upstreams' tools yet:
	// calls are upstream-unavailable (502) until it has.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "call", Arguments: map[string]any{"tool": "items.echo", "arguments": map[string]any{"text": "up?"}}})
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError || !strings.Contains(text(res), "upstream-unavailable") || time.Now().After(deadline) {
			break
		}
	}
	// An exempt read: no discovery, the upstream's own result.
	var ok struct {
		Hash              string `json:"hash"`
		Tool              string `json:"tool"`
		StructuredContent struct {
			ID    string `json:"id"`
			Found *bool  `json:"found"`
		} `json:"structured_content"`
	}
	res := call(t, cs, "call", map[string]any{"tool": "items.get_item", "arguments": map[string]any{"id": "a"}}, &ok)
	mustSucceed(t, "call items.get_item", res)
	if !strings.HasPrefix(ok.Hash, "sha256:") || ok.Tool != "items.get_item" || ok.StructuredContent.ID != "a" || ok.StructuredContent.Found == nil {
		t.Fatalf("call result %+v", ok)
	}
	var echo struct {
		Hash string `json:"hash"`
	}
	res = call(t, cs, "call", map[string]any{"tool": "items.echo", "arguments": map[string]any{"text": "hello, gate"}}, &echo)
	mustSucceed(t, "call items.echo", res)
	if len(res.Content) != 1 || text(res) != "hello, gate" {
		t.Fatalf("echo's content was not passed through: %+v", res.Content)
	}
	if echo.Hash == "" || echo.Hash == ok.Hash {
		t.Fatalf("echo's footprint hash %q (get_item's %q)", echo.Hash, ok.Hash)
	}

	type problem struct {
		Type     string `json:"type"`
		Status   int    `json:"status"`
		Failures []struct {
			Field string `json:"field"`
			Code  string `json:"code"`
			Value string `json:"value"`
		} `json:"failures"`
	}
	// A write the researcher's words did not discover: F3, as REST's 422.
	var d struct {
		ID string `json:"id"`
	}
	mustSucceed(t, "discover", call(t, cs, "discover", map[string]any{"prompt": prompt}, &d))
	var p problem
	res = call(t, cs, "call", map[string]any{"tool": "items.put_item", "arguments": map[string]any{"id": "a", "value": "x"}, "discovery": d.ID}, &p)
	if !res.IsError || p.Type != "urn:groundgate:problem:call-refused" || p.Status != 422 ||
		len(p.Failures) != 1 || p.Failures[0].Code != "F3" || p.Failures[0].Value != "items.put_item" {
		t.Fatalf("undiscovered write: isError %v, %+v", res.IsError, p)
	}
	if txt := text(res); !strings.Contains(txt, "Next (F3)") {
		t.Errorf("refusal text does not guide the model: %q", txt)
	}
	// Without any discovery: refused too.
	p = problem{}
	res = call(t, cs, "call", map[string]any{"tool": "items.delete_all"}, &p)
	if !res.IsError || len(p.Failures) != 1 || p.Failures[0].Code != "F3" || p.Failures[0].Field != "discovery" {
		t.Fatalf("write without discovery: isError %v, %+v", res.IsError, p)
	}
	// An unknown tool: F2.
	p = problem{}
	res = call(t, cs, "call", map[string]any{"tool": "items.no_such_tool", "arguments": map[string]any{}}, &p)
	if !res.IsError || p.Type != "urn:groundgate:problem:call-refused" || len(p.Failures) != 1 || p.Failures[0].Code != "F2" {
		t.Fatalf("unknown tool: isError %v, %+v", res.IsError, p)
	}
	// An upstream answering garbage: a tool error naming the problem.
	p = problem{}
	res = call(t, cs, "call", map[string]any{"tool": "junk.echo", "arguments": map[string]any{"text": "x"}}, &p)
	if !res.IsError || p.Status != 502 || !strings.HasPrefix(p.Type, "urn:groundgate:problem:upstream-") {
		t.Fatalf("garbage upstream: isError %v, %+v %s", res.IsError, p, text(res))
	}
	if txt := text(res); !strings.Contains(txt, strings.TrimPrefix(p.Type, "urn:groundgate:problem:")) {
		t.Errorf("the text does not name the problem type %s: %q", p.Type, txt)
	}
}

// TestCallToolBadArguments: arguments that are not the documented shape
// are invalid params, as for every tool (REST's 400).
func TestCallToolBadArguments(t *testing.T) {
	cs := stdioSession(t)
	_, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "call", Arguments: map[string]any{"tool": "a.b", "extra": 1}})
	if err == nil || !strings.Contains(err.Error(), "extra") {
		t.Fatalf("an unknown argument: %v, want invalid params", err)
	}
}
