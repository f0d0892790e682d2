package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/groundgate/groundgate/internal/app"
	"github.com/groundgate/groundgate/internal/app/apptest"
)

// The REST hot paths over a real loopback server, wired as `groundgate
// serve` wires it (a JSON access log, written to io.Discard here), driven by
// 4 keep-alive connections as tools/bench/run.sh drives it. With
// -cpuprofile the server's share is under net/http.(*conn).serve:
//
//	go test ./server -run '^$' -bench REST -cpuprofile cpu.out
//	go tool pprof -focus 'conn..serve' server.test cpu.out

const (
	benchPrompt  = `{"prompt":"Run a momentum strategy on WTI crude and score it by Sharpe ratio"}`
	benchRequest = `{"family":"MOM_WZS","metric":"SRP","params":{"window":[25,50,100]},"data":"oil/wti.csv"}`
	benchToken   = "bench-token"
)

type benchAPI struct {
	base   string
	client *http.Client
}

func benchServer(b *testing.B) benchAPI {
	b.Helper()
	m, _ := apptest.Serve(b, app.Config{AdminToken: benchToken, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	return benchAPI{base: "http://" + m.Addr(), client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}}
}

// post sends body to path and fails unless the status is 200.
func (a benchAPI) post(b *testing.B, path, body string) []byte {
	req, err := http.NewRequest(http.MethodPost, a.base+path, bytes.NewReader([]byte(body)))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+benchToken)
	resp, err := a.client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	out, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("%s: %d %v %.300s", path, resp.StatusCode, err, out)
	}
	return out
}

// run sends b.N requests over 4 connections. Beside ns/op (wall time,
// 4 requests in flight) it reports cpu-µs/op, the process's CPU time per
// request (server and client: they share the process) from getrusage.
func (a benchAPI) run(b *testing.B, path, body string) {
	a.post(b, path, body) // the first request stores what later ones find
	var wg sync.WaitGroup
	next := make(chan struct{})
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime(b)
	defer func() { b.ReportMetric(float64(cpuTime(b)-cpu0)/1e3/float64(b.N), "cpu-µs/op") }()
	for range 4 {
		wg.Go(func() {
			for range next {
				a.post(b, path, body)
			}
		})
	}
	for range b.N {
		next <- struct{}{}
	}
	close(next)
	wg.Wait()
}

// cpuTime is the process's user and system time.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkDiscoverREST(b *testing.B) {
	a := benchServer(b)
	a.run(b, "/v1/discover", benchPrompt)
}

func BenchmarkGroundREST(b *testing.B) {
	a := benchServer(b)
	var res struct{ ID string }
	if err := json.Unmarshal(a.post(b, "/v1/discover", benchPrompt), &res); err != nil {
		b.Fatal(err)
	}
	a.run(b, "/v1/ground", fmt.Sprintf(`{"request":%s,"discovery":%q}`, benchRequest, res.ID))
}

func BenchmarkCapabilityREST(b *testing.B) {
	a := benchServer(b)
	a.post(b, "/v1/discover", benchPrompt)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		resp, err := a.client.Get(a.base + "/v1/registry/capabilities/MOM_WZS")
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatal(resp.Status)
		}
	}
}

// BenchmarkDiscoverMCP is a discover through /mcp's tools/call: a
// stateless streamable-HTTP request, as agents send it.
func BenchmarkDiscoverMCP(b *testing.B) {
	a := benchServer(b)
	a.run(b, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"discover","arguments":`+benchPrompt+`}}`)
}

// BenchmarkToolsListMCP is tools/list through /mcp: every stateless
// request lists the six tools with their schemas (33 KB).
func BenchmarkToolsListMCP(b *testing.B) {
	a := benchServer(b)
	a.run(b, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
}
