package airline

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/groundgate/groundgate/airline"
	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/gateway"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/policy"
	smtpool "github.com/groundgate/groundgate/policy/smt"
	"github.com/groundgate/groundgate/session"
)

// FileAs is upstream.json's file_as: where else a tool's result is filed,
// as the gateway files it.
func FileAs() (map[string][]gateway.FileAs, error) {
	raw, err := upstreamJSON.ReadFile("upstream.json")
	if err != nil {
		return nil, err
	}
	cfg, err := gateway.DecodeConfig("airline", raw)
	if err != nil {
		return nil, err
	}
	return cfg.FileAs, nil
}

//go:embed upstream.json
var upstreamJSON embed.FS

// Sim is a session as the gateway keeps it, over a world of its own, with
// the policies decided on it by the gateway's own checker (policy.Checker:
// the derived values in CEL, the rules by the solver): the policies read
// against calls offline, without a server (the tests).
type Sim struct {
	W        *airline.World
	St       *session.State
	Facts    map[string]any
	Reads    int // reads a rule needed first
	fileAs   map[string][]gateway.FileAs
	k        *policy.Checker
	compiled map[string]*policy.Compiled
}

// NewSim is a session over w with the host's facts, whose calls k
// decides.
func NewSim(w *airline.World, facts map[string]any, k *policy.Checker) (*Sim, error) {
	fileAs, err := FileAs()
	if err != nil {
		return nil, err
	}
	s := &Sim{W: w, St: &session.State{}, Facts: facts, fileAs: fileAs, k: k, compiled: map[string]*policy.Compiled{}}
	if s.Facts == nil {
		s.Facts = map[string]any{}
	}
	return s, nil
}

func textResult(out string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": out}}, "isError": airline.IsError(out)})
	return b
}

// Call runs the tool on the world and files its result in the state as
// the gateway does (session.ObserveFiled, with upstream.json's file_as).
func (s *Sim) Call(tool string, args json.RawMessage) string {
	out := s.W.Call(tool, args)
	obs, err := session.ObserveFiled("airline", "airline."+tool, args, textResult(out), s.fileAs[tool])
	if err != nil {
		panic(fmt.Sprintf("observe %s: %v", tool, err))
	}
	if len(obs) > 0 {
		st, err := s.St.With(session.Limits{}, obs...)
		if err != nil {
			panic(err)
		}
		s.St = st
	}
	return out
}

// Decide decides a call to the write tool under the policy name as the
// gateway does: policy.Checker on the session's state, the host's facts
// and Now. A refusal whose missing value names a read (next) makes that
// read, files it, and decides again. It returns the named rules the call
// breaks (the refusals' cores), none when admitted.
func (s *Sim) Decide(pol Policy, name, tool string, args json.RawMessage) ([]string, error) {
	facts, err := json.Marshal(s.Facts)
	if err != nil {
		return nil, err
	}
	c, ok := s.compiled[name]
	if !ok {
		if c, err = policy.Compile(name, pol); err != nil {
			return nil, err
		}
		s.compiled[name] = c
	}
	canon, err := hashing.CanonicalizeJSON(args)
	if err != nil {
		return nil, err
	}
	for range 20 {
		sess, err := contract.DecodeSession(s.St.Canonical(), facts, Now)
		if err != nil {
			return nil, err
		}
		refs, err := s.k.Check(context.Background(), []*policy.Compiled{c},
			policy.Request{Tool: "airline." + tool, Arguments: canon, Session: sess})
		if err != nil {
			return nil, err
		}
		var (
			broken []string
			next   *contract.Call
		)
		for _, r := range refs {
			switch {
			case r.Next != nil:
				next = r.Next
			case len(r.Core) == 0:
				return nil, fmt.Errorf("%s: refused %s without a named rule: %s", name, r.Reason, r.Detail)
			}
			broken = append(broken, r.Core...)
		}
		if next == nil {
			return broken, nil
		}
		read := strings.TrimPrefix(next.Tool, "airline.")
		if out := s.Call(read, next.Arguments); airline.IsError(out) {
			return nil, fmt.Errorf("read %s%s: %s", read, next.Arguments, out)
		}
		s.Reads++
	}
	return nil, fmt.Errorf("%s: too many reads", name)
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// PolicyFor is the policy (and its name) that governs the write tool.
func PolicyFor(ps map[string]Policy, tool string) (string, Policy) {
	for name, p := range ps {
		for _, a := range p.AppliesTo {
			if a == "airline."+tool {
				return name, p
			}
		}
	}
	return "", Policy{}
}

// Z3Checker is a policy checker over a pool of z3 processes the size
// groundgate serve runs (two), and the function that stops them.
func Z3Checker() (*policy.Checker, func()) {
	pool := smtpool.NewPool(smtpool.Z3(), 2)
	return policy.NewChecker(pool, 0), func() { pool.Close() }
}
