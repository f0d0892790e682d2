package crashtest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/groundgate/groundgate/gateway/upstreamtest"
)

// Calls through the gateway (SPEC §14): an upstream, cmd/mcp-testupstream
// over stdio, configured "ground": "writes", so that its read echo is
// called without evidence and its write put_item with the id of a
// discovery of putPrompt (the sync's overlay alias). Every call answered
// 200 is a footprint the server committed before answering; after each
// restart GET /v1/calls/{hash} must serve it as acknowledged.
const (
	callUpstream = "crash"
	callWorkers  = 2
	putPrompt    = "store the crash item"
	// upstreamReady bounds the wait, after a restart, for the server to
	// have started the upstream again and listed its tools.
	upstreamReady = 30 * time.Second
)

// buildUpstream compiles cmd/mcp-testupstream beside the server binary.
func buildUpstream(t *testing.T) string {
	t.Helper()
	bin, err := upstreamtest.BuildTo(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// setupUpstream configures the upstream on the first server and applies
// its tools with the alias that makes putPrompt discover put_item. The
// configuration and the tool entries are durable: later servers start the
// upstream themselves.
func setupUpstream(ctx context.Context, c *client, bin string) error {
	cfg, _ := json.Marshal(map[string]any{"transport": "stdio", "command": []string{bin}, "ground": "writes"})
	if r := c.do(ctx, "PUT", "/v1/upstreams/"+callUpstream, cfg, true); !r.ack() {
		return fmt.Errorf("PUT /v1/upstreams/%s: %d %v %.300s", callUpstream, r.status, r.err, r.body)
	}
	if err := waitUpstream(ctx, c, false); err != nil {
		return err
	}
	sync, _ := json.Marshal(map[string]any{"apply": true,
		"overlay": map[string]any{"put_item": map[string]any{"disc": map[string]any{"aliases": []string{putPrompt}}}}})
	if r := c.do(ctx, "POST", "/v1/upstreams/"+callUpstream+"/sync", sync, true); !r.ack() {
		return fmt.Errorf("sync %s: %d %v %.300s", callUpstream, r.status, r.err, r.body)
	}
	return waitUpstream(ctx, c, true)
}

// waitUpstream waits until the upstream is connected and has listed its
// tools, each (when applied) matching its entry.
func waitUpstream(ctx context.Context, c *client, applied bool) error {
	deadline := time.Now().Add(upstreamReady)
	var last string
	for {
		r := c.do(ctx, "GET", "/v1/upstreams/"+callUpstream, nil, true)
		var v struct {
			Status struct {
				Connected bool `json:"connected"`
				Tools     []struct {
					State string `json:"state"`
				} `json:"tools"`
			} `json:"status"`
		}
		if r.ack() && json.Unmarshal(r.body, &v) == nil && v.Status.Connected && len(v.Status.Tools) > 0 &&
			(!applied || !slices.ContainsFunc(v.Status.Tools, func(t struct {
				State string `json:"state"`
			}) bool {
				return t.State != "ok"
			})) {
			return nil
		}
		last = fmt.Sprintf("%d %v %.300s", r.status, r.err, r.body)
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("upstream %s not ready within %s: %s", callUpstream, upstreamReady, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// callLoop calls until the server dies or ctx ends: reads of echo (two in
// three), exempt, and writes of put_item grounded by one discovery, each
// with arguments no other call has.
func (lr *loadRun) callLoop(ctx context.Context, rng *rand.Rand) {
	q, _ := json.Marshal(map[string]any{"prompt": putPrompt})
	d, ok := lr.write(ctx, kindDiscovery, "POST", "/v1/discover", q, http.StatusOK, "id")
	if !ok {
		return
	}
	var disc struct {
		Matches []struct {
			Name string `json:"name"`
		} `json:"matches"`
	}
	_ = json.Unmarshal(d.body, &disc)
	if !slices.ContainsFunc(disc.Matches, func(m struct {
		Name string `json:"name"`
	}) bool {
		return m.Name == callUpstream+".put_item"
	}) {
		lr.t.Errorf("round %d: %q did not discover %s.put_item: %.500s", lr.round, putPrompt, callUpstream, d.body)
		return
	}
	for range maxOpsPerWorker {
		if ctx.Err() != nil {
			return
		}
		n := lr.st.seq.Add(1)
		req := map[string]any{"tool": callUpstream + ".echo", "arguments": map[string]any{"text": "crash call " + word(n)}}
		if rng.IntN(3) == 0 {
			req = map[string]any{"tool": callUpstream + ".put_item", "discovery": d.id,
				"arguments": map[string]any{"id": word(n), "value": fmt.Sprintf("value %d", n)}}
		}
		body, _ := json.Marshal(req)
		if !lr.writeCall(ctx, body) {
			return
		}
	}
}

// writeCall sends one POST /v1/calls and records its footprint when
// acknowledged. It reports false when the loop should stop.
func (lr *loadRun) writeCall(ctx context.Context, body []byte) bool {
	r := lr.c.do(ctx, "POST", "/v1/calls", body, true)
	if r.err != nil {
		if !refused(r.err) {
			lr.l.inFlight()
		}
		return false
	}
	if r.status != http.StatusOK {
		lr.t.Errorf("round %d: POST /v1/calls %s: %d, want 200: %.500s", lr.round, body, r.status, r.body)
		return false
	}
	var res struct {
		Call json.RawMessage `json:"call"`
	}
	var fp struct {
		Hash    string `json:"hash"`
		Outcome string `json:"outcome"`
	}
	if err := json.Unmarshal(r.body, &res); err != nil || json.Unmarshal(res.Call, &fp) != nil || fp.Hash == "" || fp.Outcome != "ok" {
		lr.t.Errorf("round %d: POST /v1/calls %s: answer without an ok footprint (%v): %.500s", lr.round, body, err, r.body)
		return false
	}
	norm, err := normalise(res.Call)
	if err != nil {
		lr.t.Errorf("round %d: POST /v1/calls: %v", lr.round, err)
		return false
	}
	lr.l.ackDoc(docAck{round: lr.round, kind: kindCall, id: fp.Hash, body: norm})
	return true
}
