// Command load is the HTTP load client of tools/bench/run.sh: it sends N
// POST requests with one body over C keep-alive connections and prints the
// throughput and, when given the server's pid, the server's CPU time per
// request (utime+stime from /proc/PID/stat, read before and after).
//
//	load -url http://127.0.0.1:8080/v1/discover -body '{"prompt":"…"}' -n 4000 -c 4 -pid 1234
//
// prints one line: "rps=… cpu_us=… n=… wall_s=…" (cpu_us is -1 without
// -pid). Every response must have status -status (default 200), or it
// exits 1: a benchmark of error answers measures nothing.
//
// With -startup it instead starts a command (the arguments after --, where
// "{addr}" is replaced by a free loopback address), polls it until the
// exact/alias tier and the keyword tier answer, prints when each did and
// the process's RSS, then stops it (its standard error goes to the file
// $LOAD_SERVER_LOG if set):
//
//	load -startup -alias TERM -keyword TERM -- groundgate serve --addr {addr} --db F
//
// prints "alias_s=… ready_s=… keyword_s=… rss_mb=… hwm_mb=…".
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

func run() error {
	url := flag.String("url", "", "URL to POST to")
	body := flag.String("body", "", "request body (JSON); @FILE reads a file")
	n := flag.Int("n", 2000, "requests in all")
	c := flag.Int("c", 4, "keep-alive connections (one worker each)")
	pid := flag.Int("pid", 0, "server pid whose CPU time to measure (0: none)")
	status := flag.Int("status", http.StatusOK, "the status every response must have")
	auth := flag.String("auth", "", "bearer token to send")
	startup := flag.Bool("startup", false, "start the command after -- and time its readiness")
	alias := flag.String("alias", "", "-startup: a term only the exact or alias tier matches")
	keyword := flag.String("keyword", "", "-startup: a term only the keyword tier matches")
	timeout := flag.Duration("timeout", 10*time.Minute, "-startup: give up after this long")
	flag.Parse()
	if *startup {
		return startupRun(*alias, *keyword, *timeout, flag.Args())
	}
	if *url == "" || *body == "" || *n <= 0 || *c <= 0 {
		return errors.New("need -url, -body, -n > 0 and -c > 0")
	}
	b := []byte(*body)
	if name, ok := strings.CutPrefix(*body, "@"); ok {
		var err error
		if b, err = os.ReadFile(name); err != nil {
			return err
		}
	}
	return loadRun(*url, b, *n, *c, *pid, *status, *auth)
}

func loadRun(url string, body []byte, n, c, pid, status int, auth string) error {
	tr := &http.Transport{MaxIdleConnsPerHost: c, MaxConnsPerHost: c, DisableCompression: true}
	client := &http.Client{Transport: tr, Timeout: time.Minute}
	defer tr.CloseIdleConnections()
	send := func() error {
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		out, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != status {
			return fmt.Errorf("%s: status %d, want %d: %.300s", url, resp.StatusCode, status, out)
		}
		return nil
	}
	// Open the connections before the clock starts: a dial is not a request.
	var wg sync.WaitGroup
	errs := make(chan error, c)
	for range c {
		wg.Go(func() {
			if err := send(); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}

	cpu0, err := cpuTicks(pid)
	if err != nil {
		return err
	}
	var left atomic.Int64
	left.Store(int64(n))
	start := time.Now()
	for range c {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				if err := send(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	cpu1, err := cpuTicks(pid)
	if err != nil {
		return err
	}
	select {
	case err := <-errs:
		return err
	default:
	}
	cpuUS := -1.0
	if pid > 0 {
		cpuUS = float64(cpu1-cpu0) / clockTicks * 1e6 / float64(n)
	}
	fmt.Printf("rps=%.1f cpu_us=%.1f n=%d wall_s=%.3f\n", float64(n)/wall.Seconds(), cpuUS, n, wall.Seconds())
	return nil
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on every
// Linux architecture Go supports (sysconf(_SC_CLK_TCK)).
const clockTicks = 100

// cpuTicks is utime+stime of pid in clock ticks (0 for pid 0).
func cpuTicks(pid int) (int64, error) {
	if pid <= 0 {
		return 0, nil
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no ')'", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return ut + st, nil
}

// status reads a field of /proc/PID/status in MB (VmRSS, VmHWM).
func statusMB(pid int, field string) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no %s", pid, field)
}

// startupRun starts argv, then polls every 5 ms: a discover of the alias
// term until it matches, /readyz until 200, and a discover of the keyword
// term until it matches in mode keyword. It prints the seconds from start
// to each and the RSS when the last one answered, then stops the process.
func startupRun(alias, keyword string, timeout time.Duration, argv []string) error {
	if alias == "" || keyword == "" || len(argv) == 0 {
		return errors.New("-startup needs -alias, -keyword and a command after --")
	}
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	base := "http://" + addr
	argv = append([]string(nil), argv...)
	for i, a := range argv {
		argv[i] = strings.ReplaceAll(a, "{addr}", addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if log := os.Getenv("LOAD_SERVER_LOG"); log != "" {
		f, err := os.Create(log)
		if err != nil {
			return err
		}
		defer f.Close()
		cmd.Stderr = f
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: (&net.Dialer{Timeout: time.Second}).DialContext, MaxIdleConnsPerHost: 1}}
	matched := func(term, mode string) bool {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/discover",
			strings.NewReader(`{"terms":[`+strconv.Quote(term)+`]}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var res struct {
			Matches []struct{ Mode string }
		}
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&res) != nil {
			return false
		}
		for _, m := range res.Matches {
			if mode == "" || m.Mode == mode {
				return true
			}
		}
		return false
	}
	ready := func() bool {
		resp, err := client.Get(base + "/readyz")
		if err != nil {
			return false
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	var aliasAt, readyAt, keywordAt time.Duration
	for keywordAt == 0 {
		select {
		case err := <-exited:
			exited <- err
			return fmt.Errorf("the server exited before it was ready: %v", err)
		case <-ctx.Done():
			return fmt.Errorf("not ready after %v (alias %v, ready %v)", timeout, aliasAt, readyAt)
		case <-time.After(5 * time.Millisecond):
		}
		if aliasAt == 0 && matched(alias, "") {
			aliasAt = time.Since(start)
		}
		if aliasAt != 0 && readyAt == 0 && ready() {
			readyAt = time.Since(start)
		}
		if readyAt != 0 && matched(keyword, "keyword") {
			keywordAt = time.Since(start)
		}
	}
	rss, err1 := statusMB(cmd.Process.Pid, "VmRSS")
	hwm, err2 := statusMB(cmd.Process.Pid, "VmHWM")
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	fmt.Printf("alias_s=%.3f ready_s=%.3f keyword_s=%.3f rss_mb=%.0f hwm_mb=%.0f\n",
		aliasAt.Seconds(), readyAt.Seconds(), keywordAt.Seconds(), rss, hwm)
	return nil
}

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
