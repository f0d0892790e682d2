package ground

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
)

// requestCheck decodes the request (F1 for every malformed field).
type requestCheck struct{}

func (requestCheck) Name() string { return "request" }

func (requestCheck) Check(_ context.Context, a *Admission) ([]Failure, error) {
	var fails []Failure
	a.request, fails = DecodeRequest(a.proposal.Request)
	a.request.Repairs = a.repairs
	a.decoded = len(fails) == 0
	return fails, nil
}

// evidenceCheck establishes that the discovery evidence is genuine: a
// record this server stored, or inline evidence that re-derives to the
// same bytes from its own terms at its own registry version (F8 if not).
type evidenceCheck struct{ g *Gate }

func (evidenceCheck) Name() string { return "evidence" }

func (c evidenceCheck) Check(ctx context.Context, a *Admission) ([]Failure, error) {
	p := a.proposal
	res, f, err := c.g.Evidence(ctx, p.DiscoveryID, p.Inline)
	if err != nil || f != nil {
		if f != nil {
			return []Failure{*f}, nil
		}
		return nil, err
	}
	a.evidence = res
	return nil, nil
}

// Evidence establishes that discovery evidence is genuine: a record this
// server stored (id), or inline evidence that re-derives to the same
// bytes from its own terms at its own registry version. It returns the
// evidence, or the failure (F1 when none or both are given, F8 when its
// provenance fails); an error means the check could not run. The gate's
// evidence check and the gateway's calls (SPEC §14) share it.
func (g *Gate) Evidence(ctx context.Context, id hashing.Digest, inline []byte) (*discover.Result, *Failure, error) {
	failure := func(field string, code Code, value, detail string) (*discover.Result, *Failure, error) {
		f := fail(field, code, value, detail)
		return nil, &f, nil
	}
	switch {
	case !id.IsZero() && inline != nil:
		return failure("discovery", F1, "", "give the evidence as an id or inline, not both")
	case id.IsZero() && inline == nil:
		return failure("discovery", F1, "", "discovery evidence is missing: run discovery on the researcher's prompt and pass its id")
	case !id.IsZero():
		res, err := g.cache.lookup(ctx, g.ev, id)
		switch {
		case errors.Is(err, discover.ErrNotFound):
			return failure("discovery", F8, id.String(), "this server never produced discovery evidence with this id")
		case errors.Is(err, discover.ErrCorrupt):
			return failure("discovery", F8, id.String(), "the stored evidence no longer hashes to its id")
		case err != nil:
			return nil, nil, err
		}
		return &res, nil, nil
	}

	canon, err := hashing.CanonicalizeJSON(inline)
	if err != nil {
		return failure("discovery", F1, "", "inline evidence is not valid JSON: "+err.Error())
	}
	var claimed discover.Result
	if err := hashing.DecodeStrict(inline, &claimed); err != nil {
		return failure("discovery", F8, "", "inline evidence is not a discovery result: "+err.Error())
	}
	if claimed.Version == 0 || len(claimed.Terms) == 0 {
		return failure("discovery", F8, claimed.ID.String(), "inline evidence names no registry version or no terms")
	}
	derived, err := g.ev.Rederive(ctx, claimed.Terms, claimed.Version)
	switch {
	case errors.Is(err, registry.ErrNotFound):
		return failure("discovery", F8, claimed.ID.String(), fmt.Sprintf("registry version %d does not exist on this server: foreign evidence", claimed.Version))
	case errors.Is(err, discover.ErrBadQuery):
		return failure("discovery", F8, claimed.ID.String(), "inline evidence has terms this server would not accept: "+err.Error())
	case err != nil:
		return nil, nil, err
	}
	want, err := hashing.Canonical(derived)
	if err != nil {
		return nil, nil, err
	}
	if !bytes.Equal(canon, want) {
		return failure("discovery", F8, claimed.ID.String(), "inline evidence differs from what this server derives from its terms at version "+fmt.Sprint(claimed.Version)+": "+describeDiff(claimed, derived))
	}
	return &derived, nil, nil
}

// describeDiff says, for a person, the first way forged evidence differs.
func describeDiff(claimed, derived discover.Result) string {
	switch {
	case claimed.Registry != derived.Registry:
		return fmt.Sprintf("registry hash %s, this server's version has %s", claimed.Registry, derived.Registry)
	case len(claimed.Matches) != len(derived.Matches):
		return fmt.Sprintf("%d matches claimed, %d derived", len(claimed.Matches), len(derived.Matches))
	}
	for i := range claimed.Matches {
		c, d := claimed.Matches[i], derived.Matches[i]
		if c != d {
			return fmt.Sprintf("match %d claims %s %q by %s at confidence %v; derived: %s %q by %s at confidence %v",
				i, c.Kind, c.Name, c.Mode, c.Confidence, d.Kind, d.Name, d.Mode, d.Confidence)
		}
	}
	if claimed.ID != derived.ID {
		return fmt.Sprintf("id %s does not match the content (%s)", claimed.ID, derived.ID)
	}
	return "the documents differ"
}

// groundingCheck is the gate proper: the family must be the name of a
// family-kind match and the metric of a metric-kind match (F2–F4; F5 is
// added by the gate when exactly one of them is grounded).
type groundingCheck struct{}

func (groundingCheck) Name() string { return "grounding" }

func (groundingCheck) Check(_ context.Context, a *Admission) ([]Failure, error) {
	var fails []Failure
	names := []struct {
		field, name string
		kind        registry.Kind
		unwarranted Code
	}{
		{"family", a.request.Family, registry.KindFamily, F3},
		{"metric", a.request.Metric, registry.KindMetric, F4},
	}
	if a.request.IsPipeline() {
		names = names[1:]
		fails = groundSteps(a)
	}
	for _, f := range names {
		if f.name == "" || hasFailure(a.failures, f.field) {
			continue // already F1
		}
		c, ok := a.capability(f.name)
		if !ok || c.Kind != f.kind {
			fails = append(fails, fail(f.field, F2, f.name, notInRegistry(a.snap, f.name, f.kind, c, ok)))
			continue
		}
		if a.evidence == nil {
			continue // refused evidence grounds nothing; reported already
		}
		discovered := matchedNames(a.evidence, f.kind)
		if !slices.Contains(discovered, f.name) {
			fails = append(fails, fail(f.field, f.unwarranted, f.name, fmt.Sprintf(
				"%s %s exists but was not discovered from the researcher's terms; discovered %s: %s",
				f.kind, f.name, plural(f.kind), list(discovered))))
		}
	}
	return fails, nil
}

func notInRegistry(snap *registry.Snapshot, name string, kind registry.Kind, c registry.Capability, found bool) string {
	if found {
		return fmt.Sprintf("%s is a %s, not a %s", name, c.Kind, kind)
	}
	for _, other := range snap.Capabilities() {
		if strings.EqualFold(other.Name, name) && other.Kind == kind {
			return fmt.Sprintf("no %s named %q in the registry (names are case-sensitive: did you mean %s?)", kind, name, other.Name)
		}
	}
	return fmt.Sprintf("no %s named %q in the registry", kind, name)
}

// identityCheck refuses evidence that names an identity the registry no
// longer has, or a name that now stands for another identity: the
// capability changed behaviour since discovery (F7). Every name a request
// grounds is a match of the evidence, so what Γ admits is what was
// discovered, identity for identity.
type identityCheck struct{}

func (identityCheck) Name() string { return "identities" }

func (identityCheck) Check(_ context.Context, a *Admission) ([]Failure, error) {
	if a.evidence == nil {
		return nil, nil
	}
	var stale, moved []string
	for _, m := range a.evidence.Matches {
		switch c, ok := a.capability(m.Name); {
		case !a.snap.Has(m.Capability):
			stale = append(stale, m.Name)
		case ok && c.Identity != m.Capability:
			// The identity survives under another name while this name now
			// means other behaviour: what was discovered is not what the
			// name would run.
			moved = append(moved, m.Name)
		}
	}
	var fails []Failure
	if len(stale) > 0 {
		stale = dedupe(stale)
		fails = append(fails, fail("discovery", F7, strings.Join(stale, ","), fmt.Sprintf(
			"the evidence (registry version %d) names capabilities whose identity is no longer in the registry (version %d): %s; discover again",
			a.evidence.Version, a.snap.Version(), strings.Join(stale, ", "))))
	}
	if len(moved) > 0 {
		moved = dedupe(moved)
		fails = append(fails, fail("discovery", F7, strings.Join(moved, ","), fmt.Sprintf(
			"the evidence (registry version %d) matched %s with identities that name other behaviour in the registry now (version %d); discover again",
			a.evidence.Version, strings.Join(moved, ", "), a.snap.Version())))
	}
	return fails, nil
}

// paramsCheck checks parameter names and types against the family's
// schema (F1). Values that are well typed but absurd are the risk
// filter's business (F6), not the gate's.
type paramsCheck struct{}

func (paramsCheck) Name() string { return "params" }

func (paramsCheck) Check(_ context.Context, a *Admission) ([]Failure, error) {
	if a.request.IsPipeline() {
		if !a.decoded {
			return nil, nil // the graph is not whole: the request check said why
		}
		return checkSteps(a), nil
	}
	c, ok := a.capability(a.request.Family)
	if !ok || c.Kind != registry.KindFamily {
		return nil, nil
	}
	schema := map[string]registry.Param{}
	var known []string
	for _, p := range c.Alg.Params {
		schema[p.Name] = p
		known = append(known, p.Name)
	}
	var fails []Failure
	for _, name := range a.request.ParamNames() {
		spec, ok := schema[name]
		if !ok {
			fails = append(fails, fail("params."+clip(name), F1, "", fmt.Sprintf("%s has no parameter %q; it takes %s", c.Name, clip(name), list(known))))
			continue
		}
		for i, v := range a.request.Params[name].Values {
			if msg := spec.Type.Mismatch(v.IsString(), v.Float()); msg != "" {
				fails = append(fails, fail("params."+name, F1, v.String(), fmt.Sprintf("value %d: %s", i, msg)))
			}
		}
	}
	for _, p := range c.Alg.Params {
		if _, given := a.request.Params[p.Name]; !given && p.Default == nil {
			fails = append(fails, fail("params."+p.Name, F1, "", fmt.Sprintf("%s requires parameter %q (%s)", c.Name, p.Name, p.Doc)))
		}
	}
	return fails, nil
}

func matchedNames(r *discover.Result, kind registry.Kind) []string {
	var names []string
	for _, m := range r.Matches {
		if m.Kind == kind {
			names = append(names, m.Name)
		}
	}
	return dedupe(names)
}

func hasFailure(fs []Failure, field string) bool {
	for _, f := range fs {
		if f.Field == field {
			return true
		}
	}
	return false
}

func dedupe(xs []string) []string {
	sort.Strings(xs)
	out := xs[:0]
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	return out
}

func plural(k registry.Kind) string {
	if k == registry.KindFamily {
		return "families"
	}
	return string(k) + "s"
}

func list(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}
