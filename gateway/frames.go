package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/groundgate/groundgate/hashing"
)

// Every JSON-RPC message an upstream sends passes a tap before the MCP
// SDK decodes it (the stdio connection and the HTTP round tripper call
// it). The tap
//
//   - refuses messages over Limits.MaxMessageBytes without holding them;
//   - refuses messages that are not JSON-RPC, or hold a key twice, and
//     answers the call they answer (when it can tell which) with an error
//     instead, so that the caller learns at once and the session survives;
//   - keeps the raw "result" of the answers the gateway waits for (a tool
//     list page, a call), so that what the gateway hashes, checks and
//     forwards are the upstream's bytes, decoded by the project's strict
//     codec (package hashing), not the SDK's re-encoding of its own types.
//
// A message it cannot attribute and cannot deliver (garbage with no
// readable id) ends the session: the stream can no longer be trusted.

// slot receives the raw answer to the requests sent with its context
// (withSlot): the transport fills it as the answer passes, before the SDK
// decodes it, so it is complete when the SDK call returns.
type slot struct {
	mu     sync.Mutex
	ids    []jsonrpc.ID
	result []byte // the answer's "result" member, copied
	// problem is why the answer was refused (wrapping ErrProtocol or
	// ErrResultTooLarge); the SDK call then fails with a JSON-RPC error
	// the tap wrote.
	problem error
}

func (s *slot) setResult(raw []byte) {
	s.mu.Lock()
	s.result = bytes.Clone(raw)
	s.mu.Unlock()
}

func (s *slot) setProblem(err error) {
	s.mu.Lock()
	if s.problem == nil {
		s.problem = err
	}
	s.mu.Unlock()
}

// answer returns what the slot received.
func (s *slot) answer() (result []byte, problem error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.result, s.problem
}

type slotKey struct{}

// withSlot returns ctx carrying s: the requests written with it are
// answered into s.
func withSlot(ctx context.Context, s *slot) context.Context {
	return context.WithValue(ctx, slotKey{}, s)
}

func slotFrom(ctx context.Context) *slot {
	s, _ := ctx.Value(slotKey{}).(*slot)
	return s
}

// maxHead is how much of a refused message is kept to find its id.
const maxHead = 64 << 10

// tap is one connection's: request ids are unique per connection.
type tap struct {
	limit   int // Limits.MaxMessageBytes
	mu      sync.Mutex
	pending map[jsonrpc.ID]*slot
	// notify sees each notification the upstream sends, in stream order,
	// before the SDK does (the relays: a call's logs and progress); nil
	// ignores them.
	notify func(*jsonrpc.Request)
}

func newTap(limit int) *tap {
	return &tap{limit: limit, pending: make(map[jsonrpc.ID]*slot)}
}

// outbound notes a request about to be written: if its context carries a
// slot, the answer goes there.
func (t *tap) outbound(ctx context.Context, msg jsonrpc.Message) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		return
	}
	s := slotFrom(ctx)
	if s == nil {
		return
	}
	s.mu.Lock()
	s.ids = append(s.ids, req.ID)
	s.mu.Unlock()
	t.mu.Lock()
	t.pending[req.ID] = s
	t.mu.Unlock()
}

// forget drops the slot's requests: their answers are no longer awaited.
func (t *tap) forget(s *slot) {
	s.mu.Lock()
	ids := s.ids
	s.mu.Unlock()
	t.mu.Lock()
	for _, id := range ids {
		if t.pending[id] == s {
			delete(t.pending, id)
		}
	}
	t.mu.Unlock()
}

func (t *tap) slotFor(id jsonrpc.ID) *slot {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.pending[id]
}

// failAll gives every awaited answer the problem err: the session is
// about to end over a message no one can be told about.
func (t *tap) failAll(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.pending {
		s.setProblem(err)
	}
}

// verdict is what to do with one inbound message: deliver it as it came
// (msg is it, decoded), deliver replace instead, or end the session with
// fatal.
type verdict struct {
	msg     jsonrpc.Message
	replace *jsonrpc.Response
	fatal   error
}

// inspect checks one message the upstream sent (a stdio line, an HTTP
// body, an SSE event's data) and keeps the result an awaited answer
// carries.
func (t *tap) inspect(frame []byte) verdict {
	if len(frame) > t.limit {
		return t.oversize(frame[:min(len(frame), maxHead)], len(frame), jsonrpc.ID{})
	}
	env, err := readEnvelope(frame)
	var msg jsonrpc.Message
	if err == nil {
		// The SDK's own reading, so that what passes here is what it
		// accepts.
		if msg, err = jsonrpc.DecodeMessage(frame); err != nil {
			err = fmt.Errorf("not a JSON-RPC message: %v", err)
		}
	}
	if err != nil {
		id := env.id
		if !id.IsValid() {
			id = headID(frame)
		}
		return t.refuse(id, fmt.Errorf("%w: the upstream sent malformed JSON-RPC: %s", ErrProtocol, clip(hashing.Reason(err), 200)))
	}
	if env.id.IsValid() && env.result != nil {
		if s := t.slotFor(env.id); s != nil {
			s.setResult(env.result)
		}
	}
	if req, ok := msg.(*jsonrpc.Request); ok && !req.IsCall() && t.notify != nil {
		t.notify(req)
	}
	return verdict{msg: msg}
}

// oversize is the verdict on a message of n bytes over the limit, of
// which head is the start; forID is the request it answers when the
// transport knows (an HTTP response body), else the id is looked for in
// head.
func (t *tap) oversize(head []byte, n int, forID jsonrpc.ID) verdict {
	id := forID
	if !id.IsValid() {
		id = headID(head)
	}
	return t.refuse(id, fmt.Errorf("%w: the upstream sent a message of %d bytes or more, over the limit of %d", ErrResultTooLarge, n, t.limit))
}

// refuse answers the request id (when valid) with a JSON-RPC error in
// place of the refused message, and gives its slot the problem; with no
// id, the session must end.
func (t *tap) refuse(id jsonrpc.ID, problem error) verdict {
	if !id.IsValid() {
		t.failAll(problem)
		return verdict{fatal: problem}
	}
	if s := t.slotFor(id); s != nil {
		s.setProblem(problem)
	}
	return verdict{replace: &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{
		Code:    jsonrpc.CodeInternalError,
		Message: "groundgate refused the upstream's answer: " + problem.Error(),
	}}}
}

// envelope is the top level of a JSON-RPC message.
type envelope struct {
	id     jsonrpc.ID
	result jsontext.Value // nil when absent
}

// readEnvelope reads a message's top level with jsontext's checks (valid
// UTF-8 and syntax, no name twice in any object, nothing after the
// value), keeping the id and the result. Members that differ only in
// case at the top level ("result" and "Result") are refused too: the SDK
// and the gateway must not read different ones.
func readEnvelope(frame []byte) (envelope, error) {
	var env envelope
	dec := jsontext.NewDecoder(bytes.NewReader(frame))
	if tok, err := dec.ReadToken(); err != nil {
		return env, err
	} else if tok.Kind() != '{' {
		return env, fmt.Errorf("want a JSON object, got %v (batches are not MCP since 2025-06-18)", tok.Kind())
	}
	seen := map[string]bool{}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return env, err
		}
		key := name.String()
		if folded := foldASCII(key); seen[folded] {
			return env, fmt.Errorf("member %q twice (or in two cases)", clip(key, 40))
		} else {
			seen[folded] = true
		}
		v, err := dec.ReadValue()
		if err != nil {
			return env, err
		}
		switch key {
		case "id":
			if env.id, err = parseID(v); err != nil {
				return env, err
			}
		case "result":
			env.result = bytes.Clone(v) // v is the decoder's, for this read only
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return env, err
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		return env, fmt.Errorf("data after the message")
	}
	return env, nil
}

func foldASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// parseID reads a JSON-RPC id as the SDK does: a string, or a number
// (made an integer), or null (no id).
func parseID(v jsontext.Value) (jsonrpc.ID, error) {
	switch v.Kind() {
	case 'n':
		return jsonrpc.ID{}, nil
	case '"':
		var s string
		if err := hashing.DecodePart(v, &s); err != nil {
			return jsonrpc.ID{}, err
		}
		return jsonrpc.MakeID(s)
	case '0':
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return jsonrpc.ID{}, fmt.Errorf("id %s: %v", clip(string(v), 40), err)
		}
		return jsonrpc.MakeID(f)
	}
	return jsonrpc.ID{}, fmt.Errorf("an id is a string or a number, not %v", v.Kind())
}

// headID finds the top-level "id" of a message it may only have the
// start of, or the zero ID. It is lenient (duplicates, bad UTF-8): it
// only routes a refusal.
func headID(head []byte) jsonrpc.ID {
	dec := jsontext.NewDecoder(bytes.NewReader(head), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return jsonrpc.ID{}
	}
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			return jsonrpc.ID{}
		}
		if name.String() == "id" {
			v, err := dec.ReadValue()
			if err != nil {
				return jsonrpc.ID{}
			}
			id, _ := parseID(v)
			return id
		}
		if err := dec.SkipValue(); err != nil {
			return jsonrpc.ID{}
		}
	}
	return jsonrpc.ID{}
}
