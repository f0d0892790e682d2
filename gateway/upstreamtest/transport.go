package upstreamtest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/groundgate/groundgate/hashing"
)

// maxPeek bounds the HTTP request body read to see whether it calls
// Garbage; a larger body goes to the SDK unread.
const maxPeek = 1 << 20

// ServeStdio serves one session of newline-delimited JSON-RPC, reading r
// and writing w (a process's stdin and stdout), until the client closes r,
// ctx ends or a call to CrashOn closes both (ErrCrashed). r and w are
// closed at the end when they are io.Closers.
func (u *Upstream) ServeStdio(ctx context.Context, r io.Reader, w io.Writer) error {
	lw := &lockedWriter{w: w}
	rc := readCloser{Reader: r}
	unregister := u.onCrash(func() {
		_ = rc.Close()
		_ = lw.Close()
	})
	defer unregister()
	t := &garbageTransport{
		Transport: &sdk.IOTransport{Reader: rc, Writer: lw},
		u:         u,
		w:         lw,
	}
	err := u.server.Run(ctx, t)
	if u.Crashed() {
		return ErrCrashed
	}
	return err
}

// readCloser closes its Reader when that is an io.Closer.
type readCloser struct{ io.Reader }

func (r readCloser) Close() error {
	if c, ok := r.Reader.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// lockedWriter writes each Write whole, so that the SDK's messages (one
// Write each) and the garbage written beside them never interleave.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error {
	if c, ok := l.w.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// garbageTransport answers a call to Garbage with a line that is not
// JSON-RPC, before the SDK reads the call.
type garbageTransport struct {
	sdk.Transport
	u *Upstream
	w io.Writer
}

func (t *garbageTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &garbageConn{Connection: c, u: t.u, w: t.w}, nil
}

type garbageConn struct {
	sdk.Connection
	u *Upstream
	w io.Writer
}

func (c *garbageConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return msg, err
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok || !c.u.callsGarbage(req) {
			return msg, nil
		}
		if _, err := c.w.Write(append(garbage(req.ID), '\n')); err != nil {
			return nil, err
		}
	}
}

// callsGarbage reports whether req is a tools/call of Config.Garbage.
func (u *Upstream) callsGarbage(req *jsonrpc.Request) bool {
	if u.cfg.Garbage == "" || req.Method != "tools/call" || !req.IsCall() {
		return false
	}
	var p struct {
		Name string `json:"name"`
	}
	if err := hashing.DecodeFields(req.Params, &p); err != nil {
		return false // the SDK answers what it cannot read
	}
	return p.Name == u.cfg.Garbage
}

// garbage is the answer to a call of Garbage: the start of a response to
// the call, broken off by a NUL and words.
func garbage(id jsonrpc.ID) []byte {
	idJSON, err := json.Marshal(id.Raw())
	if err != nil {
		idJSON = []byte("null")
	}
	b := []byte(`{"jsonrpc":"2.0","id":`)
	b = append(b, idJSON...)
	b = append(b, `,"result":{"content":[`...)
	return append(b, "\x00 this is not JSON-RPC"...)
}

// Handler serves streamable HTTP (mount it at /mcp). A call to Garbage is
// answered 200 application/json with a body that is not JSON-RPC; once a
// call to CrashOn has crashed the upstream, every request is aborted
// without an answer (http.ErrAbortHandler).
func (u *Upstream) Handler() http.Handler {
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return u.server },
		&sdk.StreamableHTTPOptions{Logger: u.log})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u.Crashed() {
			panic(http.ErrAbortHandler)
		}
		if r.Method == http.MethodPost && u.cfg.Garbage != "" {
			if msg, err := jsonrpc.DecodeMessage(peekBody(r, maxPeek)); err == nil {
				if req, ok := msg.(*jsonrpc.Request); ok && u.callsGarbage(req) {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusOK)
					_, _ = w.Write(garbage(req.ID))
					return
				}
			}
		}
		h.ServeHTTP(w, r)
	})
}

// peekBody is r's body when it holds at most limit bytes, else nil; either
// way r's body reads as it did.
func peekBody(r *http.Request, limit int) []byte {
	head, err := io.ReadAll(io.LimitReader(r.Body, int64(limit)+1))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
	if err != nil || len(head) > limit {
		return nil
	}
	return head
}
