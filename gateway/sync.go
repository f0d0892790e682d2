package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
)

// Change says what a sync does to one tool (SPEC §14).
type Change string

// The changes a sync plan lists.
const (
	ChangeAdded     Change = "added"     // listed, no entry in force
	ChangeChanged   Change = "changed"   // a new identity: schema, annotations, pinned version, contract
	ChangeDescribed Change = "described" // the same identity, other approved words
	ChangeRemoved   Change = "removed"   // an entry in force the upstream no longer lists
	ChangeUnchanged Change = "unchanged"
)

// Finding is one thing the poisoning screen (SPEC §12) flags in a tool's
// discovery text.
type Finding struct {
	Field   string `json:"field"`
	Rule    string `json:"rule"`
	Why     string `json:"why"`
	Excerpt string `json:"excerpt"`
}

// Screen flags discovery text that addresses an agent, hides characters
// or holds links.
type Screen func(registry.Entry) []Finding

// Overlay is what an admin adds to a tool at sync: a contract (sem, so
// part of the identity) and discovery words. Disc's title and
// description, when given, replace the upstream's (they are then the
// approved words); its aliases, tags and examples are added.
type Overlay struct {
	Contract *contract.Contract `json:"contract,omitempty"`
	Disc     *OverlayDisc       `json:"disc,omitempty"`
}

// OverlayDisc is an overlay's discovery words.
type OverlayDisc struct {
	Title       string   `json:"title,omitempty"`
	Description string   `json:"description,omitempty"`
	Aliases     []string `json:"aliases,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	Examples    []string `json:"examples,omitempty"`
}

// SyncRequest is the body of POST /v1/upstreams/{name}/sync.
type SyncRequest struct {
	Apply   bool               `json:"apply"`
	Overlay map[string]Overlay `json:"overlay,omitempty"`
}

// PlanItem is one tool of a sync plan.
type PlanItem struct {
	Tool   string `json:"tool"`
	Change Change `json:"change"`
	// Identity is the identity the tool has after the sync (the one in
	// force for a removed tool).
	Identity hashing.Digest `json:"identity,omitzero"`
	// Findings are the poisoning screen's, on the words that would be
	// approved; never null.
	Findings []Finding `json:"findings"`
	// Held is set when the tool is left as it is: its words are flagged
	// and the overlay gives none of its own, or it cannot be an entry.
	Held string `json:"held,omitempty"`
}

// Plan is a sync's answer.
type Plan struct {
	Upstream string     `json:"upstream"`
	Server   ServerInfo `json:"server"`
	Plan     []PlanItem `json:"plan"`
	Applied  bool       `json:"applied"`
	// Version is the registry version after the sync (the current one
	// when nothing was written).
	Version uint64 `json:"version"`
}

// SyncWait bounds how long a sync waits for an upstream that has not
// listed its tools yet.
const SyncWait = 10 * time.Second

// Sync compares the upstream's live tools with the entries in force and,
// when req.Apply, writes the plan as one registry version. A tool whose
// words the screen flags is not applied unless the overlay gives its
// title and description (the approved words then are the overlay's).
func (m *Manager) Sync(ctx context.Context, name string, req SyncRequest, screen Screen) (Plan, error) {
	mg, err := m.get(name)
	if err != nil {
		return Plan{}, err
	}
	ix := mg.live.Load()
	if ix == nil {
		// An upstream still connecting gets a while, not forever.
		wctx, cancel := context.WithTimeout(ctx, SyncWait)
		err := mg.up.WaitReady(wctx)
		cancel()
		if err != nil {
			return Plan{}, fmt.Errorf("%w: %s has not listed its tools: %v", ErrUnavailable, name, err)
		}
		ix = mg.live.Load()
	}
	// The newest list: a sync approves what the upstream says now.
	if tl, err := mg.up.Refresh(ctx); err == nil {
		mg.index(tl, mg.cfg.Pin)
		ix = mg.live.Load()
	} else if !errors.Is(err, ErrUnavailable) {
		return Plan{}, err
	}
	for _, t := range sortedKeys(req.Overlay) {
		if _, ok := ix.byName[t]; !ok {
			return Plan{}, fmt.Errorf("%w: overlay names %q, which %s does not list", ErrInvalidOverlay, clip(t, 128), name)
		}
	}
	m.writeMu.Lock()
	defer m.writeMu.Unlock()
	snap := m.reg.Current()
	current := map[string]registry.Capability{}
	for _, c := range InForce(snap, name) {
		current[c.Tool.Impl.Tool] = c
	}
	plan := Plan{Upstream: name, Server: ix.list.Server, Plan: []PlanItem{}, Version: snap.Version()}
	var writes []registry.Entry
	for _, t := range ix.list.Tools {
		item := PlanItem{Tool: t.Name, Findings: []Finding{}}
		e, err := ToolEntry(name, mg.cfg.Pin, ix.list.Server, t)
		if err == nil {
			err = compiles(t)
		}
		if err != nil {
			item.Change, item.Held = ChangeUnchanged, err.Error()
			if c, ok := current[t.Name]; ok {
				item.Identity = c.Identity
			}
			plan.Plan = append(plan.Plan, item)
			continue
		}
		ov, hasOv := req.Overlay[t.Name]
		c, had := current[t.Name]
		if !hasOv && had {
			// What an earlier overlay added stays until an overlay for the
			// tool replaces it: a sync without one approves the upstream's
			// changes, not the loss of the admin's words or contract.
			keepOverlay(&e, c.Entry)
		}
		if hasOv {
			applyOverlay(&e, ov)
		}
		if err := e.Validate(); err != nil {
			return Plan{}, fmt.Errorf("%w: %s: %v", ErrInvalidOverlay, t.Name, err)
		}
		if item.Identity, err = e.Identity(); err != nil {
			return Plan{}, err
		}
		if screen != nil {
			item.Findings = append(item.Findings, screen(e)...)
		}
		approved := hasOv && ov.Disc != nil && ov.Disc.Description != ""
		switch {
		case !had:
			item.Change = ChangeAdded
		case c.Identity != item.Identity:
			item.Change = ChangeChanged
		case !sameDisc(c.Disc, e.Disc):
			item.Change = ChangeDescribed
		default:
			item.Change = ChangeUnchanged
		}
		if len(item.Findings) > 0 && !approved && item.Change != ChangeUnchanged {
			item.Held = "the screen flags the upstream's words: give the tool's title and description in the overlay's disc to approve it"
		}
		if item.Change != ChangeUnchanged && item.Held == "" {
			writes = append(writes, e)
		}
		plan.Plan = append(plan.Plan, item)
	}
	for _, t := range sortedKeys(current) {
		if _, listed := ix.byName[t]; listed {
			continue
		}
		c := current[t]
		plan.Plan = append(plan.Plan, PlanItem{Tool: t, Change: ChangeRemoved, Identity: c.Identity, Findings: []Finding{}})
		e := c.Entry.Clone()
		e.Disc.Deprecated = true
		writes = append(writes, e)
	}
	slices.SortFunc(plan.Plan, func(a, b PlanItem) int { return strings.Compare(a.Tool, b.Tool) })
	if !req.Apply || len(writes) == 0 {
		plan.Applied = req.Apply
		return plan, nil
	}
	v, _, err := m.reg.Apply(ctx, writes)
	if err != nil {
		return Plan{}, err
	}
	plan.Applied, plan.Version = true, v
	return plan, nil
}

// applyOverlay adds an overlay to a live tool's entry.
func applyOverlay(e *registry.Entry, ov Overlay) {
	if !ov.Contract.Empty() {
		k := *ov.Contract
		e.Tool.Sem.Contract = &k
	}
	if d := ov.Disc; d != nil {
		if d.Title != "" {
			e.Disc.Title = d.Title
		}
		if d.Description != "" {
			e.Disc.Description = d.Description
		}
		e.Disc.Aliases = append(e.Disc.Aliases, d.Aliases...)
		e.Disc.Tags = append(e.Disc.Tags, d.Tags...)
		e.Disc.Examples = append(e.Disc.Examples, d.Examples...)
	}
}

// keepOverlay carries what an earlier overlay added to the entry in force
// over to the live tool's entry: aliases, tags, examples, the contract.
func keepOverlay(e *registry.Entry, inForce registry.Entry) {
	e.Disc.Aliases = slices.Clone(inForce.Disc.Aliases)
	e.Disc.Tags = slices.Clone(inForce.Disc.Tags)
	e.Disc.Examples = slices.Clone(inForce.Disc.Examples)
	if inForce.Tool != nil && !inForce.Tool.Sem.Contract.Empty() {
		k := inForce.Tool.Clone().Sem.Contract
		e.Tool.Sem.Contract = k
	}
}

// sameDisc reports whether two discovery layers say the same.
func sameDisc(a, b registry.Discovery) bool {
	return a.Title == b.Title && a.Description == b.Description && a.Deprecated == b.Deprecated &&
		slices.Equal(a.Aliases, b.Aliases) && slices.Equal(a.Tags, b.Tags) && slices.Equal(a.Examples, b.Examples)
}

// compiles checks that a tool's schemas compile (self-contained, no
// dynamic references, no $ref cycle): a tool whose arguments could never
// be checked is not approved.
func compiles(t LiveTool) error {
	if _, err := CompileSchema(t.InputSchema); err != nil {
		return fmt.Errorf("inputSchema: %w", err)
	}
	if len(t.OutputSchema) > 0 {
		if _, err := CompileSchema(t.OutputSchema); err != nil {
			return fmt.Errorf("outputSchema: %w", err)
		}
	}
	return nil
}
