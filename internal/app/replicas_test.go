package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/groundgate/groundgate/attest"
	"github.com/groundgate/groundgate/calls"
	"github.com/groundgate/groundgate/gateway/upstreamtest"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/internal/app"
	"github.com/groundgate/groundgate/internal/app/apptest"
	"github.com/groundgate/groundgate/internal/testio"
	"github.com/groundgate/groundgate/policy"
	"github.com/groundgate/groundgate/session"
	"github.com/groundgate/groundgate/store/pgstore/pgstoretest"
)

// The PostgreSQL cluster and the S3 server start only for the tests that
// ask for them (the replicas').

const replicaToken = "replica-admin-token"

// replica is one server over a shared place, and a client of it.
type replica struct {
	apptest.Client
	m *app.Main
}

func (r replica) want(status int, method, path string, body any) map[string]any {
	r.TB.Helper()
	return r.Want(status, method, path, replicaToken, body)
}

// raw GETs path and wants a 200: the bytes every replica must agree on.
func (r replica) raw(path, token string) []byte {
	r.TB.Helper()
	if token == "" {
		token = replicaToken
	}
	st, b := r.Raw(http.MethodGet, path, token, nil)
	if st != http.StatusOK {
		r.TB.Fatalf("GET %s on %s: %d %s", path, r.Base, st, b)
	}
	return b
}

// replicaConfig is the configuration every replica over p is opened
// with, the attestation key made once for all.
func replicaConfig(t *testing.T, p pgstoretest.Place) app.Config {
	t.Helper()
	key := filepath.Join(t.TempDir(), "attest.key")
	if _, err := attest.LoadOrCreate(key); err != nil {
		t.Fatal(err)
	}
	return app.Config{Addr: "127.0.0.1:0", Store: p.DSN, Blobs: p.BlobsURL, Env: pgstoretest.Env, KeyFile: key,
		AdminToken: replicaToken, Logger: slog.New(slog.DiscardHandler), Clock: time.Date(2024, 5, 15, 20, 0, 0, 0, time.UTC)}
}

// startReplicas opens n servers over one place at once, as a deployment
// of several would start, each with the same attestation key, and a
// worker that runs their executions and fuzz runs.
func startReplicas(t *testing.T, p pgstoretest.Place, n int) []replica {
	t.Helper()
	return startReplicasWorker(t, p, n, slog.New(slog.DiscardHandler))
}

// startReplicasWorker is startReplicas with the worker logging to
// workerLog; nil starts no worker.
func startReplicasWorker(t *testing.T, p pgstoretest.Place, n int, workerLog *slog.Logger) []replica {
	t.Helper()
	rs := startServers(t, p, n)
	if workerLog != nil {
		w, err := app.OpenWorker(context.Background(), app.WorkerConfig{Store: p.DSN, Blobs: p.BlobsURL, Getenv: pgstoretest.Env,
			Logger: workerLog})
		if err != nil {
			t.Fatal(err)
		}
		runUntilEnd(t, "worker", w.Run)
	}
	return rs
}

// startServers opens n servers over one place at once, without a worker.
func startServers(t *testing.T, p pgstoretest.Place, n int) []replica {
	t.Helper()
	cfg := replicaConfig(t, p)
	ms := make([]*app.Main, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { ms[i], errs[i] = app.Open(context.Background(), cfg) })
	}
	wg.Wait()
	out := make([]replica, n)
	for i, m := range ms {
		if errs[i] != nil {
			t.Fatalf("replica %d: %v", i, errs[i])
		}
		out[i] = serveReplica(t, m)
	}
	return out
}

// serveReplica runs m until the test ends.
func serveReplica(t *testing.T, m *app.Main) replica {
	t.Helper()
	runUntilEnd(t, "replica "+m.Addr(), m.Run)
	return replica{Client: apptest.Client{TB: t, Base: "http://" + m.Addr()}, m: m}
}

// runUntilEnd runs run in the background until the test ends, then
// cancels it and wants it to stop cleanly.
func runUntilEnd(t *testing.T, what string, run func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%s: %v", what, err)
		}
	})
}

// TestReplicasAgree: three servers over one PostgreSQL + S3 store are one
// service. Started at once on an empty store, they seed one version 1; a
// capability put on A is discovered and grounded on B at once; a policy
// put on B is enforced on C at its next request; an upstream added on A is
// callable through B, and B follows A's change of it; a session opened on A takes a call on B and a turn
// on C and is one sequence; and every id one of them issued is answered
// with the same bytes by the others.
func TestReplicasAgree(t *testing.T) {
	p := pgstoretest.New(t)
	rs := startReplicas(t, p, 3)
	a, b, c := rs[0], rs[1], rs[2]

	// One seed, whoever won it.
	for i, r := range rs {
		var body struct{ Versions []map[string]any }
		if err := json.Unmarshal(r.raw("/v1/registry/history", ""), &body); err != nil {
			t.Fatal(err)
		}
		h := body.Versions
		if len(h) != 1 || h[0]["version"] != 1.0 || h[0]["change"].(map[string]any)["op"] != "seed" {
			t.Fatalf("replica %d history after 3 starts at once: %v", i, h)
		}
	}

	// A capability changed on A: B discovers it by its new words and
	// grounds with it, at once.
	cp := a.want(http.StatusOK, http.MethodGet, "/v1/registry/capabilities/MOM_WZS", nil)
	entry := cp
	delete(entry, "identity") // computed, not given
	disc := entry["disc"].(map[string]any)
	aliases, _ := disc["aliases"].([]any)
	disc["aliases"] = append(aliases, "zebra crossing drift")
	put := a.want(http.StatusOK, http.MethodPut, "/v1/registry/capabilities/MOM_WZS", entry)
	regVersion := put["version"].(float64)
	found := b.want(http.StatusOK, http.MethodPost, "/v1/discover", map[string]any{"prompt": "zebra crossing drift with the Sharpe ratio"})
	if !strings.Contains(fmt.Sprint(found["matches"]), "MOM_WZS") {
		t.Fatalf("B did not discover A's alias: %v", found["matches"])
	}
	discovery := found["id"].(string)
	request := json.RawMessage(`{"family":"MOM_WZS","metric":"SRP","params":{"window":[25,50,100]},"data":"oil-spot/wti-daily.csv"}`)
	g := b.want(http.StatusOK, http.MethodPost, "/v1/ground", map[string]any{"request": request, "discovery": discovery})
	grounding := g["id"].(string)
	if v := g["registry_version"]; v != regVersion {
		t.Fatalf("B grounded at registry version %v, A wrote %v: %v", v, regVersion, g)
	}

	// An execution on C of B's grounding.
	fp := c.want(http.StatusCreated, http.MethodPost, "/v1/executions", map[string]any{"grounding": grounding})
	execHash := fp["hash"].(string)

	// A policy put on B is enforced on C at its next request.
	pol := map[string]any{
		"smtlib":     "(declare-const window Real)\n(declare-const allow Bool)\n(assert (! (=> allow (<= window 60.0)) :named window_at_most_60))\n(assert (=> (<= window 60.0) allow))",
		"bind":       map[string]any{"window": "/params/window"},
		"allow":      "allow",
		"applies_to": []string{"family"},
	}
	pp := b.want(http.StatusCreated, http.MethodPut, "/v1/policies/short_windows", pol)
	polVersion := pp["version"].(float64)
	refused := c.want(http.StatusUnprocessableEntity, http.MethodPost, "/v1/ground", map[string]any{"request": request, "discovery": discovery})
	if !strings.Contains(fmt.Sprint(refused["failures"]), "F11") {
		t.Fatalf("C did not enforce B's policy: %v", refused)
	}

	// An upstream added on A is callable through B.
	bin := upstreamtest.Build(t)
	a.want(http.StatusCreated, http.MethodPut, "/v1/upstreams/shop", map[string]any{"transport": "stdio", "command": []string{bin}, "ground": "writes"})
	a.WaitUpstream("shop")
	a.want(http.StatusOK, http.MethodPost, "/v1/upstreams/shop/sync", map[string]any{"apply": true})
	b.WaitUpstream("shop")
	called := b.want(http.StatusOK, http.MethodPost, "/v1/calls", map[string]any{"tool": "shop.get_item", "arguments": map[string]any{"id": "a"}})
	callHash := called["call"].(map[string]any)["hash"].(string)

	// Changed on A: B runs the new configuration from its next request.
	a.want(http.StatusOK, http.MethodPut, "/v1/upstreams/shop", map[string]any{"transport": "stdio", "command": []string{bin, "--poison", "sneaky"}, "ground": "writes"})
	if v := b.want(http.StatusOK, http.MethodGet, "/v1/upstreams/shop", nil); !strings.Contains(fmt.Sprint(v["config"]), "sneaky") {
		t.Fatalf("B runs the old configuration: %v", v["config"])
	}
	b.WaitUpstream("shop")

	// A session opened on A takes a call on B, then a turn on C: one
	// sequence, the same on every replica.
	created := a.want(http.StatusCreated, http.MethodPost, "/v1/sessions", map[string]any{"prompt": "look up item a in the shop"})
	sid, stoken := created["id"].(string), created["token"].(string)
	sc := b.Want(http.StatusOK, http.MethodPost, "/v1/sessions/"+sid+"/calls", stoken, map[string]any{"tool": "shop.get_item", "arguments": map[string]any{"id": "a"}})
	if sc["session"].(map[string]any)["seq"] != 0.0 {
		t.Fatalf("the session's first call: %v", sc["session"])
	}
	c.want(http.StatusOK, http.MethodPost, "/v1/sessions/"+sid+"/turns", map[string]any{"prompt": "and item b too"})
	sc = a.Want(http.StatusOK, http.MethodPost, "/v1/sessions/"+sid+"/calls", stoken, map[string]any{"tool": "shop.get_item", "arguments": map[string]any{"id": "b"}})
	if sc["session"].(map[string]any)["seq"] != 1.0 {
		t.Fatalf("the session's second call, on A after B's and C's turn: %v", sc["session"])
	}
	sess := a.want(http.StatusOK, http.MethodGet, "/v1/sessions/"+sid, nil)
	if n := len(sess["calls"].([]any)); n != 2 {
		t.Fatalf("session calls: %d, want 2: %v", n, sess)
	}

	// Every id, asked of every replica: the same bytes.
	ids := []struct{ path, token string }{
		{"/v1/discoveries/" + discovery, ""},
		{"/v1/groundings/" + grounding, ""},
		{"/v1/executions/" + execHash, ""},
		{"/v1/executions/" + execHash + "/attestation", ""},
		{"/v1/calls/" + callHash, ""},
		{"/v1/sessions/" + sid, stoken},
		{"/v1/sessions/" + sid + "/state", stoken},
		{fmt.Sprintf("/v1/registry/versions/%d", int(regVersion)), ""},
		{fmt.Sprintf("/v1/policies/versions/%d", int(polVersion)), ""},
		{"/v1/registry", ""},
		{"/v1/policies", ""},
		{"/v1/keys", ""},
	}
	for _, id := range ids {
		want := a.raw(id.path, id.token)
		for i, r := range rs[1:] {
			if got := r.raw(id.path, id.token); !bytes.Equal(got, want) {
				t.Errorf("GET %s: replica %d answers\n%.400s\nreplica 0\n%.400s", id.path, i+1, got, want)
			}
		}
	}
}

// TestReplicasHoldSession: the calls of one session sent all at once,
// alternately to two servers over one store, take turns across them:
// each call's decision read the state the call before it in the sequence
// left (the session's hold is the store's lock, not only each server's).
// Each call is an echo of its own text, so each one changes the state.
func TestReplicasHoldSession(t *testing.T) {
	const n = 40
	p := pgstoretest.New(t)
	rs := startServers(t, p, 2)
	a := rs[0]
	bin := upstreamtest.Build(t)
	a.want(http.StatusCreated, http.MethodPut, "/v1/upstreams/shop", map[string]any{"transport": "stdio", "command": []string{bin}, "ground": "writes"})
	a.WaitUpstream("shop")
	a.want(http.StatusOK, http.MethodPost, "/v1/upstreams/shop/sync", map[string]any{"apply": true})
	for _, r := range rs {
		r.WaitUpstream("shop")
	}
	created := a.want(http.StatusCreated, http.MethodPost, "/v1/sessions", map[string]any{"prompt": "echo what I say"})
	sid, token := created["id"].(string), created["token"].(string)

	// Each call: the state its decision read (its footprint's), and as
	// the session recorded it, with the state it left.
	type called struct {
		read hashing.Digest
		session.CallRecord
	}
	recs := make([]called, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := rs[i%len(rs)]
			st, body := r.Raw(http.MethodPost, "/v1/sessions/"+sid+"/calls", token,
				map[string]any{"tool": "shop.echo", "arguments": map[string]any{"text": fmt.Sprintf("call %d", i)}})
			var ans struct {
				Call    calls.Footprint
				Session session.CallRecord
			}
			if st != http.StatusOK || json.Unmarshal(body, &ans) != nil || ans.Call.Read == nil {
				t.Errorf("call %d on replica %d: %d %.300s", i, i%len(rs), st, body)
				return
			}
			recs[i] = called{read: ans.Call.Read.State, CallRecord: ans.Session}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	bySeq := make([]*called, n)
	for i := range recs {
		rec := &recs[i]
		if rec.Seq < 0 || rec.Seq >= n || bySeq[rec.Seq] != nil {
			t.Fatalf("call %d recorded at seq %d: taken or out of 0..%d", i, rec.Seq, n-1)
		}
		bySeq[rec.Seq] = rec
	}
	stale := 0
	if bySeq[0].read != calls.EmptyState {
		t.Errorf("the first call was decided on state %s, not the empty one", bySeq[0].read)
	}
	for k := 1; k < n; k++ {
		if bySeq[k].read != bySeq[k-1].State {
			stale++
			t.Errorf("call %d was decided on state %s; call %d left %s", k, bySeq[k].read, k-1, bySeq[k-1].State)
		}
		if bySeq[k].State == bySeq[k-1].State {
			t.Errorf("call %d left the state as it was: the test's calls must each change it", k)
		}
	}
	if stale > 0 {
		t.Errorf("%d of %d calls decided on a state their result was not filed on", stale, n-1)
	}
	// The session agrees: its last state is the last call's.
	var sess struct{ State hashing.Digest }
	if err := json.Unmarshal(rs[1].raw("/v1/sessions/"+sid, token), &sess); err != nil || sess.State != bySeq[n-1].State {
		t.Errorf("session state %s (%v), the last call left %s", sess.State, err, bySeq[n-1].State)
	}
}

// TestPolicyWriteConflict: two replicas' policy stores over one store,
// both at version 0; A puts version 1, then B, which has not refreshed,
// puts its own: its commit of version 1 conflicts, B catches up with A's
// set and applies its put on it as version 2 (a put names one policy, so
// it applies on whatever set won), holding both policies.
func TestPolicyWriteConflict(t *testing.T) {
	ctx := context.Background()
	p := pgstoretest.New(t)
	open := func() *policy.Store {
		st := p.Open(t)
		t.Cleanup(func() { st.Close() })
		ps, err := policy.OpenStore(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		return ps
	}
	a, b := open(), open()
	compile := func(name, bound string) *policy.Compiled {
		var pol policy.Policy
		doc := fmt.Sprintf(`{"smtlib":"(declare-const window Real)\n(declare-const allow Bool)\n(assert (= allow (<= window %s)))","bind":{"window":"/params/window"},"allow":"allow","applies_to":["family"]}`, bound)
		if err := hashing.DecodeStrict([]byte(doc), &pol); err != nil {
			t.Fatal(err)
		}
		c, err := policy.Compile(name, pol)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if _, err := a.Put(ctx, compile("from_a", "60.0")); err != nil {
		t.Fatal(err)
	}
	res, err := b.Put(ctx, compile("from_b", "90.0"))
	if err != nil || res.Version != 2 || b.Current().Len() != 2 {
		t.Fatalf("B's stale put: %+v %v, set of %d; want version 2 holding both", res, err, b.Current().Len())
	}
	if _, err := a.Refresh(ctx); err != nil || a.Current().Version != 2 || a.Current().Len() != 2 {
		t.Fatalf("A after refreshing: version %d with %d policies (%v)", a.Current().Version, a.Current().Len(), err)
	}
}

// TestReplicasFuzzRuntime: two replicas of a shared store asked for a
// fuzz run at the same moment store one (the other answers 409: one run
// at a time across the replicas) and queue it for the worker, which
// adopts it and runs it with the runtime tests on a scratch copy of the
// registry and policies read from the store (there is no file to copy);
// the other replica answers the finished run. A second run, cancelled
// through the replica that did not start it, stops on the worker.
func TestReplicasFuzzRuntime(t *testing.T) {
	p := pgstoretest.New(t)
	var wlog testio.SyncBuffer
	rs := startReplicasWorker(t, p, 2, slog.New(slog.NewJSONHandler(&wlog, nil)))
	var (
		wg       sync.WaitGroup
		statuses [2]int
		bodies   [2][]byte
	)
	for i, r := range rs {
		wg.Go(func() {
			statuses[i], bodies[i] = r.Raw(http.MethodPost, "/v1/fuzz/runs", replicaToken, map[string]any{"runtime": true, "seconds": 2})
		})
	}
	wg.Wait()
	won := slices.Index(statuses[:], http.StatusAccepted)
	if won < 0 || statuses[1-won] != http.StatusConflict {
		t.Fatalf("two starts at once: %d %s; %d %s", statuses[0], bodies[0], statuses[1], bodies[1])
	}
	var st map[string]any
	if err := json.Unmarshal(bodies[won], &st); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(bodies[1-won], fmt.Appendf(nil, "fuzz run %v ", st["id"])) {
		t.Fatalf("the refused start does not name the run: %s", bodies[1-won])
	}
	if st["state"] != "running" || fmt.Sprint(st["progress"]) != "map[done:0 total:0]" || !strings.HasPrefix(fmt.Sprint(st["detail"]), "queued") {
		t.Fatalf("a run just queued: %v", st)
	}
	a, b := rs[won], rs[1-won] // the other replica reads it
	got := waitFuzzRun(t, b, st["id"], 2*time.Minute)
	var rep struct {
		Tests   []string `json:"tests"`
		Runtime *struct {
			Cases int `json:"cases"`
		} `json:"runtime"`
	}
	raw, _ := json.Marshal(got["result"])
	if err := json.Unmarshal(raw, &rep); err != nil || got["state"] != "done" || got["runtime"] != true ||
		!slices.Contains(rep.Tests, "runtime") || rep.Runtime == nil || rep.Runtime.Cases == 0 {
		t.Fatalf("the run on B: %v; tests %v, runtime %+v; %v", got["state"], rep.Tests, rep.Runtime, got)
	}
	t.Logf("run %v: %d runtime cases, on the worker", st["id"], rep.Runtime.Cases)
	wantLogged(t, &wlog, "fuzz run adopted", st["id"])
	wantLogged(t, &wlog, "fuzz job done", st["id"])

	// A second run, long enough to act on, cancelled through B.
	st = a.want(http.StatusAccepted, http.MethodPost, "/v1/fuzz/runs", map[string]any{"runtime": true, "seconds": 600})
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(wlog.String(), fmt.Sprintf(`"msg":"fuzz run adopted","run":%v,`, st["id"])) {
		if time.Now().After(deadline) {
			t.Fatalf("the worker has not adopted run %v in a minute: %s", st["id"], wlog.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	path := fmt.Sprintf("/v1/fuzz/runs/%v", st["id"])
	if status, body := b.Raw(http.MethodDelete, path, replicaToken, nil); status != http.StatusOK && status != http.StatusAccepted {
		t.Fatalf("DELETE through B: %d %s", status, body)
	}
	got = waitFuzzRun(t, a, st["id"], time.Minute)
	if got["state"] != "cancelled" || got["detail"] != "cancelled on request" {
		t.Fatalf("the run cancelled through B: %v", got)
	}
}

// TestReplicasFuzzNoWorker: with no worker against the store, a queued
// run fails within seconds saying so, rather than staying running; the
// next run may then start.
func TestReplicasFuzzNoWorker(t *testing.T) {
	p := pgstoretest.New(t)
	a := startReplicasWorker(t, p, 1, nil)[0]
	began := time.Now()
	st := a.want(http.StatusAccepted, http.MethodPost, "/v1/fuzz/runs", map[string]any{"seconds": 5})
	got := waitFuzzRun(t, a, st["id"], 30*time.Second)
	took := time.Since(began)
	t.Logf("a run with no worker failed after %v", took.Round(time.Millisecond))
	if got["state"] != "failed" || !strings.Contains(fmt.Sprint(got["detail"]), "no groundgate worker took the run") || got["finished"] == nil {
		t.Fatalf("a run with no worker: %v", got)
	}
	a.want(http.StatusAccepted, http.MethodPost, "/v1/fuzz/runs", map[string]any{"seconds": 5})
}

// waitFuzzRun polls run id on r until it is no longer running, for up
// to within, and returns it.
func waitFuzzRun(t *testing.T, r replica, id any, within time.Duration) map[string]any {
	t.Helper()
	path := fmt.Sprintf("/v1/fuzz/runs/%v", id)
	deadline := time.Now().Add(within)
	for {
		got := r.want(http.StatusOK, http.MethodGet, path, nil)
		if got["state"] != "running" {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %v is still running after %v: %v", id, within, got)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// wantLogged wants a line of msg about run id in log.
func wantLogged(t *testing.T, log *testio.SyncBuffer, msg string, id any) {
	t.Helper()
	if !strings.Contains(log.String(), fmt.Sprintf(`"msg":%q`, msg)) || !strings.Contains(log.String(), fmt.Sprintf(`"run":%v`, id)) {
		t.Fatalf("the worker did not log %q for run %v:\n%s", msg, id, log.String())
	}
}

// TestReplicasFuzzRunLease: a fuzz run belongs to the worker running it
// (queued by A). A replica opened while it runs (a deployment adding or
// restarting a server) leaves it running, reports it running, refuses a second run
// naming it (one run at a time across the replicas), and its DELETE
// reaches the owner, which stops the run and stores its partial report.
func TestReplicasFuzzRunLease(t *testing.T) {
	p := pgstoretest.New(t)
	rs := startReplicas(t, p, 1)
	a := rs[0]
	// The runtime tests take tens of seconds: long enough to act on.
	st := a.want(http.StatusAccepted, http.MethodPost, "/v1/fuzz/runs", map[string]any{"runtime": true, "seconds": 600})
	path := fmt.Sprintf("/v1/fuzz/runs/%v", st["id"])
	m, err := app.Open(context.Background(), replicaConfig(t, p))
	if err != nil {
		t.Fatal(err)
	}
	c := serveReplica(t, m)
	if got := c.want(http.StatusOK, http.MethodGet, path, nil); got["state"] != "running" {
		t.Fatalf("the run on a replica opened while it ran: %v", got)
	}
	busy := c.want(http.StatusConflict, http.MethodPost, "/v1/fuzz/runs", map[string]any{})
	if busy["type"] != "urn:groundgate:problem:fuzz-run-in-progress" || !strings.Contains(fmt.Sprint(busy["detail"]), fmt.Sprintf("fuzz run %v ", st["id"])) {
		t.Fatalf("a second run on the other replica: %v", busy)
	}
	// The owner reads the request at its next renewal (every 5 s).
	asked := time.Now()
	status, b := c.Raw(http.MethodDelete, path, replicaToken, nil)
	t.Logf("DELETE through the other replica answered %d after %v", status, time.Since(asked).Round(time.Millisecond))
	if status != http.StatusOK && status != http.StatusAccepted {
		t.Fatalf("DELETE on the other replica: %d %s", status, b)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		got := a.want(http.StatusOK, http.MethodGet, path, nil)
		if got["state"] != "running" {
			if got["state"] != "cancelled" || got["detail"] != "cancelled on request" || got["result"] == nil {
				t.Fatalf("the run cancelled through another replica: %v", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run is still running a minute after its cancel: %v", got)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got := c.raw(path, ""); !bytes.Equal(got, a.raw(path, "")) {
		t.Fatalf("the replicas disagree on the ended run:\n%s\n%s", got, a.raw(path, ""))
	}
}

// TestReplicasExecuteNoWorker: on a shared store an execution runs on a
// worker; with none running, the server answers 503 not-ready within
// seconds, saying so, rather than after its whole wait.
func TestReplicasExecuteNoWorker(t *testing.T) {
	p := pgstoretest.New(t)
	a := startServers(t, p, 1)[0]
	found := a.want(http.StatusOK, http.MethodPost, "/v1/discover", map[string]any{"prompt": "momentum strategy scored by sharpe ratio"})
	g := a.want(http.StatusOK, http.MethodPost, "/v1/ground", map[string]any{"discovery": found["id"],
		"request": map[string]any{"family": "MOM_WZS", "metric": "SRP", "params": map[string]any{"window": []int{25}}, "data": "oil-spot/wti-daily.csv"}})
	began := time.Now()
	got := a.want(http.StatusServiceUnavailable, http.MethodPost, "/v1/executions", map[string]any{"grounding": g["id"]})
	took := time.Since(began)
	if got["type"] != "urn:groundgate:problem:not-ready" || !strings.Contains(fmt.Sprint(got["detail"]), "no groundgate worker is running") || took > 30*time.Second {
		t.Fatalf("an execution with no worker, after %v: %v", took, got)
	}
	t.Logf("an execution with no worker answered 503 after %v", took.Round(time.Millisecond))
}
