package crashtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// call is one HTTP exchange. ack is true only when the client received a
// 2xx status and the whole body: that is what an acknowledged write means.
type call struct {
	status int
	body   []byte
	err    error // transport error: the server may or may not have committed
}

// refused reports a connection the dead server refused: the request never
// reached it, so nothing about it is in doubt.
func refused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

func (c call) ack() bool { return c.err == nil && c.status >= 200 && c.status < 300 }

// client talks to one server process, or to several as a load balancer
// would: each request goes to the next server in turn, and one whose
// connection is refused (a dead server: the request never reached it) is
// sent to the next instead.
type client struct {
	bases []string
	next  atomic.Uint32
	http  *http.Client
}

func newClient(bases ...string) *client {
	return &client{bases: bases, http: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 8}}}
}

func (c *client) close() { c.http.CloseIdleConnections() }

func (c *client) do(ctx context.Context, method, path string, body []byte, admin bool) call {
	token := ""
	if admin {
		token = adminToken
	}
	return c.doAs(ctx, method, path, body, token)
}

// doAs sends a request with a bearer token ("" for none).
func (c *client) doAs(ctx context.Context, method, path string, body []byte, token string) call {
	first := int(c.next.Add(1))
	var r call
	for i := range c.bases {
		if r = c.send(ctx, c.bases[(first+i)%len(c.bases)], method, path, body, token); !refused(r.err) {
			return r
		}
	}
	return r
}

func (c *client) send(ctx context.Context, base, method, path string, body []byte, token string) call {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return call{err: err}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return call{err: err}
	}
	defer resp.Body.Close()
	// Bounded: the largest answers (a whole registry version) are well under this.
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return call{status: resp.StatusCode, err: fmt.Errorf("reading the body: %w", err)}
	}
	return call{status: resp.StatusCode, body: b}
}

// normalise re-encodes JSON (object keys sorted, numbers in Go's shortest
// form) so that two answers compare by content, not by formatting.
func normalise(b []byte) (string, error) {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return "", fmt.Errorf("not JSON: %w: %.200s", err, b)
	}
	out, err := json.Marshal(v)
	return string(out), err
}

// Kinds of acknowledged writes.
const (
	kindRegistry  = "registry"
	kindDiscovery = "discovery"
	kindGrounding = "grounding"
	kindExecution = "execution"
	kindCall      = "call" // a call footprint (POST /v1/calls), read with the admin token
)

var kinds = []string{kindRegistry, kindDiscovery, kindGrounding, kindExecution, kindCall}

// regAck is an acknowledged PUT: the entry as the server answered it, and
// the version it said holds it.
type regAck struct {
	round   int
	name    string
	version uint64
	entry   string // normalised capability (with its identity)
	fp      string // fingerprint of its aliases
}

// docAck is an acknowledged discovery, grounding or execution: the id or
// hash the server gave and the body it answered with.
type docAck struct {
	round int
	kind  string
	id    string
	body  string // normalised
}

// ledger records every acknowledged write and, per registry name, which
// contents the current registry may hold after a crash: the last
// acknowledged one, or one written later whose answer the crash swallowed.
type ledger struct {
	mu      sync.Mutex
	regs    []regAck
	docs    []docAck
	allowed map[string][]string // name -> possible alias fingerprints now; "" = absent
	lastAck map[string]regAck
	maybe   int // writes in flight at a kill (neither acknowledged nor refused)

	// checkedRegs and checkedDocs mark how far the checks after restarts
	// have got: the writes after them belong to the round just killed.
	checkedRegs, checkedDocs int

	// sessions are the sessions opened (sessions_test.go), in order.
	sessions []*sessionAck
}

func newLedger() *ledger {
	return &ledger{allowed: map[string][]string{}, lastAck: map[string]regAck{}}
}

// fingerprint identifies one written content of an entry: every write the
// test makes gives its entry a set of aliases no other write uses.
func fingerprint(aliases []string) string { return strings.Join(aliases, "|") }

// existing notes an entry the catalog seeded: until a write to it is
// acknowledged, its catalog content is the one expected.
func (l *ledger) existing(name string, aliases []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.allowed[name] = []string{fingerprint(aliases)}
}

// attempted notes a PUT whose answer never arrived: its content may or may
// not be the current one now.
func (l *ledger) attempted(name string, aliases []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.maybe++
	if _, ok := l.allowed[name]; !ok {
		l.allowed[name] = []string{""}
	}
	l.allowed[name] = append(l.allowed[name], fingerprint(aliases))
}

func (l *ledger) ackRegistry(a regAck, aliases []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a.fp = fingerprint(aliases)
	l.regs = append(l.regs, a)
	l.allowed[a.name] = []string{a.fp}
	l.lastAck[a.name] = a
}

func (l *ledger) ackDoc(a docAck) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.docs = append(l.docs, a)
}

func (l *ledger) inFlight() {
	l.mu.Lock()
	l.maybe++
	l.mu.Unlock()
}

// counts returns the number of acknowledged writes of each kind.
func (l *ledger) counts() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := map[string]int{kindRegistry: len(l.regs)}
	for _, d := range l.docs {
		n[d.kind]++
	}
	return n
}
