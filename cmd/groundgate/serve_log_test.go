package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/groundgate/groundgate/internal/testio"
)

// `groundgate serve` batches its log lines (internal/logbuf), and a
// graceful stop — what SIGTERM or Ctrl-C does in main — writes out every
// one of them before serve returns: an access line for each request made,
// through the last one answered just before the stop.
func TestServeLogsEveryRequestAtStop(t *testing.T) {
	var stderr testio.SyncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cli := &CLI{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &stderr, Getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	db := filepath.Join(t.TempDir(), "g.db")
	go func() { done <- cli.Main(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--db", db}) }()

	var addr string
	for deadline := time.Now().Add(30 * time.Second); addr == ""; time.Sleep(5 * time.Millisecond) {
		for line := range strings.SplitSeq(stderr.String(), "\n") {
			var l struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "serving" {
				addr = l.Addr
			}
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d before serving:\n%s", code, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve never logged its address:\n%s", stderr.String())
		}
	}
	const n = 50
	for i := range n {
		req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/discover", strings.NewReader(`{"prompt":"momentum scored by sharpe"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Request-Id", fmt.Sprintf("request-%d", i))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %s", i, resp.Status)
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("serve exited %d:\n%s", code, stderr.String())
	}
	logs := stderr.String()
	for i := range n {
		if !strings.Contains(logs, fmt.Sprintf(`"msg":"http","request_id":"request-%d","method":"POST","path":"/v1/discover"`, i)) {
			t.Errorf("no access line for request %d", i)
		}
	}
	if !strings.HasSuffix(logs, "\n") || !strings.Contains(logs, `"msg":"shutting down"`) {
		t.Errorf("the log does not end with the stop:\n%s", logs[max(0, len(logs)-500):])
	}
}
