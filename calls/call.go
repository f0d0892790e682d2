package calls

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/gateway"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/policy"
	"github.com/groundgate/groundgate/registry"
)

// Upstreams is what calls need from the gateway's upstreams.
type Upstreams interface {
	Ground(upstream string) (gateway.Ground, error)
	Drift(c registry.Capability) (gateway.State, gateway.Live, bool, error)
	Call(ctx context.Context, upstream, tool string, args []byte) (gateway.Result, error)
	WaitReady(ctx context.Context, upstream string, d time.Duration) error
}

// ReadyWait bounds how long a call waits for an upstream that has not
// listed its tools yet (it is starting, or reconnecting after a crash).
const ReadyWait = 5 * time.Second

// Registry is what calls need from the registry.
type Registry interface {
	Current() *registry.Snapshot
}

// Evidence establishes discovery evidence (ground.Gate.Evidence).
type Evidence interface {
	Evidence(ctx context.Context, id hashing.Digest, inline []byte) (*discover.Result, *ground.Failure, error)
}

// Policies is the policy set in force.
type Policies interface {
	Current() *policy.Set
}

var (
	_ Upstreams = (*gateway.Manager)(nil)
	_ Evidence  = (*ground.Gate)(nil)
	_ Policies  = (*policy.Store)(nil)
)

// Request is a call as a host sends it (POST /v1/calls).
type Request struct {
	Tool string
	// Arguments is a JSON object (nil: {}).
	Arguments []byte
	// DiscoveryID or Inline is the evidence (SPEC §5); neither for an
	// exempt read.
	DiscoveryID hashing.Digest
	Inline      []byte
	// Session is the session the call is made in (SPEC §15); nil outside
	// one. Its evidence grounds the call (DiscoveryID and Inline are then
	// unused) and its state, facts and clock are what rules read.
	Session *Session
}

// Session is what a call in a session is decided with: every turn's
// evidence, the trusted state, the host's facts, and the clock. The
// caller holds the session from reading these to recording the call
// (session.Store.Hold), so the state read is the state the result is
// filed on.
type Session struct {
	ID hashing.Digest
	// Evidence is every turn's discovery id, in turn order. Of the matches
	// naming the tool, the one with the highest confidence grounds the
	// call (the earliest turn's on a tie).
	Evidence []hashing.Digest
	// State is the session's trusted state in RFC 8785 form ({} when
	// empty) and StateDigest its SHA-256.
	State       []byte
	StateDigest hashing.Digest
	// Facts is the host's facts, merged over the turns: an RFC 8785 JSON
	// object ({} when none).
	Facts []byte
	// Now is the time the call is decided.
	Now time.Time
	// ByAgent lists the evidence that is the agent's own words (an
	// agent_discovery session's turns): a call it grounds is marked so.
	ByAgent []hashing.Digest
	// Keep, when set, takes the footprint to store instead of the
	// service's own commit: the session writes it (PutTx) in the
	// transaction that records the call, so a session call costs one
	// commit, not two, and the caller must make it durable before it
	// answers. The footprint comes sealed (its hash set) with its bytes;
	// Keep's error is the call's.
	Keep func(f *Footprint, raw []byte) error
}

// Response is a call's 200 body: the footprint and the upstream's result.
type Response struct {
	Call   *Footprint `json:"call"`
	Result []byte     `json:"-"`
}

// Refusal is Γ's refusal of a call: every failure at once. REST: 422.
type Refusal struct {
	Failures []ground.Failure
	// Call is the footprint of a call that ran but whose result was
	// refused (F10); nil when the call was never forwarded.
	Call *Footprint
}

func (r *Refusal) Error() string {
	parts := make([]string, len(r.Failures))
	for i, f := range r.Failures {
		parts[i] = fmt.Sprintf("%s %s: %s", f.Code, f.Field, f.Detail)
	}
	return "call refused: " + strings.Join(parts, "; ")
}

// UpstreamError is a forwarded call that failed upstream; its footprint
// is stored. It wraps the gateway's error (ErrTimeout: 504; the others:
// 502, ErrBusy 503).
type UpstreamError struct {
	Err  error
	Call *Footprint
}

func (e *UpstreamError) Error() string { return e.Err.Error() }
func (e *UpstreamError) Unwrap() error { return e.Err }

// Options configure a Service.
type Options struct {
	Logger *slog.Logger
	// Screen flags result text that addresses the agent (SPEC §12).
	Screen func(text string) []gateway.Finding
	// Checker decides policies (F11); nil refuses every call a policy
	// governs as undecidable.
	Checker PolicyChecker
	// Contracts evaluates tool contracts (F9, F10); nil means tool
	// entries carry none.
	Contracts Contracts
	// Signer signs call attestations; nil refuses them (ErrNoSigner).
	Signer Signer
}

// PolicyChecker decides a request against policies (policy.Checker).
type PolicyChecker interface {
	Check(ctx context.Context, cs []*policy.Compiled, req policy.Request) ([]policy.Refusal, error)
}

// Service is Γ for calls, the forwarding and the footprints.
type Service struct {
	reg  Registry
	ups  Upstreams
	ev   Evidence
	pol  Policies
	opts Options
	log  *slog.Logger
	st   Backend

	// sessions keeps the decoded states of recent decisions.
	sessions *contract.SessionCache

	schemas sync.Map // identity → *gateway.Schema (input), compiled once
	outputs sync.Map // identity → *gateway.Schema (output)
}

// New returns a Service storing footprints in st (the registry's file,
// registry.Store.Engine()).
func New(st Backend, reg Registry, ups Upstreams, ev Evidence, pol Policies, opts Options) (*Service, error) {
	if st == nil {
		return nil, errors.New("calls: New needs a store")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{reg: reg, ups: ups, ev: ev, pol: pol, opts: opts, log: log, st: st, sessions: contract.NewSessionCache(16)}, nil
}

// Get returns a stored footprint.
func (s *Service) Get(ctx context.Context, hash hashing.Digest) (*Footprint, error) {
	return s.get(ctx, hash)
}

// decision is what Γ established about an admitted call.
type decision struct {
	capb      registry.Capability
	upstream  string
	tool      string
	args      []byte // RFC 8785
	evidence  hashing.Digest
	discovery *hashing.Digest
	grounding string
	ground    *policy.Grounding // what /grounding/… read; nil: no match, not exempt
	live      gateway.Live
	policies  hashing.Digest
	version   uint64
	// What rules read besides the call (SPEC §15): the session's state
	// and facts ({} outside a session) and the decision's time (zero
	// outside a session); read is what the State layer records.
	state []byte
	facts []byte
	now   time.Time
	read  *StateRead
	words string // WordsAgent when the evidence is the agent's own words
	keep  func(*Footprint, []byte) error
}

// Call decides a call (Γ: F2, F3, F7, F1, F12, F9, F11, every failure at
// once), forwards it, checks the result (output schema and
// postconditions: F10), stores the footprint and returns it with the
// result. A refusal is a *Refusal; an upstream failure an *UpstreamError
// (its footprint stored); any other error is the server's.
func (s *Service) Call(ctx context.Context, req Request) (Response, error) {
	d, fails, err := s.decide(ctx, req)
	if err != nil {
		return Response{}, err
	}
	if len(fails) > 0 {
		return Response{}, &Refusal{Failures: fails}
	}
	return s.forward(ctx, d)
}

// decide is Γ.
func (s *Service) decide(ctx context.Context, req Request) (*decision, []ground.Failure, error) {
	var fails []ground.Failure
	add := func(field string, code ground.Code, value, detail string) {
		fails = append(fails, ground.Failure{Field: field, Code: code, Codes: []ground.Code{code}, Value: clip(value, 200), Detail: detail})
	}
	snap := s.reg.Current()
	// One policy set per decision: what F11 checks is what the footprint
	// names.
	set := s.pol.Current()
	d := &decision{tool: req.Tool, version: snap.Version(), policies: set.Digest, state: emptyObject, facts: emptyObject}
	if ss := req.Session; ss != nil {
		d.state, d.facts, d.now = ss.State, ss.Facts, ss.Now.UTC().Round(0)
		d.read = &StateRead{Session: ss.ID, State: ss.StateDigest, Facts: ss.Facts, Now: d.now.Format(time.RFC3339Nano)}
		d.keep = ss.Keep
	}

	// The arguments: an object, in RFC 8785 form.
	args := req.Arguments
	if len(args) == 0 {
		args = []byte("{}")
	}
	canon, err := hashing.CanonicalizeJSON(args)
	switch {
	case err != nil:
		add("arguments", ground.F1, "", "arguments are not valid JSON: "+hashing.Reason(err))
	case canon[0] != '{':
		add("arguments", ground.F1, "", "arguments must be a JSON object")
	default:
		d.args = canon
	}

	// F2: the tool.
	c, found := snap.Get(req.Tool)
	upstream, tool, _ := strings.Cut(req.Tool, ".")
	d.upstream, d.tool = upstream, tool
	var mode gateway.Ground
	switch {
	case req.Tool == "":
		add("tool", ground.F1, "", "tool is missing: name the tool as upstream.tool")
		return nil, fails, nil
	case !found || c.Kind != registry.KindTool || c.Tool == nil || c.Disc.Deprecated:
		add("tool", ground.F2, req.Tool, "no tool of this name is in the registry: discover tools and call one the discovery matched")
		return nil, fails, nil
	default:
		d.capb = c
		upstream, tool = c.Tool.Impl.Upstream, c.Tool.Impl.Tool
		d.upstream, d.tool = upstream, tool
		if mode, err = s.ups.Ground(upstream); err != nil {
			add("tool", ground.F2, req.Tool, fmt.Sprintf("upstream %s is not configured on this server", upstream))
			return nil, fails, nil
		}
	}

	// F3, F7: the evidence.
	exempt := mode == gateway.GroundWrites && c.Tool.Sem.Effect == registry.EffectRead
	var ev *discover.Result // the evidence, when genuine
	switch {
	case req.Session != nil:
		var f *ground.Failure
		if ev, f, err = s.sessionEvidence(ctx, req.Session.Evidence, req.Tool); err != nil {
			return nil, nil, err
		}
		switch m := toolMatch(ev, req.Tool); {
		case f != nil:
			fails = append(fails, *f)
		case m == nil && exempt:
			d.grounding, d.evidence = GroundingExempt, ExemptionDigest(upstream)
			ev = nil
		case m == nil:
			d.grounding = GroundingDiscovered
			add("tool", ground.F3, req.Tool, "no turn of the session discovered this tool: it exists, but the user's words did not ask for it")
		default:
			id := ev.ID
			d.grounding, d.discovery, d.evidence = GroundingDiscovered, &id, id
			if slices.Contains(req.Session.ByAgent, id) {
				d.words = WordsAgent
			}
			if m.Capability != c.Identity {
				add("tool", ground.F7, req.Tool, fmt.Sprintf("the evidence matched identity %s, the name now stands for %s: discover again", m.Capability, c.Identity))
			}
		}
	case exempt && req.DiscoveryID.IsZero() && req.Inline == nil:
		d.grounding, d.evidence = GroundingExempt, ExemptionDigest(upstream)
	default:
		d.grounding = GroundingDiscovered
		if req.DiscoveryID.IsZero() && req.Inline == nil {
			add("discovery", ground.F3, req.Tool, "no discovery evidence: run discovery on the user's words and pass its id")
			break
		}
		res, f, err := s.ev.Evidence(ctx, req.DiscoveryID, req.Inline)
		if err != nil {
			return nil, nil, err
		}
		if f != nil {
			fails = append(fails, *f)
			break
		}
		id := res.ID
		d.discovery, d.evidence = &id, id
		m := toolMatch(res, req.Tool)
		switch {
		case m == nil && exempt:
			// An exempt read needs no evidence; evidence that is genuine
			// but about other tools (a session's, pinned for a whole
			// conversation) does not take the exemption away.
			d.grounding, d.evidence, d.discovery = GroundingExempt, ExemptionDigest(upstream), nil
		case m == nil:
			add("tool", ground.F3, req.Tool, "the evidence did not discover this tool: it exists, but the user's words did not ask for it")
		case m.Capability != c.Identity:
			add("tool", ground.F7, req.Tool, fmt.Sprintf("the evidence matched identity %s, the name now stands for %s: discover again", m.Capability, c.Identity))
		}
		ev = res
	}
	d.ground = PolicyGrounding(d.grounding, req.Tool, ev)

	// F1: the arguments against the input schema.
	if d.args != nil {
		sch, err := s.schema(&s.schemas, c.Identity, c.Tool.Alg.InputSchema)
		if err != nil {
			add("arguments", ground.F1, "", "the tool's input schema does not compile: "+err.Error())
		} else {
			for _, p := range sch.Validate(d.args) {
				add("arguments"+strings.ReplaceAll(p.Pointer, "/", "."), ground.F1, "", p.Detail)
			}
		}
	}

	// F12: drift.
	st, live, listed, err := s.ups.Drift(c)
	if err == nil && !listed {
		if werr := s.ups.WaitReady(ctx, upstream, ReadyWait); werr == nil {
			st, live, listed, err = s.ups.Drift(c)
		}
	}
	switch {
	case err != nil:
		return nil, nil, err
	case !listed:
		return nil, nil, fmt.Errorf("%w: %s has not listed its tools yet", gateway.ErrUnavailable, upstream)
	case st == gateway.StateRemoved:
		add("tool", ground.F12, req.Tool, fmt.Sprintf("%s no longer lists %s: quarantined until a sync applies", upstream, tool))
	case st == gateway.StateDrift:
		add("tool", ground.F12, req.Tool, fmt.Sprintf("%s now declares %s differently (identity %s, approved %s): quarantined until a sync applies", upstream, tool, live.Identity, gateway.BaseIdentity(c)))
	}
	d.live = live

	// F9: preconditions; F11: policies. Only on a call whose arguments
	// decoded: a rule reads them.
	if d.args != nil {
		fs, err := s.preconditionsOf(d)
		if err != nil {
			return nil, nil, err
		}
		fails = append(fails, fs...)
		fs, err = s.policyCheck(ctx, d, set)
		if err != nil {
			return nil, nil, err
		}
		fails = append(fails, fs...)
	}
	return d, fails, nil
}

// emptyObject is the state and the facts outside a session.
var emptyObject = []byte("{}")

// sessionEvidence returns, of a session's evidence, the result whose
// match for tool has the highest confidence (the earliest turn's on a
// tie), or the last turn's when none names it (nil when the session has
// no turn). A turn's evidence is the server's own discovery; a failure
// establishing it (it was made under another registry, or is gone) is
// the call's.
func (s *Service) sessionEvidence(ctx context.Context, ids []hashing.Digest, tool string) (*discover.Result, *ground.Failure, error) {
	var best, last *discover.Result
	var bestConf float64
	for _, id := range ids {
		res, f, err := s.ev.Evidence(ctx, id, nil)
		if err != nil || f != nil {
			return nil, f, err
		}
		last = res
		if m := toolMatch(res, tool); m != nil && (best == nil || m.Confidence > bestConf) {
			best, bestConf = res, m.Confidence
		}
	}
	if best == nil {
		return last, nil, nil
	}
	return best, nil, nil
}

// schema compiles a tool schema once per identity.
func (s *Service) schema(cache *sync.Map, id hashing.Digest, raw []byte) (*gateway.Schema, error) {
	if v, ok := cache.Load(id); ok {
		return v.(*gateway.Schema), nil
	}
	sch, err := gateway.CompileSchema(raw)
	if err != nil {
		return nil, err
	}
	cache.Store(id, sch)
	return sch, nil
}

// policyCheck is F11: the policies governing the tool, over
// {"tool", "arguments"}.
func (s *Service) policyCheck(ctx context.Context, d *decision, set *policy.Set) ([]ground.Failure, error) {
	cs := set.Governing(d.capb.Name, registry.KindTool)
	if len(cs) == 0 {
		return nil, nil
	}
	if s.opts.Checker == nil {
		return nil, fmt.Errorf("calls: %d policies govern %s and no checker is configured", len(cs), d.capb.Name)
	}
	refs, err := s.opts.Checker.Check(ctx, cs, s.policyRequest(d))
	if err != nil {
		return nil, fmt.Errorf("calls: policies: %w", err)
	}
	var out []ground.Failure
	for _, r := range refs {
		out = append(out, ground.Failure{Field: r.Field(), Code: ground.F11, Codes: []ground.Code{ground.F11},
			Detail: r.Detail, Policy: r.Policy, Core: r.Core, Witness: r.Witness, Next: r.Next})
	}
	return out, nil
}

// forward runs an admitted call and stores its footprint.
func (s *Service) forward(ctx context.Context, d *decision) (Response, error) {
	f := &Footprint{
		Tool: d.capb.Name, Identity: d.capb.Identity, Arguments: d.args,
		Decision:        Decision{Admitted: true, Grounding: d.grounding, Words: d.words, Failures: []ground.Failure{}},
		Upstream:        UpstreamRef{Name: d.upstream, Server: d.live.Server, ToolDigest: d.live.Tool.Digest},
		RegistryVersion: d.version, Effect: d.capb.Tool.Sem.Effect, Discovery: d.discovery,
		Findings: []gateway.Finding{},
	}
	var err error
	f.Layers = Layers{Registry: d.capb.Identity, Evidence: d.evidence, State: EmptyState, Policies: d.policies, Upstream: d.live.Tool.Digest}
	if d.read != nil {
		f.Read = d.read
		if f.Layers.State, err = d.read.Digest(); err != nil {
			return Response{}, err
		}
	}
	if f.Layers.Request, err = RequestDigest(f.Tool, f.Arguments); err != nil {
		return Response{}, err
	}
	res, cerr := s.ups.Call(ctx, d.upstream, d.tool, d.args)
	if cerr != nil {
		// Recorded even when the client left mid-call: the upstream may
		// have acted on it before it was told the call was cancelled.
		ce := callError(cerr)
		f.Outcome, f.Error = OutcomeUpstreamError, &ce
		f.Layers.Result = errorDigest(ce)
		if err := s.store(ctx, d, f); err != nil {
			return Response{}, err
		}
		s.logCall(ctx, f)
		return Response{}, &UpstreamError{Err: cerr, Call: f}
	}
	if !res.ToolDigest.IsZero() {
		f.Upstream.ToolDigest, f.Layers.Upstream = res.ToolDigest, res.ToolDigest
	}
	f.Upstream.Server = res.Server
	f.Layers.Result = res.Digest
	f.Outcome = OutcomeOK
	if res.IsError {
		f.Outcome = OutcomeToolError
	}
	fails, err := s.checkResult(d, res)
	if err != nil {
		return Response{}, err
	}
	if len(fails) > 0 {
		f.Outcome, f.Decision.Failures = OutcomeRefusedResult, fails
	}
	if s.opts.Screen != nil {
		f.Findings = append(f.Findings, screenResult(res.Raw, s.opts.Screen)...)
	}
	if err := s.store(ctx, d, f); err != nil {
		return Response{}, err
	}
	s.logCall(ctx, f)
	if len(fails) > 0 {
		return Response{}, &Refusal{Failures: fails, Call: f}
	}
	return Response{Call: f, Result: res.Raw}, nil
}

// store makes a footprint durable: the service's own commit, or the
// session's (Session.Keep).
func (s *Service) store(ctx context.Context, d *decision, f *Footprint) error {
	if d.keep == nil {
		// The call was forwarded: its footprint is kept even if the
		// caller has gone meanwhile.
		return s.put(context.WithoutCancel(ctx), f)
	}
	raw, err := f.seal()
	if err != nil {
		return err
	}
	return d.keep(f, raw)
}

// checkResult is F10: the output schema (when declared, on a result that
// is not a tool error) and the postconditions.
func (s *Service) checkResult(d *decision, res gateway.Result) ([]ground.Failure, error) {
	var fails []ground.Failure
	if out := d.capb.Tool.Alg.OutputSchema; len(out) > 0 && !res.IsError {
		sc := structuredOf(res.Raw)
		if sc == nil {
			fails = append(fails, ground.Failure{Field: "result.structuredContent", Code: ground.F10, Codes: []ground.Code{ground.F10},
				Detail: "the tool declares an output schema and returned no structuredContent"})
		} else if sch, err := s.schema(&s.outputs, d.capb.Identity, out); err != nil {
			fails = append(fails, ground.Failure{Field: "result.structuredContent", Code: ground.F10, Codes: []ground.Code{ground.F10},
				Detail: "the tool's output schema does not compile: " + err.Error()})
		} else {
			for _, p := range sch.Validate(sc) {
				fails = append(fails, ground.Failure{Field: "result.structuredContent" + strings.ReplaceAll(p.Pointer, "/", "."), Code: ground.F10, Codes: []ground.Code{ground.F10}, Detail: p.Detail})
			}
		}
	}
	post, err := s.postconditionsOf(d, res.Raw)
	if err != nil {
		return nil, err
	}
	return append(fails, post...), nil
}

func (s *Service) logCall(ctx context.Context, f *Footprint) {
	if h := s.log.Handler(); h.Enabled(ctx, slog.LevelInfo) {
		s.log.LogAttrs(ctx, slog.LevelInfo, "call", slog.String("hash", f.Hash.String()), slog.String("tool", f.Tool),
			slog.String("outcome", f.Outcome))
	}
}

// structuredOf returns a result's structuredContent, nil when absent.
func structuredOf(raw []byte) []byte {
	var v struct {
		Structured jsontext.Value `json:"structuredContent"`
	}
	if err := hashing.DecodeFields(raw, &v); err != nil || len(v.Structured) == 0 || v.Structured.Kind() == 'n' {
		return nil
	}
	return v.Structured
}

// ErrNotReplayable refuses to replay a write. REST: 409.
var ErrNotReplayable = errors.New("not replayable")
