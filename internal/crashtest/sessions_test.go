package crashtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
)

// Sessions (SPEC §15) through the gateway: each round opens one session
// on putPrompt and calls in it — exempt reads of echo and writes of
// put_item its first turn grounded — until the kill. After each restart
// every session opened so far must list each acknowledged call at its
// place with its footprint and the state it left, hold a state no older
// than the last acknowledged call's, and take the next call: decided on
// the state the session now holds, as it would have been without the
// crash.

// sessionAck is a session the server acknowledged, and its calls.
type sessionAck struct {
	round     int
	id, token string
	mu        sync.Mutex
	calls     []sessionCallAck // acknowledged, in order
	maybe     bool             // a call's answer was lost in the crash
}

type sessionCallAck struct {
	seq   int
	hash  string
	state string // the state the call left
}

// sessionLoop opens a session and calls in it until the server dies.
func (lr *loadRun) sessionLoop(ctx context.Context) {
	open, _ := json.Marshal(map[string]any{"prompt": putPrompt})
	r := lr.c.do(ctx, "POST", "/v1/sessions", open, true)
	if r.err != nil {
		if !refused(r.err) {
			lr.l.inFlight()
		}
		return
	}
	var created struct {
		ID    string `json:"id"`
		Token string `json:"token"`
	}
	if r.status != http.StatusCreated || json.Unmarshal(r.body, &created) != nil || created.Token == "" {
		lr.t.Errorf("round %d: POST /v1/sessions: %d %.500s", lr.round, r.status, r.body)
		return
	}
	s := &sessionAck{round: lr.round, id: created.ID, token: created.Token}
	lr.l.mu.Lock()
	lr.l.sessions = append(lr.l.sessions, s)
	lr.l.mu.Unlock()
	for i := range maxOpsPerWorker {
		if ctx.Err() != nil {
			return
		}
		n := lr.st.seq.Add(1)
		req := map[string]any{"tool": callUpstream + ".echo", "arguments": map[string]any{"text": "session call " + word(n)}}
		if i%3 == 2 {
			req = map[string]any{"tool": callUpstream + ".put_item", "arguments": map[string]any{"id": word(n), "value": fmt.Sprintf("session %d", n)}}
		}
		if !lr.sessionCall(ctx, s, req) {
			return
		}
	}
}

// sessionCall makes one call in s and records it when acknowledged.
func (lr *loadRun) sessionCall(ctx context.Context, s *sessionAck, req map[string]any) bool {
	body, _ := json.Marshal(req)
	r := lr.c.doAs(ctx, "POST", "/v1/sessions/"+s.id+"/calls", body, s.token)
	if r.err != nil {
		if !refused(r.err) {
			lr.l.inFlight()
			s.mu.Lock()
			s.maybe = true
			s.mu.Unlock()
		}
		return false
	}
	var ans struct {
		Call struct {
			Hash string `json:"hash"`
			Read struct {
				State string `json:"state"`
			} `json:"read"`
		} `json:"call"`
		Session struct {
			Seq   int    `json:"seq"`
			State string `json:"state"`
		} `json:"session"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &ans) != nil || ans.Call.Hash == "" {
		lr.t.Errorf("round %d: session call %s: %d %.500s", lr.round, body, r.status, r.body)
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	want := 0
	if n := len(s.calls); n > 0 {
		want = s.calls[n-1].seq + 1
		if ans.Call.Read.State != s.calls[n-1].state && !s.maybe {
			lr.t.Errorf("round %d: session %s call %d read state %s, the last call left %s", lr.round, s.id, ans.Session.Seq, ans.Call.Read.State, s.calls[n-1].state)
		}
	}
	if ans.Session.Seq < want || (ans.Session.Seq != want && !s.maybe) {
		lr.t.Errorf("round %d: session %s: call at seq %d, want %d", lr.round, s.id, ans.Session.Seq, want)
	}
	s.calls = append(s.calls, sessionCallAck{seq: ans.Session.Seq, hash: ans.Call.Hash, state: ans.Session.State})
	return true
}

// sessions checks every session opened so far: its acknowledged calls,
// and that it takes the next call on the state it holds. It returns how
// many acknowledged calls it checked.
func (k *checker) sessions(ctx context.Context) (checked int) {
	lr := &loadRun{t: k.t, round: -1, c: k.c, l: k.l}
	k.l.mu.Lock()
	all := append([]*sessionAck(nil), k.l.sessions...)
	k.l.mu.Unlock()
	for _, s := range all {
		r := k.c.doAs(ctx, "GET", "/v1/sessions/"+s.id, nil, s.token)
		var got struct {
			Calls []struct {
				Seq   int    `json:"seq"`
				Hash  string `json:"hash"`
				State string `json:"state"`
			} `json:"calls"`
			State string `json:"state"`
		}
		if !r.ack() || json.Unmarshal(r.body, &got) != nil {
			k.fail("session %s (round %d): GET: %d %v %.300s", s.id, s.round, r.status, r.err, r.body)
			continue
		}
		s.mu.Lock()
		for _, c := range s.calls {
			checked++
			if c.seq >= len(got.Calls) || got.Calls[c.seq].Hash != c.hash || got.Calls[c.seq].State != c.state {
				k.fail("session %s (round %d): acknowledged call %d (%s) lost or altered", s.id, s.round, c.seq, c.hash)
			}
		}
		lost := len(s.calls) > 0 && len(got.Calls) > 0 && got.Calls[len(got.Calls)-1].State != got.State
		s.maybe = false // what the server holds now is what the session goes on from
		s.calls = s.calls[:0]
		for _, c := range got.Calls {
			s.calls = append(s.calls, sessionCallAck{seq: c.Seq, hash: c.Hash, state: c.State})
		}
		s.mu.Unlock()
		if lost {
			k.fail("session %s: its state %s is not the one its last call left", s.id, got.State)
		}
		// The next call: decided on the state the session holds now.
		if !lr.sessionCall(ctx, s, map[string]any{"tool": callUpstream + ".echo", "arguments": map[string]any{"text": "after restart " + s.id[7:19]}}) {
			k.fail("session %s: the call after the restart was not answered", s.id)
		}
	}
	return checked
}

// sessionCounts returns how many sessions were opened and how many of
// their calls acknowledged.
func (l *ledger) sessionCounts() (sessions, calls int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.sessions {
		s.mu.Lock()
		calls += len(s.calls)
		s.mu.Unlock()
	}
	return len(l.sessions), calls
}
