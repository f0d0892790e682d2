//go:build cluster

package crashtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// A fuzz run's worker killed mid-run (SPEC §12 on a shared store): the
// run is not restarted; once its lease passes every replica reports it
// failed, interrupted, in the same bytes; and the next run starts and runs
// to its end on another worker. The constants are fuzz/runs' (lease 30 s,
// renewed every 5 s).
const (
	fuzzLeasePassed = "interrupted: the process running it stopped renewing its lease"
	// fuzzReported bounds the time from the kill to every replica's
	// "failed": the lease (30 s) plus polling and a loaded box's slack.
	fuzzReported = 90 * time.Second
)

// fuzzRun is what the test reads of GET /v1/fuzz/runs/{id}.
type fuzzRun struct {
	ID     uint64          `json:"id"`
	State  string          `json:"state"`
	Detail string          `json:"detail"`
	Result json.RawMessage `json:"result"`
}

// getRun reads run id from one server; raw is the answer's bytes.
func getRun(ctx context.Context, c *client, id uint64) (fuzzRun, []byte, error) {
	r := c.do(ctx, "GET", fmt.Sprintf("/v1/fuzz/runs/%d", id), nil, false)
	var fr fuzzRun
	if !r.ack() || json.Unmarshal(r.body, &fr) != nil {
		return fr, r.body, fmt.Errorf("GET /v1/fuzz/runs/%d: %d %v %.300s", id, r.status, r.err, r.body)
	}
	return fr, r.body, nil
}

// startRun posts a fuzz run through c and returns its id.
func startRun(ctx context.Context, c *client, req map[string]any) (uint64, error) {
	body, _ := json.Marshal(req)
	r := c.do(ctx, "POST", "/v1/fuzz/runs", body, true)
	var fr fuzzRun
	if r.status != http.StatusAccepted || json.Unmarshal(r.body, &fr) != nil || fr.ID == 0 {
		return 0, fmt.Errorf("POST /v1/fuzz/runs %s: %d %v %.300s", body, r.status, r.err, r.body)
	}
	return fr.ID, nil
}

// sameOnEvery reads run id from every server and wants the same bytes.
func (cl *cluster) sameOnEvery(ctx context.Context, id uint64) (fuzzRun, error) {
	var first []byte
	var run fuzzRun
	for i, s := range cl.servers {
		one := newClient(s.base)
		fr, raw, err := getRun(ctx, one, id)
		one.close()
		if err != nil {
			return fr, fmt.Errorf("server %d: %w", i, err)
		}
		if i == 0 {
			first, run = raw, fr
		} else if !bytes.Equal(raw, first) {
			return fr, fmt.Errorf("server %d answers run %d as\n%s\nserver 0 as\n%s", i, id, raw, first)
		}
	}
	return run, nil
}

// ended polls run id on every server until they all answer it ended, in
// the same bytes, and returns it; an error past deadline.
func (cl *cluster) ended(ctx context.Context, id uint64, deadline time.Time) (fuzzRun, error) {
	for {
		fr, err := cl.sameOnEvery(ctx, id)
		if err == nil && fr.State != "running" {
			return fr, nil
		}
		if time.Now().After(deadline) {
			return fr, fmt.Errorf("fuzz run %d has not ended on every server: %+v, %v", id, fr, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// fuzzWorkerKilled runs the fuzz phase on a cluster whose two workers
// run: worker 1 stops (so that worker 0 takes the run), worker 0 is
// killed with SIGKILL while its run runs, worker 1 comes back, and the
// next run must end on it.
func (cl *cluster) fuzzWorkerKilled(ctx context.Context) {
	t := cl.t
	t.Helper()
	if err := cl.workers[1].stop(30 * time.Second); err != nil {
		t.Fatalf("worker 1's clean stop: %v; log tail:\n%s", err, cl.workers[1].logTail())
	}
	c := newClient(cl.bases()...)
	defer c.close()
	// The runtime tests take tens of seconds: long enough to kill it in.
	id, err := startRun(ctx, c, map[string]any{"seconds": 600, "runtime": true, "seed": 11})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		fr, _, err := getRun(ctx, c, id)
		if err != nil {
			t.Fatal(err)
		}
		if fr.State != "running" {
			t.Fatalf("fuzz run %d ended before its worker was killed: make it longer: %s %q", id, fr.State, fr.Detail)
		}
		if fr.Detail == "" { // adopted: no longer "queued: …"
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("fuzz run %d not taken within a minute: %q; worker 0 log tail:\n%s", id, fr.Detail, cl.workers[0].logTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // mid-run
	cl.workers[0].kill()
	killed := time.Now()
	t.Logf("worker 0 killed while it ran fuzz run %d", id)
	cl.startWorker(1)

	// Until its lease passes the run is the dead worker's: a second run
	// is refused (one at a time), naming it.
	body, _ := json.Marshal(map[string]any{"seconds": 5})
	if r := c.do(ctx, "POST", "/v1/fuzz/runs", body, true); r.status != http.StatusConflict || !strings.Contains(string(r.body), fmt.Sprintf("fuzz run %d ", id)) {
		t.Errorf("a second run within the dead worker's lease: %d %.300s", r.status, r.body)
	}
	failed, err := cl.ended(ctx, id, killed.Add(fuzzReported))
	if err != nil {
		t.Fatalf("%v after its worker was killed", err)
	}
	took := time.Since(killed)
	if failed.State != "failed" || !strings.HasPrefix(failed.Detail, fuzzLeasePassed) || failed.Result != nil {
		t.Fatalf("fuzz run %d after its worker was killed: %s %q, result %.100s", id, failed.State, failed.Detail, failed.Result)
	}
	t.Logf("every server reports fuzz run %d failed %s after the kill: %q", id, took.Round(time.Millisecond), failed.Detail)

	// The next run runs on worker 1, to its end, and the interrupted one
	// stays as it is (never adopted again).
	next, err := startRun(ctx, c, map[string]any{"seconds": 5, "seed": 12})
	if err != nil {
		t.Fatal(err)
	}
	if fr, err := cl.ended(ctx, next, killed.Add(fuzzReported+time.Minute)); err != nil {
		t.Fatalf("on worker 1: %v; worker 1 log tail:\n%s", err, cl.workers[1].logTail())
	} else if fr.State != "done" || fr.Result == nil {
		t.Fatalf("fuzz run %d on worker 1: %s %q", next, fr.State, fr.Detail)
	}
	if again, err := cl.sameOnEvery(ctx, id); err != nil || again.State != "failed" || again.Detail != failed.Detail {
		t.Fatalf("fuzz run %d after the next run: %+v, %v", id, again, err)
	}
	t.Logf("fuzz run %d ran to its end on worker 1", next)
	cl.startWorker(0) // the clean stop at the end stops every worker
}
