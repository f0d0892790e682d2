package gateway

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Relay receives what an upstream sends about a call while it runs:
// progress for the call's own token, and log messages (MCP's log
// messages name no request, so each goes to every call in flight on the
// upstream when it arrives). Both run on the connection's reader: they
// must not block for long.
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

// relays are the calls in flight that relay: progress token → relay.
type relays struct {
	mu   sync.Mutex
	byID map[string]*Relay
	next atomic.Uint64
}

// add registers r and returns the progress token to send upstream (the
// gateway's own: a client's token means nothing to the upstream's other
// clients) and the function that removes it.
func (rs *relays) add(r *Relay) (token string, remove func()) {
	token = fmt.Sprintf("groundgate-%d", rs.next.Add(1))
	rs.mu.Lock()
	if rs.byID == nil {
		rs.byID = map[string]*Relay{}
	}
	rs.byID[token] = r
	rs.mu.Unlock()
	return token, func() {
		rs.mu.Lock()
		delete(rs.byID, token)
		rs.mu.Unlock()
	}
}

func (rs *relays) progress(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
	tok, ok := req.Params.ProgressToken.(string)
	if !ok {
		return
	}
	rs.mu.Lock()
	r := rs.byID[tok]
	rs.mu.Unlock()
	if r != nil && r.Progress != nil {
		r.Progress(ctx, req.Params)
	}
}

func (rs *relays) log(ctx context.Context, req *mcp.LoggingMessageRequest) {
	rs.mu.Lock()
	var to []*Relay
	for _, r := range rs.byID {
		if r.Log != nil {
			to = append(to, r)
		}
	}
	rs.mu.Unlock()
	for _, r := range to {
		r.Log(ctx, req.Params)
	}
}
