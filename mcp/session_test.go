package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/groundgate/groundgate/gateway"
	"github.com/groundgate/groundgate/gateway/upstreamtest"
	"github.com/groundgate/groundgate/internal/app"
	"github.com/groundgate/groundgate/internal/app/apptest"
	"github.com/groundgate/groundgate/mcp"
)

// airlineBin is cmd/airline-mcp, built once by TestMain: a real MCP
// server over stdio (τ-bench's airline tools), the sessions' upstream.
var airlineBin string

func TestMain(m *testing.M) {
	os.Exit(apptest.MainWithCommand(m, apptest.AirlinePkg, func(bin string) { airlineBin = bin }))
}

// airlineReads are the airline's read-only tools: exempt, as the
// upstream grounds writes only.
var airlineReads = []string{
	"airline.calculate", "airline.get_reservation_details", "airline.get_user_details", "airline.list_all_airports",
	"airline.search_direct_flight", "airline.search_onestop_flight", "airline.think", "airline.transfer_to_human_agents",
}

// hostREST speaks REST to a wired server, as a host does.
type hostREST struct {
	apptest.Client
	t    *testing.T
	base string
}

func (c hostREST) do(method, path, token string, body any) (int, map[string]any) {
	c.t.Helper()
	return c.Do(method, path, token, body)
}

func (c hostREST) want(status int, method, path, token string, body any) map[string]any {
	c.t.Helper()
	return c.Want(status, method, path, token, body)
}

// serveAirline serves a new database with the airline upstream
// configured (grounding writes only) and synced, with discovery words for
// two of its writes.
func serveAirline(t *testing.T) hostREST {
	t.Helper()
	c, _ := serveAirlineOn(t, filepath.Join(t.TempDir(), "g.db"))
	return c
}

// serveAirlineOn is serveAirline on the database file db, with the
// function that stops the server.
func serveAirlineOn(t *testing.T, db string) (hostREST, func()) {
	t.Helper()
	m, stop := apptest.Serve(t, app.Config{DB: db, AdminToken: token, Clock: time.Date(2024, 5, 15, 20, 0, 0, 0, time.UTC),
		Gateway: gateway.Limits{CallTimeout: 15 * time.Second, BackoffMin: 50 * time.Millisecond, BackoffMax: 500 * time.Millisecond, StopGrace: 300 * time.Millisecond}})
	c := hostREST{Client: apptest.Client{TB: t, Base: "http://" + m.Addr()}, t: t, base: "http://" + m.Addr()}
	fixture, _ := filepath.Abs("../airline/testdata/db")
	c.want(http.StatusCreated, http.MethodPut, "/v1/upstreams/airline", token, map[string]any{
		"transport": "stdio", "command": []string{airlineBin, "--db", fixture}, "ground": "writes",
	})
	c.WaitUpstream("airline")
	c.want(http.StatusOK, http.MethodPost, "/v1/upstreams/airline/sync", token, map[string]any{"apply": true, "overlay": map[string]any{
		"cancel_reservation":          map[string]any{"disc": map[string]any{"aliases": []string{"cancel my reservation"}}},
		"update_reservation_baggages": map[string]any{"disc": map[string]any{"aliases": []string{"add checked bags"}}},
	}})
	return c, stop
}

// open opens a session on prompt and returns its id, token and the tools
// its discovery matched.
func (c hostREST) open(prompt string, agentDiscovery bool) (id, tok string, tools []string) {
	c.t.Helper()
	out := c.want(http.StatusCreated, http.MethodPost, "/v1/sessions", token, map[string]any{"prompt": prompt, "agent_discovery": agentDiscovery})
	return out["id"].(string), out["token"].(string), toolMatches(out["discovery"])
}

// toolMatches are a discovery's matches of kind tool, by name.
func toolMatches(disc any) []string {
	var out []string
	for _, m := range disc.(map[string]any)["matches"].([]any) {
		m := m.(map[string]any)
		if m["kind"] == "tool" && !slices.Contains(out, m["name"].(string)) {
			out = append(out, m["name"].(string))
		}
	}
	return out
}

// withToken adds a bearer token to every request.
type withToken struct {
	token string
	rt    http.RoundTripper
}

func (w withToken) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+w.token)
	return w.rt.RoundTrip(r)
}

// mcpClient connects the SDK's client to /mcp with tok.
func mcpClient(t *testing.T, base, tok string, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	tr := &sdk.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: withToken{tok, http.DefaultTransport}}}
	return upstreamtest.Connect(t, tr, opts, nil)
}

func names(tools map[string]*sdk.Tool) []string {
	out := make([]string, 0, len(tools))
	for n := range tools {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// union is the sorted union of lists.
func union(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		for _, s := range l {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	slices.Sort(out)
	return out
}

// failureCodes are a refusal's failures as field:code, from its
// structured content (REST's problem).
func failureCodes(t *testing.T, res *sdk.CallToolResult) string {
	t.Helper()
	if !res.IsError {
		t.Fatalf("not a tool error: %+v", res)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Failures []struct {
			Field string `json:"field"`
			Code  string `json:"code"`
		} `json:"failures"`
		Session *struct {
			Decision string `json:"decision"`
		} `json:"session"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	if p.Session == nil || p.Session.Decision != "refused" {
		t.Errorf("the problem lacks the session's record of the refused call: %s", raw)
	}
	var out []string
	for _, f := range p.Failures {
		out = append(out, f.Field+":"+f.Code)
	}
	return strings.Join(out, ",")
}

// TestSessionOverMCP drives sessions through /mcp with their tokens,
// against the real airline upstream, with the SDK's client: a session
// lists its grounded tools and the exempt reads, with the approved
// entries; an ungrounded write is refused (F3, recorded); a read then the
// grounded write are admitted; a host's turn grounding a new tool sends
// tools/list_changed and the tool is listed; another session's token sees
// its own tools only and cannot use this session's MCP session; without
// agent_discovery there is no discover tool; the admin token keeps /mcp's
// own tools; a closed session lists nothing and takes no call.
func TestSessionOverMCP(t *testing.T) {
	c := serveAirline(t)
	id, tok, grounded := c.open("Hi, I am chen_lee_6825 and I want to cancel my reservation JW6LEQ, my plans changed.", false)
	_, otherTok, otherGrounded := c.open("what is the status of my flight", false)
	if !slices.Contains(grounded, "airline.cancel_reservation") || slices.Contains(grounded, "airline.update_reservation_baggages") {
		t.Fatalf("the words grounded %v", grounded)
	}

	opts, changed := upstreamtest.ListChanged()
	cs := mcpClient(t, c.base, tok, opts)
	if caps := cs.InitializeResult().Capabilities; caps.Tools == nil || !caps.Tools.ListChanged {
		t.Errorf("capabilities: %+v", caps)
	}
	if ins := cs.InitializeResult().Instructions; ins == "" || strings.Contains(ins, "discover") {
		t.Errorf("instructions without agent_discovery: %q", ins)
	}
	if lr, err := cs.ListTools(context.Background(), nil); err != nil || lr.CacheScope != "private" {
		t.Errorf("tools/list cache scope: %+v, %v", lr, err)
	}
	tools := upstreamtest.ListAll(t, cs)
	if got, want := names(tools), union(airlineReads, grounded); !slices.Equal(got, want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
	// The approved entry, not the live upstream's: REST's registry entry.
	entry := c.want(http.StatusOK, http.MethodGet, "/v1/registry/capabilities/airline.cancel_reservation", "", nil)
	disc := entry["disc"].(map[string]any)
	cancel := tools["airline.cancel_reservation"]
	if cancel.Description != disc["description"] || cancel.Annotations == nil || cancel.Annotations.ReadOnlyHint {
		t.Errorf("cancel_reservation listed as %+v, the entry's disc is %v", cancel, disc)
	}
	schema, _ := json.Marshal(cancel.InputSchema)
	want, _ := json.Marshal(entry["alg"].(map[string]any)["input_schema"])
	if !bytes.Equal(schema, want) {
		t.Errorf("input schema %s, the entry's %s", schema, want)
	}

	// A write the words did not ask for: F3, recorded as refused.
	res := upstreamtest.Call(t, cs, "airline.update_reservation_baggages",
		map[string]any{"reservation_id": "JW6LEQ", "total_baggages": 3, "nonfree_baggages": 0, "payment_id": "credit_card_1"})
	if got := failureCodes(t, res); got != "tool:F3" {
		t.Fatalf("ungrounded write: %s", got)
	}
	if text := upstreamtest.Text(t, res); !strings.Contains(text, "F3") || !strings.Contains(text, "Next") {
		t.Errorf("the refusal's text: %s", text)
	}

	// The read, then the write the words asked for: admitted, the
	// upstream's own results.
	res = upstreamtest.Call(t, cs, "airline.get_reservation_details", map[string]any{"reservation_id": "JW6LEQ"})
	if res.IsError || !strings.Contains(upstreamtest.Text(t, res), `"reservation_id": "JW6LEQ"`) {
		t.Fatalf("read: %+v %s", res, upstreamtest.Text(t, res))
	}
	res = upstreamtest.Call(t, cs, "airline.cancel_reservation", map[string]any{"reservation_id": "JW6LEQ"})
	if res.IsError || !strings.Contains(upstreamtest.Text(t, res), `"status": "cancelled"`) {
		t.Fatalf("cancel: %+v %s", res, upstreamtest.Text(t, res))
	}
	sess := c.want(http.StatusOK, http.MethodGet, "/v1/sessions/"+id, tok, nil)
	var decisions []string
	for _, call := range sess["calls"].([]any) {
		call := call.(map[string]any)
		decisions = append(decisions, call["tool"].(string)+":"+call["decision"].(string))
	}
	if want := []string{"airline.update_reservation_baggages:refused", "airline.get_reservation_details:admitted", "airline.cancel_reservation:admitted"}; !slices.Equal(decisions, want) {
		t.Fatalf("the session recorded %v, want %v", decisions, want)
	}

	// The host's next turn grounds a tool: the client is told, and lists it.
	select {
	case <-changed:
		t.Fatal("tools/list_changed before any turn")
	default:
	}
	turn := c.want(http.StatusOK, http.MethodPost, "/v1/sessions/"+id+"/turns", token, map[string]any{"prompt": "And please add checked bags to my other reservation."})
	if !slices.Contains(toolMatches(turn["discovery"]), "airline.update_reservation_baggages") {
		t.Fatalf("the turn grounded %v", toolMatches(turn["discovery"]))
	}
	upstreamtest.WaitListChanged(t, changed)
	if got := names(upstreamtest.ListAll(t, cs)); !slices.Contains(got, "airline.update_reservation_baggages") {
		t.Fatalf("after the turn: %v", got)
	}

	// No discover tool without agent_discovery.
	if _, ok := tools["discover"]; ok {
		t.Error("discover listed in a session without agent_discovery")
	}
	if _, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "discover", Arguments: map[string]any{"prompt": "book a flight"}}); err == nil {
		t.Error("discover called in a session without agent_discovery")
	}

	// Another session's token: its own tools only; this session's tools
	// refused (its words did not ground them); this session's MCP session
	// out of reach.
	other := mcpClient(t, c.base, otherTok, nil)
	if got, want := names(upstreamtest.ListAll(t, other)), union(airlineReads, otherGrounded); !slices.Equal(got, want) {
		t.Fatalf("the other session lists %v, want %v", got, want)
	}
	res = upstreamtest.Call(t, other, "airline.cancel_reservation", map[string]any{"reservation_id": "JW6LEQ"})
	if got := failureCodes(t, res); got != "tool:F3" {
		t.Fatalf("the other session's cancel: %s", got)
	}
	for _, tc := range []struct {
		token string
		want  int
	}{{otherTok, http.StatusForbidden}, {"ggs_" + strings.Repeat("A", 43), http.StatusUnauthorized}, {"", http.StatusUnauthorized}} {
		req, _ := http.NewRequest(http.MethodPost, c.base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", cs.ID())
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("tools/list on this session's MCP session with token %.8q: %d %s, want %d", tc.token, resp.StatusCode, body, tc.want)
		}
	}

	// The admin token keeps /mcp's own tools.
	admin := mcpClient(t, c.base, token, nil)
	if got := names(upstreamtest.ListAll(t, admin)); !slices.Contains(got, "ground") || slices.Contains(got, "airline.cancel_reservation") {
		t.Errorf("the admin's /mcp lists %v", got)
	}

	// Closed: nothing is listed, a call is refused.
	for len(changed) > 0 {
		<-changed
	}
	c.want(http.StatusOK, http.MethodDelete, "/v1/sessions/"+id, token, nil)
	upstreamtest.WaitListChanged(t, changed)
	if got := names(upstreamtest.ListAll(t, cs)); len(got) != 0 {
		t.Errorf("a closed session lists %v", got)
	}
	res = upstreamtest.Call(t, cs, "airline.get_reservation_details", map[string]any{"reservation_id": "JW6LEQ"})
	if !res.IsError || !strings.Contains(upstreamtest.Text(t, res), "session-closed") {
		t.Errorf("a call in a closed session: %s", upstreamtest.Text(t, res))
	}
}

// TestSessionOverMCPAgentDiscovery: in a session opened with
// agent_discovery, the agent's discover adds a turn of its own words
// (recorded as the agent's), the client is told, and the tool its words
// grounded is listed and admitted.
func TestSessionOverMCPAgentDiscovery(t *testing.T) {
	c := serveAirline(t)
	id, tok, _ := c.open("Hi, I am chen_lee_6825 and I want to cancel my reservation JW6LEQ.", true)
	opts, changed := upstreamtest.ListChanged()
	cs := mcpClient(t, c.base, tok, opts)
	tools := upstreamtest.ListAll(t, cs)
	if _, ok := tools["discover"]; !ok {
		t.Fatalf("no discover tool: %v", names(tools))
	}
	if ins := cs.InitializeResult().Instructions; !strings.Contains(ins, "call discover") {
		t.Errorf("instructions with agent_discovery: %q", ins)
	}
	if _, ok := tools["airline.update_reservation_baggages"]; ok {
		t.Fatal("update_reservation_baggages listed before the words ask for it")
	}
	res := upstreamtest.Call(t, cs, "discover", map[string]any{"prompt": "The user wants to add checked bags to reservation JW6LEQ."})
	if res.IsError {
		t.Fatalf("discover: %s", upstreamtest.Text(t, res))
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var d struct {
		Discovery struct {
			ID string `json:"id"`
		} `json:"discovery"`
		Tools []string `json:"tools"`
	}
	if err := json.Unmarshal(raw, &d); err != nil || !slices.Contains(d.Tools, "airline.update_reservation_baggages") || d.Discovery.ID == "" {
		t.Fatalf("discover answered %s", raw)
	}
	upstreamtest.WaitListChanged(t, changed)
	if got := names(upstreamtest.ListAll(t, cs)); !slices.Contains(got, "airline.update_reservation_baggages") {
		t.Fatalf("after discover: %v", got)
	}
	sess := c.want(http.StatusOK, http.MethodGet, "/v1/sessions/"+id, tok, nil)
	turns := sess["turns"].([]any)
	if len(turns) != 2 || turns[1].(map[string]any)["by"] != "agent" || turns[1].(map[string]any)["evidence"] != d.Discovery.ID {
		t.Fatalf("turns: %v", turns)
	}
	// A call the agent's words grounded is marked so in its footprint; one
	// the user's words grounded is not.
	upstreamtest.Call(t, cs, "airline.update_reservation_baggages", map[string]any{
		"reservation_id": "JW6LEQ", "total_baggages": 5, "nonfree_baggages": 0, "payment_id": "credit_card_4938634"})
	upstreamtest.Call(t, cs, "airline.cancel_reservation", map[string]any{"reservation_id": "JW6LEQ"})
	calls := c.want(http.StatusOK, http.MethodGet, "/v1/sessions/"+id, tok, nil)["calls"].([]any)
	for i, want := range map[int]any{len(calls) - 2: "agent", len(calls) - 1: nil} {
		fp := c.want(http.StatusOK, http.MethodGet, "/v1/calls/"+calls[i].(map[string]any)["hash"].(string), token, nil)
		if got := fp["decision"].(map[string]any)["words"]; got != want {
			t.Errorf("call %d (%s): decision.words %v, want %v", i, fp["tool"], got, want)
		}
	}
	// Empty words are the caller's error.
	if _, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "discover", Arguments: map[string]any{"prompt": " "}}); err == nil {
		t.Error("discover took empty words")
	}
}

// TestSessionOverStdio: groundgate mcp --session WORDS (Engines.MCPSession)
// opens an agent_discovery session on the words, recorded as the agent's,
// and serves its tools on stdio: the grounded tool and the exempt reads,
// discover, and calls decided in the session.
func TestSessionOverStdio(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	_, stop := serveAirlineOn(t, db) // configures and syncs the upstream in db
	stop()

	ctx, cancel := context.WithCancel(context.Background())
	e, err := app.OpenEngines(ctx, db, "")
	if err != nil {
		t.Fatal(err)
	}
	s, id, err := e.MCPSession(ctx, nil, "I want to cancel my reservation JW6LEQ")
	if err != nil {
		t.Fatal(err)
	}
	toServer, clientOut := io.Pipe()
	clientIn, fromServer := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, mcp.Stdio(toServer, fromServer)) }()
	opts, changed := upstreamtest.ListChanged()
	cs := upstreamtest.Connect(t, &sdk.IOTransport{Reader: clientIn, Writer: clientOut}, opts, nil)
	t.Cleanup(func() {
		cs.Close()
		clientOut.Close()
		cancel()
		<-done
		fromServer.Close()
		e.Close()
	})

	want := union(airlineReads, []string{"airline.cancel_reservation", "discover"})
	if got := names(upstreamtest.ListAll(t, cs)); !slices.Equal(got, want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
	res := upstreamtest.Call(t, cs, "airline.get_reservation_details", map[string]any{"reservation_id": "JW6LEQ"})
	if res.IsError {
		t.Fatalf("read: %s", upstreamtest.Text(t, res))
	}
	res = upstreamtest.Call(t, cs, "airline.update_reservation_baggages",
		map[string]any{"reservation_id": "JW6LEQ", "total_baggages": 1, "nonfree_baggages": 0, "payment_id": "credit_card_9"})
	if got := failureCodes(t, res); got != "tool:F3" {
		t.Fatalf("ungrounded write: %s", got)
	}
	res = upstreamtest.Call(t, cs, "discover", map[string]any{"prompt": "add checked bags to JW6LEQ"})
	if res.IsError {
		t.Fatalf("discover: %s", upstreamtest.Text(t, res))
	}
	upstreamtest.WaitListChanged(t, changed)
	if got := names(upstreamtest.ListAll(t, cs)); !slices.Contains(got, "airline.update_reservation_baggages") {
		t.Fatalf("after discover: %v", got)
	}
	sess, err := e.Sessions().Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(sess.Turns) != 2 || sess.Turns[0].By != "agent" || sess.Turns[1].By != "agent" || !sess.AgentDiscovery || len(sess.Calls) != 2 {
		t.Fatalf("the session: %+v", sess)
	}
}
