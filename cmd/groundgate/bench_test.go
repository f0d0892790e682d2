package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/groundgate/groundgate/internal/app"
	"github.com/groundgate/groundgate/internal/app/apptest"
)

// benchServer starts the real server for a benchmark.
func benchServer(b *testing.B) (string, *http.Client) {
	b.Helper()
	m, _ := apptest.Serve(b, app.Config{})
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	return "http://" + m.Addr(), &http.Client{Transport: tr}
}

func post(b *testing.B, c *http.Client, url, body string, want int) []byte {
	resp, err := c.Post(url, "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		b.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != want {
		b.Fatalf("%s: %d %s", url, resp.StatusCode, out)
	}
	return out
}

// reportLatency adds p50 and p99 (in ms) of the per-iteration timings.
func reportLatency(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	q := func(p float64) float64 { return float64(d[int(p*float64(len(d)-1))].Nanoseconds()) / 1e6 }
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
}

const benchPrompt = `{"prompt":"Run a momentum strategy on WTI crude and score it by Sharpe ratio"}`

// BenchmarkRESTDiscoverGround is one agent round trip over loopback HTTP:
// POST /v1/discover then POST /v1/ground with the evidence id. The paper
// reports 13.6 + 13.2 ms for the two as CLI subprocesses.
func BenchmarkRESTDiscoverGround(b *testing.B) {
	base, c := benchServer(b)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		var res struct{ ID string }
		if err := json.Unmarshal(post(b, c, base+"/v1/discover", benchPrompt, 200), &res); err != nil {
			b.Fatal(err)
		}
		post(b, c, base+"/v1/ground", fmt.Sprintf(`{"request":{"family":"MOM_WZS","metric":"SRP","params":{"window":[25,50,100]},"data":"oil/wti.csv"},"discovery":%q}`, res.ID), 200)
		lat = append(lat, time.Since(t0))
	}
	reportLatency(b, lat)
}

func BenchmarkRESTDiscover(b *testing.B) {
	base, c := benchServer(b)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		post(b, c, base+"/v1/discover", benchPrompt, 200)
		lat = append(lat, time.Since(t0))
	}
	reportLatency(b, lat)
}

func BenchmarkRESTGround(b *testing.B) {
	base, c := benchServer(b)
	var res struct{ ID string }
	if err := json.Unmarshal(post(b, c, base+"/v1/discover", benchPrompt, 200), &res); err != nil {
		b.Fatal(err)
	}
	body := fmt.Sprintf(`{"request":{"family":"MOM_WZS","metric":"SRP","params":{"window":[25,50,100]},"data":"oil/wti.csv"},"discovery":%q}`, res.ID)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		post(b, c, base+"/v1/ground", body, 200)
		lat = append(lat, time.Since(t0))
	}
	reportLatency(b, lat)
}

// BenchmarkRESTDiscoverParallel measures discovery throughput with
// concurrent clients (run with -cpu and -benchtime; reports requests/s).
func BenchmarkRESTDiscoverParallel(b *testing.B) {
	base, c := benchServer(b)
	b.SetParallelism(8)
	start := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			post(b, c, base+"/v1/discover", benchPrompt, 200)
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}
