package server_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/groundgate/groundgate/gateway/upstreamtest"
)

// The gateway's call path in one process (tools/bench/gateway-overhead.sh
// measures it between processes): POST /v1/calls of mcp-testupstream's
// echo, an exempt read, 8 in flight, each with its own arguments, so each
// is a new footprint committed before its 200. The upstream runs as its
// own process (stdio); the profile shows the server's and the client's
// share:
//
//	go test ./server -run '^$' -bench CallREST -cpuprofile cpu.out
//	go tool pprof -focus 'conn..serve' server.test cpu.out

var (
	upstreamOnce sync.Once
	upstreamBin  string
	upstreamErr  error
)

// testUpstream builds cmd/mcp-testupstream once per test binary.
func testUpstream(b *testing.B) string {
	b.Helper()
	upstreamOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gateway-bench-")
		if err != nil {
			upstreamErr = err
			return
		}
		upstreamBin, upstreamErr = upstreamtest.BuildTo(dir)
	})
	if upstreamErr != nil {
		b.Fatal(upstreamErr)
	}
	return upstreamBin
}

func BenchmarkCallREST(b *testing.B) {
	a := benchServer(b)
	bin := testUpstream(b)
	put := fmt.Sprintf(`{"transport":"stdio","command":[%q],"ground":"writes"}`, bin)
	a.do(b, "PUT", "/v1/upstreams/bench", put, 201)
	deadline := time.Now().Add(30 * time.Second)
	for a.try(b, "POST", "/v1/upstreams/bench/sync", `{"apply":true}`) != 200 {
		if time.Now().After(deadline) {
			b.Fatal("the upstream did not list its tools within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	var seq atomic.Int64
	a.runN(b, 8, func() {
		a.post(b, "/v1/calls", fmt.Sprintf(`{"tool":"bench.echo","arguments":{"text":"bench %d"}}`, seq.Add(1)))
	})
}

// try sends a request and returns its status.
func (a benchAPI) try(b *testing.B, method, path, body string) int {
	b.Helper()
	return a.send(b, method, path, body)
}

// do sends a request and fails unless its status is want.
func (a benchAPI) do(b *testing.B, method, path, body string, want int) {
	b.Helper()
	if got := a.send(b, method, path, body); got != want {
		b.Fatalf("%s %s: %d, want %d", method, path, got, want)
	}
}

// runN calls f b.N times from n goroutines, reporting cpu-µs/op as run.
func (a benchAPI) runN(b *testing.B, n int, f func()) {
	var wg sync.WaitGroup
	next := make(chan struct{})
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime(b)
	defer func() { b.ReportMetric(float64(cpuTime(b)-cpu0)/1e3/float64(b.N), "cpu-µs/op") }()
	for range n {
		wg.Go(func() {
			for range next {
				f()
			}
		})
	}
	for range b.N {
		next <- struct{}{}
	}
	close(next)
	wg.Wait()
}

// send sends an admin request and returns its status.
func (a benchAPI) send(b *testing.B, method, path, body string) int {
	b.Helper()
	req, err := http.NewRequest(method, a.base+path, strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+benchToken)
	resp, err := a.client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}
