package crashtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const adminToken = "crash-test-admin-token"

// buildBinary compiles cmd/groundgate into a temp dir: the test kills a
// real process, so it needs the real binary, not the server in-process.
func buildBinary(t *testing.T) string {
	t.Helper()
	gotool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go tool is needed to build groundgate: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "groundgate")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	// The package path resolves from this package's directory, inside the module.
	out, err := exec.CommandContext(ctx, gotool, "build", "-o", bin, "github.com/groundgate/groundgate/cmd/groundgate").CombinedOutput()
	if err != nil {
		t.Fatalf("go build ./cmd/groundgate: %v\n%s", err, out)
	}
	return bin
}

// server is one `groundgate serve` process (or another long-running
// groundgate command: a worker).
type server struct {
	cmd  *exec.Cmd
	base string        // http://127.0.0.1:PORT; "" for a process that serves no HTTP
	done chan struct{} // closed when the process has exited
	err  error         // Wait's result, valid after done

	mu    sync.Mutex
	tail  []string               // the last lines of its log, for failure messages
	watch func(line string) bool // called with each log line until it reports true
	seen  chan struct{}          // closed when watch reported true
}

const tailLines = 40

// startServer runs `groundgate serve` on a loopback port the kernel picks
// (127.0.0.1:0, read back from the "serving" log line, so no port can be
// stolen between choosing and binding it) and waits until /healthz answers.
// Cleanup kills the process if it is still running.
func startServer(t *testing.T, bin, db, dir string) *server {
	t.Helper()
	return startServing(t, bin, dir, nil, "--db", db)
}

// startServing runs `groundgate serve --addr 127.0.0.1:0 ARGS…` with env
// added to the test's environment and the admin token, as startServer.
func startServing(t *testing.T, bin, dir string, env []string, args ...string) *server {
	t.Helper()
	addr := make(chan string, 1)
	s := startProcess(t, bin, dir, env, func(line string) bool {
		var rec struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "serving" && rec.Addr != "" {
			addr <- rec.Addr
			return true
		}
		return false
	}, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	select {
	case a := <-addr:
		s.base = "http://" + a
	case <-s.done:
		t.Fatalf("groundgate serve exited before serving (%v); log:\n%s", s.err, s.logTail())
	case <-time.After(30 * time.Second):
		t.Fatalf("groundgate serve did not start within 30s; log:\n%s", s.logTail())
	}
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := client.Get(s.base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/healthz not ready within 10s (%v); log:\n%s", s.base, err, s.logTail())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startProcess runs `bin ARGS…` in dir with env added to the test's
// environment and the admin token, keeping the tail of its log (stderr)
// and calling watch with each line until it reports true (then seen is
// closed). Cleanup kills the process if it is still running.
func startProcess(t *testing.T, bin, dir string, env []string, watch func(line string) bool, args ...string) *server {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GROUNDGATE_ADMIN_TOKEN="+adminToken), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start groundgate %s: %v", args[0], err)
	}
	s := &server{cmd: cmd, done: make(chan struct{}), watch: watch, seen: make(chan struct{})}
	t.Cleanup(func() { s.kill() })
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			if s.tail = append(s.tail, line); len(s.tail) > tailLines {
				s.tail = s.tail[1:]
			}
			w := s.watch
			s.mu.Unlock()
			if w != nil && w(line) {
				s.mu.Lock()
				s.watch = nil
				s.mu.Unlock()
				close(s.seen)
			}
		}
	}()
	go func() {
		<-scanned // Wait closes the pipe; read it to the end first
		s.err = cmd.Wait()
		close(s.done)
	}()
	return s
}

func (s *server) logTail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.tail, "\n")
}

// kill sends SIGKILL (on Unix, Process.Kill is kill -9) and waits for the
// process to be gone. Killing an exited process is harmless.
func (s *server) kill() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Kill()
	<-s.done
}

// stop asks the server to shut down gracefully (SIGINT) and returns its
// exit error, or an error if it did not exit within the timeout.
func (s *server) stop(timeout time.Duration) error {
	if err := s.cmd.Process.Signal(os.Interrupt); err != nil {
		return fmt.Errorf("signal groundgate serve: %w", err)
	}
	select {
	case <-s.done:
		return s.err
	case <-time.After(timeout):
		s.kill()
		return errors.New("groundgate serve did not exit within " + timeout.String() + " of SIGINT")
	}
}

// verifyRun is a `registry verify` running in the background on a copy of
// the database as one round's crash left it.
type verifyRun struct {
	round int
	done  chan struct{}
	out   string
	err   error
	took  time.Duration
}

// startVerify copies db (its server is dead) and verifies the copy in the
// background; the copy is removed once verified.
func startVerify(t *testing.T, bin, db string, round int) *verifyRun {
	t.Helper()
	cp := fmt.Sprintf("%s.round%d", db, round)
	b, err := os.ReadFile(db)
	if err == nil {
		err = os.WriteFile(cp, b, 0o600)
	}
	if err != nil {
		t.Fatalf("round %d: copying the crashed file: %v", round, err)
	}
	v := &verifyRun{round: round, done: make(chan struct{})}
	go func() {
		defer close(v.done)
		t0 := time.Now()
		v.out, v.err = verifyFile(t.Context(), bin, cp)
		v.took = time.Since(t0)
		os.Remove(cp)
	}()
	return v
}

// wait returns once the verify has ended; a nil run has.
func (v *verifyRun) wait() {
	if v != nil {
		<-v.done
	}
}

// verifyFile runs `groundgate registry verify --db FILE` and returns its
// combined output and error (non-nil on a non-zero exit).
func verifyFile(ctx context.Context, bin, db string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "registry", "verify", "--db", db).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}
