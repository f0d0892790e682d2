package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/groundgate/groundgate/calls"
	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/gateway"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/store"
)

// Caller decides and forwards a call (calls.Service).
type Caller interface {
	Call(ctx context.Context, req calls.Request) (calls.Response, error)
}

// Discoverer discovers a turn's words and keeps the result, so that its
// id grounds later calls (discover.Discoverer).
type Discoverer interface {
	Discover(ctx context.Context, q discover.Query) (discover.Result, error)
}

// Filing says where else an upstream tool's result is filed
// (gateway.Manager.FileAsOf: the upstream's file_as).
type Filing interface {
	FileAsOf(upstream, tool string) ([]gateway.FileAs, error)
}

var (
	_ Caller     = (*calls.Service)(nil)
	_ Discoverer = (*discover.Discoverer)(nil)
	_ Filing     = (*gateway.Manager)(nil)
)

// Service runs sessions (SPEC §15): it discovers each turn's words,
// decides each call on the session's evidence, state, facts and clock,
// and records the call and what its result filed, in order.
type Service struct {
	store *Store
	calls Caller
	disc  Discoverer
	files Filing
	now   func() time.Time
	log   *slog.Logger
}

// ServiceOptions configure a Service.
type ServiceOptions struct {
	// Now is the clock calls are decided by (time.Now); serve --clock
	// fixes it.
	Now    func() time.Time
	Logger *slog.Logger
}

// NewService returns a Service over store.
func NewService(store *Store, c Caller, d Discoverer, f Filing, opts ServiceOptions) *Service {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{store: store, calls: c, disc: d, files: f, now: opts.Now, log: opts.Logger}
}

// Store returns the store the service records in.
func (s *Service) Store() *Store { return s.store }

// Words is a turn as a host (or, in an agent_discovery session, an agent)
// sends it.
type Words struct {
	Prompt string
	Facts  json.RawMessage // the host's facts; nil for none
	By     string          // ByHost (default) or ByAgent
}

// Open discovers the first turn's words and opens a session on them. It
// returns the session with its token, and the discovery.
func (s *Service) Open(ctx context.Context, w Words, agentDiscovery bool) (Created, discover.Result, error) {
	if err := s.store.checkWords(&NewTurn{Prompt: w.Prompt, Facts: w.Facts, By: w.By}, agentDiscovery); err != nil {
		return Created{}, discover.Result{}, err
	}
	res, err := s.disc.Discover(ctx, discover.Query{Prompt: w.Prompt})
	if err != nil {
		return Created{}, discover.Result{}, err
	}
	c, err := s.store.Create(ctx, NewTurn{Prompt: w.Prompt, Evidence: res.ID, By: w.By, Facts: w.Facts}, agentDiscovery)
	return c, res, err
}

// Turn discovers a turn's words and adds the turn to the session.
func (s *Service) Turn(ctx context.Context, id hashing.Digest, w Words) (*Session, discover.Result, error) {
	h, err := s.store.openHeader(ctx, id)
	if err != nil {
		return nil, discover.Result{}, err
	}
	if err := s.store.checkWords(&NewTurn{Prompt: w.Prompt, Facts: w.Facts, By: w.By}, h.AgentDiscovery); err != nil {
		return nil, discover.Result{}, err
	}
	res, err := s.disc.Discover(ctx, discover.Query{Prompt: w.Prompt})
	if err != nil {
		return nil, discover.Result{}, err
	}
	out, err := s.store.AddTurn(ctx, id, NewTurn{Prompt: w.Prompt, Evidence: res.ID, By: w.By, Facts: w.Facts})
	return out, res, err
}

// Called is a call made in a session: Γ's answer (the response, or the
// error calls.Service.Call gave: a *calls.Refusal, a *calls.UpstreamError)
// and the call as the session recorded it.
type Called struct {
	Response calls.Response
	Err      error
	Record   CallRecord
	// Unfiled is why an admitted call's result did not enter the state
	// (ErrTooLarge, ErrInvalid); nil when it did, or filed nothing.
	Unfiled error
}

// Call decides a call in session id on its turns' evidence, its state,
// facts and clock; forwards it when admitted; and records it, filing its
// result when the call was admitted and its outcome ok. The session is
// held throughout, so the state the decision read is the state the result
// is filed on. The returned error is the server's or the session's
// (ErrNotFound, ErrClosed, …); Γ's refusal is in Called.Err, with the
// call recorded.
func (s *Service) Call(ctx context.Context, id hashing.Digest, tool string, args json.RawMessage) (Called, error) {
	release, err := s.store.Hold(ctx, id)
	if err != nil {
		return Called{}, err
	}
	defer release()
	turns, st, err := s.store.conversation(ctx, id)
	if err != nil {
		return Called{}, err
	}
	cs := &calls.Session{ID: id, State: st.Canonical(), StateDigest: st.Digest(), Facts: mergeFacts(turns), Now: s.now()}
	host := map[hashing.Digest]bool{}
	for _, t := range turns {
		cs.Evidence = append(cs.Evidence, t.Evidence)
		host[t.Evidence] = host[t.Evidence] || t.By != ByAgent
	}
	for _, t := range turns {
		// Words the user also said (the same discovery) are the user's.
		if !host[t.Evidence] && !slices.Contains(cs.ByAgent, t.Evidence) {
			cs.ByAgent = append(cs.ByAgent, t.Evidence)
		}
	}
	// The footprint is stored with the call's record, in one commit.
	rec := Call{Tool: tool}
	cs.Keep = func(f *calls.Footprint, raw []byte) error {
		rec.Footprint, rec.FootprintRaw = f, raw
		return nil
	}
	resp, cerr := s.calls.Call(ctx, calls.Request{Tool: tool, Arguments: args, Session: cs})
	var (
		refusal *calls.Refusal
		upErr   *calls.UpstreamError
		fp      *calls.Footprint
	)
	switch {
	case cerr == nil:
		fp = resp.Call
	case errors.As(cerr, &refusal):
		fp = refusal.Call // a result refused (F10): the call ran
	case errors.As(cerr, &upErr):
		fp = upErr.Call
	default:
		return Called{}, cerr // the server's: nothing was decided
	}
	if fp != nil {
		rec.Request, rec.Hash, rec.Tool, rec.Decision, rec.Outcome, rec.Read = fp.Layers.Request, fp.Hash, fp.Tool, Admitted, fp.Outcome, fp.Layers.State
		if cerr == nil && fp.Outcome == OutcomeOK {
			rec.Observe, err = s.observe(fp, resp.Result)
			if err != nil {
				s.log.LogAttrs(ctx, slog.LevelWarn, "session result not filed", slog.String("session", id.String()),
					slog.String("tool", fp.Tool), slog.String("error", err.Error()))
			}
		}
	} else {
		rec.Decision, rec.Request = Refused, requestOf(tool, args)
		if refusal != nil {
			rec.Failures = refusal.Failures
		}
	}
	out := Called{Response: resp, Err: cerr}
	out.Record, err = s.store.AppendCall(ctx, id, rec)
	switch {
	case errors.Is(err, ErrTooLarge), errors.Is(err, ErrInvalid):
		if out.Record.Seq == 0 && out.Record.Request.IsZero() {
			return Called{}, err // the call itself was not recorded
		}
		out.Unfiled = err
	case err != nil:
		return Called{}, err
	}
	return out, nil
}

// observe is where an admitted call's result goes: under its own tool
// and arguments, and where the upstream's file_as says.
func (s *Service) observe(fp *calls.Footprint, result json.RawMessage) ([]Observation, error) {
	places, err := s.files.FileAsOf(fp.Upstream.Name, strings.TrimPrefix(fp.Tool, fp.Upstream.Name+"."))
	if err != nil {
		places = nil // the upstream is gone since: its own filing stands
	}
	return ObserveFiled(fp.Upstream.Name, fp.Tool, fp.Arguments, result, places)
}

// ObserveFiled is where the result of a call to tool (U.T, of upstream)
// with arguments goes in the state: under the tool and its arguments
// (Observe), and at each of the upstream's file_as places whose arguments
// the call has. None when the result files nothing (a tool error).
func ObserveFiled(upstream, tool string, arguments, result json.RawMessage, places []gateway.FileAs) ([]Observation, error) {
	o, ok, err := Observe(tool, arguments, result)
	if err != nil || !ok {
		return nil, err
	}
	obs := []Observation{o}
	if len(places) == 0 {
		return obs, nil
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal(arguments, &args); err != nil {
		return nil, fmt.Errorf("%w: the call's arguments: %v", ErrInvalid, err)
	}
place:
	for _, p := range places {
		sub := make(map[string]json.RawMessage, len(p.Arguments))
		for _, name := range p.Arguments {
			v, ok := args[name]
			if !ok {
				continue place
			}
			sub[name] = v
		}
		raw, err := hashing.Canonical(sub)
		if err != nil {
			return nil, fmt.Errorf("%w: file_as arguments: %v", ErrInvalid, err)
		}
		obs = append(obs, Observation{Tool: upstream + "." + p.Tool, Arguments: raw, Value: o.Value})
	}
	return obs, nil
}

// requestOf is a refused call's request digest: the Request layer when
// the arguments are JSON, else SHA-256 of the arguments' bytes as sent
// (a call Γ refused as F1 still has a digest to record).
func requestOf(tool string, args json.RawMessage) hashing.Digest {
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	if canon, err := hashing.CanonicalizeJSON(args); err == nil {
		if d, err := calls.RequestDigest(tool, canon); err == nil {
			return d
		}
	}
	return hashing.SumSHA256(args)
}

// mergeFacts is Session.Facts over turns.
func mergeFacts(turns []Turn) []byte {
	return (&Session{Turns: turns}).Facts()
}

// openHeader reads a session's header, checked; ErrClosed on a closed
// session. It is what a turn needs to know before its words are
// discovered, without reading the session's calls.
func (s *Store) openHeader(ctx context.Context, id hashing.Digest) (header, error) {
	var out header
	err := s.inTx(ctx, id, reading, func(_ store.Tx, h header) error {
		if h.Closed {
			return fmt.Errorf("%w: %s", ErrClosed, id)
		}
		out = h
		return nil
	})
	return out, err
}

// conversation reads what a call is decided on: the turns and the state,
// in one read transaction; ErrClosed on a closed session.
func (s *Store) conversation(ctx context.Context, id hashing.Digest) ([]Turn, *State, error) {
	var (
		turns []Turn
		st    *State
	)
	err := s.inTx(ctx, id, reading, func(tx store.Tx, h header) error {
		if h.Closed {
			return fmt.Errorf("%w: %s", ErrClosed, id)
		}
		for i := range h.Turns {
			var t Turn
			if err := readSeq(tx, nameTurns, id, i, &t); err != nil {
				return err
			}
			if t.Seq != i || t.Evidence.IsZero() {
				return fmt.Errorf("%w: %s: turn %d does not check", ErrCorrupt, id, i)
			}
			turns = append(turns, t)
		}
		var err error
		st, err = s.cache.read(tx, h)
		return err
	})
	return turns, st, err
}

// Get returns a session with its turns and calls.
func (s *Service) Get(ctx context.Context, id hashing.Digest) (*Session, error) {
	return s.store.Get(ctx, id)
}

// Close closes a session (Store.Close).
func (s *Service) Close(ctx context.Context, id hashing.Digest) (*Session, error) {
	return s.store.Close(ctx, id)
}

// Authorize checks a session token (Store.Authorize).
func (s *Service) Authorize(ctx context.Context, id hashing.Digest, token string) error {
	return s.store.Authorize(ctx, id, token)
}

// State returns a session's trusted state now.
func (s *Service) State(ctx context.Context, id hashing.Digest) (*State, error) {
	return s.store.State(ctx, id)
}
