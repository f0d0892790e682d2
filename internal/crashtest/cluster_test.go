//go:build cluster

package crashtest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/groundgate/groundgate/store/pgstore/pgstoretest"
	"github.com/groundgate/groundgate/store/s3store"
)

// The cluster test (issue 29, SPEC §17) runs as a step of its own
// (`go test -tags cluster ./internal/crashtest`, scripts/cluster-test.sh):
// three `groundgate serve` replicas and two `groundgate worker` processes
// over one PostgreSQL database and one S3 bucket, all on loopback, under
// the crash test's mixed load (registry writes, discover → ground →
// execute, calls through the gateway, sessions) spread over the replicas
// as a load balancer would. Mid-load one worker is killed with SIGKILL
// while it runs a job, and one server while it answers; both come back.
// Afterwards every replica must answer every write any replica
// acknowledged, byte for byte, and the executions the killed worker held
// must have been finished by the other with the hashes one bbolt server
// gives. Then a worker is killed while it runs a fuzz run
// (cluster_fuzz_test.go): every replica must report the run failed,
// interrupted, once its lease passes, and the next run must run to its
// end on the other worker.

func TestMain(m *testing.M) { pgstoretest.Main(m) }

const (
	envClusterSeconds = "GROUNDGATE_CLUSTER_SECONDS"
	clusterServers    = 3
	clusterWorkers    = 2
	// refGrids 100-morphism grids on the fx panel (about 3 s each on
	// one core) are in the queue when the first worker is killed.
	refGrids   = 4
	refData    = "fx-fed-h10/daily.csv"
	refTimeout = 5 * time.Minute
)

// refRequest is reference grid i: MOM_WZS, 10 signal windows × 10 risk
// windows, each grid's windows its own.
func refRequest(i int) map[string]any {
	var w, rw []int
	for k := range 10 {
		w = append(w, 10+5*k+i)
		rw = append(rw, 20+10*k)
	}
	return map[string]any{"family": "MOM_WZS", "metric": "SRP", "data": refData,
		"params": map[string]any{"window": w, "risk_window": rw}}
}

// groundRef discovers momPrompt and grounds reference grid i through c.
func groundRef(ctx context.Context, c *client, i int) (string, error) {
	q, _ := json.Marshal(map[string]any{"prompt": momPrompt})
	r := c.do(ctx, "POST", "/v1/discover", q, false)
	var d struct {
		ID string `json:"id"`
	}
	if !r.ack() || json.Unmarshal(r.body, &d) != nil || d.ID == "" {
		return "", fmt.Errorf("discover: %d %v %.300s", r.status, r.err, r.body)
	}
	g, _ := json.Marshal(map[string]any{"request": refRequest(i), "discovery": d.ID})
	r = c.do(ctx, "POST", "/v1/ground", g, false)
	var gr struct {
		ID string `json:"id"`
	}
	if !r.ack() || json.Unmarshal(r.body, &gr) != nil || gr.ID == "" {
		return "", fmt.Errorf("ground: %d %v %.300s", r.status, r.err, r.body)
	}
	return gr.ID, nil
}

// executeRef executes a grounding through c until an answer arrives: an
// execution is idempotent (the same grounding gives the same footprint),
// so a request whose server died under it is simply sent again.
func executeRef(ctx context.Context, c *client, grounding string) (string, int, error) {
	x, _ := json.Marshal(map[string]string{"grounding": grounding})
	tries := 0
	for {
		tries++
		r := c.do(ctx, "POST", "/v1/executions", x, false)
		if r.err == nil {
			var fp struct {
				Hash string `json:"hash"`
			}
			if r.status != http.StatusCreated || json.Unmarshal(r.body, &fp) != nil || fp.Hash == "" {
				return "", tries, fmt.Errorf("POST /v1/executions: %d %.300s", r.status, r.body)
			}
			return fp.Hash, tries, nil
		}
		if ctx.Err() != nil {
			return "", tries, fmt.Errorf("POST /v1/executions: %w (last: %v)", ctx.Err(), r.err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// referenceHashes runs the reference grids on one bbolt server: the
// hashes the cluster must give.
func referenceHashes(t *testing.T, bin, dir string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), refTimeout)
	defer cancel()
	srv := startServer(t, bin, filepath.Join(dir, "reference.db"), dir)
	c := newClient(srv.base)
	c.http.Timeout = refTimeout
	defer c.close()
	var hashes []string
	for i := range refGrids {
		g, err := groundRef(ctx, c, i)
		if err != nil {
			t.Fatalf("reference grid %d: %v", i, err)
		}
		h, _, err := executeRef(ctx, c, g)
		if err != nil {
			t.Fatalf("reference grid %d: %v", i, err)
		}
		hashes = append(hashes, h)
	}
	if err := srv.stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	return hashes
}

// cluster is the processes of the test.
type cluster struct {
	t              *testing.T
	bin, dir       string
	env            []string
	serveArgs      []string
	workerArgs     []string
	servers        []*server
	workers        []*server
	mu             sync.Mutex
	serverRestarts int
	workerRestarts int
}

func (cl *cluster) startServer(i int) {
	cl.t.Helper()
	s := startServing(cl.t, cl.bin, cl.dir, cl.env, cl.serveArgs...)
	cl.mu.Lock()
	cl.servers[i] = s
	cl.mu.Unlock()
}

// startWorker runs `groundgate worker` and waits for its "working" log
// line.
func (cl *cluster) startWorker(i int) {
	cl.t.Helper()
	s := startProcess(cl.t, cl.bin, cl.dir, cl.env, func(line string) bool {
		var rec struct {
			Msg string `json:"msg"`
		}
		return json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "working"
	}, append([]string{"worker"}, cl.workerArgs...)...)
	select {
	case <-s.seen:
	case <-s.done:
		cl.t.Fatalf("groundgate worker %d exited before starting (%v); log:\n%s", i, s.err, s.logTail())
	case <-time.After(60 * time.Second):
		cl.t.Fatalf("groundgate worker %d did not start within 60s; log:\n%s", i, s.logTail())
	}
	cl.mu.Lock()
	cl.workers[i] = s
	cl.mu.Unlock()
}

func (cl *cluster) bases() []string {
	var out []string
	for _, s := range cl.servers {
		out = append(out, s.base)
	}
	return out
}

// quiesce waits until the registry's newest version has stayed the same
// for quiet: the writes in flight when the load stopped have committed or
// never will.
func quiesce(ctx context.Context, c *client) error {
	const quiet = 3 * time.Second
	defer c.close()
	last, since := "", time.Now()
	for {
		r := c.do(ctx, "GET", "/v1/registry/history?limit=1", nil, false)
		if !r.ack() {
			return fmt.Errorf("GET /v1/registry/history: %d %v %.300s", r.status, r.err, r.body)
		}
		if now := string(r.body); now != last {
			last, since = now, time.Now()
		} else if time.Since(since) >= quiet {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// jobs counts the queue's jobs by state, and those run more than once.
func jobs(ctx context.Context, dsn string) (map[string]int, int, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, 0, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT state::text, count(*) FROM river_job GROUP BY state")
	if err != nil {
		return nil, 0, err
	}
	by := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			return nil, 0, err
		}
		by[s] = n
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	var again int
	err = conn.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE attempt > 1").Scan(&again)
	return by, again, err
}

// TestClusterUnderLoad is the cluster test; see the comment at the top.
func TestClusterUnderLoad(t *testing.T) {
	began := time.Now()
	seconds := envInt(t, envClusterSeconds, 60)
	seed := envSeedOrNow(t)
	t.Logf("seed %d (replay with %s=%d), %d s of load", seed, envSeed, seed, seconds)
	rng := rand.New(rand.NewPCG(uint64(seed), 0x636c7573746572))

	bin := buildBinary(t)
	upstream := buildUpstream(t)
	dir := t.TempDir()
	want := referenceHashes(t, bin, dir)
	t.Logf("reference hashes on one bbolt server: %s", strings.Join(want, " "))

	place := pgstoretest.New(t)
	shared := []string{"--store", place.DSN, "--blobs", place.BlobsURL}
	var env []string
	for _, k := range []string{s3store.AccessKeyEnv, s3store.SecretKeyEnv} {
		env = append(env, k+"="+pgstoretest.Env(k))
	}
	cl := &cluster{t: t, bin: bin, dir: dir, env: env,
		serveArgs:  append([]string{"--key", filepath.Join(dir, "cluster.key")}, shared...),
		workerArgs: append([]string{"--concurrency", "2", "--job-timeout", "30s"}, shared...),
		servers:    make([]*server, clusterServers), workers: make([]*server, clusterWorkers)}
	// The first replica makes the key and seeds the store; the others
	// start together.
	cl.startServer(0)
	var wg sync.WaitGroup
	for i := 1; i < clusterServers; i++ {
		wg.Go(func() { cl.startServer(i) })
	}
	wg.Wait()
	cl.startWorker(0)
	t.Logf("cluster up: %d servers, 1 worker (%s)", clusterServers, time.Since(began).Round(time.Millisecond))

	ctx, cancel := context.WithTimeout(t.Context(), time.Duration(seconds)*time.Second+5*time.Minute)
	defer cancel()
	c := newClient(cl.bases()...)
	defer c.close()
	slow := newClient(cl.bases()...)
	slow.http.Timeout = refTimeout
	defer slow.close()

	// The reference groundings first, at version 1: the bbolt server's
	// registry. Later registry writes do not touch them: an execution runs
	// at its grounding's version.
	var refs []string
	for i := range refGrids {
		g, err := groundRef(ctx, c, i)
		if err != nil {
			t.Fatalf("reference grid %d on the cluster: %v", i, err)
		}
		refs = append(refs, g)
	}

	l := newLedger()
	st, err := newState(ctx, c, l, rng)
	if err != nil {
		t.Fatal(err)
	}
	if err := setupUpstream(ctx, c, upstream); err != nil {
		t.Fatal(err)
	}
	// Every replica connects the upstream another configured.
	for _, s := range cl.servers {
		one := newClient(s.base)
		if err := waitUpstream(ctx, one, true); err != nil {
			t.Fatalf("%s: %v; log tail:\n%s", s.base, err, s.logTail())
		}
		one.close()
	}

	// The load, for `seconds`: each loop is started again when it stops
	// (a request lost in a kill ends a loop; the load goes on).
	loadCtx, stopLoad := context.WithTimeout(ctx, time.Duration(seconds)*time.Second)
	defer stopLoad()
	lr := &loadRun{t: t, round: 1, c: c, l: l, st: st}
	again := func(loop func(context.Context, *rand.Rand), r *rand.Rand) {
		for loadCtx.Err() == nil && !t.Failed() {
			loop(loadCtx, r)
		}
	}
	var load sync.WaitGroup
	for _, w := range st.writers {
		wrng := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
		load.Go(func() { again(func(ctx context.Context, r *rand.Rand) { lr.registryLoop(ctx, w, r) }, wrng) })
	}
	for range pipelineWorkers {
		prng := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
		load.Go(func() { again(lr.pipelineLoop, prng) })
	}
	for range callWorkers {
		crng := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
		load.Go(func() { again(lr.callLoop, crng) })
	}
	load.Go(func() { again(func(ctx context.Context, _ *rand.Rand) { lr.sessionLoop(ctx) }, nil) })

	// The reference grids go into the queue a few seconds in; once one
	// runs (on the only worker), the second worker starts and the first
	// is killed under it.
	time.Sleep(3 * time.Second)
	got := make([]string, refGrids)
	tries := make([]int, refGrids)
	errs := make([]error, refGrids)
	var refWG sync.WaitGroup
	for i, g := range refs {
		refWG.Go(func() { got[i], tries[i], errs[i] = executeRef(ctx, slow, g) })
	}
	deadline := time.Now().Add(time.Minute)
	for {
		by, _, err := jobs(ctx, place.DSN)
		if err != nil {
			t.Fatalf("reading the queue: %v", err)
		}
		if by["running"] > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no job running a minute after the reference grids were sent: %v", by)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cl.startWorker(1)
	tKill := time.Now()
	cl.workers[0].kill()
	t.Logf("worker 0 killed with a job running, %s into the load", time.Since(began).Round(time.Millisecond))

	// A server dies mid-load too, and both come back.
	time.Sleep(time.Duration(2000+rng.IntN(3000)) * time.Millisecond)
	cl.servers[1].kill()
	t.Logf("server 1 killed")
	time.Sleep(3 * time.Second)
	cl.startServer(1)
	cl.startWorker(0)
	t.Logf("server 1 and worker 0 restarted")

	refWG.Wait()
	for i := range refGrids {
		if errs[i] != nil {
			t.Errorf("reference grid %d: %v", i, errs[i])
		} else if got[i] != want[i] {
			t.Errorf("reference grid %d: the cluster gave %s, one bbolt server %s", i, got[i], want[i])
		}
	}
	t.Logf("reference grids done %s after the worker kill (requests sent %v times)", time.Since(tKill).Round(time.Millisecond), tries)
	load.Wait()
	if t.Failed() {
		for i, s := range cl.servers {
			t.Logf("server %d log tail:\n%s", i, s.logTail())
		}
		t.FailNow()
	}
	by, rerun, err := jobs(ctx, place.DSN)
	if err != nil {
		t.Fatal(err)
	}
	if rerun == 0 {
		t.Errorf("no job ran twice: the kill of worker 0 interrupted nothing (%v)", by)
	}
	t.Logf("queue after the load: %v; %d job(s) run again after the kill", by, rerun)

	// The servers outlive the load: a request the load gave up on when it
	// ended (in doubt, not acknowledged) may still commit a moment later.
	// Check once no new registry version has appeared for a while, so
	// that every server is compared with the same history.
	if err := quiesce(ctx, newClient(cl.servers[0].base)); err != nil {
		t.Fatal(err)
	}

	// Every replica answers every acknowledged write, byte for byte.
	cnt := l.counts()
	sessions, sessionCalls := l.sessionCounts()
	checked := 0
	for i, s := range cl.servers {
		one := newClient(s.base)
		k := &checker{c: one, l: l, t: t}
		k.currentRegistry(ctx)
		k.versions(ctx, sampleRegs(rng, l.regs, sampleVersAll))
		k.docs(ctx, l.docs, false)
		checked += len(l.docs)
		replayed := k.docs(ctx, sample(rng, executions(l.docs), 5), true)
		checked += k.sessions(ctx)
		one.close()
		if len(k.lost) > 0 {
			t.Fatalf("server %d: %d acknowledged write(s) not answered as acknowledged:\n%s", i, len(k.lost), strings.Join(k.lost, "\n"))
		}
		t.Logf("server %d answers every acknowledged write (%d replays matched)", i, replayed)
	}
	t.Logf("0 errors, 0 acknowledged writes lost over %d s on %d servers and %d workers (seed %d): %d registry PUTs, %d discoveries, %d groundings, %d executions, %d calls, %d sessions with %d calls; %d writes in doubt at the kills; %d checks",
		seconds, clusterServers, clusterWorkers, seed, cnt[kindRegistry], cnt[kindDiscovery], cnt[kindGrounding], cnt[kindExecution], cnt[kindCall], sessions, sessionCalls, l.maybe, checked)

	cl.fuzzWorkerKilled(ctx)
	for _, s := range append(cl.servers, cl.workers...) {
		if err := s.stop(30 * time.Second); err != nil {
			t.Errorf("clean stop: %v; log tail:\n%s", err, s.logTail())
		}
	}
	t.Logf("time: %s", time.Since(began).Round(time.Millisecond))
}
