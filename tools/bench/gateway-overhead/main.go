// Command gateway-overhead measures what the gateway (SPEC §14, issue 26)
// adds to a call: the read tool echo of mcp-testupstream, called by a Go
// client connected straight to the upstream (the official go-sdk over
// stdio, a process of its own), and the same call through `groundgate
// serve` (POST /v1/calls, the gateway's own mcp-testupstream over stdio),
// each by -clients concurrent clients. tools/bench/gateway-overhead.sh
// builds the binaries and runs it:
//
//	gateway-overhead -groundgate BIN -upstream BIN [-clients 8] [-rounds 6] [-block 3s]
//
// Sides, measured in blocks of -block each, in turn, -rounds times, so
// that a noisy shared machine slows every side alike:
//
//	direct      go-sdk ClientSession.CallTool("echo") on one session, the
//	            clients sharing it as the gateway's calls share its own
//	gateway     POST /v1/calls {"tool": "bench.echo"}: an exempt read (the
//	            upstream is configured "ground": "writes"), no policies
//	discovered  the same with "discovery": an id from POST /v1/discover
//	            of "echo the words" (the sync's overlay alias), so Γ reads
//	            the evidence record on every call (-discovered=false: off)
//	policies    with -policies FILE: the gateway side after the sync's
//	            overlay adds FILE's contracts and FILE's policies are PUT
//	            (needs tool policies and contracts on the server; without
//	            them the run stops with the server's refusal)
//
// Every call has its own arguments ("bench N"), so every gateway call is a
// new footprint, stored durably before its 200. After the run the server is
// stopped, `groundgate registry verify` must be clean and must count
// at least every acknowledged call, and a sample of call hashes is read
// back first (GET /v1/calls/{hash}).
//
// Prints per side: calls, calls/s (all blocks' calls over their time), and
// the median, p50, p90, p99 and max latency over every call; then the
// gateway's overhead over direct (p50 and p99 differences, throughput
// ratio) beside the targets, and the median of the per-round
// ratios.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	token  = "gateway-overhead-token"
	upName = "bench"
	// polName is the upstream the policies side calls: the same program
	// under another name, so that its contract and policies govern only
	// that side's calls.
	polName  = "benchp"
	tool     = "echo"
	alias    = "echo the words"
	sampleRB = 200 // call hashes read back after the run
)

type config struct {
	groundgate, upstream string
	clients, rounds      int
	block, warmup        time.Duration
	discovered           bool
	policies             string
	keep                 bool
	dbDir                string
}

func main() {
	var c config
	flag.StringVar(&c.groundgate, "groundgate", "", "the groundgate binary (required)")
	flag.StringVar(&c.upstream, "upstream", "", "the mcp-testupstream binary (required)")
	flag.IntVar(&c.clients, "clients", 8, "concurrent clients per side")
	flag.IntVar(&c.rounds, "rounds", 6, "rounds; each runs one block of every side")
	flag.DurationVar(&c.block, "block", 3*time.Second, "one side's block")
	flag.DurationVar(&c.warmup, "warmup", 2*time.Second, "a block of each side first, not counted")
	flag.BoolVar(&c.discovered, "discovered", true, "also measure calls grounded by a discovery id")
	flag.StringVar(&c.policies, "policies", "", "a JSON file {\"overlay\": {TOOL: {\"contract\": …}}, \"policies\": {NAME: POLICY}}: also measure calls under them")
	flag.StringVar(&c.dbDir, "db-dir", "", "where the database file goes (default: the temporary directory); a tmpfs such as /dev/shm shows what the fsyncs cost")
	flag.BoolVar(&c.keep, "keep", false, "keep the temporary directory (database, server log)")
	flag.Parse()
	if c.groundgate == "" || c.upstream == "" || c.clients < 1 || c.rounds < 1 || c.block <= 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "gateway-overhead:", err)
		os.Exit(1)
	}
}

// side is one way of calling echo; call returns the footprint hash (""
// for direct) or an error.
type side struct {
	name  string
	call  func(ctx context.Context, text string) (string, error)
	lat   []time.Duration
	n     int
	took  time.Duration
	perRd []float64 // calls/s per round
	p50Rd []time.Duration
}

func run(c config) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "gateway-overhead-")
	if err != nil {
		return err
	}
	if c.keep {
		fmt.Println("directory:", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	db := filepath.Join(dir, "g.db")
	if c.dbDir != "" {
		dd, err := os.MkdirTemp(c.dbDir, "gateway-overhead-db-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dd)
		db = filepath.Join(dd, "g.db")
	}

	srv, err := startServer(c.groundgate, db, dir)
	if err != nil {
		return err
	}
	defer srv.kill()
	gw := &gwClient{base: srv.base, http: &http.Client{Timeout: 30 * time.Second,
		Transport: &http.Transport{MaxIdleConns: 2 * c.clients, MaxIdleConnsPerHost: 2 * c.clients}}}

	// The upstream, synced with the alias that lets "echo the words"
	// discover echo.
	if _, err := gw.do(ctx, "PUT", "/v1/upstreams/"+upName, map[string]any{
		"transport": "stdio", "command": []string{c.upstream}, "ground": "writes"}, 200, 201); err != nil {
		return err
	}
	overlay := map[string]any{tool: map[string]any{"disc": map[string]any{"aliases": []string{alias}}}}
	if err := gw.sync(ctx, upName, overlay); err != nil {
		return err
	}
	disc, err := gw.discover(ctx)
	if err != nil {
		return err
	}

	// The direct client: its own upstream process, one session.
	cl := mcp.NewClient(&mcp.Implementation{Name: "gateway-overhead", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(c.upstream), TerminateDuration: time.Second}, nil)
	if err != nil {
		return fmt.Errorf("direct: connect: %w", err)
	}
	defer cs.Close()

	var hashes sync.Map // call hash → struct{}
	gwCall := func(up, discovery string) func(ctx context.Context, text string) (string, error) {
		return func(ctx context.Context, text string) (string, error) {
			body := map[string]any{"tool": up + "." + tool, "arguments": map[string]string{"text": text}}
			if discovery != "" {
				body["discovery"] = discovery
			}
			b, err := gw.do(ctx, "POST", "/v1/calls", body, 200)
			if err != nil {
				return "", err
			}
			var r struct {
				Call struct {
					Hash string `json:"hash"`
				} `json:"call"`
				Result struct {
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"result"`
			}
			if err := json.Unmarshal(b, &r); err != nil || r.Call.Hash == "" || len(r.Result.Content) != 1 || r.Result.Content[0].Text != text {
				return "", fmt.Errorf("POST /v1/calls: unexpected body (%v): %.300s", err, b)
			}
			hashes.Store(r.Call.Hash, struct{}{})
			return r.Call.Hash, nil
		}
	}
	sides := []*side{
		{name: "direct", call: func(ctx context.Context, text string) (string, error) {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]string{"text": text}})
			if err != nil {
				return "", err
			}
			if t, ok := res.Content[0].(*mcp.TextContent); res.IsError || len(res.Content) != 1 || !ok || t.Text != text {
				return "", fmt.Errorf("direct: unexpected result %+v", res)
			}
			return "", nil
		}},
		{name: "gateway", call: gwCall(upName, "")},
	}
	if c.discovered {
		sides = append(sides, &side{name: "discovered", call: gwCall(upName, disc)})
	}
	if c.policies != "" {
		// A second upstream, the same program: the contract and the
		// policies govern its echo only (applies_to names benchp.echo).
		if _, err := gw.do(ctx, "PUT", "/v1/upstreams/"+polName, map[string]any{
			"transport": "stdio", "command": []string{c.upstream}, "ground": "writes"}, 200, 201); err != nil {
			return err
		}
		if err := applyPolicies(ctx, gw, c.policies); err != nil {
			return fmt.Errorf("-policies %s: %w", c.policies, err)
		}
		sides = append(sides, &side{name: "policies", call: gwCall(polName, "")})
	}

	var seq atomic.Int64
	fmt.Printf("gateway-overhead: %d clients, %d rounds of %s per side (warm-up %s each), sides %s; database %s; GOMAXPROCS of this client %d\n",
		c.clients, c.rounds, c.block, c.warmup, names(sides), db, runtime.GOMAXPROCS(0))
	for _, s := range sides {
		if _, _, err := block(ctx, s, c.clients, c.warmup, &seq); err != nil {
			return fmt.Errorf("%s (warm-up): %w", s.name, err)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for r := 0; r < c.rounds; r++ {
		// Each round runs the sides in a new order, so none always
		// follows the same one.
		order := rng.Perm(len(sides))
		for _, i := range order {
			s := sides[i]
			lat, took, err := block(ctx, s, c.clients, c.block, &seq)
			if err != nil {
				return fmt.Errorf("%s (round %d): %w", s.name, r+1, err)
			}
			s.lat = append(s.lat, lat...)
			s.n += len(lat)
			s.took += took
			s.perRd = append(s.perRd, float64(len(lat))/took.Seconds())
			slices.Sort(lat)
			s.p50Rd = append(s.p50Rd, pct(lat, 50))
		}
	}

	// Durability: a sample read back while the server runs, then a clean
	// stop and registry verify, which must count every footprint.
	var all []string
	hashes.Range(func(k, _ any) bool { all = append(all, k.(string)); return true })
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	for _, h := range all[:min(sampleRB, len(all))] {
		if _, err := gw.do(ctx, "GET", "/v1/calls/"+h, nil, 200); err != nil {
			return fmt.Errorf("reading back %s: %w", h, err)
		}
	}
	if err := srv.stop(); err != nil {
		return err
	}
	out, err := exec.Command(c.groundgate, "registry", "verify", "--db", db).CombinedOutput()
	if err != nil {
		return fmt.Errorf("registry verify: %w\n%s", err, out)
	}
	m := callRecords.FindSubmatch(out)
	if m == nil {
		return fmt.Errorf("registry verify: no call record count in %q", out)
	}
	verified, _ := strconv.Atoi(string(m[1]))
	if verified < len(all) {
		return fmt.Errorf("registry verify counts %d call record(s), %d were acknowledged", verified, len(all))
	}

	report(sides, c)
	fmt.Printf("durable: %d distinct call footprints acknowledged (200); %d read back by hash; registry verify after a clean stop: ok, %d call record(s)\n",
		len(all), min(sampleRB, len(all)), verified)
	return nil
}

// block runs clients goroutines calling s for d and returns every call's
// latency and the block's wall time.
func block(ctx context.Context, s *side, clients int, d time.Duration, seq *atomic.Int64) ([]time.Duration, time.Duration, error) {
	var (
		mu   sync.Mutex
		lat  = make([]time.Duration, 0, 4096)
		ferr error
		wg   sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	end := start.Add(d)
	for range clients {
		wg.Go(func() {
			mine := make([]time.Duration, 0, 1024)
			for time.Now().Before(end) && ctx.Err() == nil {
				text := fmt.Sprintf("bench %d", seq.Add(1))
				t0 := time.Now()
				if _, err := s.call(ctx, text); err != nil {
					mu.Lock()
					if ferr == nil {
						ferr = err
					}
					mu.Unlock()
					cancel()
					return
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return lat, time.Since(start), ferr
}

func report(sides []*side, c config) {
	fmt.Printf("\n%-11s %8s %9s %9s %9s %9s %9s\n", "side", "calls", "calls/s", "p50 ms", "p90 ms", "p99 ms", "max ms")
	for _, s := range sides {
		slices.Sort(s.lat)
		fmt.Printf("%-11s %8d %9.0f %9.3f %9.3f %9.3f %9.3f\n", s.name, s.n, float64(s.n)/s.took.Seconds(),
			ms(pct(s.lat, 50)), ms(pct(s.lat, 90)), ms(pct(s.lat, 99)), ms(s.lat[len(s.lat)-1]))
	}
	d := sides[0]
	fmt.Printf("\noverhead over direct (%d clients, all rounds pooled; per-round medians in brackets)      target\n", c.clients)
	for _, s := range sides[1:] {
		var thr, dp50 []float64
		for i := range s.perRd {
			thr = append(thr, s.perRd[i]/d.perRd[i])
			dp50 = append(dp50, ms(s.p50Rd[i]-d.p50Rd[i]))
		}
		fmt.Printf("%-11s p50 %+7.3f ms [%+.3f]  p99 %+7.3f ms  throughput %.3f× [%.3f×]   p50 ≤ +1 ms, p99 ≤ +5 ms, ≥ 0.3×\n",
			s.name, ms(pct(s.lat, 50)-pct(d.lat, 50)), median(dp50), ms(pct(s.lat, 99)-pct(d.lat, 99)),
			(float64(s.n)/s.took.Seconds())/(float64(d.n)/d.took.Seconds()), median(thr))
	}
}

// applyPolicies syncs the policies side's upstream with FILE's overlay
// and PUTs its policies.
func applyPolicies(ctx context.Context, gw *gwClient, file string) error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var f struct {
		Overlay  map[string]map[string]json.RawMessage `json:"overlay"`
		Policies map[string]json.RawMessage            `json:"policies"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return err
	}
	overlay := map[string]any{}
	for t, o := range f.Overlay {
		overlay[t] = o
	}
	if err := gw.sync(ctx, polName, overlay); err != nil {
		return err
	}
	for name, p := range f.Policies {
		if _, err := gw.do(ctx, "PUT", "/v1/policies/"+name, p, 200, 201); err != nil {
			return err
		}
	}
	return nil
}

type gwClient struct {
	base string
	http *http.Client
}

func (g *gwClient) do(ctx context.Context, method, path string, body any, want ...int) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		b, ok := body.(json.RawMessage)
		if !ok {
			var err error
			if b, err = json.Marshal(body); err != nil {
				return nil, err
			}
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, g.base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := g.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(want, resp.StatusCode) {
		return nil, &statusError{status: resp.StatusCode, msg: fmt.Sprintf("%s %s: %d %.600s", method, path, resp.StatusCode, b)}
	}
	return b, nil
}

// statusError is an answer with an unexpected status.
type statusError struct {
	status int
	msg    string
}

func (e *statusError) Error() string { return e.msg }

// sync applies the upstream's tools with overlay, once the upstream has
// listed them (it connects in the background after the PUT).
func (g *gwClient) sync(ctx context.Context, up string, overlay map[string]any) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := g.do(ctx, "POST", "/v1/upstreams/"+up+"/sync", map[string]any{"apply": true, "overlay": overlay}, 200)
		if err == nil {
			return nil
		}
		// A refused overlay is final; an upstream not connected yet is not.
		if se := (*statusError)(nil); errors.As(err, &se) && se.status == http.StatusUnprocessableEntity || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// discover returns the id of a discovery of "echo the words" that matched
// the tool.
func (g *gwClient) discover(ctx context.Context) (string, error) {
	b, err := g.do(ctx, "POST", "/v1/discover", map[string]string{"prompt": alias}, 200)
	if err != nil {
		return "", err
	}
	var r struct {
		ID      string `json:"id"`
		Matches []struct {
			Name string `json:"name"`
		} `json:"matches"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return "", err
	}
	if !slices.ContainsFunc(r.Matches, func(m struct {
		Name string `json:"name"`
	}) bool {
		return m.Name == upName+"."+tool
	}) {
		return "", fmt.Errorf("discover %q did not match %s.%s: %.300s", alias, upName, tool, b)
	}
	return r.ID, nil
}

// server is one `groundgate serve`.
type server struct {
	cmd  *exec.Cmd
	base string
	done chan struct{}
	err  error
}

// startServer runs `groundgate serve` on 127.0.0.1:0 and reads the address
// from its "serving" log line; the log goes to dir/serve.log too.
func startServer(bin, db, dir string) (*server, error) {
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--db", db)
	cmd.Env = append(os.Environ(), "GROUNDGATE_ADMIN_TOKEN="+token)
	logf, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		return nil, err
	}
	pr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(io.TeeReader(pr, logf))
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var rec struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "serving" && rec.Addr != "" {
				select {
				case addr <- rec.Addr:
				default:
				}
			}
		}
		_, _ = io.Copy(logf, pr)
		s.err = cmd.Wait()
		logf.Close()
		close(s.done)
	}()
	select {
	case a := <-addr:
		s.base = "http://" + a
		return s, nil
	case <-s.done:
		return nil, fmt.Errorf("groundgate serve exited: %v (log: %s)", s.err, filepath.Join(dir, "serve.log"))
	case <-time.After(30 * time.Second):
		s.kill()
		return nil, errors.New("groundgate serve did not start within 30s")
	}
}

func (s *server) kill() {
	select {
	case <-s.done:
	default:
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

func (s *server) stop() error {
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
		return s.err
	case <-time.After(30 * time.Second):
		s.kill()
		return errors.New("groundgate serve did not stop within 30s of SIGINT")
	}
}

// callRecords reads the count of call records in registry verify's line.
var callRecords = regexp.MustCompile(`(\d+) call\(s\)`)

func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p+99)/100 - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func names(sides []*side) string {
	var n []string
	for _, s := range sides {
		n = append(n, s.name)
	}
	return strings.Join(n, ", ")
}
