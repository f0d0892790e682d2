package upstreamtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/groundgate/groundgate/hashing"
)

// State is the state file's content: how the tools served differ from
// the flags' tools.
type State struct {
	// Tools patches a tool the flags serve, or adds one they do not.
	Tools map[string]Patch `json:"tools,omitempty"`
	// Remove names tools the flags serve that are served no more.
	Remove []string `json:"remove,omitempty"`
}

// Patch replaces the members of a tool's definition it holds; MCP's
// spelling of them.
type Patch struct {
	Title       *string `json:"title,omitempty"`
	Description *string `json:"description,omitempty"`
	// InputSchema is a JSON object with "type": "object" (the SDK serves
	// no other).
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	// OutputSchema is a JSON object, or null to serve none.
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// Annotations replace the tool's annotations as a whole.
	Annotations *Annotations `json:"annotations,omitempty"`
}

// Annotations are MCP's tool annotations.
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    bool   `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  bool   `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// Reload reads Config.State and applies it (see Apply); a missing or
// empty file is State{}. Nothing changes when the file is invalid.
func (u *Upstream) Reload() error {
	if u.cfg.State == "" {
		return fmt.Errorf("%w: no state file configured", ErrState)
	}
	raw, err := os.ReadFile(u.cfg.State)
	if errors.Is(err, fs.ErrNotExist) {
		raw, err = nil, nil
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrState, err)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.reload(raw)
}

// reload applies the state file's bytes raw, with u.mu held.
func (u *Upstream) reload(raw []byte) error {
	var st State
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := hashing.DecodeStrict(raw, &st); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrState, u.cfg.State, err)
		}
	}
	if err := u.apply(st); err != nil {
		return err
	}
	u.stateRaw = bytes.Clone(raw)
	return nil
}

// Watch reloads Config.State every interval its bytes differ from those
// last applied, until ctx ends or the Upstream closes. An invalid file is
// logged and tried again at the next change.
func (u *Upstream) Watch(ctx context.Context, every time.Duration) {
	if u.cfg.State == "" || every <= 0 {
		return
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	var failed []byte // the bytes that failed last, not retried
	for {
		select {
		case <-ctx.Done():
			return
		case <-u.closed:
			return
		case <-tick.C:
		}
		raw, err := os.ReadFile(u.cfg.State)
		if errors.Is(err, fs.ErrNotExist) {
			raw, err = nil, nil
		}
		if err != nil {
			u.log.Warn("upstreamtest: read the state file", "file", u.cfg.State, "err", err)
			continue
		}
		u.mu.Lock()
		same := bytes.Equal(raw, u.stateRaw) || (failed != nil && bytes.Equal(raw, failed))
		if !same {
			if err := u.reload(raw); err != nil {
				failed = bytes.Clone(raw)
				u.log.Warn("upstreamtest: apply the state file", "err", err)
			} else {
				failed = nil
			}
		}
		u.mu.Unlock()
	}
}

// planState is the tools st makes of the flags' tools, checked whole.
func (u *Upstream) planState(st State) (map[string]*tool, error) {
	want := make(map[string]*tool, len(u.base)+len(st.Tools))
	for name, t := range u.base {
		want[name] = t
	}
	for _, name := range st.Remove {
		if _, ok := u.base[name]; !ok {
			return nil, fmt.Errorf("%w: remove %q: no such tool", ErrState, name)
		}
		if _, ok := st.Tools[name]; ok {
			return nil, fmt.Errorf("%w: %q is both removed and patched", ErrState, name)
		}
		delete(want, name)
	}
	for _, name := range slices.Sorted(maps.Keys(st.Tools)) {
		p := st.Tools[name]
		if !toolName.MatchString(name) {
			return nil, fmt.Errorf("%w: %q is not a tool name MCP allows (%s)", ErrState, name, toolName)
		}
		t, ok := u.base[name]
		if !ok {
			t = &tool{def: sdk.Tool{Name: name, InputSchema: emptyObject}, handler: answerArguments}
		}
		def, err := p.applyTo(t.def)
		if err != nil {
			return nil, fmt.Errorf("%w: tool %q: %v", ErrState, name, err)
		}
		want[name] = &tool{def: def, handler: t.handler}
	}
	return want, nil
}

// applyTo is def with p's members in place of its own.
func (p Patch) applyTo(def sdk.Tool) (sdk.Tool, error) {
	if p.Title != nil {
		def.Title = *p.Title
	}
	if p.Description != nil {
		def.Description = *p.Description
	}
	if p.InputSchema != nil {
		var s struct {
			Type json.RawMessage `json:"type"`
		}
		if err := hashing.DecodeFields(p.InputSchema, &s); err != nil {
			return def, fmt.Errorf("inputSchema: %v", err)
		}
		if !bytes.Equal(s.Type, []byte(`"object"`)) {
			return def, fmt.Errorf(`inputSchema: the SDK serves only a schema with "type": "object" at the top`)
		}
		def.InputSchema = p.InputSchema
	}
	switch {
	case p.OutputSchema == nil:
	case bytes.Equal(bytes.TrimSpace(p.OutputSchema), []byte("null")):
		def.OutputSchema = nil
	default:
		var s map[string]json.RawMessage
		if err := hashing.DecodeStrict(p.OutputSchema, &s); err != nil {
			return def, fmt.Errorf("outputSchema: %v", err)
		}
		def.OutputSchema = p.OutputSchema
	}
	if a := p.Annotations; a != nil {
		def.Annotations = &sdk.ToolAnnotations{
			Title:           a.Title,
			ReadOnlyHint:    a.ReadOnlyHint,
			DestructiveHint: a.DestructiveHint,
			IdempotentHint:  a.IdempotentHint,
			OpenWorldHint:   a.OpenWorldHint,
		}
	}
	return def, nil
}
