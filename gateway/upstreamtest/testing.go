package upstreamtest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// CommandPackage is the command that serves an Upstream as a process.
const CommandPackage = "github.com/groundgate/groundgate/cmd/mcp-testupstream"

// StartHTTP serves a new Upstream of cfg over streamable HTTP on a
// loopback port until the test ends; url is its endpoint (…/mcp). Without
// cfg.Crash, a call to CrashOn closes the listener and every connection,
// as the death of a process would.
func StartHTTP(tb testing.TB, cfg Config) (u *Upstream, url string) {
	tb.Helper()
	u, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", u.Handler())
	srv := httptest.NewServer(mux)
	u.onCrash(func() {
		_ = srv.Listener.Close()
		srv.CloseClientConnections()
	})
	tb.Cleanup(func() {
		u.Close()
		srv.CloseClientConnections()
		srv.Close()
	})
	return u, srv.URL + "/mcp"
}

// StartStdio serves a new Upstream of cfg over a pair of pipes until the
// test ends and returns the client's end. Its MaxLineLength is the SDK's
// default (16 MiB), as CommandTransport's: set it to -1 before Connect to
// read bigger results. Without cfg.Crash, a call to CrashOn closes the
// pipes.
func StartStdio(tb testing.TB, cfg Config) (*Upstream, *sdk.IOTransport) {
	tb.Helper()
	u, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	clientR, serverW := io.Pipe()
	serverR, clientW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- u.ServeStdio(ctx, serverR, serverW) }()
	tb.Cleanup(func() {
		u.Close()
		cancel()
		_ = clientW.Close()
		_ = clientR.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			tb.Errorf("upstreamtest: ServeStdio did not return")
		}
	})
	return u, &sdk.IOTransport{Reader: clientR, Writer: clientW}
}

// BuildTo builds cmd/mcp-testupstream into dir with the go command on the
// PATH and returns the binary's path; TestMain calls it to build once.
func BuildTo(dir string) (string, error) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("upstreamtest: build %s: %w", CommandPackage, err)
	}
	bin := filepath.Join(dir, "mcp-testupstream")
	if out, err := exec.Command(goCmd, "build", "-o", bin, CommandPackage).CombinedOutput(); err != nil {
		return "", fmt.Errorf("upstreamtest: go build %s: %w\n%s", CommandPackage, err, out)
	}
	return bin, nil
}

// Build builds cmd/mcp-testupstream into the test's temporary directory
// and returns the binary's path.
func Build(tb testing.TB) string {
	tb.Helper()
	bin, err := BuildTo(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	return bin
}

// Command is a CommandTransport running bin with args over stdio; its
// stderr goes to the test's log. When the test ends the process is killed
// if it still runs (closing the client session first ends it cleanly).
func Command(tb testing.TB, bin string, args ...string) *sdk.CommandTransport {
	tb.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stderr = newTestLog(tb)
	tb.Cleanup(func() {
		if cmd.Process != nil {
			_ = cmd.Process.Kill() // an error: it has ended
		}
	})
	return &sdk.CommandTransport{Command: cmd, TerminateDuration: time.Second}
}

// StartCommandHTTP runs bin with --http 127.0.0.1:0 and args, and returns
// the endpoint it prints. The process is killed and waited for when the
// test ends; cmd is it, for a test that wants its exit status (Wait it
// then, and only then).
func StartCommandHTTP(tb testing.TB, bin string, args ...string) (url string, cmd *exec.Cmd) {
	tb.Helper()
	cmd = exec.Command(bin, append([]string{"--http", "127.0.0.1:0"}, args...)...)
	cmd.Stderr = newTestLog(tb)
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait() // an error when the test has waited
	})
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		if s.Scan() {
			line <- s.Text()
		}
		close(line)
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case url, ok := <-line:
		if !ok || !strings.HasPrefix(url, "http://") {
			tb.Fatalf("upstreamtest: %s printed %q, not its URL", bin, url)
		}
		return url, cmd
	case <-time.After(10 * time.Second):
		tb.Fatalf("upstreamtest: %s printed no URL in 10 s", bin)
	}
	return "", nil
}

// testLog writes a process's stderr to the test's log until the test
// ends, and then nowhere (a test's log cannot be written after it).
type testLog struct {
	tb   testing.TB
	mu   sync.Mutex
	done bool
}

func newTestLog(tb testing.TB) *testLog {
	l := &testLog{tb: tb}
	tb.Cleanup(func() {
		l.mu.Lock()
		l.done = true
		l.mu.Unlock()
	})
	return l
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.tb.Logf("%s", strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// Connect connects a client of opts to t (both options may be nil), and
// closes the session when the test ends.
func Connect(tb testing.TB, t sdk.Transport, opts *sdk.ClientOptions, session *sdk.ClientSessionOptions) *sdk.ClientSession {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := sdk.NewClient(&sdk.Implementation{Name: "upstreamtest-client", Version: "1"}, opts)
	cs, err := c.Connect(ctx, t, session)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cs.Close() })
	return cs
}

// ListToolsRaw initializes a session of protocol 2025-11-25 over
// newline-delimited JSON-RPC (w to the server, r from it) and returns the
// bytes of the server's answer to its first tools/list, as they were sent.
func ListToolsRaw(r io.Reader, w io.Writer) ([]byte, error) {
	lines := bufio.NewReader(r)
	send := func(s string) error {
		_, err := io.WriteString(w, s+"\n")
		return err
	}
	answer := func(id string) ([]byte, error) {
		for {
			line, err := lines.ReadBytes('\n')
			if err != nil {
				return nil, fmt.Errorf("upstreamtest: waiting for the answer %s: %w", id, err)
			}
			if strings.HasPrefix(string(line), `{"jsonrpc":"2.0","id":`+id+`,`) {
				return line, nil
			}
		}
	}
	if err := send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`); err != nil {
		return nil, err
	}
	if _, err := answer("1"); err != nil {
		return nil, err
	}
	if err := send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return nil, err
	}
	if err := send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); err != nil {
		return nil, err
	}
	return answer("2")
}

// ListAll lists every tool of cs, page by page, failing on an error or a
// name listed twice.
func ListAll(tb testing.TB, cs *sdk.ClientSession) map[string]*sdk.Tool {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tools := map[string]*sdk.Tool{}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			tb.Fatal(err)
		}
		if _, dup := tools[tool.Name]; dup {
			tb.Fatalf("tool %q listed twice", tool.Name)
		}
		tools[tool.Name] = tool
	}
	return tools
}

// Call calls a tool, failing on an error (not on a result with isError),
// bounded by a minute.
func Call(tb testing.TB, cs *sdk.ClientSession, name string, args any) *sdk.CallToolResult {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		tb.Fatalf("call %s: %v", name, err)
	}
	return res
}

// Text is the text of a result that holds one text content.
func Text(tb testing.TB, res *sdk.CallToolResult) string {
	tb.Helper()
	if len(res.Content) != 1 {
		tb.Fatalf("%d contents, want 1", len(res.Content))
	}
	tc, ok := res.Content[0].(*sdk.TextContent)
	if !ok {
		tb.Fatalf("content %T, want text", res.Content[0])
	}
	return tc.Text
}

// ListChanged are client options that listen for
// notifications/tools/list_changed, and the channel that receives one
// value for each.
func ListChanged() (*sdk.ClientOptions, <-chan struct{}) {
	ch := make(chan struct{}, 64)
	return &sdk.ClientOptions{ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
		select {
		case ch <- struct{}{}:
		default: // one pending is enough to wake a waiter
		}
	}}, ch
}

// WaitListChanged waits up to 10 s for a notification on ch.
func WaitListChanged(tb testing.TB, ch <-chan struct{}) {
	tb.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		tb.Fatal("no notifications/tools/list_changed in 10 s")
	}
}

// ListToolsBytes serves u over a pair of pipes for one session and
// returns ListToolsRaw's answer: the tools/list bytes a client of
// protocol 2025-11-25 receives.
func (u *Upstream) ListToolsBytes() ([]byte, error) {
	clientR, serverW := io.Pipe()
	serverR, clientW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- u.ServeStdio(context.Background(), serverR, serverW) }()
	b, err := ListToolsRaw(clientR, clientW)
	_ = clientW.Close()
	_ = clientR.Close()
	<-done
	return b, err
}
