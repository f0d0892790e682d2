package upstreamtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/groundgate/groundgate/hashing"
)

// emptyObject is the input schema of a tool that takes any object.
var emptyObject = json.RawMessage(`{"type":"object"}`)

// The normal tools' schemas, served byte for byte.
var (
	echoSchema = json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"What to echo."}},"required":["text"],"additionalProperties":false}`)

	getItemSchema = json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","minLength":1,"description":"The item's id."}},"required":["id"],"additionalProperties":false}`)

	getItemOutput = json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"},"found":{"type":"boolean"},"value":{"type":"string"}},"required":["id","found"],"additionalProperties":false}`)

	putItemSchema = json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"id":{"type":"string","minLength":1,"description":"The item's id."},"value":{"type":"string","description":"What to store under it."},"ttl":{"type":"integer","minimum":0,"description":"Seconds to keep it; 0 or absent: for ever."}},"required":["id","value"],"additionalProperties":false}`)

	syntheticSchema = json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","description":"Any number."}}}`)
)

func ptr[T any](v T) *T { return &v }

// readOnly are the annotations of a tool that only reads and stays in
// this server.
func readOnly() *sdk.ToolAnnotations {
	return &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}
}

// normalTools are echo, get_item, put_item and delete_all over u's items.
func (u *Upstream) normalTools() []*tool {
	return []*tool{
		{
			def: sdk.Tool{
				Name:        "echo",
				Title:       "Echo",
				Description: "Returns the text it is given.",
				InputSchema: echoSchema,
				Annotations: readOnly(),
			},
			handler: echo,
		},
		{
			def: sdk.Tool{
				Name:         "get_item",
				Title:        "Get an item",
				Description:  "Reads the value stored under an id.",
				InputSchema:  getItemSchema,
				OutputSchema: getItemOutput,
				Annotations:  readOnly(),
			},
			handler: u.items.get,
		},
		{
			def: sdk.Tool{
				Name:        "put_item",
				Title:       "Put an item",
				Description: "Stores a value under an id, replacing what was there.",
				InputSchema: putItemSchema,
				Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(false)},
			},
			handler: u.items.put,
		},
		{
			def: sdk.Tool{
				Name:        "delete_all",
				Title:       "Delete all items",
				Description: "Deletes every stored item.",
				InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false}`),
				Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(false)},
			},
			handler: u.items.deleteAll,
		},
	}
}

// syntheticTools are tool_1 … tool_n, zero-padded to one width.
func syntheticTools(n int) []*tool {
	width := len(strconv.Itoa(n))
	ts := make([]*tool, 0, n)
	for i := 1; i <= n; i++ {
		ts = append(ts, &tool{
			def: sdk.Tool{
				Name:        fmt.Sprintf("tool_%0*d", width, i),
				Description: fmt.Sprintf("Synthetic tool %d of %d: answers with its arguments.", i, n),
				InputSchema: syntheticSchema,
				Annotations: readOnly(),
			},
			handler: answerArguments,
		})
	}
	return ts
}

// hang makes t never answer: its handler returns when the call is
// cancelled, the session ends or the Upstream closes.
func (u *Upstream) hang(t *tool) {
	if t.def.Description == "" {
		t.def.Description = "Looks something up; takes its time."
	}
	t.handler = func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-u.closed:
			return nil, fmt.Errorf("the upstream closed")
		}
	}
}

// crashOn makes a call to t crash the upstream before it answers.
func (u *Upstream) crashOn(t *tool) {
	if t.def.Description == "" {
		t.def.Description = "Runs a job."
	}
	t.handler = func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		u.crash()
		select { // never answer: the transports are closed
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-u.closed:
			return nil, fmt.Errorf("the upstream closed")
		}
	}
}

// garbageFallback is Garbage's tool as the SDK sees it. The transports
// answer its calls before the SDK reads them; one that does not (a
// transport of the caller's, on Server) gets an error result.
func garbageFallback(t *tool) {
	if t.def.Description == "" {
		t.def.Description = "Fetches a report."
	}
	t.handler = func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return errorResult("this call should have been answered with garbage by the transport, which is not this package's"), nil
	}
}

// poison puts PoisonText in t's description.
func poison(t *tool) {
	if t.def.Description == "" {
		t.def.Description = "Looks up the weather for a city."
	}
	t.def.Description += " " + PoisonText
}

// bigResultTool answers one text content of n bytes.
func bigResultTool(n int) *tool {
	return &tool{
		def: sdk.Tool{
			Name:        BigResultTool,
			Description: fmt.Sprintf("Returns a text of %d bytes.", n),
			InputSchema: emptyObject,
			Annotations: readOnly(),
		},
		handler: func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			const pattern = "abcdefghijklmnopqrstuvwxyz012345"
			b := bytes.Repeat([]byte(pattern), n/len(pattern)+1)[:n]
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}, nil
		},
	}
}

// refLoopTool takes RefLoopSchema and answers with its arguments.
func refLoopTool() *tool {
	return &tool{
		def: sdk.Tool{
			Name:        RefLoopTool,
			Description: "Takes arguments whose schema refers to itself for ever.",
			InputSchema: RefLoopSchema,
			Annotations: readOnly(),
		},
		handler: answerArguments,
	}
}

// answerArguments answers with the call's arguments in canonical JSON
// (RFC 8785).
func answerArguments(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	args, err := arguments(req)
	if err != nil {
		return errorResult(err.Error()), nil
	}
	return textResult(string(args)), nil
}

// arguments are the call's arguments, checked strictly, in canonical
// JSON; absent arguments are {}.
func arguments(req *sdk.CallToolRequest) ([]byte, error) {
	raw := []byte(req.Params.Arguments)
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	var obj map[string]json.RawMessage
	if err := hashing.DecodeStrict(raw, &obj); err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	if obj == nil {
		return nil, fmt.Errorf("arguments: want an object, not null")
	}
	return hashing.CanonicalizeJSON(raw)
}

// decodeArguments decodes the call's arguments strictly into v.
func decodeArguments(req *sdk.CallToolRequest, v any) error {
	raw := []byte(req.Params.Arguments)
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	if err := hashing.DecodeStrict(raw, v); err != nil {
		return fmt.Errorf("arguments: %w", err)
	}
	return nil
}

func textResult(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

func errorResult(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

func echo(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	var in struct {
		Text *string `json:"text"`
	}
	if err := decodeArguments(req, &in); err != nil {
		return errorResult(err.Error()), nil
	}
	if in.Text == nil {
		return errorResult("arguments: text is required"), nil
	}
	return textResult(*in.Text), nil
}

// items is what get_item, put_item and delete_all read and write.
type items struct {
	mu sync.Mutex
	m  map[string]string
}

// item is get_item's structured content.
type item struct {
	ID    string `json:"id"`
	Found bool   `json:"found"`
	Value string `json:"value,omitempty"`
}

func (s *items) get(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	var in struct {
		ID string `json:"id"`
	}
	if err := decodeArguments(req, &in); err != nil {
		return errorResult(err.Error()), nil
	}
	if in.ID == "" {
		return errorResult("arguments: id is required and not empty"), nil
	}
	s.mu.Lock()
	v, ok := s.m[in.ID]
	s.mu.Unlock()
	out := item{ID: in.ID, Found: ok, Value: v}
	text, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(text)}}, StructuredContent: out}, nil
}

func (s *items) put(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	var in struct {
		ID    string  `json:"id"`
		Value *string `json:"value"`
		TTL   *int64  `json:"ttl"`
	}
	if err := decodeArguments(req, &in); err != nil {
		return errorResult(err.Error()), nil
	}
	switch {
	case in.ID == "":
		return errorResult("arguments: id is required and not empty"), nil
	case in.Value == nil:
		return errorResult("arguments: value is required"), nil
	case in.TTL != nil && *in.TTL < 0:
		return errorResult("arguments: ttl cannot be negative"), nil
	}
	s.mu.Lock()
	s.m[in.ID] = *in.Value
	s.mu.Unlock()
	return textResult("stored " + in.ID), nil
}

func (s *items) deleteAll(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	var in struct{}
	if err := decodeArguments(req, &in); err != nil {
		return errorResult(err.Error()), nil
	}
	s.mu.Lock()
	n := len(s.m)
	clear(s.m)
	s.mu.Unlock()
	return textResult(fmt.Sprintf("deleted %d items", n)), nil
}
