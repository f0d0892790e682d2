package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/groundgate/groundgate/calls"
	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/server"
)

// noTools is a SessionAPI whose sessions ground nothing.
type noTools struct{ listed int }

func (n *noTools) SessionTools(context.Context, hashing.Digest) (server.SessionTools, error) {
	n.listed++
	return server.SessionTools{}, nil
}
func (*noTools) SessionTurn(context.Context, hashing.Digest, string) (discover.Result, error) {
	return discover.Result{}, errors.New("no turns")
}
func (*noTools) SessionCall(context.Context, hashing.Digest, string, json.RawMessage) (calls.Response, error) {
	return calls.Response{}, errors.New("no calls")
}
func (*noTools) ProblemOf(context.Context, error) server.Problem { return server.Problem{Status: 500} }

// TestSessionsBounded: at most MaxServers sessions have a server at once,
// the least recently used going first; a session's server is made once
// and kept while it is used; Changed on a session without one makes none.
func TestSessionsBounded(t *testing.T) {
	ctx := context.Background()
	api := &noTools{}
	h := NewSessions(api, SessionOptions{MaxServers: 2})
	id := func(i byte) hashing.Digest { return hashing.SumSHA256([]byte{i}) }
	s1, err := h.Server(ctx, id(1))
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := h.Server(ctx, id(1)); again != s1 || api.listed != 1 {
		t.Fatalf("the server was made again (%d lists)", api.listed)
	}
	h.Changed(ctx, id(9))
	if api.listed != 1 || len(h.servers) != 1 {
		t.Fatalf("Changed made a server: %d lists, %d servers", api.listed, len(h.servers))
	}
	if _, err := h.Server(ctx, id(2)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Server(ctx, id(1)); err != nil { // 1 is used again: 2 is the least recent
		t.Fatal(err)
	}
	if _, err := h.Server(ctx, id(3)); err != nil {
		t.Fatal(err)
	}
	if len(h.servers) != 2 || h.servers[id(2)] != nil || h.servers[id(1)] == nil || h.servers[id(3)] == nil {
		t.Fatalf("servers after a third: %v", h.servers)
	}
}

// TestNextCalls: a failure's next call (SPEC §15: the read a rule needs
// first) is read from the failures as a client reads them, each once.
func TestNextCalls(t *testing.T) {
	raw := []byte(`[{"field": "tool", "code": "F11", "next": {"tool": "airline.get_reservation_details", "arguments": {"reservation_id": "ZFA04Y"}}},
		{"field": "tool", "code": "F9", "next": {"tool": "airline.get_reservation_details", "arguments": {"reservation_id": "ZFA04Y"}}},
		{"field": "tool", "code": "F9", "next": {"tool": "airline.get_user_details"}},
		{"field": "tool", "code": "F3"}]`)
	got := nextCallsOf(raw)
	if len(got) != 2 || got[0].Tool != "airline.get_reservation_details" || string(got[0].Arguments) != `{"reservation_id": "ZFA04Y"}` ||
		got[1].Tool != "airline.get_user_details" || string(got[1].Arguments) != "{}" {
		t.Fatalf("next calls: %+v", got)
	}
	if got := nextCalls(nil); got != nil {
		t.Fatalf("no failures: %+v", got)
	}
}
