package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// protocolVersion is the MCP version the gateway asks upstreams for: the
// latest with the initialize handshake, which every server of the 2025
// revisions speaks. (The SDK would otherwise try 2026-07-28's stateless
// discovery first and cache list results out of the gateway's sight.)
const protocolVersion = "2025-11-25"

// Options configure an Upstream. The zero value is ready to use.
type Options struct {
	// Logger receives the upstream's connection events (never a secret
	// value); nil discards them.
	Logger *slog.Logger
	// Limits bound the upstream (zero fields: the defaults).
	Limits Limits
	// OnTools is called with every tool list the upstream publishes: after
	// each connection and each notifications/tools/list_changed. It is
	// called from the connection loop, one list at a time, in order; it
	// must not block for long nor call Close.
	OnTools func(ToolList)
	// BaseEnv names the variables of the server's environment a stdio
	// upstream inherits; nil means DefaultBaseEnv().
	BaseEnv []string
	// Capabilities are what the gateway tells upstreams it offers; nil
	// means none (no roots, no sampling, no elicitation: the gateway
	// forwards calls, it answers no requests of its own).
	Capabilities *mcp.ClientCapabilities
	// HTTPTransport carries an http upstream's requests; nil means a
	// clone of http.DefaultTransport, owned by the Upstream.
	HTTPTransport http.RoundTripper
	// Client names the gateway to upstreams; nil means "groundgate".
	Client *mcp.Implementation
	// Shared, for a Manager, says other processes share its store (SPEC
	// §17): each Put also advances the upstreams' generation
	// (GenerationIn), which their Refresh compares with their own.
	Shared bool
}

// Upstream is one upstream MCP server: its connection, kept up (with
// backoff, restarting a stdio process that ends), its tool list, kept
// current, and the calls forwarded to it, bounded by its Limits. It is
// safe for concurrent use.
type Upstream struct {
	name    string
	cfg     Config
	lim     Limits
	log     *slog.Logger
	opts    Options
	secrets []string
	http    http.RoundTripper
	ownHTTP *http.Transport // closed with the Upstream when it made it

	sem      chan struct{}
	inFlight atomic.Int64
	relays   relays     // calls whose progress and logs are passed on
	listMu   sync.Mutex // one tools/list at a time

	mu       sync.Mutex
	state    int // created, started, closed
	cancel   context.CancelFunc
	done     chan struct{}
	cur      *session
	tools    ToolList
	gen      uint64
	lastErr  string
	restarts int
	wake     chan struct{} // closed and replaced at every change
}

const (
	stateCreated = iota
	stateStarted
	stateClosed
)

// session is one connection to the upstream.
type session struct {
	cs      *mcp.ClientSession
	tap     *tap
	proc    *processTransport // stdio only
	server  ServerInfo
	changed chan struct{} // notifications/tools/list_changed, coalesced
	began   time.Time
	dead    bool // the session has ended; guarded by Upstream.mu
}

func (s *session) pid() int {
	if s.proc == nil {
		return 0
	}
	if c := s.proc.process(); c != nil && c.cmd.Process != nil {
		return c.cmd.Process.Pid
	}
	return 0
}

// New checks the configuration of the upstream called name (normalised
// as DecodeConfig does) and returns its Upstream, not yet connected: see
// Start.
func New(name string, cfg Config, opts Options) (*Upstream, error) {
	cfg = cfg.normalized()
	if err := cfg.Validate(name); err != nil {
		return nil, err
	}
	u := &Upstream{
		name: name, cfg: cfg, lim: opts.Limits.withDefaults(), opts: opts,
		log:     opts.Logger,
		secrets: cfg.secrets(),
		done:    make(chan struct{}),
		wake:    make(chan struct{}),
	}
	if u.log == nil {
		u.log = slog.New(slog.DiscardHandler)
	}
	u.log = u.log.With("upstream", name)
	u.sem = make(chan struct{}, u.lim.MaxConcurrent)
	if cfg.Transport == TransportHTTP {
		u.http = opts.HTTPTransport
		if u.http == nil {
			u.ownHTTP = http.DefaultTransport.(*http.Transport).Clone()
			u.http = u.ownHTTP
		}
	}
	return u, nil
}

// Name is the upstream's name.
func (u *Upstream) Name() string { return u.name }

// Config is the upstream's configuration (normalised). It holds the
// secret values: show its Redacted form.
func (u *Upstream) Config() Config { return u.cfg }

// Start starts the connection loop: connect, list the tools, follow
// list_changed, and reconnect with backoff whenever the session ends,
// until ctx ends or Close. It returns at once; see WaitReady.
func (u *Upstream) Start(ctx context.Context) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.state != stateCreated {
		return
	}
	u.state = stateStarted
	ctx, u.cancel = context.WithCancel(ctx)
	go u.run(ctx)
}

// Close stops the connection loop, ends the session (a stdio upstream's
// process is stopped: see Limits.StopGrace) and waits for both. Calls
// after Close fail with ErrClosed.
func (u *Upstream) Close() error {
	u.mu.Lock()
	prev := u.state
	u.state = stateClosed
	cancel := u.cancel
	u.mu.Unlock()
	if prev == stateStarted {
		cancel()
		<-u.done
	}
	if u.ownHTTP != nil {
		u.ownHTTP.CloseIdleConnections()
	}
	u.update(func() {})
	return nil
}

// WaitReady waits until the upstream is connected with a tool list, or
// ctx ends (the error then says what the last attempt met).
func (u *Upstream) WaitReady(ctx context.Context) error {
	for {
		u.mu.Lock()
		ready, closed, wake, last := u.cur != nil, u.state == stateClosed, u.wake, u.lastErr
		u.mu.Unlock()
		switch {
		case ready:
			return nil
		case closed:
			return ErrClosed
		}
		select {
		case <-ctx.Done():
			if last != "" {
				return fmt.Errorf("upstream %s not ready: %w (last error: %s)", u.name, ctx.Err(), last)
			}
			return fmt.Errorf("upstream %s not ready: %w", u.name, ctx.Err())
		case <-wake:
		}
	}
}

// Status is a snapshot of an upstream's connection.
type Status struct {
	Name      string      `json:"name"`
	Connected bool        `json:"connected"`
	Server    *ServerInfo `json:"server,omitempty"`
	// Tools are the last list published (they stay after a disconnect,
	// until the next list).
	Tools      []LiveTool `json:"tools"`
	Generation uint64     `json:"generation"`
	// LastError is why the last session ended or the last attempt failed
	// (secret values scrubbed); empty when none did.
	LastError string `json:"last_error,omitempty"`
	// Restarts counts the sessions that ended while the upstream was in
	// use (a stdio process that exited, an HTTP session that failed) and
	// were started again.
	Restarts int `json:"restarts"`
	// PID is a connected stdio upstream's process id.
	PID      int `json:"pid,omitempty"`
	InFlight int `json:"in_flight"`
}

// Status returns a snapshot of the upstream's connection.
func (u *Upstream) Status() Status {
	u.mu.Lock()
	defer u.mu.Unlock()
	st := Status{
		Name: u.name, Tools: u.tools.Tools, Generation: u.tools.Generation,
		LastError: u.lastErr, Restarts: u.restarts, InFlight: int(u.inFlight.Load()),
	}
	if st.Tools == nil {
		st.Tools = []LiveTool{}
	}
	if u.cur != nil {
		st.Connected = true
		srv := u.cur.server
		st.Server = &srv
		st.PID = u.cur.pid()
	} else if u.tools.Generation > 0 {
		srv := u.tools.Server
		st.Server = &srv
	}
	return st
}

// Tools returns the last tool list published (Generation 0: none yet).
func (u *Upstream) Tools() ToolList {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.tools
}

// Refresh lists the tools now, publishes the list (OnTools) and returns
// it.
func (u *Upstream) Refresh(ctx context.Context) (ToolList, error) {
	s, err := u.current()
	if err != nil {
		return ToolList{}, err
	}
	tl, err := u.list(ctx, s)
	if err != nil {
		return ToolList{}, err
	}
	return u.publish(s, tl), nil
}

// current returns the session calls go to.
func (u *Upstream) current() (*session, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	switch {
	case u.state == stateClosed:
		return nil, ErrClosed
	case u.cur != nil:
		return u.cur, nil
	case u.lastErr != "":
		return nil, fmt.Errorf("%w: %s is not connected (last error: %s)", ErrUnavailable, u.name, u.lastErr)
	}
	return nil, fmt.Errorf("%w: %s is not connected", ErrUnavailable, u.name)
}

// update runs f under the lock, then wakes WaitReady.
func (u *Upstream) update(f func()) {
	u.mu.Lock()
	defer u.mu.Unlock()
	f()
	close(u.wake)
	u.wake = make(chan struct{})
}

// run is the connection loop.
func (u *Upstream) run(ctx context.Context) {
	defer close(u.done)
	attempt := 0
	for ctx.Err() == nil {
		began := time.Now()
		connected, err := u.serve(ctx)
		if ctx.Err() != nil {
			return
		}
		msg := scrub(err.Error(), u.secrets)
		u.update(func() {
			u.lastErr = msg
			if connected {
				u.restarts++
			}
		})
		if connected && time.Since(began) >= u.lim.StableAfter {
			attempt = 0
		}
		wait := u.lim.backoff(attempt)
		attempt++
		u.log.Warn("upstream session ended", "error", msg, "retry_in", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// serve runs one session: connect, list, publish, then follow
// list_changed until the session ends. connected says whether it got as
// far as publishing a list.
func (u *Upstream) serve(ctx context.Context) (connected bool, err error) {
	s, err := u.connect(ctx)
	if err != nil {
		return false, err
	}
	defer func() {
		u.update(func() {
			s.dead = true
			if u.cur == s {
				u.cur = nil
			}
		})
		_ = s.cs.Close()
	}()
	tl, err := u.list(ctx, s)
	if err != nil {
		return false, err
	}
	u.publish(s, tl)
	u.log.Info("upstream connected", "server", s.server.Name, "version", s.server.Version, "tools", len(tl.Tools), "pid", s.pid())
	ended := make(chan error, 1)
	go func() { ended <- s.cs.Wait() }()
	for {
		select {
		case <-ctx.Done():
			return true, ctx.Err()
		case err := <-ended:
			return true, u.endReport(s, err)
		case <-s.changed:
			tl, err := u.list(ctx, s)
			if err != nil {
				// The list may have failed because the session ended:
				// then that is the news.
				t := time.NewTimer(u.lim.StopGrace)
				defer t.Stop()
				select {
				case end := <-ended:
					return true, u.endReport(s, end)
				case <-t.C:
				}
				return true, fmt.Errorf("re-listing tools after list_changed: %w", err)
			}
			u.publish(s, tl)
		}
	}
}

// endReport says why a session ended.
func (u *Upstream) endReport(s *session, err error) error {
	if s.proc != nil {
		if c := s.proc.process(); c != nil {
			return fmt.Errorf("%w: %s", ErrUnavailable, c.exitReport(u.lim.StopGrace))
		}
	}
	if err == nil {
		return fmt.Errorf("%w: the session ended", ErrUnavailable)
	}
	return fmt.Errorf("%w: the session ended: %v", ErrUnavailable, err)
}

// connect starts a session: the process or the HTTP session, initialize,
// and the server's name and version read from its answer.
func (u *Upstream) connect(ctx context.Context) (*session, error) {
	cctx, cancel := context.WithTimeout(ctx, u.lim.ConnectTimeout)
	defer cancel()
	s := &session{tap: newTap(u.lim.MaxMessageBytes), changed: make(chan struct{}, 1), began: time.Now()}
	s.tap.notify = u.relays.notification
	var t mcp.Transport
	switch u.cfg.Transport {
	case TransportStdio:
		base := u.opts.BaseEnv
		if base == nil {
			base = DefaultBaseEnv()
		}
		s.proc = &processTransport{cfg: u.cfg, baseEnv: base, tap: s.tap, grace: u.lim.StopGrace, secrets: u.secrets}
		t = s.proc
	case TransportHTTP:
		h := make(http.Header, len(u.cfg.Headers))
		for k, v := range u.cfg.Headers {
			h.Set(k, v)
		}
		t = &mcp.StreamableClientTransport{
			Endpoint:   u.cfg.URL,
			HTTPClient: &http.Client{Transport: &roundTripper{base: u.http, headers: h, tap: s.tap}},
			MaxRetries: 2,
			// The tap bounds events first; this is the SDK's own bound.
			MaxEventSize: u.lim.MaxMessageBytes + maxFieldLine*4,
		}
	}
	impl := u.opts.Client
	if impl == nil {
		impl = &mcp.Implementation{Name: "groundgate", Version: "0"}
	}
	caps := u.opts.Capabilities
	if caps == nil {
		caps = &mcp.ClientCapabilities{}
	}
	client := mcp.NewClient(impl, &mcp.ClientOptions{
		Logger:       u.log,
		Capabilities: caps,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case s.changed <- struct{}{}:
			default:
			}
		},
	})
	init := &slot{}
	cs, err := client.Connect(withSlot(cctx, init), t, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	s.tap.forget(init)
	if err != nil {
		if s.proc != nil {
			if c := s.proc.process(); c != nil {
				c.Close()
				return nil, fmt.Errorf("%w: connect: %v (%s)", ErrUnavailable, err, c.exitReport(0))
			}
		}
		if _, p := init.answer(); p != nil {
			return nil, fmt.Errorf("connect: %w", p)
		}
		return nil, fmt.Errorf("%w: connect: %v", ErrUnavailable, err)
	}
	s.cs = cs
	raw, _ := init.answer()
	if s.server, err = decodeInitialize(raw); err != nil {
		_ = cs.Close()
		return nil, err
	}
	// An upstream sends log messages only once a level is set: ask for
	// all of them, so a call's logs can be passed on (Relay); a client of
	// the gateway filters by its own level.
	if ir := cs.InitializeResult(); ir != nil && ir.Capabilities != nil && ir.Capabilities.Logging != nil {
		lvl := &slot{}
		if err := cs.SetLoggingLevel(withSlot(cctx, lvl), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			u.log.Debug("the upstream refused logging/setLevel", "error", err)
		}
		s.tap.forget(lvl)
	}
	return s, nil
}

// list reads every page of the session's tool list, within the limits.
func (u *Upstream) list(ctx context.Context, s *session) (ToolList, error) {
	u.listMu.Lock()
	defer u.listMu.Unlock()
	lctx, cancel := context.WithTimeout(ctx, u.lim.ConnectTimeout)
	defer cancel()
	var (
		tools  []LiveTool
		total  int
		cursor string
		seen   = map[string]bool{}
	)
	for {
		sl := &slot{}
		_, err := s.cs.ListTools(withSlot(lctx, sl), &mcp.ListToolsParams{Cursor: cursor})
		s.tap.forget(sl)
		raw, problem := sl.answer()
		switch {
		case problem != nil:
			return ToolList{}, fmt.Errorf("tools/list: %w", problem)
		case err != nil && errors.Is(lctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
			return ToolList{}, fmt.Errorf("%w: tools/list: no answer within %s", ErrTimeout, u.lim.ConnectTimeout)
		case err != nil && raw == nil:
			return ToolList{}, fmt.Errorf("%w: tools/list: %v", ErrUnavailable, err)
		}
		total += len(raw)
		if total > u.lim.MaxToolListBytes {
			return ToolList{}, fmt.Errorf("%w: more than %d bytes of tools", ErrToolList, u.lim.MaxToolListBytes)
		}
		page, next, err := decodePage(raw)
		if err != nil {
			return ToolList{}, err
		}
		tools = append(tools, page...)
		if len(tools) > u.lim.MaxTools {
			return ToolList{}, fmt.Errorf("%w: more than %d tools", ErrToolList, u.lim.MaxTools)
		}
		if next == "" {
			break
		}
		if seen[next] {
			return ToolList{}, fmt.Errorf("%w: tools/list: the cursor %q comes back", ErrProtocol, clip(next, 60))
		}
		seen[next] = true
		cursor = next
	}
	return ToolList{Upstream: u.name, Server: s.server, Tools: finishList(tools)}, nil
}

// publish makes tl the upstream's list (and s its session, if it is
// still open) and calls OnTools.
func (u *Upstream) publish(s *session, tl ToolList) ToolList {
	u.update(func() {
		u.gen++
		tl.Generation = u.gen
		u.tools = tl
		if u.state != stateClosed && !s.dead {
			u.cur = s
		}
	})
	if u.opts.OnTools != nil {
		u.opts.OnTools(tl)
	}
	return tl
}
