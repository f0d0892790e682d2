package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/groundgate/groundgate/gateway/upstreamtest"
	"github.com/groundgate/groundgate/internal/testio"
)

// bin is the command, built once by TestMain.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcp-testupstream-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin, err = upstreamtest.BuildTo(dir)
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// connectStdio runs the command with args over stdio.
func connectStdio(t *testing.T, opts *sdk.ClientOptions, args ...string) (*sdk.ClientSession, *sdk.CommandTransport) {
	t.Helper()
	tr := upstreamtest.Command(t, bin, args...)
	return upstreamtest.Connect(t, tr, opts, nil), tr
}

// connectHTTP runs the command with --http and args.
func connectHTTP(t *testing.T, opts *sdk.ClientOptions, args ...string) (*sdk.ClientSession, *exec.Cmd) {
	t.Helper()
	url, cmd := upstreamtest.StartCommandHTTP(t, bin, args...)
	return upstreamtest.Connect(t, &sdk.StreamableClientTransport{Endpoint: url}, opts, nil), cmd
}

// --help documents every flag; a flag it does not know, an argument and a
// non-loopback address are refused.
func TestUsage(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--help"}, nil, io.Discard, &out, nil, nil); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	for _, f := range []string{"-http", "-tools", "-toolbench", "-hang", "-crash-on", "-garbage", "-big-result", "-poison", "-ref-loop", "-state", "-state-poll", "-page-size", "-name", "-version", "rug pull", "list_changed"} {
		if !strings.Contains(out.String(), f) {
			t.Errorf("--help does not mention %s", f)
		}
	}
	for _, args := range [][]string{{"--no-such-flag"}, {"extra"}} {
		if err := run(context.Background(), args, nil, io.Discard, io.Discard, nil, nil); !errors.Is(err, errUsage) {
			t.Errorf("%q: %v, want errUsage", args, err)
		}
	}
	if err := run(context.Background(), []string{"--http", "0.0.0.0:0"}, nil, io.Discard, io.Discard, nil, nil); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("--http 0.0.0.0:0: %v", err)
	}
}

func TestServes(t *testing.T) {
	for _, connect := range []struct {
		name string
		cs   func(*testing.T) *sdk.ClientSession
	}{
		{"stdio", func(t *testing.T) *sdk.ClientSession { cs, _ := connectStdio(t, nil); return cs }},
		{"http", func(t *testing.T) *sdk.ClientSession { cs, _ := connectHTTP(t, nil); return cs }},
	} {
		t.Run(connect.name, func(t *testing.T) {
			cs := connect.cs(t)
			if n := len(upstreamtest.ListAll(t, cs)); n != 4 {
				t.Fatalf("%d tools", n)
			}
			if got := upstreamtest.Text(t, upstreamtest.Call(t, cs, "echo", map[string]any{"text": "hi"})); got != "hi" {
				t.Fatalf("echo: %q", got)
			}
			if got := cs.InitializeResult().ServerInfo; got.Name != upstreamtest.DefaultName || got.Version != upstreamtest.DefaultVersion {
				t.Fatalf("serverInfo %+v", got)
			}
		})
	}
}

// writeState writes the state file whole, as a test should.
func writeState(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// A rug pull by the state file: on SIGHUP over stdio (no polling), by
// polling over HTTP.
func TestRugPull(t *testing.T) {
	t.Run("stdio-SIGHUP", func(t *testing.T) {
		state := filepath.Join(t.TempDir(), "state.json")
		opts, changed := upstreamtest.ListChanged()
		cs, tr := connectStdio(t, opts, "--state", state, "--state-poll", "0")
		upstreamtest.ListAll(t, cs)
		writeState(t, state, `{"tools":{"put_item":{"annotations":{"destructiveHint":true}}}}`)
		if err := tr.Command.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		upstreamtest.WaitListChanged(t, changed)
		if a := upstreamtest.ListAll(t, cs)["put_item"].Annotations; a.DestructiveHint == nil || !*a.DestructiveHint {
			t.Fatalf("put_item's annotations %+v", a)
		}
	})
	t.Run("http-polled", func(t *testing.T) {
		state := filepath.Join(t.TempDir(), "state.json")
		opts, changed := upstreamtest.ListChanged()
		cs, _ := connectHTTP(t, opts, "--state", state, "--state-poll", "10ms", "--version", "2.0.0")
		if v := cs.InitializeResult().ServerInfo.Version; v != "2.0.0" {
			t.Fatalf("version %q", v)
		}
		upstreamtest.ListAll(t, cs)
		writeState(t, state, `{"tools":{"echo":{"description":"Echoes, and keeps a copy."}}}`)
		upstreamtest.WaitListChanged(t, changed)
		if d := upstreamtest.ListAll(t, cs)["echo"].Description; d != "Echoes, and keeps a copy." {
			t.Fatalf("echo's description %q", d)
		}
	})
}

// A call to --crash-on is a transport error, and the process exits 3.
func TestCrash(t *testing.T) {
	crash := func(t *testing.T, cs *sdk.ClientSession) {
		t.Helper()
		_, err := cs.CallTool(ctxFor(t, 10*time.Second), &sdk.CallToolParams{Name: "put_item", Arguments: map[string]any{"id": "a", "value": "v"}})
		if err == nil || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a call that crashes: %v", err)
		}
	}
	t.Run("stdio", func(t *testing.T) {
		cs, tr := connectStdio(t, nil, "--crash-on", "put_item")
		crash(t, cs)
		_ = cs.Close() // waits for the process
		if code := tr.Command.ProcessState.ExitCode(); code != exitCrash {
			t.Fatalf("exit status %d", code)
		}
	})
	t.Run("http", func(t *testing.T) {
		cs, cmd := connectHTTP(t, nil, "--crash-on", "put_item")
		crash(t, cs)
		var exit *exec.ExitError
		if err := cmd.Wait(); !errors.As(err, &exit) || exit.ExitCode() != exitCrash {
			t.Fatalf("exit: %v", err)
		}
	})
}

func TestHang(t *testing.T) {
	cs, _ := connectStdio(t, nil, "--hang", "slow")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "slow"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a call that hangs: %v", err)
	}
	if got := upstreamtest.Text(t, upstreamtest.Call(t, cs, "echo", map[string]any{"text": "alive"})); got != "alive" {
		t.Fatalf("echo: %q", got)
	}
}

func TestGarbage(t *testing.T) {
	for name, cs := range map[string]func(*testing.T) *sdk.ClientSession{
		"stdio": func(t *testing.T) *sdk.ClientSession { cs, _ := connectStdio(t, nil, "--garbage", "echo"); return cs },
		"http":  func(t *testing.T) *sdk.ClientSession { cs, _ := connectHTTP(t, nil, "--garbage", "echo"); return cs },
	} {
		t.Run(name, func(t *testing.T) {
			_, err := cs(t).CallTool(ctxFor(t, 10*time.Second), &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
			if err == nil || errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("a call answered with garbage: %v", err)
			}
		})
	}
}

// startPiped starts the command with args, its stdin and stdout piped to
// the test.
func startPiped(t *testing.T, args ...string) (*exec.Cmd, io.WriteCloser, io.ReadCloser) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, stdin, stdout
}

// 50 MB over stdio, to a client without the SDK's 16 MiB line limit.
func TestBigResult(t *testing.T) {
	const size = 50 << 20
	cmd, stdin, stdout := startPiped(t, "--big-result", fmt.Sprint(size))
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	cs := upstreamtest.Connect(t, &sdk.IOTransport{Reader: stdout, Writer: stdin, MaxLineLength: -1}, nil, nil)
	if got := upstreamtest.Text(t, upstreamtest.Call(t, cs, upstreamtest.BigResultTool, nil)); len(got) != size {
		t.Fatalf("%d bytes", len(got))
	}
}

func TestManyTools(t *testing.T) {
	cs, _ := connectStdio(t, nil, "--tools", "10000")
	if n := len(upstreamtest.ListAll(t, cs)); n != 10000 {
		t.Fatalf("%d tools", n)
	}
}

// --toolbench on the fixture the repository ships, then on the real
// 2,479 APIs from the shared data beside the repository.
func TestToolBench(t *testing.T) {
	cs, _ := connectHTTP(t, nil, "--toolbench", "../../gateway/upstreamtest/testdata/toolbench")
	if n := len(upstreamtest.ListAll(t, cs)); n != 3 {
		t.Fatalf("%d tools for the fixture's 3 APIs", n)
	}
	dir := testio.SharedData(t, "tool-discovery")
	want, err := upstreamtest.ToolBenchCount(dir)
	if err != nil {
		t.Fatal(err)
	}
	cs, _ = connectHTTP(t, nil, "--toolbench", dir)
	if n := len(upstreamtest.ListAll(t, cs)); n != want || n != 2479 {
		t.Fatalf("%d tools for %d APIs", n, want)
	}
}

// The flags make the Config they name: the process lists the bytes an
// in-process Upstream of that Config lists, and lists them again when run
// again.
func TestSameBytes(t *testing.T) {
	args := []string{"--tools", "5", "--poison", "tool_3", "--ref-loop", "--hang", "wait", "--crash-on", "boom", "--garbage", "junk", "--big-result", "99", "--name", "up", "--version", "9"}
	cfg := upstreamtest.Config{Tools: 5, Poison: "tool_3", RefLoop: true, Hang: "wait", CrashOn: "boom", Garbage: "junk", BigResult: 99, Name: "up", Version: "9"}
	processList := func() []byte {
		cmd, stdin, stdout := startPiped(t, args...)
		defer func() {
			_ = stdin.Close()
			if err := cmd.Wait(); err != nil {
				t.Errorf("exit: %v", err)
			}
		}()
		b, err := upstreamtest.ListToolsRaw(stdout, stdin)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	first, second := processList(), processList()
	if !bytes.Equal(first, second) {
		t.Fatalf("two runs:\n%s\n%s", first, second)
	}
	u, err := upstreamtest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	inProcess, err := u.ListToolsBytes()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, inProcess) {
		t.Fatalf("the process and the Config differ:\n%s\n%s", first, inProcess)
	}
	for _, want := range []string{upstreamtest.PoisonText, string(upstreamtest.RefLoopSchema), `"name":"wait"`, `"name":"boom"`, `"name":"junk"`, `"name":"big_result"`} {
		if !bytes.Contains(first, []byte(want)) {
			t.Errorf("the list lacks %s", want)
		}
	}
}
