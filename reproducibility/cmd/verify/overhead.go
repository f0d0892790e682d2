package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/groundgate/groundgate/artifacts"
	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/reproducibility/experiments"
	"github.com/groundgate/groundgate/sampledata"
)

// The overhead workload: the README's prompt and the proposal it grounds.
const (
	overheadPrompt  = "Run a momentum strategy on WTI crude and score it by Sharpe ratio"
	overheadRequest = `{"family":"MOM_WZS","metric":"SRP","params":{"window":[25,50,100]},"data":"oil-spot/wti-daily.csv"}`
)

// Paper figures, Appendix C (20 repetitions, whole CLI processes).
type paperTiming struct {
	Mean, SD, Median float64
	Range            string
}

var paperOverhead = map[string]paperTiming{
	"discover": {13.6, 0.9, 13.0, "13–16"},
	"ground":   {13.2, 0.6, 13.0, "13–15"},
	"dry-run":  {13.4, 0.8, 13.0, "13–16"},
}

// PaperBoundMS is the paper's overhead claim: under 14 ms per stage.
const PaperBoundMS = 14.0

// Timing is one measured stage.
type Timing struct {
	Stage   string `json:"stage"` // discover, ground, dry-run
	Via     string `json:"via"`   // cli (a whole process) or rest (one request)
	Command string `json:"command"`
	N       int    `json:"n"`
	// Milliseconds.
	Mean   float64 `json:"mean_ms"`
	SD     float64 `json:"sd_ms"`
	Median float64 `json:"median_ms"`
	P99    float64 `json:"p99_ms"`
	Min    float64 `json:"min_ms"`
	Max    float64 `json:"max_ms"`
	// The paper's figure for the stage (CLI only: the paper measured
	// processes).
	PaperMean   *float64 `json:"paper_mean_ms,omitempty"`
	PaperSD     *float64 `json:"paper_sd_ms,omitempty"`
	PaperMedian *float64 `json:"paper_median_ms,omitempty"`
	PaperRange  string   `json:"paper_range_ms,omitempty"`
}

// Overhead is the overhead experiment's outcome.
type Overhead struct {
	CLIReps      int      `json:"cli_reps"`
	RESTRequests int      `json:"rest_requests"`
	Timings      []Timing `json:"timings"`
	// Phases is where one CLI process's time goes, measured in process
	// (Via "phase"): opening the store, building the discovery index and
	// the gate, the work itself, closing.
	Phases []Timing `json:"phases"`
	Notes  []string `json:"notes"`
}

// stats summarises durations in milliseconds.
func stats(stage, via, command string, ds []time.Duration) Timing {
	ms := make([]float64, len(ds))
	sum := 0.0
	for i, d := range ds {
		ms[i] = float64(d.Nanoseconds()) / 1e6
		sum += ms[i]
	}
	slices.Sort(ms)
	t := Timing{Stage: stage, Via: via, Command: command, N: len(ms)}
	if len(ms) == 0 {
		return t
	}
	t.Mean = sum / float64(len(ms))
	for _, v := range ms {
		t.SD += (v - t.Mean) * (v - t.Mean)
	}
	if len(ms) > 1 {
		t.SD = math.Sqrt(t.SD / float64(len(ms)-1))
	} else {
		t.SD = 0
	}
	t.Median = quantile(ms, 0.5)
	t.P99 = quantile(ms, 0.99)
	t.Min, t.Max = ms[0], ms[len(ms)-1]
	if p, ok := paperOverhead[stage]; ok && via == "cli" {
		t.PaperMean, t.PaperSD, t.PaperMedian, t.PaperRange = &p.Mean, &p.SD, &p.Median, p.Range
	}
	return t
}

// quantile interpolates linearly between the order statistics of sorted.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 1 {
		return sorted[0]
	}
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	if lo >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	f := pos - float64(lo)
	return sorted[lo]*(1-f) + sorted[lo+1]*f
}

// buildBinary builds cmd/groundgate into dir, from the module at root.
func buildBinary(ctx context.Context, root, dir string) (string, error) {
	bin := filepath.Join(dir, "groundgate")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/groundgate")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/groundgate: %v\n%s", err, out)
	}
	return bin, nil
}

// runProcess runs bin with args and returns its wall time and stdout.
func runProcess(ctx context.Context, bin string, args ...string) (time.Duration, []byte, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t0 := time.Now()
	err := cmd.Run()
	d := time.Since(t0)
	if err != nil {
		return d, nil, fmt.Errorf("%s %s: %v: %s", filepath.Base(bin), strings.Join(args, " "), err, stderr.Bytes())
	}
	return d, stdout.Bytes(), nil
}

// timeCLI times n runs of one command after one warm-up run, whose output
// check validates.
func timeCLI(ctx context.Context, n int, check func([]byte) error, bin string, args ...string) ([]time.Duration, error) {
	_, out, err := runProcess(ctx, bin, args...)
	if err != nil {
		return nil, err
	}
	if err := check(out); err != nil {
		return nil, fmt.Errorf("%s: %w", strings.Join(args, " "), err)
	}
	ds := make([]time.Duration, 0, n)
	for range n {
		d, _, err := runProcess(ctx, bin, args...)
		if err != nil {
			return nil, err
		}
		ds = append(ds, d)
	}
	return ds, nil
}

func decodeID(b []byte) (string, error) {
	var v struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &v); err != nil || !strings.HasPrefix(v.ID, "sha256:") {
		return "", fmt.Errorf("no id in %.200s (%v)", b, err)
	}
	return v.ID, nil
}

func checkAdmitted(b []byte) error {
	var v struct {
		Decision struct {
			Admitted bool `json:"admitted"`
		} `json:"decision"`
	}
	if err := json.Unmarshal(b, &v); err != nil || !v.Decision.Admitted {
		return fmt.Errorf("not admitted: %.300s (%v)", b, err)
	}
	return nil
}

// measureOverhead times the three stages as whole CLI processes, and
// discover and ground over REST against `groundgate serve`.
func measureOverhead(ctx context.Context, bin, dir string, cliReps, restN int, progress io.Writer) (*Overhead, error) {
	ov := &Overhead{CLIReps: cliReps, RESTRequests: restN}
	db := filepath.Join(dir, "cli.db")
	req := filepath.Join(dir, "request.json")
	if err := os.WriteFile(req, []byte(overheadRequest), 0o644); err != nil {
		return nil, err
	}
	// Create and seed the database once, so that every timed process opens
	// an existing file as a user's would.
	_, out, err := runProcess(ctx, bin, "discover", "--db", db, overheadPrompt)
	if err != nil {
		return nil, err
	}
	discID, err := decodeID(out)
	if err != nil {
		return nil, err
	}
	checkDisc := func(b []byte) error { _, err := decodeID(b); return err }
	cli := []struct {
		stage, shown string
		check        func([]byte) error
		args         []string
	}{
		{"discover", "groundgate discover --db F PROMPT", checkDisc, []string{"discover", "--db", db, overheadPrompt}},
		{"ground", "groundgate ground --db F --request R --discovery ID", checkAdmitted, []string{"ground", "--db", db, "--request", req, "--discovery", discID}},
		{"dry-run", "groundgate ground --db F --request R --prompt P", checkAdmitted, []string{"ground", "--db", db, "--request", req, "--prompt", overheadPrompt}},
	}
	for _, c := range cli {
		ds, err := timeCLI(ctx, cliReps, c.check, bin, c.args...)
		if err != nil {
			return nil, err
		}
		t := stats(c.stage, "cli", c.shown, ds)
		ov.Timings = append(ov.Timings, t)
		fmt.Fprintf(progress, "  cli %-8s mean %.1f ± %.1f ms, median %.1f ms (%d runs)\n", c.stage, t.Mean, t.SD, t.Median, t.N)
	}

	if ov.Phases, err = measurePhases(ctx, filepath.Join(dir, "phases.db"), cliReps); err != nil {
		return nil, err
	}

	rest, err := measureREST(ctx, bin, dir, restN)
	if err != nil {
		return nil, err
	}
	for _, t := range rest {
		fmt.Fprintf(progress, "  rest %-8s median %.3f ms, p99 %.3f ms (%d requests)\n", t.Stage, t.Median, t.P99, t.N)
	}
	ov.Timings = append(ov.Timings, rest...)
	ov.Notes = []string{
		"cli: each figure is one whole `groundgate` process (fork, exec, open the bbolt file, build the discovery index, answer, exit), timed from start to exit, after one untimed warm-up run; the paper timed its CLI the same way (Appendix C).",
		"dry-run is `groundgate ground --prompt P`: discovery and the gate in one process, as the paper's AGENT-DRYRUN.",
		"rest: `groundgate serve` (the same wiring, app.Open) as a separate process on 127.0.0.1:0 with a fresh database; the client sends one request at a time over one keep-alive connection, after 50 untimed warm-up requests per endpoint; each figure is one request's round trip.",
	}
	return ov, nil
}

// startServer runs `groundgate serve` on a free loopback port and returns
// its base URL and a stop function.
func startServer(ctx context.Context, bin, db string) (string, func() error, error) {
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--db", db)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	var once sync.Once
	var stopErr error
	stop := func() error {
		once.Do(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case stopErr = <-done:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				<-done
				stopErr = errors.New("server did not stop within 20 s of SIGTERM")
			}
		})
		return stopErr
	}
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		sent := false
		for sc.Scan() {
			if !sent {
				if a := serveAddr(sc.Bytes()); a != "" {
					addrc <- a
					sent = true
				}
			}
		}
		if !sent {
			close(addrc)
		}
		io.Copy(io.Discard, stderr)
	}()
	select {
	case a, ok := <-addrc:
		if !ok {
			stop()
			return "", nil, errors.New("groundgate serve exited before serving")
		}
		return "http://" + a, stop, nil
	case <-time.After(30 * time.Second):
		stop()
		return "", nil, errors.New("groundgate serve did not start within 30 s")
	case <-ctx.Done():
		stop()
		return "", nil, ctx.Err()
	}
}

// serveAddr returns the address of the server's "serving" log line, or "".
func serveAddr(line []byte) string {
	var v struct {
		Msg  string `json:"msg"`
		Addr string `json:"addr"`
	}
	if json.Unmarshal(line, &v) != nil || v.Msg != "serving" {
		return ""
	}
	return v.Addr
}

func measureREST(ctx context.Context, bin, dir string, n int) ([]Timing, error) {
	base, stop, err := startServer(ctx, bin, filepath.Join(dir, "rest.db"))
	if err != nil {
		return nil, err
	}
	defer stop()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}, Timeout: 30 * time.Second}
	post := func(path, body string) ([]byte, error) {
		resp, err := client.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("POST %s: %d %.300s", path, resp.StatusCode, b)
		}
		return b, nil
	}
	discBody, _ := json.Marshal(map[string]string{"prompt": overheadPrompt})
	b, err := post("/v1/discover", string(discBody))
	if err != nil {
		return nil, err
	}
	id, err := decodeID(b)
	if err != nil {
		return nil, err
	}
	groundBody := fmt.Sprintf(`{"request":%s,"discovery":%q}`, overheadRequest, id)
	if b, err := post("/v1/ground", groundBody); err != nil {
		return nil, err
	} else if err := checkAdmitted(b); err != nil {
		return nil, err
	}
	var out []Timing
	for _, s := range []struct{ stage, path, body, shown string }{
		{"discover", "/v1/discover", string(discBody), `POST /v1/discover {"prompt": P}`},
		{"ground", "/v1/ground", groundBody, `POST /v1/ground {"request": R, "discovery": ID}`},
	} {
		for range 50 {
			if _, err := post(s.path, s.body); err != nil {
				return nil, err
			}
		}
		ds := make([]time.Duration, 0, n)
		for range n {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			t0 := time.Now()
			if _, err := post(s.path, s.body); err != nil {
				return nil, err
			}
			ds = append(ds, time.Since(t0))
		}
		out = append(out, stats(s.stage, "rest", s.shown, ds))
	}
	if err := stop(); err != nil {
		return nil, fmt.Errorf("stopping the server: %w", err)
	}
	return out, nil
}

// measurePhases times, in process and on an existing database, the steps
// a `groundgate discover`/`ground` process takes between exec and exit
// (the wiring of app.OpenEngines: store, discovery index, gate, executor).
func measurePhases(ctx context.Context, db string, n int) ([]Timing, error) {
	env, err := experiments.Open(ctx, db, nil) // create and seed once
	if err != nil {
		return nil, err
	}
	if err := env.Close(); err != nil {
		return nil, err
	}
	names := []string{"open the store (registry.Open)", "build the discovery index (discover.New)", "gate, artifacts, executor",
		"discover (stores the evidence)", "ground (stores the record)", "close the discovery index", "close the store"}
	ds := make([][]time.Duration, len(names))
	for range n + 1 { // the first is a warm-up
		var t [8]time.Time
		t[0] = time.Now()
		s, err := registry.Open(ctx, db, registry.Options{})
		if err != nil {
			return nil, err
		}
		t[1] = time.Now()
		d, err := discover.New(ctx, s, s.Engine(), discover.Options{})
		if err != nil {
			s.Close()
			return nil, err
		}
		t[2] = time.Now()
		g, err := ground.New(s, d, s.Engine())
		if err == nil {
			var arts *artifacts.Store
			if arts, err = execution.OpenArtifacts(s.Engine()); err == nil {
				_, err = execution.New(s, arts, s.Engine(), sampledata.FS(), execution.Options{})
			}
		}
		t[3] = time.Now()
		var res discover.Result
		if err == nil {
			res, err = d.Discover(ctx, discover.Query{Prompt: overheadPrompt})
		}
		t[4] = time.Now()
		var out ground.Outcome
		if err == nil {
			out, err = g.Ground(ctx, ground.Proposal{Request: []byte(overheadRequest), DiscoveryID: res.ID})
		}
		t[5] = time.Now()
		derr := d.Close()
		t[6] = time.Now()
		serr := s.Close()
		t[7] = time.Now()
		if err = errors.Join(err, derr, serr); err != nil {
			return nil, err
		}
		if !out.Record.Decision.Admitted {
			return nil, fmt.Errorf("phases: not admitted: %+v", out.Record.Decision.Failures)
		}
		if ds[0] == nil {
			for i := range ds {
				ds[i] = []time.Duration{}
			}
			continue
		}
		for i := range names {
			ds[i] = append(ds[i], t[i+1].Sub(t[i]))
		}
	}
	out := make([]Timing, len(names))
	for i, name := range names {
		out[i] = stats(name, "phase", "", ds[i])
	}
	return out, nil
}
