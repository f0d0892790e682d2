package ground

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/pipeline"
	"github.com/groundgate/groundgate/policy"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/store"
)

// Registry is what the gate needs from the capability registry.
type Registry interface {
	Current() *registry.Snapshot
	// Version reads a past version (a grounding re-decided against the
	// policies in force is decided at its own registry version).
	Version(ctx context.Context, n uint64) (*registry.Snapshot, error)
}

// Evidence is what the gate needs from discovery: stored records it made,
// and re-derivation of inline evidence at its registry version.
type Evidence interface {
	Lookup(ctx context.Context, id hashing.Digest) (discover.Result, error)
	Rederive(ctx context.Context, terms []string, version uint64) (discover.Result, error)
}

var (
	_ Registry = (*registry.Store)(nil)
	_ Evidence = (*discover.Discoverer)(nil)
)

// Proposal is what an agent submits: a request and the discovery evidence
// it claims grounds it, either by the id of a stored record or inline.
type Proposal struct {
	Request     []byte         // the request document, as received
	DiscoveryID hashing.Digest // a stored discovery record, or zero
	Inline      []byte         // a full discovery result, or nil
	// Repair says what may fix a refused pipeline step: RepairRules (the
	// default, "" means it too), RepairNone, or RepairLLM (the rules, then
	// the gate's Advisor).
	Repair RepairMode
}

// RepairMode selects the repair a refused pipeline may get (SPEC §11).
type RepairMode string

// The repair modes.
const (
	RepairRules RepairMode = "rules" // the named rules of package pipeline
	RepairNone  RepairMode = "none"  // refuse as proposed
)

// ParseRepairMode reads a repair mode; "" is the default, RepairRules.
func ParseRepairMode(s string) (RepairMode, error) {
	switch m := RepairMode(s); m {
	case "":
		return RepairRules, nil
	case RepairRules, RepairNone, RepairLLM:
		return m, nil
	}
	return "", fmt.Errorf("repair %q: want %q, %q or %q", clip(s), RepairRules, RepairNone, RepairLLM)
}

// Check is one admission check in Γ's chain. Checks run in order; each
// sees the admission built so far and returns the failures it finds. An
// error means the check could not run (storage failed), not a refusal.
// Contract and policy checks join the chain through WithChecks.
type Check interface {
	Name() string
	Check(ctx context.Context, a *Admission) ([]Failure, error)
}

// Admission is the state a check inspects. Its accessors return values the
// check must not modify.
type Admission struct {
	proposal Proposal
	request  Request
	decoded  bool // the request decoded without F1 failures
	evidence *discover.Result
	snap     *registry.Snapshot
	policies *policy.Set
	data     *hashing.Digest // the source whose facts policies read
	failures []Failure
	repairs  []pipeline.Repair // what repair changed to make the request
	// The data source's facts, read at most once per decision.
	factsRead bool
	facts     map[string]policy.Value
	factsErr  error
	// caps holds the capabilities the checks looked up by name: several
	// checks read the same few entries. They are the snapshot's own
	// (Snapshot.LookupShared), not copies: an entry may carry a hundred
	// aliases, and no check modifies what it reads.
	caps map[string]*registry.Capability // nil: not found or unsound
}

// capability is Snapshot.Get on the decision's registry version, once
// per name and decision, without Get's copy. What it returns is shared
// with the snapshot: checks must not modify it.
func (a *Admission) capability(name string) (registry.Capability, bool) {
	c, seen := a.caps[name]
	if !seen {
		c, _ = a.snap.LookupShared(name)
		if a.caps == nil {
			a.caps = make(map[string]*registry.Capability, 4)
		}
		a.caps[name] = c
	}
	if c == nil {
		return registry.Capability{}, false
	}
	return *c, true
}

// Request returns the decoded request (partial when Decoded is false).
func (a *Admission) Request() Request { return a.request }

// Decoded reports whether the request decoded cleanly.
func (a *Admission) Decoded() bool { return a.decoded }

// Evidence returns the genuine evidence, or nil if it was refused.
func (a *Admission) Evidence() *discover.Result { return a.evidence }

// Registry returns the registry version the decision is made against.
func (a *Admission) Registry() *registry.Snapshot { return a.snap }

// Policies returns the policy set the decision is made against.
func (a *Admission) Policies() *policy.Set { return a.policies }

// Failures returns the failures found by earlier checks.
func (a *Admission) Failures() []Failure { return a.failures }

// CheckResult records one check's outcome in the decision.
type CheckResult struct {
	Name     string `json:"name"`
	Passed   bool   `json:"passed"`
	Failures int    `json:"failures"`
}

// Decision is Γ's verdict with the outcome of every check.
type Decision struct {
	Admitted bool          `json:"admitted"`
	Checks   []CheckResult `json:"checks"`
	Failures []Failure     `json:"failures"`
}

// Record is the stored, content-addressed grounding record.
type Record struct {
	Request Request `json:"request"`
	// Discovery is the evidence id; absent when the evidence was refused.
	Discovery       *hashing.Digest `json:"discovery,omitempty"`
	RegistryVersion uint64          `json:"registry_version"`
	Registry        hashing.Digest  `json:"registry"`
	// Policies is the digest of the policy set in force (SPEC §10), so an
	// audit can tell which rules admitted the request.
	// Always set since policies exist; absent from older records, which
	// are re-decided against the policies in force before they execute.
	Policies *hashing.Digest `json:"policies,omitempty"`
	// DataDigest is the BLAKE3 of the data source whose facts a policy
	// read; the executor runs only on those bytes.
	DataDigest *hashing.Digest `json:"data_digest,omitempty"`
	Decision   Decision        `json:"decision"`
}

// Outcome is what Ground returns: the decision, and for a proposal well
// formed enough to be recorded, the record and its id.
type Outcome struct {
	ID       hashing.Digest // zero when nothing was stored
	Record   Record
	Grounded *Grounded // non-nil only when admitted
}

// Gate is Γ. It is safe for concurrent use.
type Gate struct {
	reg       Registry
	ev        Evidence
	st        Backend
	log       *slog.Logger
	checks    []Check
	cache     *evidenceCache
	contracts *contract.Cache
	policies  Policies
	pcheck    *policyCheck
	// advisor, when set, serves RepairLLM within adviceBudget.
	advisor      Advisor
	adviceBudget AdviceBudget
}

// Option configures a Gate.
type Option func(*Gate)

// WithChecks appends admission checks after the built-in ones.
func WithChecks(cs ...Check) Option { return func(g *Gate) { g.checks = append(g.checks, cs...) } }

// WithPolicies adds the solver-checked policies (SPEC §10) to the chain:
// the set in force comes from ps, requests are decided by checker, and the
// data facts a policy binds come from facts (nil: such policies refuse).
func WithPolicies(ps Policies, checker *policy.Checker, facts DataFacts) Option {
	return func(g *Gate) {
		g.policies = ps
		g.pcheck = &policyCheck{checker: checker, facts: facts, reg: g.reg}
		g.checks = append(g.checks, g.pcheck)
	}
}

// WithLogger sets the gate's logger (discarding by default).
func WithLogger(l *slog.Logger) Option { return func(g *Gate) { g.log = l } }

// WithContracts compiles the capabilities' contracts with c, a cache the
// registry's entry checks and the executor may share, so that a contract
// is parsed once per process. Without it the gate keeps its own.
func WithContracts(c *contract.Cache) Option { return func(g *Gate) { g.contracts = c } }

// spaceRecords holds grounding records: id (SHA-256 of the bytes) →
// canonical record.
var spaceRecords = store.Space{Name: "ground.records", Check: store.SHA256}

// Backend is what the gate needs of the storage layer: reads, and batched
// writes (records made at the same time share a commit).
type Backend interface {
	View(ctx context.Context, fn func(store.Tx) error) error
	Batch(ctx context.Context, fn func(store.Tx) error) error
}

// New returns a gate that keeps its records in st (the registry's file,
// registry.Store.Engine()).
func New(reg Registry, ev Evidence, st Backend, opts ...Option) (*Gate, error) {
	g := &Gate{reg: reg, ev: ev, st: st,
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), cache: newEvidenceCache(), contracts: contract.NewCache(1024)}
	for _, o := range opts {
		o(g)
	}
	// Γ's own checks first, then WithChecks' in the order given.
	g.checks = append([]Check{requestCheck{}, evidenceCheck{g}, groundingCheck{}, identityCheck{}, paramsCheck{}, contractCheck{g.contracts}}, g.checks...)
	return g, nil
}

// Ground runs Γ over a proposal. A proposal that is malformed (F1 on the
// request, or no usable evidence reference) is decided but not stored;
// every other decision is stored and its id returned. Errors are for
// infrastructure failures only: a refusal is an Outcome, not an error.
//
// A refused pipeline is repaired by the named rules of package pipeline
// unless the proposal says RepairNone: only the fields the schema refuses,
// each change recorded in the request's repairs, and the repaired request
// goes through the whole gate again. Its decision is the outcome; a
// request nothing repairs keeps its first decision.
func (g *Gate) Ground(ctx context.Context, p Proposal) (Outcome, error) {
	if err := g.checkMode(p.Repair); err != nil {
		return Outcome{}, err
	}
	snap, set := g.reg.Current(), g.policySet()
	a, dec, err := g.decide(ctx, p, snap, set, nil)
	if err != nil {
		return Outcome{}, err
	}
	var reps []pipeline.Repair
	if !dec.Admitted && p.Repair != RepairNone && a.repairable() {
		fixed, rr, err := pipeline.RepairRequest(p.Request, func(name string) (registry.Capability, bool) { return snap.Get(name) })
		if err == nil && len(rr) > 0 {
			p.Request, reps = fixed, rr
			if a, dec, err = g.decide(ctx, p, snap, set, reps); err != nil {
				return Outcome{}, err
			}
		}
	}
	if !dec.Admitted && p.Repair == RepairLLM && a.repairable() && a.decoded {
		if a, dec, err = g.advise(ctx, p, a, dec, reps); err != nil {
			return Outcome{}, err
		}
	}
	return g.record(ctx, a, dec)
}

// repairable reports whether repair may help: the request was refused
// with F1 on its form, and its evidence is genuine (repair never stands in
// for grounding). Only a pipeline document is ever repaired.
func (a *Admission) repairable() bool {
	if a.evidence == nil {
		return false
	}
	for _, f := range a.failures {
		if f.Code == F1 {
			return true
		}
	}
	return false
}

// decide runs Γ's checks over a proposal against one registry version and
// policy set; repairs, when not nil, are the repairs that made the
// proposal's request, recorded in it.
func (g *Gate) decide(ctx context.Context, p Proposal, snap *registry.Snapshot, set *policy.Set, repairs []pipeline.Repair) (*Admission, Decision, error) {
	a := &Admission{proposal: p, snap: snap, policies: set, repairs: repairs}
	dec := Decision{Checks: make([]CheckResult, 0, len(g.checks))}
	for _, c := range g.checks {
		if err := ctx.Err(); err != nil {
			return nil, dec, err
		}
		got, err := c.Check(ctx, a)
		if err != nil {
			return nil, dec, fmt.Errorf("ground: check %s: %w", c.Name(), err)
		}
		a.failures = append(a.failures, got...)
		dec.Checks = append(dec.Checks, CheckResult{Name: c.Name(), Passed: len(got) == 0, Failures: len(got)})
	}
	if a.request.IsPipeline() {
		markPartialSteps(a.failures, len(a.request.Pipeline)+1)
	} else {
		markPartial(a.failures)
	}
	dec.Failures = a.failures
	if dec.Failures == nil {
		dec.Failures = []Failure{}
	}
	dec.Admitted = len(dec.Failures) == 0
	return a, dec, nil
}

// record stores a decision (unless the proposal was too malformed to be
// recorded) and returns the outcome.
func (g *Gate) record(ctx context.Context, a *Admission, dec Decision) (Outcome, error) {
	rec := Record{Request: a.request, RegistryVersion: a.snap.Version(), Registry: a.snap.Registry(),
		Policies: &a.policies.Digest, DataDigest: a.data, Decision: dec}
	if a.evidence != nil {
		id := a.evidence.ID
		rec.Discovery = &id
	}
	out := Outcome{Record: rec}
	if !a.decoded || a.evidence == nil {
		return out, nil // malformed: decided, never stored
	}
	id, raw, err := encodeRecord(rec)
	if err != nil {
		return Outcome{}, err
	}
	// The decision is made: its record is kept even if the caller has
	// gone meanwhile.
	if err := g.store(context.WithoutCancel(ctx), id, raw); err != nil {
		return Outcome{}, err
	}
	out.ID = id
	if dec.Admitted {
		out.Grounded = newGrounded(id, rec)
	}
	// The handler directly, not Logger.LogAttrs, which also walks the
	// stack for a source location this line never shows.
	if h := g.log.Handler(); h.Enabled(ctx, slog.LevelInfo) {
		r := slog.NewRecord(time.Now(), slog.LevelInfo, "grounding decided", 0)
		r.AddAttrs(slog.String("id", id.String()), slog.Bool("admitted", dec.Admitted), slog.Int("failures", len(dec.Failures)))
		_ = h.Handle(ctx, r)
	}
	return out, nil
}

// markPartial adds F5 beside the failing field's code when exactly one of
// family and metric is grounded.
func markPartial(fs []Failure) {
	failed := func(field string) int {
		for i, f := range fs {
			if f.Field == field {
				return i
			}
		}
		return -1
	}
	fi, mi := failed("family"), failed("metric")
	if (fi < 0) == (mi < 0) {
		return
	}
	i := max(fi, mi)
	if fs[i].Code == F1 || slices.Contains(fs[i].Codes, F5) {
		return
	}
	// Grounding says nothing about a field when the evidence was refused.
	if failed("discovery") >= 0 {
		return
	}
	fs[i].Codes = append(fs[i].Codes, F5)
}

// store writes a record unless it is already there, and returns once it
// is durable. Records are content addressed, so an identical proposal
// costs one read and no write; new records made at the same time share a
// commit (store.Updater.Batch).
func (g *Gate) store(ctx context.Context, id hashing.Digest, raw []byte) error {
	var have bool
	_ = g.st.View(ctx, func(tx store.Tx) error {
		have, _ = tx.HasRecord(spaceRecords, id)
		return nil
	})
	if have {
		return nil
	}
	if err := g.st.Batch(ctx, func(tx store.Tx) error { return tx.PutRecord(spaceRecords, id, raw) }); err != nil {
		return fmt.Errorf("ground: store record: %w", err)
	}
	return nil
}

func encodeRecord(rec Record) (hashing.Digest, []byte, error) {
	raw, err := hashing.Canonical(rec)
	if err != nil {
		return hashing.Digest{}, nil, fmt.Errorf("ground: encode record: %w", err)
	}
	return hashing.SumSHA256(raw), raw, nil
}

// Load returns the grounded request stored under id. It refuses records
// that do not exist (ErrNotFound), were not admitted (ErrNotAdmitted), or
// whose bytes no longer hash to id (ErrCorrupt).
func (g *Gate) Load(ctx context.Context, id hashing.Digest) (*Grounded, error) {
	rec, err := g.Record(ctx, id)
	if err != nil {
		return nil, err
	}
	if !rec.Decision.Admitted || rec.Discovery == nil {
		return nil, fmt.Errorf("grounding %s: %w", id, ErrNotAdmitted)
	}
	gr := newGrounded(id, rec)
	if err := g.authorize(ctx, gr); err != nil {
		return nil, err
	}
	return gr, nil
}

// authorize re-decides a grounding admitted under another policy set
// against the set in force now: rules an agent must never break apply to
// every run from the moment they are in force, not only to requests
// grounded after. The registry version stays the grounding's. When the
// set admits it, gr carries that set's digest and the data digest its
// policies read, so the footprint names the rules that authorised the run
// and the executor runs on the bytes they checked. (The set may change
// again while the execution waits for a slot; that run is authorised by
// the set in force when it was loaded.)
func (g *Gate) authorize(ctx context.Context, gr *Grounded) error {
	set := g.policySet()
	if g.pcheck == nil || set.Digest == gr.Policies() {
		return nil
	}
	snap, err := g.reg.Version(ctx, gr.RegistryVersion())
	if err != nil {
		return fmt.Errorf("ground: grounding %s: %w", gr.ID(), err)
	}
	a := &Admission{request: gr.Request(), decoded: true, snap: snap, policies: set}
	fails, err := g.pcheck.Check(ctx, a)
	if err != nil {
		return fmt.Errorf("ground: check policies: %w", err)
	}
	if len(fails) > 0 {
		return &PolicyError{Grounding: gr.ID(), Policies: set.Digest, Failures: fails}
	}
	// What runs is what this decision authorised: the set that decided it,
	// and the data bytes its policies read (if any).
	digest := set.Digest
	gr.rec.Policies, gr.rec.DataDigest = &digest, a.data
	return nil
}

// Record returns the stored grounding record under id: ErrNotFound when
// there is none, ErrCorrupt when its bytes no longer hash to id (the
// store's check on read) or do not decode.
func (g *Gate) Record(ctx context.Context, id hashing.Digest) (Record, error) {
	var rec Record
	err := g.st.View(ctx, func(tx store.Tx) error {
		raw, err := tx.Record(spaceRecords, id)
		if err != nil {
			return err
		}
		rec, err = decodeRecord(raw, false)
		return err
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Record{}, fmt.Errorf("grounding %s: %w", id, ErrNotFound)
	case errors.Is(err, store.ErrCorrupt), errors.Is(err, ErrCorrupt):
		return Record{}, fmt.Errorf("grounding %s: %w: %w", id, ErrCorrupt, err)
	case err != nil:
		return Record{}, fmt.Errorf("ground: read %s: %w", id, err)
	}
	return rec, nil
}

// decodeRecord decodes a record's stored bytes; strict, it also checks
// they are the record's canonical form (what Verify asks of every one).
func decodeRecord(raw []byte, strict bool) (Record, error) {
	var rec Record
	if err := hashing.DecodeStrict(raw, &rec); err != nil {
		return Record{}, fmt.Errorf("%v: %w", err, ErrCorrupt)
	}
	if strict {
		if canon, err := hashing.Canonical(rec); err != nil || !bytes.Equal(canon, raw) {
			return Record{}, fmt.Errorf("does not re-encode to its bytes: %w", ErrCorrupt)
		}
	}
	return rec, nil
}

// Verify re-checks every stored grounding record: it hashes to its id,
// decodes and re-encodes to its bytes. It returns how many there are and
// a problem per bad one; the error wraps ErrCorrupt when there is one.
func Verify(ctx context.Context, st store.Viewer) (n int, problems []string, err error) {
	err = st.View(ctx, func(tx store.Tx) error {
		var err error
		n, problems, err = store.Verify(ctx, tx, spaceRecords, func(_ hashing.Digest, raw []byte) error {
			_, err := decodeRecord(raw, true)
			return err
		})
		return err
	})
	if errors.Is(err, store.ErrCorrupt) {
		err = fmt.Errorf("ground: %w: %w", ErrCorrupt, err)
	}
	return n, problems, err
}
