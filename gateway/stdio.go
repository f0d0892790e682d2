package gateway

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A stdio upstream is a child process the gateway starts from an argv
// (never through a shell) in its own process group, with the configured
// environment on top of a few inherited variables. It speaks
// newline-delimited JSON-RPC on stdin and stdout; the last few KiB of its
// stderr are kept for the error that reports its exit (secret values
// scrubbed). Stopping it closes its stdin, then sends SIGTERM to its
// group, then SIGKILL, StopGrace apart.

// processTransport is an mcp.Transport that starts the process.
type processTransport struct {
	cfg     Config
	baseEnv []string
	tap     *tap
	grace   time.Duration
	secrets []string

	mu   sync.Mutex
	conn *procConn
}

// DefaultBaseEnv names the variables of the server's environment a stdio
// upstream inherits (when set): what programs need to run, never the
// server's secrets.
func DefaultBaseEnv() []string {
	return []string{"PATH", "HOME", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ", "SYSTEMROOT"}
}

// environ is the child's environment: the base variables present in the
// server's, then the configuration's (which win).
func environ(base []string, env map[string]string) []string {
	var out []string
	for _, k := range base {
		if _, over := env[k]; over {
			continue
		}
		if v, ok := os.LookupEnv(k); ok {
			out = append(out, k+"="+v)
		}
	}
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

func (t *processTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	argv := t.cfg.Command
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = t.cfg.Dir
	cmd.Env = environ(t.baseEnv, t.cfg.Env)
	setProcAttr(cmd)
	stderr := &tailBuffer{}
	cmd.Stderr = stderr
	// Wait gives up on the stderr copy this long after the process exits
	// (a grandchild may hold the pipe).
	cmd.WaitDelay = time.Second
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("%w: start %q: %v", ErrUnavailable, argv[0], err)
	}
	c := &procConn{
		cmd: cmd, stdin: inW, stdout: outR, stderr: stderr, tap: t.tap, grace: t.grace, secrets: t.secrets,
		incoming: make(chan jsonrpc.Message),
		readDone: make(chan struct{}),
		exited:   make(chan struct{}),
		closed:   make(chan struct{}),
	}
	go c.wait()
	go c.read()
	t.mu.Lock()
	t.conn = c
	t.mu.Unlock()
	return c, nil
}

// process returns the connection the transport made, or nil.
func (t *processTransport) process() *procConn {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.conn
}

// procConn is an mcp.Connection over a child's stdin and stdout.
type procConn struct {
	cmd     *exec.Cmd
	stdin   *os.File
	stdout  *os.File
	stderr  *tailBuffer
	tap     *tap
	grace   time.Duration
	secrets []string

	writeMu sync.Mutex

	incoming chan jsonrpc.Message
	readDone chan struct{} // closed when read stops; then readErr is set
	readErr  error

	exited  chan struct{} // closed when the process has exited; then exitErr is set
	exitErr error

	closeOnce sync.Once
	closed    chan struct{}
}

func (c *procConn) SessionID() string { return "" }

// wait reaps the process. The pipes are files, so Wait does not read them
// and may run before read is done.
func (c *procConn) wait() {
	c.exitErr = c.cmd.Wait()
	close(c.exited)
}

// read reads stdout line by line, passes each line through the tap and
// hands the messages to Read.
func (c *procConn) read() {
	defer close(c.readDone)
	fr := frameReader{r: bufio.NewReaderSize(c.stdout, 64<<10), limit: c.tap.limit}
	for {
		frame, n, err := fr.next()
		if err != nil {
			c.readErr = err
			return
		}
		var v verdict
		if frame == nil {
			v = c.tap.oversize(fr.head, n, jsonrpc.ID{})
		} else {
			v = c.tap.inspect(frame)
		}
		var msg jsonrpc.Message
		switch {
		case v.fatal != nil:
			c.readErr = v.fatal
			return
		case v.replace != nil:
			msg = v.replace
		default:
			msg = v.msg
		}
		select {
		case c.incoming <- msg:
		case <-c.closed:
			c.readErr = io.EOF
			return
		}
	}
}

func (c *procConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case msg := <-c.incoming:
		return msg, nil
	case <-c.readDone:
		if c.readErr == nil || errors.Is(c.readErr, io.EOF) {
			return nil, io.EOF
		}
		return nil, c.readErr
	case <-c.closed:
		return nil, io.EOF
	}
}

func (c *procConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	select {
	case <-c.closed:
		return fmt.Errorf("%w: connection closed", ErrUnavailable)
	default:
	}
	c.tap.outbound(ctx, msg)
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	data = append(data, '\n')
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err = c.stdin.Write(data)
	return err
}

// Close stops the process: stdin closed, then SIGTERM to its group, then
// SIGKILL, grace apart; then stdout is closed, which ends read even if a
// stray descendant still holds the pipe.
func (c *procConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.stdin.Close()
		if !c.waitExit(c.grace) {
			terminate(c.cmd.Process)
			if !c.waitExit(c.grace) {
				kill(c.cmd.Process)
				c.waitExit(c.grace)
			}
		}
		c.stdout.Close()
		<-c.readDone
	})
	return nil
}

func (c *procConn) waitExit(d time.Duration) bool {
	select {
	case <-c.exited:
		return true
	default:
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.exited:
		return true
	case <-t.C:
		return false
	}
}

// exitReport says how the process ended (waiting up to d for it), with
// the last line of its stderr, secrets scrubbed.
func (c *procConn) exitReport(d time.Duration) string {
	if !c.waitExit(d) {
		return "the process closed its output but has not exited"
	}
	msg := "the process exited"
	if c.exitErr != nil {
		msg = "the process ended: " + c.exitErr.Error()
	}
	if line := c.stderr.lastLine(); line != "" {
		msg += "; stderr: " + clip(scrub(line, c.secrets), 300)
	}
	return msg
}

// frameReader splits a stream into lines of at most limit bytes. A longer
// line is skipped: next returns a nil frame, its length, and its first
// maxHead bytes in head.
type frameReader struct {
	r     *bufio.Reader
	limit int
	buf   []byte
	head  []byte
}

func (f *frameReader) next() (frame []byte, n int, err error) {
	for {
		f.buf = f.buf[:0]
		if cap(f.buf) > 1<<20 {
			f.buf = nil // one huge line does not pin its buffer
		}
		f.head = f.head[:0]
		n = 0
		over := false
		for {
			chunk, err := f.r.ReadSlice('\n')
			n += len(chunk)
			switch {
			case over:
			case n > f.limit+2: // the line and its "\r\n"
				over = true
				f.head = append(f.head, f.buf[:min(len(f.buf), maxHead)]...)
				f.head = append(f.head, chunk[:min(len(chunk), maxHead-len(f.head))]...)
				f.buf = f.buf[:0]
			default:
				f.buf = append(f.buf, chunk...)
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if err != nil && (n == 0 || !errors.Is(err, io.EOF)) {
				return nil, 0, err
			}
			break // a whole line, or the last one without a newline
		}
		if over {
			return nil, n, nil
		}
		line := bytes.TrimRight(f.buf, "\r\n")
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if len(line) > f.limit {
			f.head = append(f.head[:0], line[:min(len(line), maxHead)]...)
			return nil, len(line), nil
		}
		return line, len(line), nil
	}
}

// tailBuffer keeps the last tailBytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailBytes = 4 << 10

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailBytes {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailBytes:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) lastLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.buf))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return strings.ToValidUTF8(strings.TrimSpace(s), "?")
}
