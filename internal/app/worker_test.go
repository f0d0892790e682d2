package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/errkind"
	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/internal/s3test"
	"github.com/groundgate/groundgate/internal/testio"
	"github.com/groundgate/groundgate/jobs"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/server"
	"github.com/groundgate/groundgate/store/pgstore"
	"github.com/groundgate/groundgate/store/pgstore/pgstoretest"
)

// childEnv, when set, makes the test binary a `groundgate worker` (the
// kill -9 test and the throughput benchmark run workers as processes):
// its value is the JSON of a childConfig.
const childEnv = "GROUNDGATE_TEST_WORKER"

type childConfig struct {
	DSN, Blobs, Data string
	Concurrency      int
	JobTimeout       time.Duration
}

func TestMain(m *testing.M) {
	if raw := os.Getenv(childEnv); raw != "" {
		os.Exit(runChild(raw))
	}
	pgstoretest.Main(m)
}

// runChild is the worker process: OpenWorker and Run until SIGTERM, as
// `groundgate worker` does, logging JSON to stderr.
func runChild(raw string) int {
	var cc childConfig
	if err := json.Unmarshal([]byte(raw), &cc); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	w, err := OpenWorker(ctx, WorkerConfig{Store: cc.DSN, Blobs: cc.Blobs, Getenv: s3test.Env, Data: cc.Data,
		Jobs: jobs.WorkerOptions{Concurrency: cc.Concurrency, JobTimeout: cc.JobTimeout}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// cluster is one shared store as a deployment has it: PostgreSQL and a
// bucket, the registry seeded with the built-in catalog, a data root, and
// a server's discovery, gate and executor over them.
type cluster struct {
	place pgstoretest.Place
	blobs string // the --blobs URL
	data  string // the data root ("" the bundled sample data)
	st    *pgstore.Store
	reg   *registry.Store
	disc  *discover.Discoverer
	gate  *ground.Gate
	exec  *execution.Executor
}

func newCluster(t testing.TB, data string) *cluster {
	t.Helper()
	ctx := context.Background()
	c := &cluster{place: pgstoretest.New(t), data: data}
	c.blobs = s3test.Get(t).URL(c.place.Bucket)
	c.st = c.place.Open(t)
	t.Cleanup(func() { c.st.Close() })
	reg, err := registry.OpenEngine(ctx, c.st, registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.reg = reg
	if err := SeedBuiltin(ctx, reg); err != nil {
		t.Fatal(err)
	}
	if c.disc, err = discover.New(ctx, reg, c.st, discover.Options{LazyText: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.disc.Close() })
	if c.gate, err = ground.New(reg, c.disc, c.st); err != nil {
		t.Fatal(err)
	}
	root := c.dataRoot(t)
	arts, err := execution.OpenArtifacts(c.st)
	if err != nil {
		t.Fatal(err)
	}
	if c.exec, err = execution.New(reg, arts, c.st, root.FS, execution.Options{}); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *cluster) dataRoot(t testing.TB) *DataRoot {
	t.Helper()
	root, err := OpenDataRoot(c.data)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return root
}

// ground discovers the request's family and metric and grounds it on the
// cluster, as a server does for POST /v1/ground.
func (c *cluster) ground(t testing.TB, req map[string]any) *ground.Grounded {
	t.Helper()
	return groundOn(t, c.disc, c.gate, req)
}

func groundOn(t testing.TB, disc *discover.Discoverer, gate *ground.Gate, req map[string]any) *ground.Grounded {
	t.Helper()
	ctx := context.Background()
	res, err := disc.Discover(ctx, discover.Query{Terms: []string{"momentum", "sharpe"}})
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	out, err := gate.Ground(ctx, ground.Proposal{Request: body, DiscoveryID: res.ID})
	if err != nil {
		t.Fatal(err)
	}
	if out.Grounded == nil {
		t.Fatalf("not admitted: %+v", out.Record.Decision.Failures)
	}
	return out.Grounded
}

// boltHash is what one embedded server gives: the request grounded and
// executed on a bbolt file over the same data.
func boltHash(t testing.TB, data string, req map[string]any) hashing.Digest {
	t.Helper()
	e, err := OpenEngines(context.Background(), filepath.Join(t.TempDir(), "g.db"), data)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	fp, err := e.Exec.Execute(context.Background(), groundOn(t, e.Disc, e.Gate, req))
	if err != nil {
		t.Fatal(err)
	}
	return fp.Hash
}

// worker runs an in-process worker over its own connection to the
// cluster (as another machine would have) until the test ends.
func (c *cluster) worker(t testing.TB, cfg WorkerConfig) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cfg.Store, cfg.Blobs, cfg.Getenv, cfg.Data = c.place.DSN, c.blobs, s3test.Env, c.data
	cfg.Logger = slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	w, err := OpenWorker(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("worker: %v", err)
		}
	})
}

// child starts a worker process (this test binary, as `groundgate
// worker`); the test kills it at its end if it still runs.
func (c *cluster) child(t testing.TB, cc childConfig) *exec.Cmd {
	t.Helper()
	cc.DSN, cc.Blobs, cc.Data = c.place.DSN, c.blobs, c.data
	raw, _ := json.Marshal(cc)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"="+string(raw))
	var logs bytes.Buffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() || testing.Verbose() {
			t.Logf("worker process %d:\n%s", cmd.Process.Pid, logs.String())
		}
	})
	return cmd
}

// queue is the server's side over the cluster.
func (c *cluster) queue(t testing.TB) *jobs.Queue {
	t.Helper()
	q, err := QueueExecutions(context.Background(), c.st, c.exec, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return q
}

// jobRow is a job's row in River's table, read by the grounding it runs.
type jobRow struct {
	ID       int64
	State    string
	Attempt  int
	Attempts int // rows for the grounding: one if no second job ran it
}

func (c *cluster) job(t testing.TB, g hashing.Digest) jobRow {
	t.Helper()
	var r jobRow
	err := c.st.Pool().QueryRow(context.Background(),
		`SELECT coalesce(max(id), 0), coalesce(max(state::text), ''), coalesce(max(attempt), 0), count(*) FROM river_job WHERE kind = $1 AND args->>'grounding' = $2`,
		jobs.KindExecute, g.String()).Scan(&r.ID, &r.State, &r.Attempt, &r.Attempts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func grid(windows ...float64) map[string]any {
	return map[string]any{"family": "MOM_WZS", "metric": "SRP", "data": "oil-spot/wti-daily.csv",
		"params": map[string]any{"window": windows}}
}

// A grounding executed through the queue by a worker gives the hash one
// bbolt server gives, and the footprint the server reads back is that
// execution's.
func TestWorkerSameHashAsBolt(t *testing.T) {
	c := newCluster(t, "")
	c.worker(t, WorkerConfig{Jobs: jobs.WorkerOptions{Concurrency: 1}})
	q := c.queue(t)
	req := grid(25, 50, 100, 200)
	g := c.ground(t, req)
	fp, err := q.Execute(context.Background(), g)
	if err != nil {
		t.Fatal(err)
	}
	if want := boltHash(t, "", req); fp.Hash != want {
		t.Fatalf("through the queue %s, on one bbolt server %s", fp.Hash, want)
	}
	if len(fp.Morphisms) != 4 || fp.Grounding != g.ID() {
		t.Fatalf("footprint: %d morphisms, grounding %v", len(fp.Morphisms), fp.Grounding)
	}
	if r := c.job(t, g.ID()); r.State != "completed" || r.Attempt != 1 || r.Attempts != 1 {
		t.Fatalf("job %+v: want one job, completed at its first attempt", r)
	}
	// Executing again runs again (the data may have changed), one hash.
	fp2, err := q.Execute(context.Background(), g)
	if err != nil || fp2.Hash != fp.Hash {
		t.Fatalf("again: %v, %v", fp2, err)
	}
}

// Two workers, several jobs, each asked for twice at once: every job is
// run once (a second request joins the pending job) and every hash is
// the one bbolt gives.
func TestTwoWorkersManyJobs(t *testing.T) {
	c := newCluster(t, "")
	for range 2 {
		c.worker(t, WorkerConfig{Jobs: jobs.WorkerOptions{Concurrency: 2}})
	}
	q := c.queue(t)
	const n = 6
	reqs := make([]map[string]any, n)
	gs := make([]*ground.Grounded, n)
	for i := range n {
		reqs[i] = grid(20, float64(30+10*i), 120)
		gs[i] = c.ground(t, reqs[i])
	}
	got := make([][2]hashing.Digest, n)
	var wg sync.WaitGroup
	for i := range n {
		for k := range 2 {
			wg.Go(func() {
				fp, err := q.Execute(context.Background(), gs[i])
				if err != nil {
					t.Errorf("job %d: %v", i, err)
					return
				}
				got[i][k] = fp.Hash
			})
		}
	}
	wg.Wait()
	for i := range n {
		want := boltHash(t, "", reqs[i])
		if got[i][0] != want || got[i][1] != want {
			t.Errorf("job %d: %s and %s, bbolt %s", i, got[i][0], got[i][1], want)
		}
		if r := c.job(t, gs[i].ID()); r.State != "completed" || r.Attempt != 1 || r.Attempts != 1 {
			t.Errorf("job %d: %+v: want one job, run once", i, r)
		}
	}
}

// grid100 is a 100-morphism grid (5 windows × 4 risk windows × 5
// leverages) on panel.csv; shift makes distinct groundings of it.
func grid100(shift float64) map[string]any {
	return map[string]any{"family": "MOM_WZS", "metric": "SRP", "data": "panel.csv",
		"params": map[string]any{
			"window":      []float64{20, 40, 60, 120, 250 + shift},
			"risk_window": []float64{20, 60, 120, 250},
			"leverage":    []float64{0.5, 1, 2, 3, 5},
		}}
}

// panelDir is a data root holding panel.csv of rows × cols.
func panelDir(t testing.TB, rows, cols int) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "panel.csv"), testio.PanelCSV(rows, cols), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A worker process killed with SIGKILL in the middle of a job: River's
// rescuer hands the job to a second worker, which finishes it; the
// server's Execute, waiting all along, returns the hash one bbolt server
// gives, and the job ran twice (two attempts) as one job.
func TestWorkerKilledMidJob(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, panelDir(t, 6000, 20))
	req := grid100(0)
	g := c.ground(t, req)
	q := c.queue(t)
	type result struct {
		fp  *execution.Footprint
		err error
	}
	res := make(chan result, 1)
	go func() {
		fp, err := q.Execute(ctx, g)
		res <- result{fp, err}
	}()
	// The first worker, a process: its job timeout does not matter, it
	// will not live to see it.
	a := c.child(t, childConfig{Concurrency: 1, JobTimeout: time.Minute})
	began := time.Now()
	for c.job(t, g.ID()).State != "running" {
		if time.Since(began) > time.Minute {
			t.Fatalf("the job did not start: %+v", c.job(t, g.ID()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // mid-job
	if err := a.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	a.Wait()
	killed := time.Now()
	if r := c.job(t, g.ID()); r.State != "running" {
		t.Fatalf("the job was %s when its worker died: make it longer", r.State)
	}
	// The second worker rescues with its own timing (it leads once the
	// dead one's lease ends): a short job timeout keeps the test short.
	c.worker(t, WorkerConfig{Jobs: jobs.WorkerOptions{Concurrency: 1, JobTimeout: 20 * time.Second, RescueAfter: 21 * time.Second}})
	var r result
	select {
	case r = <-res:
	case <-time.After(3 * time.Minute):
		t.Fatalf("no answer 3 minutes after the kill: %+v", c.job(t, g.ID()))
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Logf("answered %s after the kill", time.Since(killed).Round(time.Millisecond))
	bolt0 := time.Now()
	want := boltHash(t, c.data, req)
	t.Logf("the grid alone, on bbolt: %s", time.Since(bolt0).Round(time.Millisecond))
	if r.fp.Hash != want {
		t.Fatalf("after the rescue %s, on one bbolt server %s", r.fp.Hash, want)
	}
	if j := c.job(t, g.ID()); j.State != "completed" || j.Attempt != 2 || j.Attempts != 1 {
		t.Fatalf("job %+v: want one job, completed at its second attempt", j)
	}
}

// A job the executor or the gate refuses is cancelled at its first
// attempt and answered by its kind and code (an over-budget grid stays a
// 422, whichever machine refused it); a job naming no grounding, or one
// never stored, is cancelled with a clear error, never retried.
func TestWorkerRefusals(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, "")
	c.worker(t, WorkerConfig{Jobs: jobs.WorkerOptions{Concurrency: 1}, Exec: execution.Options{MaxCells: 1000}})
	q := c.queue(t)
	g := c.ground(t, grid(25, 50))
	_, err := q.Execute(ctx, g)
	if errkind.Of(err) != errkind.TooLarge || errkind.CodeOf(err) != "over-budget" {
		t.Fatalf("over budget: %v (kind %v, code %q)", err, errkind.Of(err), errkind.CodeOf(err))
	}
	if r := c.job(t, g.ID()); r.State != "cancelled" || r.Attempt != 1 {
		t.Fatalf("over budget: job %+v, want cancelled at its first attempt", r)
	}

	client, err := river.NewClient(riverpgxv5.New(c.st.Pool()), &river.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ arg, kind string }{
		{"not a digest", "invalid"},
		{hashing.SumBLAKE3([]byte("x")).String(), "invalid"},
		{hashing.SumSHA256([]byte("never grounded")).String(), "not found"},
	} {
		res, err := client.Insert(ctx, jobs.ExecuteArgs{Grounding: tt.arg}, nil)
		if err != nil {
			t.Fatal(err)
		}
		row := res.Job
		for deadline := time.Now().Add(time.Minute); row.State != rivertype.JobStateCancelled; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) || row.FinalizedAt != nil {
				t.Fatalf("%q: job %s at attempt %d, want cancelled", tt.arg, row.State, row.Attempt)
			}
			if row, err = client.JobGet(ctx, row.ID); err != nil {
				t.Fatal(err)
			}
		}
		var out jobs.Output
		if err := json.Unmarshal(row.Output(), &out); err != nil || out.Error == nil || out.Error.Kind != tt.kind || row.Attempt != 1 {
			t.Fatalf("%q: output %s (%v), attempt %d; want a %s failure at the first", tt.arg, row.Output(), err, row.Attempt, tt.kind)
		}
		t.Logf("%q: %s", tt.arg, out.Error.Detail)
	}
}

// SIGTERM mid-job: the worker takes no new job, finishes the one it runs
// (within its stop timeout) and exits cleanly; the job completes once.
func TestWorkerStopsGracefully(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, panelDir(t, 3000, 10))
	g := c.ground(t, grid100(1))
	q := c.queue(t)
	res := make(chan error, 1)
	go func() {
		_, err := q.Execute(ctx, g)
		res <- err
	}()
	a := c.child(t, childConfig{Concurrency: 1, JobTimeout: time.Minute})
	for began := time.Now(); c.job(t, g.ID()).State != "running"; time.Sleep(20 * time.Millisecond) {
		if time.Since(began) > time.Minute {
			t.Fatalf("the job did not start: %+v", c.job(t, g.ID()))
		}
	}
	if err := a.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := a.Wait(); err != nil {
		t.Fatalf("the worker's exit: %v", err)
	}
	select {
	case err := <-res:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("no answer: %+v", c.job(t, g.ID()))
	}
	if r := c.job(t, g.ID()); r.State != "completed" || r.Attempt != 1 {
		t.Fatalf("job %+v: want completed by the stopping worker", r)
	}
}

// POST /v1/executions on a server whose Executor is ExecutorVia: the
// grounding runs on a worker and the answer is the server's own — 201
// with the footprint (the hash one bbolt server gives), a 422
// over-budget problem for a grid the worker's budget refuses — and GET
// reads the footprint back locally.
func TestExecutionsEndpointOnWorkers(t *testing.T) {
	dir := panelDir(t, 3000, 10)
	if err := os.WriteFile(filepath.Join(dir, "small.csv"), testio.PanelCSV(100, 2), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, dir)
	c.worker(t, WorkerConfig{Jobs: jobs.WorkerOptions{Concurrency: 1}, Exec: execution.Options{MaxCells: 1000}})
	srv := server.New(server.Deps{Registry: c.reg, Discoverer: c.disc, Gate: c.gate,
		Executor: ExecutorVia{Executor: c.exec, Queue: c.queue(t)}}, server.Config{})
	post := func(id hashing.Digest) (int, []byte) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/v1/executions", strings.NewReader(`{"grounding":"`+id.String()+`"}`))
		req.Header.Set("Content-Type", "application/json")
		srv.Handler().ServeHTTP(rec, req)
		return rec.Code, rec.Body.Bytes()
	}

	small := map[string]any{"family": "MOM_WZS", "metric": "SRP", "data": "small.csv", "params": map[string]any{"window": []float64{5, 10, 20}}}
	code, body := post(c.ground(t, small).ID())
	var fp struct {
		Hash hashing.Digest `json:"hash"`
	}
	if err := json.Unmarshal(body, &fp); code != http.StatusCreated || err != nil {
		t.Fatalf("small grid: %d %s", code, body)
	}
	if want := boltHash(t, dir, small); fp.Hash != want {
		t.Fatalf("on a worker %s, on one bbolt server %s", fp.Hash, want)
	}
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/executions/"+fp.Hash.String(), nil))
	if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(fp.Hash.String())) {
		t.Fatalf("GET: %d %s", rec.Code, rec.Body.Bytes())
	}

	code, body = post(c.ground(t, grid100(0)).ID())
	if code != http.StatusUnprocessableEntity || !bytes.Contains(body, []byte("over-budget")) {
		t.Fatalf("over budget: %d %s", code, body)
	}
}
