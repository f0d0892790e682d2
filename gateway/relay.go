package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Relay receives what an upstream sends about a call while it runs:
// progress for the call's own token, and log messages (MCP's log
// messages name no request, so each goes to every call in flight on the
// upstream when it arrives). They are delivered in the order the
// upstream sent them, on a goroutine of the call's own, and all of those
// that arrived before the call's answer are delivered before Call
// returns: a client sees a call's logs and progress before its result.
type Relay struct {
	Progress func(ctx context.Context, p *mcp.ProgressNotificationParams)
	Log      func(ctx context.Context, p *mcp.LoggingMessageParams)
}

type relayKey struct{}

// WithRelay returns a context whose calls (Upstream.Call) relay the
// upstream's progress and log messages to r: what a gateway in front of
// the upstream passes on to its own client.
func WithRelay(ctx context.Context, r Relay) context.Context {
	return context.WithValue(ctx, relayKey{}, &r)
}

func relayOf(ctx context.Context) *Relay {
	r, _ := ctx.Value(relayKey{}).(*Relay)
	return r
}

// relayQueueMax bounds the notifications waiting for one call's client:
// beyond it the oldest are dropped (a client too slow for its own call's
// logs loses some, the upstream's reader never waits).
const relayQueueMax = 1024

// relayDrainWait bounds how long a call's end waits for its queued
// notifications to reach the client.
const relayDrainWait = 2 * time.Second

// relays are the calls in flight that relay: progress token → queue.
type relays struct {
	mu   sync.Mutex
	byID map[string]*relayQueue
	next atomic.Uint64
}

// relayQueue delivers one call's notifications in order.
type relayQueue struct {
	r    *Relay
	ctx  context.Context
	mu   sync.Mutex
	todo []func()
	wake chan struct{} // a send per enqueue, coalesced
	done chan struct{} // closed by the worker once stopped and drained
	stop chan struct{}
}

func (q *relayQueue) push(f func()) {
	q.mu.Lock()
	if len(q.todo) >= relayQueueMax {
		q.todo = q.todo[1:]
	}
	q.todo = append(q.todo, f)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *relayQueue) run() {
	defer close(q.done)
	for {
		q.mu.Lock()
		batch := q.todo
		q.todo = nil
		q.mu.Unlock()
		for _, f := range batch {
			f()
		}
		if len(batch) > 0 {
			continue
		}
		select {
		case <-q.wake:
		case <-q.stop:
			q.mu.Lock()
			rest := q.todo
			q.todo = nil
			q.mu.Unlock()
			for _, f := range rest {
				f()
			}
			return
		}
	}
}

// add registers r and returns the progress token to send upstream (the
// gateway's own: a client's token means nothing to the upstream's other
// clients) and the function that removes it once the call has its
// answer, after delivering what arrived before it.
func (rs *relays) add(ctx context.Context, r *Relay) (token string, remove func()) {
	token = fmt.Sprintf("groundgate-%d", rs.next.Add(1))
	q := &relayQueue{r: r, ctx: context.WithoutCancel(ctx), wake: make(chan struct{}, 1), done: make(chan struct{}), stop: make(chan struct{})}
	go q.run()
	rs.mu.Lock()
	if rs.byID == nil {
		rs.byID = map[string]*relayQueue{}
	}
	rs.byID[token] = q
	rs.mu.Unlock()
	return token, func() {
		rs.mu.Lock()
		delete(rs.byID, token)
		rs.mu.Unlock()
		close(q.stop)
		t := time.NewTimer(relayDrainWait)
		defer t.Stop()
		select {
		case <-q.done:
		case <-t.C:
		}
	}
}

// notification is the tap's hook: a notification the upstream sent, in
// stream order, on the connection's reader (it must not block).
func (rs *relays) notification(req *jsonrpc.Request) {
	switch req.Method {
	case "notifications/progress":
		var p mcp.ProgressNotificationParams
		if json.Unmarshal(req.Params, &p) != nil {
			return
		}
		tok, ok := p.ProgressToken.(string)
		if !ok {
			return
		}
		rs.mu.Lock()
		q := rs.byID[tok]
		rs.mu.Unlock()
		if q != nil && q.r.Progress != nil {
			q.push(func() { q.r.Progress(q.ctx, &p) })
		}
	case "notifications/message":
		var p mcp.LoggingMessageParams
		if json.Unmarshal(req.Params, &p) != nil {
			return
		}
		rs.mu.Lock()
		var to []*relayQueue
		for _, q := range rs.byID {
			if q.r.Log != nil {
				to = append(to, q)
			}
		}
		rs.mu.Unlock()
		for _, q := range to {
			q.push(func() { q.r.Log(q.ctx, &p) })
		}
	}
}
