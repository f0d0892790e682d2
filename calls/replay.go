package calls

import (
	"context"
	"fmt"

	"github.com/groundgate/groundgate/execution"

	"github.com/groundgate/groundgate/gateway"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
)

// ReplayReport says, layer by layer, whether a re-issued read matched
// (each layer as an execution's replay compares it).
type ReplayReport struct {
	Hash       hashing.Digest         `json:"hash"`
	ReplayHash hashing.Digest         `json:"replay_hash"`
	Match      bool                   `json:"match"`
	Layers     []execution.LayerMatch `json:"layers"`
}

// Replay re-issues a stored call whose tool's effect is read, with the
// same arguments, to the tool the name stands for now, and compares the
// seven layers: the identity in force (registry), the request, the
// evidence and state it was decided on (kept), the policy set in force,
// the live tool's definition (upstream) and the result. A write is never
// re-issued (ErrNotReplayable); a tool quarantined now is refused (F12).
// Nothing is stored.
func (s *Service) Replay(ctx context.Context, hash hashing.Digest) (*ReplayReport, error) {
	f, err := s.get(ctx, hash)
	if err != nil {
		return nil, err
	}
	if f.Effect != registry.EffectRead {
		return nil, fmt.Errorf("%w: %s is a call to %s, whose effect is %s: only reads are re-issued", ErrNotReplayable, hash, f.Tool, f.Effect)
	}
	c, ok := s.reg.Current().Get(f.Tool)
	if !ok || c.Tool == nil || c.Disc.Deprecated {
		return nil, &Refusal{Failures: []ground.Failure{{Field: "tool", Code: ground.F2, Codes: []ground.Code{ground.F2}, Value: f.Tool,
			Detail: "the tool is no longer in the registry"}}}
	}
	st, live, listed, err := s.ups.Drift(c)
	switch {
	case err != nil:
		return nil, err
	case !listed:
		return nil, fmt.Errorf("%w: %s has not listed its tools yet", gateway.ErrUnavailable, c.Tool.Impl.Upstream)
	case st != gateway.StateOK:
		return nil, &Refusal{Failures: []ground.Failure{{Field: "tool", Code: ground.F12, Codes: []ground.Code{ground.F12}, Value: f.Tool,
			Detail: fmt.Sprintf("the live tool is %s: quarantined until a sync applies", st)}}}
	}
	now := f.Layers
	now.Registry = c.Identity
	now.Policies = s.pol.Current().Digest
	now.Upstream = live.Tool.Digest
	res, err := s.ups.Call(ctx, c.Tool.Impl.Upstream, c.Tool.Impl.Tool, f.Arguments)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		now.Result = errorDigest(callError(err))
	} else {
		now.Result = res.Digest
		if !res.ToolDigest.IsZero() {
			now.Upstream = res.ToolDigest
		}
	}
	rep := &ReplayReport{Hash: f.Hash, ReplayHash: now.Hash(), Layers: compare(f.Layers, now)}
	rep.Match = rep.ReplayHash == f.Hash
	return rep, nil
}

func compare(a, b Layers) []execution.LayerMatch {
	as, bs := a.List(), b.List()
	out := make([]execution.LayerMatch, len(as))
	for i := range as {
		out[i] = execution.LayerMatch{Layer: LayerNames[i], Stored: as[i], Replayed: bs[i], Match: as[i] == bs[i]}
	}
	return out
}

// DiffReport compares two stored calls layer by layer.
type DiffReport struct {
	A      hashing.Digest        `json:"a"`
	B      hashing.Digest        `json:"b"`
	Same   bool                  `json:"same"`
	Layers []execution.LayerDiff `json:"layers"`
	// Arguments lists the top-level argument names whose values differ
	// (present in one call only, or with other values).
	Arguments []string `json:"arguments"`
}

// Diff compares two stored calls.
func (s *Service) Diff(ctx context.Context, a, b hashing.Digest) (*DiffReport, error) {
	fa, err := s.get(ctx, a)
	if err != nil {
		return nil, err
	}
	fb, err := s.get(ctx, b)
	if err != nil {
		return nil, err
	}
	rep := &DiffReport{A: a, B: b, Same: a == b, Arguments: argumentDiff(fa.Arguments, fb.Arguments)}
	as, bs := fa.Layers.List(), fb.Layers.List()
	for i := range as {
		rep.Layers = append(rep.Layers, execution.LayerDiff{Layer: LayerNames[i], A: as[i], B: bs[i], Same: as[i] == bs[i]})
	}
	return rep, nil
}

// argumentDiff names the top-level members whose canonical values differ.
func argumentDiff(a, b []byte) []string {
	ma, mb := members(a), members(b)
	out := []string{}
	for _, k := range sortedUnion(ma, mb) {
		if string(ma[k]) != string(mb[k]) {
			out = append(out, k)
		}
	}
	return out
}
