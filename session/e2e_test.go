package session_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/groundgate/groundgate/gateway"
	"github.com/groundgate/groundgate/internal/app"
	"github.com/groundgate/groundgate/internal/app/apptest"
)

const admin = "test-admin-token"

// airlineBin is cmd/airline-mcp, built once by TestMain: a real MCP
// server over stdio (τ-bench's airline tools) as the sessions' upstream.
var airlineBin string

func TestMain(m *testing.M) {
	os.Exit(apptest.MainWithCommand(m, apptest.AirlinePkg, func(bin string) { airlineBin = bin }))
}

// tauClock is τ-bench's: "The current time is 2024-05-15 15:00:00 EST."
var tauClock = time.Date(2024, 5, 15, 15, 0, 0, 0, time.FixedZone("EST", -5*3600))

// client speaks to a wired server as a host or an agent does.
type client struct {
	apptest.Client
	t *testing.T
}

func (c client) do(method, path, token string, body any) (int, map[string]any) {
	c.t.Helper()
	return c.Do(method, path, token, body)
}

func (c client) want(status int, method, path, token string, body any) map[string]any {
	c.t.Helper()
	return c.Want(status, method, path, token, body)
}

func raw(c client, path, token string) []byte {
	c.t.Helper()
	st, b := c.Raw(http.MethodGet, path, token, nil)
	if st != http.StatusOK {
		c.t.Fatalf("GET %s: %d %s", path, st, b)
	}
	return b
}

// serveAirline serves db with the airline upstream configured and synced.
func serveAirline(t *testing.T, db string, configure bool) (client, func()) {
	t.Helper()
	m, stop := apptest.Serve(t, app.Config{DB: db, AdminToken: admin, Clock: tauClock,
		Gateway: gateway.Limits{CallTimeout: 15 * time.Second, BackoffMin: 50 * time.Millisecond, BackoffMax: 500 * time.Millisecond, StopGrace: 300 * time.Millisecond}})
	c := client{Client: apptest.Client{TB: t, Base: "http://" + m.Addr()}, t: t}
	if configure {
		fixture, _ := filepath.Abs("../airline/testdata/db")
		c.want(http.StatusCreated, http.MethodPut, "/v1/upstreams/airline", admin, map[string]any{
			"transport": "stdio", "command": []string{airlineBin, "--db", fixture}, "ground": "writes",
			"file_as": map[string]any{"cancel_reservation": []any{map[string]any{"tool": "get_reservation_details", "arguments": []string{"reservation_id"}}}},
		})
	}
	c.WaitUpstream("airline")
	if configure {
		c.want(http.StatusOK, http.MethodPost, "/v1/upstreams/airline/sync", admin, map[string]any{"apply": true, "overlay": map[string]any{
			"cancel_reservation": map[string]any{"disc": map[string]any{"aliases": []string{"cancel my reservation", "cancel the reservation"}}},
		}})
	}
	return c, stop
}

func codes(p map[string]any) string {
	var out []string
	fs, _ := p["failures"].([]any)
	for _, f := range fs {
		m := f.(map[string]any)
		out = append(out, fmt.Sprintf("%s:%s", m["field"], m["code"]))
	}
	return strings.Join(out, ",")
}

// TestSessionAirline walks a session through the REST API against the
// real airline upstream: a host opens it with the user's words, the agent
// reads a reservation (an exempt read, filed in the state), calls a write
// the words did not ask for (F3, recorded, nothing filed), cancels (the
// words asked: admitted, the result filed where the read files it), the
// state's digest is what the session and the footprints say; another
// session's token reaches nothing; the server restarts and the session
// goes on with its state; a closed session takes no call.
func TestSessionAirline(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	c, stop := serveAirline(t, db, true)

	created := c.want(http.StatusCreated, http.MethodPost, "/v1/sessions", admin, map[string]any{
		"prompt": "Hi, I am chen_lee_6825 and I want to cancel my reservation JW6LEQ, my plans changed.",
		"facts":  map[string]any{"cancel_reason": "change_of_plan"},
	})
	id, token := created["id"].(string), created["token"].(string)
	if !strings.HasPrefix(token, "ggs_") || !strings.HasPrefix(id, "sha256:") {
		t.Fatalf("created: %v", created)
	}
	other := c.want(http.StatusCreated, http.MethodPost, "/v1/sessions", admin, map[string]any{"prompt": "what is the status of my flight"})
	otherID, otherToken := other["id"].(string), other["token"].(string)

	// The agent reads the reservation: exempt, admitted, filed.
	out := c.want(http.StatusOK, http.MethodPost, "/v1/sessions/"+id+"/calls", token, map[string]any{
		"tool": "airline.get_reservation_details", "arguments": map[string]any{"reservation_id": "JW6LEQ"}})
	fp := out["call"].(map[string]any)
	rec := out["session"].(map[string]any)
	if fp["decision"].(map[string]any)["grounding"] != "exempt" || fp["outcome"] != "ok" || rec["seq"] != 0.0 {
		t.Fatalf("read: %v", out)
	}
	filed := rec["filed"].([]any)
	if len(filed) != 1 || filed[0].(map[string]any)["key"] != "reservation_id=JW6LEQ" {
		t.Fatalf("filed: %v", filed)
	}
	read := fp["read"].(map[string]any)
	const empty = "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a" // SHA-256("{}")
	if read["session"] != id || read["now"] != "2024-05-15T20:00:00Z" || read["state"] != empty {
		t.Fatalf("the footprint's read: %v (record %v)", read, rec)
	}
	if fp["layers"].(map[string]any)["state"] != rec["read"] {
		// The session records the State layer as what the call read.
		t.Fatalf("state layer %v, recorded read %v", fp["layers"], rec["read"])
	}

	// A write nobody asked for: F3, recorded as refused, nothing filed.
	p := c.want(http.StatusUnprocessableEntity, http.MethodPost, "/v1/sessions/"+id+"/calls", token, map[string]any{
		"tool": "airline.update_reservation_baggages", "arguments": map[string]any{"reservation_id": "JW6LEQ", "total_baggages": 3, "nonfree_baggages": 0, "payment_id": "credit_card_1"}})
	if codes(p) != "tool:F3" || p["session"].(map[string]any)["decision"] != "refused" {
		t.Fatalf("undiscovered write: %v", p)
	}
	// Its record keeps why (a refused call has no footprint to read it from).
	if fs, _ := p["session"].(map[string]any)["failures"].([]any); len(fs) != 1 || fs[0].(map[string]any)["code"] != "F3" {
		t.Fatalf("the refused call's record keeps no failures: %v", p["session"])
	}

	// The cancellation the words asked for: admitted, filed twice.
	out = c.want(http.StatusOK, http.MethodPost, "/v1/sessions/"+id+"/calls", token, map[string]any{
		"tool": "airline.cancel_reservation", "arguments": map[string]any{"reservation_id": "JW6LEQ"}})
	fp = out["call"].(map[string]any)
	if fp["decision"].(map[string]any)["grounding"] != "discovered" || fp["discovery"] != created["discovery"].(map[string]any)["id"] {
		t.Fatalf("cancel: %v", fp)
	}
	if fs := out["session"].(map[string]any)["filed"].([]any); len(fs) != 2 ||
		fs[1].(map[string]any)["tool"] != "airline.get_reservation_details" || fs[1].(map[string]any)["key"] != "reservation_id=JW6LEQ" {
		t.Fatalf("cancel filed: %v", fs)
	}
	if got := fp["read"].(map[string]any)["facts"].(map[string]any)["cancel_reason"]; got != "change_of_plan" {
		t.Fatalf("facts read: %v", fp["read"])
	}

	// The session as GET shows it, and its state: the bytes hash to the
	// digest the session gives, and the reservation there is cancelled.
	sess := c.want(http.StatusOK, http.MethodGet, "/v1/sessions/"+id, token, nil)
	if n := len(sess["calls"].([]any)); n != 3 {
		t.Fatalf("%d calls", n)
	}
	state := raw(c, "/v1/sessions/"+id+"/state", token)
	sum := sha256.Sum256(state)
	if "sha256:"+hex.EncodeToString(sum[:]) != sess["state"] {
		t.Fatalf("the state hashes to %x, the session says %v", sum, sess["state"])
	}
	var st struct {
		Results map[string]map[string]struct {
			Status string `json:"status"`
		} `json:"results"`
	}
	if err := json.Unmarshal(state, &st); err != nil || st.Results["airline.get_reservation_details"]["reservation_id=JW6LEQ"].Status != "cancelled" {
		t.Fatalf("state: %s", state)
	}

	// Isolation: another session's token reaches nothing of this one; no
	// token reaches nothing; nobody writes the state.
	for _, r := range []struct{ method, path, token string }{
		{http.MethodGet, "/v1/sessions/" + id, otherToken},
		{http.MethodGet, "/v1/sessions/" + id + "/state", otherToken},
		{http.MethodPost, "/v1/sessions/" + id + "/calls", otherToken},
		{http.MethodGet, "/v1/sessions/" + id, ""},
		{http.MethodPost, "/v1/sessions/" + id + "/turns", token},
		{http.MethodDelete, "/v1/sessions/" + id, token},
		{http.MethodPost, "/v1/sessions", token},
	} {
		if st, _ := c.do(r.method, r.path, r.token, map[string]any{"tool": "airline.get_user_details", "arguments": map[string]any{"user_id": "chen_lee_6825"}, "prompt": "x"}); st != http.StatusUnauthorized {
			t.Errorf("%s %s with the wrong token: %d, want 401", r.method, r.path, st)
		}
	}
	if st, _ := c.do(http.MethodPut, "/v1/sessions/"+id+"/state", token, map[string]any{}); st != http.StatusMethodNotAllowed && st != http.StatusNotFound {
		t.Errorf("PUT state: %d", st)
	}
	if n := len(c.want(http.StatusOK, http.MethodGet, "/v1/sessions/"+otherID, otherToken, nil)["calls"].([]any)); n != 0 {
		t.Errorf("the other session has %d calls", n)
	}

	// A restart: the session goes on with its state.
	stop()
	c, stop = serveAirline(t, db, false)
	after := c.want(http.StatusOK, http.MethodGet, "/v1/sessions/"+id, token, nil)
	if after["state"] != sess["state"] || len(after["calls"].([]any)) != 3 {
		t.Fatalf("after restart: %v", after)
	}
	out = c.want(http.StatusOK, http.MethodPost, "/v1/sessions/"+id+"/calls", token, map[string]any{
		"tool": "airline.get_user_details", "arguments": map[string]any{"user_id": "chen_lee_6825"}})
	if out["call"].(map[string]any)["read"].(map[string]any)["state"] != sess["state"] {
		t.Fatalf("the call after the restart read %v, not %v", out["call"].(map[string]any)["read"], sess["state"])
	}

	// Closed: the record stays, calls are refused.
	c.want(http.StatusOK, http.MethodDelete, "/v1/sessions/"+id, admin, nil)
	p = c.want(http.StatusConflict, http.MethodPost, "/v1/sessions/"+id+"/calls", token, map[string]any{
		"tool": "airline.get_user_details", "arguments": map[string]any{"user_id": "chen_lee_6825"}})
	if !strings.HasSuffix(p["type"].(string), "session-closed") {
		t.Fatalf("closed: %v", p)
	}

	// registry verify rebuilds both sessions' states from their calls.
	stop()
	rep, err := app.VerifyFile(t.Context(), db)
	if err != nil || rep.Sessions != 2 || rep.Calls != 3 {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
}
