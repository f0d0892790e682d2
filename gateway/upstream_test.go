package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/groundgate/groundgate/gateway/upstreamtest"
	"github.com/groundgate/groundgate/internal/testio"
	"github.com/groundgate/groundgate/registry"
)

// These tests run the real upstreams pinned in tools/package.json
// (server-filesystem, server-everything) with node; see helpers_test.go.

func call(t testing.TB, u *Upstream, tool, args string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := u.Call(ctx, tool, json.RawMessage(args))
	if err != nil {
		t.Fatalf("call %s %s: %v", tool, args, err)
	}
	return r
}

func entriesOf(t testing.TB, u *Upstream) []registry.Capability {
	t.Helper()
	tl := u.Tools()
	var out []registry.Capability
	for _, lt := range tl.Tools {
		e, err := ToolEntry(u.Name(), u.Config().Pin, tl.Server, lt)
		if err != nil {
			t.Fatalf("%s: %v", lt.Name, err)
		}
		id, err := e.Identity()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, registry.Capability{Entry: e, Identity: id})
	}
	return out
}

// server-filesystem over stdio on a temporary directory: its tools become
// valid entries (reads and writes told apart), a read tool answers, a
// refused path is a tool error (a result), not a gateway error.
func TestFilesystemStdio(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hello from the filesystem\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	u := startUpstream(t, "fs", Config{Transport: TransportStdio, Command: npmServer(t, filesystemPkg, dir)}, Options{Limits: fastLimits()})
	tl := u.Tools()
	if tl.Server.Name != "secure-filesystem-server" || tl.Generation != 1 || len(tl.Tools) < 10 {
		t.Fatalf("server %+v, generation %d, %d tools", tl.Server, tl.Generation, len(tl.Tools))
	}
	caps := entriesOf(t, u)
	effect := map[string]registry.Effect{}
	for _, c := range caps {
		effect[c.Tool.Impl.Tool] = c.Tool.Sem.Effect
	}
	if effect["read_text_file"] != registry.EffectRead || effect["list_directory"] != registry.EffectRead || effect["write_file"] != registry.EffectWrite || effect["move_file"] != registry.EffectWrite {
		t.Errorf("effects: %v", effect)
	}
	for _, row := range Compare("fs", PinSchema, tl.Server, tl.Tools, caps) {
		if row.State != StateOK || row.Described {
			t.Errorf("%+v", row)
		}
	}

	res := call(t, u, "read_text_file", `{"path":"`+filepath.Join(dir, "notes.txt")+`"}`)
	if res.IsError || !strings.Contains(string(res.Raw), "hello from the filesystem") || res.Server.Name != "secure-filesystem-server" {
		t.Fatalf("read: %s", res.Raw)
	}
	if lt, _ := tl.Tool("read_text_file"); res.ToolDigest != lt.Digest || res.Digest.IsZero() {
		t.Errorf("tool digest %s, listed %s", res.ToolDigest, lt.Digest)
	}
	// The same read twice is the same result digest: a replayable read.
	if again := call(t, u, "read_text_file", `{"path":"`+filepath.Join(dir, "notes.txt")+`"}`); again.Digest != res.Digest {
		t.Errorf("two reads of one file: %s %s", res.Digest, again.Digest)
	}
	denied := call(t, u, "read_text_file", `{"path":"/etc/hostname"}`)
	if !denied.IsError {
		t.Errorf("a path outside the allowed directory: %s", denied.Raw)
	}
	if st := u.Status(); !st.Connected || st.PID == 0 || st.LastError != "" || st.InFlight != 0 {
		t.Errorf("status %+v", st)
	}
}

// server-everything over stdio: the configured environment reaches the
// process, the server's own environment (the admin token) does not, and
// no secret reaches the status or the logs; a tool with an output schema
// becomes an entry with one.
func TestEverythingStdio(t *testing.T) {
	const secret, admin = "env-secret-c0ffee", "admin-token-must-not-leak"
	t.Setenv("GROUNDGATE_ADMIN_TOKEN", admin)
	var logs testio.SyncBuffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	u := startUpstream(t, "ev", Config{Transport: TransportStdio, Command: npmServer(t, everythingPkg, "stdio"), Env: map[string]string{"GG_SECRET": secret}},
		Options{Logger: log, Limits: fastLimits()})

	if r := call(t, u, "echo", `{"message":"hi"}`); string(r.Raw) != `{"content":[{"text":"Echo: hi","type":"text"}]}` {
		t.Errorf("echo: %s", r.Raw)
	}
	env := call(t, u, "get-env", `{}`)
	if !strings.Contains(string(env.Raw), secret) || strings.Contains(string(env.Raw), admin) || strings.Contains(string(env.Raw), "GROUNDGATE_") {
		t.Errorf("the upstream's environment: %s", env.Raw)
	}
	sc := call(t, u, "get-structured-content", `{"location":"New York"}`)
	if !strings.Contains(string(sc.Raw), `"structuredContent":{`) {
		t.Errorf("structured content: %s", sc.Raw)
	}
	for _, c := range entriesOf(t, u) {
		if c.Tool.Impl.Tool == "get-structured-content" && c.Tool.Alg.OutputSchema == nil {
			t.Error("get-structured-content has no output schema")
		}
		if c.Tool.Impl.Tool == "echo" && c.Tool.Alg.OutputSchema != nil {
			t.Error("echo has an output schema")
		}
	}
	st, _ := json.Marshal(u.Status())
	for what, text := range map[string]string{"status": string(st), "logs": logs.String(), "config": u.Config().String()} {
		if strings.Contains(text, secret) || strings.Contains(text, admin) {
			t.Errorf("%s shows a secret: %s", what, text)
		}
	}
	if !strings.Contains(logs.String(), "upstream connected") {
		t.Errorf("logs: %s", logs.String())
	}
}

// server-everything over streamable HTTP, behind a proxy that records
// what arrives: the configured headers are sent; calls work.
func TestEverythingHTTP(t *testing.T) {
	const secret = "hdr-secret-f00d"
	target, err := url.Parse(everythingHTTP(t))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	proxy := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			mu.Lock()
			seen = append(seen, r.In.Method+" "+r.In.Header.Get("X-Api-Key"))
			mu.Unlock()
			r.SetURL(&url.URL{Scheme: target.Scheme, Host: target.Host})
		},
		FlushInterval: -1,
	})
	t.Cleanup(proxy.Close)
	lim := fastLimits()
	lim.MaxMessageBytes = 16 << 10
	u := startUpstream(t, "evh", Config{Transport: TransportHTTP, URL: proxy.URL + "/mcp", Headers: map[string]string{"x-api-key": secret}}, Options{Limits: lim})
	if st := u.Status(); !st.Connected || st.Server == nil || st.Server.Name != "mcp-servers/everything" || st.PID != 0 {
		t.Fatalf("status %+v", st)
	}
	if r := call(t, u, "echo", `{"message":"over http"}`); !strings.Contains(string(r.Raw), "Echo: over http") {
		t.Errorf("echo: %s", r.Raw)
	}
	if r := call(t, u, "get-sum", `{"a":2,"b":3}`); !strings.Contains(string(r.Raw), "5") {
		t.Errorf("get-sum: %s", r.Raw)
	}
	// An answer over MaxMessageBytes in the call's own stream is refused
	// unread and attributed to the call; the session goes on.
	if _, err := u.Call(context.Background(), "echo", json.RawMessage(`{"message":"`+strings.Repeat("x", 20000)+`"}`)); !errors.Is(err, ErrResultTooLarge) {
		t.Errorf("an answer over the limit: %v", err)
	}
	if r := call(t, u, "echo", `{"message":"still here"}`); !strings.Contains(string(r.Raw), "still here") || u.Status().Restarts != 0 {
		t.Errorf("after the refusal: %s %+v", r.Raw, u.Status())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 3 {
		t.Fatalf("requests seen: %q", seen)
	}
	for _, s := range seen {
		if !strings.HasSuffix(s, " "+secret) {
			t.Errorf("a request without the header: %q", s)
		}
	}
	if b, _ := json.Marshal(u.Status()); strings.Contains(string(b), secret) {
		t.Errorf("status shows the header: %s", b)
	}
}

// The bounds of a call: a time limit, a result size limit (in RFC 8785
// form, and per message read), a concurrency limit.
func TestCallLimits(t *testing.T) {
	lim := fastLimits()
	lim.CallTimeout = 2 * time.Second
	lim.MaxResultBytes = 2000
	lim.MaxMessageBytes = 16 << 10
	lim.MaxConcurrent = 1
	lim.QueueWait = -1
	u := startUpstream(t, "ev", Config{Transport: TransportStdio, Command: npmServer(t, everythingPkg)}, Options{Limits: lim})
	ctx := context.Background()

	began := time.Now()
	_, err := u.Call(ctx, "trigger-long-running-operation", json.RawMessage(`{"duration":10,"steps":10}`))
	if !errors.Is(err, ErrTimeout) || time.Since(began) > 8*time.Second {
		t.Fatalf("a slow call: %v after %s", err, time.Since(began))
	}

	// One slot: a second call while one is in flight is refused at once.
	slow := make(chan error, 1)
	go func() {
		_, err := u.Call(ctx, "trigger-long-running-operation", json.RawMessage(`{"duration":1,"steps":1}`))
		slow <- err
	}()
	eventually(t, 5*time.Second, "the slow call in flight", func() bool { return u.Status().InFlight == 1 })
	if _, err := u.Call(ctx, "echo", json.RawMessage(`{"message":"x"}`)); !errors.Is(err, ErrBusy) {
		t.Fatalf("a call over the concurrency limit: %v", err)
	}
	if err := <-slow; err != nil {
		t.Fatalf("the slow call: %v", err)
	}

	pid := u.Status().PID
	_, err = u.Call(ctx, "echo", json.RawMessage(`{"message":"`+strings.Repeat("x", 3000)+`"}`))
	if !errors.Is(err, ErrResultTooLarge) || !strings.Contains(err.Error(), "RFC 8785") {
		t.Fatalf("a result over MaxResultBytes: %v", err)
	}
	_, err = u.Call(ctx, "echo", json.RawMessage(`{"message":"`+strings.Repeat("x", 20000)+`"}`))
	if !errors.Is(err, ErrResultTooLarge) || !strings.Contains(err.Error(), "over the limit") {
		t.Fatalf("a message over MaxMessageBytes: %v", err)
	}
	if st := u.Status(); !st.Connected || st.PID != pid {
		t.Errorf("an attributable refusal ended the session: %+v", st)
	}
	// A message over the limit whose id comes after more than the head
	// the gateway keeps may end the session (it cannot tell whose it is);
	// the call is still told why, and the upstream comes back.
	_, err = u.Call(ctx, "echo", json.RawMessage(`{"message":"`+strings.Repeat("y", 100_000)+`"}`))
	if !errors.Is(err, ErrResultTooLarge) {
		t.Fatalf("a 100 kB message: %v", err)
	}
	eventually(t, 20*time.Second, "a call answered after the refusals", func() bool {
		r, err := u.Call(ctx, "echo", json.RawMessage(`{"message":"small"}`))
		if err != nil && !errors.Is(err, ErrUnavailable) {
			t.Fatalf("after the refusals: %v", err)
		}
		return err == nil && strings.Contains(string(r.Raw), "small")
	})
	if _, err := u.Call(ctx, "echo", json.RawMessage(`[1]`)); err == nil || !strings.Contains(err.Error(), "JSON object") {
		t.Errorf("arguments that are not an object: %v", err)
	}
	// An unknown tool is the upstream's to answer: a JSON-RPC error
	// (ErrCallRejected) or, as this server does, a tool error.
	if r, err := u.Call(ctx, "no-such-tool", nil); err != nil && !errors.Is(err, ErrCallRejected) || err == nil && !r.IsError {
		t.Errorf("a call to no tool: %s %v", r.Raw, err)
	}
}

// A stdio upstream killed under the gateway is started again.
func TestRestartAfterKill(t *testing.T) {
	u := startUpstream(t, "ev", Config{Transport: TransportStdio, Command: npmServer(t, everythingPkg)}, Options{Limits: fastLimits()})
	pid := u.Status().PID
	if pid == 0 {
		t.Fatal("no pid")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "restarted", func() bool {
		st := u.Status()
		return st.Connected && st.PID != pid && st.Restarts == 1
	})
	st := u.Status()
	if !strings.Contains(st.LastError, "signal: killed") || st.Generation < 2 {
		t.Errorf("status after the restart: %+v", st)
	}
	if r := call(t, u, "echo", `{"message":"again"}`); !strings.Contains(string(r.Raw), "again") {
		t.Errorf("echo after the restart: %s", r.Raw)
	}
}

// notifications/tools/list_changed: server-everything registers more
// tools once it knows the client offers roots, and says so; the gateway
// lists again and publishes the new list.
func TestListChanged(t *testing.T) {
	var mu sync.Mutex
	var lists []ToolList
	u := startUpstream(t, "ev", Config{Transport: TransportStdio, Command: npmServer(t, everythingPkg)}, Options{
		Limits:       fastLimits(),
		Capabilities: &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{ListChanged: true}},
		OnTools: func(tl ToolList) {
			mu.Lock()
			lists = append(lists, tl)
			mu.Unlock()
		},
	})
	has := func(tl ToolList) bool { _, ok := tl.Tool("get-roots-list"); return ok }
	eventually(t, 10*time.Second, "a second list holding get-roots-list", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(lists) >= 2 && has(lists[len(lists)-1])
	})
	mu.Lock()
	defer mu.Unlock()
	for i, tl := range lists {
		if tl.Generation != uint64(i+1) {
			t.Errorf("list %d has generation %d", i, tl.Generation)
		}
	}
	if !has(u.Tools()) || u.Status().Restarts != 0 {
		t.Errorf("status %+v", u.Status())
	}
}

// Upstreams that are not there: calls fail with ErrUnavailable, the
// status says why, and a secret the process prints is scrubbed.
func TestUnavailable(t *testing.T) {
	lim := fastLimits()
	ctx := context.Background()
	const secret = "printed-secret-1234"
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"nohost", Config{Transport: TransportHTTP, URL: "http://127.0.0.1:1/mcp"}, "connect"},
		{"noprog", Config{Transport: TransportStdio, Command: []string{"/nonexistent/server"}}, "no such file"},
		{"dies", Config{Transport: TransportStdio, Command: []string{"/bin/sh", "-c", `echo "token is $GG_SECRET" >&2; exit 3`}, Env: map[string]string{"GG_SECRET": secret}}, "exit status 3"},
	} {
		u, err := New(tc.name, tc.cfg, Options{Limits: lim})
		if err != nil {
			t.Fatal(err)
		}
		u.Start(ctx)
		wctx, cancel := context.WithTimeout(ctx, time.Second)
		err = u.WaitReady(wctx)
		cancel()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: ready: %v", tc.name, err)
		}
		if _, err := u.Call(ctx, "t", nil); !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s: call: %v", tc.name, err)
		}
		st := u.Status()
		if st.Connected || !strings.Contains(st.LastError, tc.want) || st.Restarts != 0 || strings.Contains(st.LastError, secret) {
			t.Errorf("%s: status %+v", tc.name, st)
		}
		if tc.name == "dies" && !strings.Contains(st.LastError, "token is "+RedactedValue) {
			t.Errorf("%s: stderr in the status: %q", tc.name, st.LastError)
		}
		u.Close()
		if _, err := u.Call(ctx, "t", nil); !errors.Is(err, ErrClosed) {
			t.Errorf("%s: call after close: %v", tc.name, err)
		}
	}
}

// Connections, calls (one timed out) and closes leave no goroutine behind.
func TestNoGoroutineLeak(t *testing.T) {
	fs := npmServer(t, everythingPkg)
	web := everythingHTTP(t)
	before := upstreamtest.GoroutinesSettle(0, 0)
	lim := fastLimits()
	lim.CallTimeout = 500 * time.Millisecond
	for _, cfg := range []Config{{Transport: TransportStdio, Command: fs}, {Transport: TransportHTTP, URL: web}} {
		u := startUpstream(t, "ev", cfg, Options{Limits: lim})
		call(t, u, "echo", `{"message":"x"}`)
		if _, err := u.Call(context.Background(), "trigger-long-running-operation", json.RawMessage(`{"duration":3,"steps":3}`)); !errors.Is(err, ErrTimeout) {
			t.Errorf("%s: %v", cfg.Transport, err)
		}
		u.Close()
	}
	if after := upstreamtest.GoroutinesSettle(before, 10*time.Second); after > before {
		var b bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
		t.Fatalf("%d goroutines before, %d after:\n%s", before, after, b.String())
	}
}
