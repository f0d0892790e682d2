package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/groundgate/groundgate/hashing"
)

// Result is an upstream's answer to a forwarded call.
type Result struct {
	// Raw is the CallToolResult as the upstream sent it, in RFC 8785
	// form: what the gateway forwards and hashes.
	Raw json.RawMessage
	// Digest is SHA-256 of Raw: a call footprint's result layer.
	Digest hashing.Digest
	// IsError is the result's isError: the tool ran and failed (a result,
	// not a Go error).
	IsError bool
	// Server is the server that answered; ToolDigest the called tool's
	// tool_digest in the list in force when the call was sent (zero when
	// the list did not hold it).
	Server     ServerInfo
	ToolDigest hashing.Digest
}

// Call forwards a call of the tool called tool, with args (a JSON object;
// nil means {}), and returns the upstream's result. It waits for one of
// the upstream's Limits.MaxConcurrent slots (ErrBusy after
// Limits.QueueWait) and for the answer (ErrTimeout after
// Limits.CallTimeout). Its errors wrap ErrUnavailable, ErrTimeout,
// ErrResultTooLarge, ErrProtocol, ErrCallRejected, ErrBusy or ErrClosed,
// or are ctx's own. Call checks no grounding, schema or policy: the gate
// does, before.
func (u *Upstream) Call(ctx context.Context, tool string, args json.RawMessage) (Result, error) {
	if args != nil {
		if err := hashing.CheckStrict(args); err != nil || bytes.TrimLeft(args, " \t\r\n")[0] != '{' {
			return Result{}, fmt.Errorf("call %s.%s: arguments must be a JSON object", u.name, clip(tool, 128))
		}
	}
	if _, err := u.current(); errors.Is(err, ErrClosed) {
		return Result{}, err
	}
	release, err := u.acquire(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("call %s.%s: %w", u.name, clip(tool, 128), err)
	}
	defer release()
	s, err := u.current()
	if err != nil {
		return Result{}, fmt.Errorf("call %s.%s: %w", u.name, clip(tool, 128), err)
	}
	res := Result{Server: s.server}
	if t, ok := u.Tools().Tool(tool); ok {
		res.ToolDigest = t.Digest
	}
	cctx, cancel := context.WithTimeout(ctx, u.lim.CallTimeout)
	defer cancel()
	sl := &slot{}
	params := &mcp.CallToolParams{Name: tool}
	if args != nil {
		params.Arguments = args
	}
	if r := relayOf(ctx); r != nil {
		token, remove := u.relays.add(ctx, r)
		defer remove()
		params.SetProgressToken(token)
	}
	_, err = s.cs.CallTool(withSlot(cctx, sl), params)
	s.tap.forget(sl)
	raw, err := u.classify(ctx, cctx, sl, err)
	if err != nil {
		return Result{}, fmt.Errorf("call %s.%s: %w", u.name, clip(tool, 128), err)
	}
	canon, isErr, err := checkResult(raw)
	if err != nil {
		return Result{}, fmt.Errorf("call %s.%s: %w", u.name, clip(tool, 128), err)
	}
	if len(canon) > u.lim.MaxResultBytes {
		return Result{}, fmt.Errorf("call %s.%s: %w: %d bytes in RFC 8785 form, over the limit of %d", u.name, clip(tool, 128), ErrResultTooLarge, len(canon), u.lim.MaxResultBytes)
	}
	res.Raw, res.Digest, res.IsError = canon, hashing.SumSHA256(canon), isErr
	return res, nil
}

// classify turns the SDK's outcome of a call into the raw result or one
// error kind.
func (u *Upstream) classify(ctx, cctx context.Context, sl *slot, err error) ([]byte, error) {
	raw, problem := sl.answer()
	if problem != nil {
		return nil, problem
	}
	if err == nil {
		if raw == nil {
			return nil, fmt.Errorf("%w: no result was read", ErrProtocol)
		}
		return raw, nil
	}
	var we *jsonrpc.Error
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("call abandoned: %w", ctx.Err())
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		return nil, fmt.Errorf("%w: no answer within %s", ErrTimeout, u.lim.CallTimeout)
	case errors.As(err, &we):
		return nil, &RPCError{Code: we.Code, Message: we.Message}
	case raw != nil:
		// A result arrived that the SDK's types refused; the gateway
		// checks (checkResult) and forwards what the upstream sent.
		u.log.Debug("the SDK refused a result the gateway reads itself", "error", err)
		return raw, nil
	}
	return nil, fmt.Errorf("%w: %v", ErrUnavailable, scrub(err.Error(), u.secrets))
}

// acquire takes one of the upstream's call slots.
func (u *Upstream) acquire(ctx context.Context) (release func(), err error) {
	select {
	case u.sem <- struct{}{}:
	default:
		if u.lim.QueueWait < 0 {
			return nil, fmt.Errorf("%w: %d calls in flight", ErrBusy, u.lim.MaxConcurrent)
		}
		t := time.NewTimer(u.lim.QueueWait)
		defer t.Stop()
		select {
		case u.sem <- struct{}{}:
		case <-t.C:
			return nil, fmt.Errorf("%w: %d calls in flight for %s", ErrBusy, u.lim.MaxConcurrent, u.lim.QueueWait)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	u.inFlight.Add(1)
	return func() {
		u.inFlight.Add(-1)
		<-u.sem
	}, nil
}

// checkResult checks that raw is a CallToolResult and returns it in
// RFC 8785 form. The top level is checked member by member (none twice,
// none in two cases; content an array of objects with a string type;
// isError a boolean; structuredContent and _meta objects); the rest is
// JSON checked by the canonicaliser (no key twice, numbers in range),
// forwarded as the upstream wrote it.
func checkResult(raw []byte) (canon []byte, isError bool, err error) {
	var top struct {
		Content           []jsontext.Value `json:"content"`
		IsError           *bool            `json:"isError"`
		StructuredContent jsontext.Value   `json:"structuredContent"`
		Meta              jsontext.Value   `json:"_meta"`
	}
	if err := decodeEnvelopeFields(raw, &top); err != nil {
		return nil, false, fmt.Errorf("%w: not a CallToolResult: %s", ErrProtocol, hashing.Reason(err))
	}
	for i, c := range top.Content {
		var item struct {
			Type string `json:"type"`
		}
		if c.Kind() != '{' || decodeEnvelopeFields(c, &item) != nil || item.Type == "" {
			return nil, false, fmt.Errorf("%w: not a CallToolResult: content[%d] is not an object with a type", ErrProtocol, i)
		}
	}
	for _, m := range []struct {
		name string
		v    jsontext.Value
	}{{"structuredContent", top.StructuredContent}, {"_meta", top.Meta}} {
		if len(m.v) > 0 && m.v.Kind() != '{' {
			return nil, false, fmt.Errorf("%w: not a CallToolResult: %s is not an object", ErrProtocol, m.name)
		}
	}
	canon, err = hashing.CanonicalizeJSON(raw)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %s", ErrProtocol, hashing.Reason(err))
	}
	return canon, top.IsError != nil && *top.IsError, nil
}
