package attest

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
)

// The pinned names of an attestation (docs/attestations.md).
const (
	// PayloadType is the DSSE payload type of an in-toto statement.
	PayloadType = "application/vnd.in-toto+json"
	// StatementType is the in-toto Statement v1 type.
	StatementType = "https://in-toto.io/Statement/v1"
	// PredicateType names groundgate's execution predicate.
	PredicateType = "https://groundgate.dev/attestation/execution/v1"
	// SubjectPrefix starts the subject's name; the execution hash follows.
	SubjectPrefix = "groundgate-execution:"
)

// Material names, in the order the predicate lists them.
const (
	MaterialData      = "data"      // the source data blob: {"blake3": …}
	MaterialRegistry  = "registry"  // the registry hash the execution ran at
	MaterialGrounding = "grounding" // the grounding record's id
	MaterialDiscovery = "discovery" // the discovery evidence id the grounding used
	MaterialPolicies  = "policies"  // the policy set digest; absent for older footprints
)

// ResourceDescriptor is the in-toto v1 ResourceDescriptor, with the fields
// groundgate fills. Digest maps an algorithm ("sha256", "blake3") to
// lowercase hex.
type ResourceDescriptor struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// Statement is an in-toto Statement v1 about one execution.
type Statement struct {
	Type          string               `json:"_type"`
	Subject       []ResourceDescriptor `json:"subject"`
	PredicateType string               `json:"predicateType"`
	Predicate     Predicate            `json:"predicate"`
}

// Predicate is groundgate's execution predicate (PredicateType).
type Predicate struct {
	// Footprint is the stored footprint, byte for byte: its canonical
	// JSON, whose SHA-256 layers recompute to the subject's hash.
	Footprint json.RawMessage `json:"footprint"`
	// Materials are what the execution was made from (the Material*
	// names, in that order).
	Materials []ResourceDescriptor `json:"materials"`
}

// NewStatement builds the statement for a footprint that has passed the
// executor's checks (Executor.Get), with the discovery evidence id of its
// grounding (zero when not known, then left out, as is a zero grounding).
func NewStatement(fp *execution.Footprint, discovery hashing.Digest) (*Statement, error) {
	raw, err := hashing.Canonical(fp)
	if err != nil {
		return nil, fmt.Errorf("attest: encode footprint: %w", err)
	}
	return &Statement{
		Type:          StatementType,
		Subject:       []ResourceDescriptor{{Name: SubjectPrefix + fp.Hash.String(), Digest: digestSet(fp.Hash)}},
		PredicateType: PredicateType,
		Predicate:     Predicate{Footprint: raw, Materials: materials(fp, discovery)},
	}, nil
}

// materials lists what the footprint records it was made from. Verify
// rebuilds the list from the signed footprint, so the two cannot drift.
func materials(fp *execution.Footprint, discovery hashing.Digest) []ResourceDescriptor {
	ms := []ResourceDescriptor{
		{Name: MaterialData, Digest: digestSet(fp.Data.Digest)},
		{Name: MaterialRegistry, Digest: digestSet(fp.Registry)},
	}
	if !fp.Grounding.IsZero() {
		ms = append(ms, ResourceDescriptor{Name: MaterialGrounding, Digest: digestSet(fp.Grounding)})
	}
	if !discovery.IsZero() {
		ms = append(ms, ResourceDescriptor{Name: MaterialDiscovery, Digest: digestSet(discovery)})
	}
	if fp.Policies != nil {
		ms = append(ms, ResourceDescriptor{Name: MaterialPolicies, Digest: digestSet(*fp.Policies)})
	}
	return ms
}

// digestSet is an in-toto DigestSet: {"ALGO": "HEX"}.
func digestSet(d hashing.Digest) map[string]string {
	return map[string]string{d.Algorithm().String(): hex.EncodeToString(d.Sum())}
}

// Footprints is what Service needs from the executor: Get refuses a
// footprint whose stored bytes no longer agree with its hash and layers
// (execution.ErrCorrupt), so a corrupt record is never signed.
type Footprints interface {
	Get(ctx context.Context, hash hashing.Digest) (*execution.Footprint, error)
}

// Groundings is what Service needs from the gate: the grounding record
// names the discovery evidence.
type Groundings interface {
	Record(ctx context.Context, id hashing.Digest) (ground.Record, error)
}

var (
	_ Footprints = (*execution.Executor)(nil)
	_ Groundings = (*ground.Gate)(nil)
)

// Service attests stored executions with one key.
type Service struct {
	signer *Signer
	fps    Footprints
	grs    Groundings
}

// NewService returns a Service signing with s.
func NewService(s *Signer, fps Footprints, grs Groundings) *Service {
	return &Service{signer: s, fps: fps, grs: grs}
}

// Attest returns the DSSE envelope for the execution stored under hash.
// Errors from the executor and the gate pass through wrapped: an unknown
// hash is execution.ErrNotFound; stored bytes that no longer agree with
// the execution hash, or with the grounding record, execution.ErrCorrupt.
func (s *Service) Attest(ctx context.Context, hash hashing.Digest) ([]byte, error) {
	fp, err := s.fps.Get(ctx, hash)
	if err != nil {
		return nil, fmt.Errorf("attest: %w", err)
	}
	var disc hashing.Digest
	if !fp.Grounding.IsZero() {
		rec, err := s.grs.Record(ctx, fp.Grounding)
		if errors.Is(err, ground.ErrNotFound) {
			// Groundings are never deleted: the footprint was edited.
			return nil, fmt.Errorf("attest: execution %s names grounding %s, which is not stored: %w", hash, fp.Grounding, execution.ErrCorrupt)
		}
		if err != nil {
			return nil, fmt.Errorf("attest: execution %s: %w", hash, err)
		}
		if err := agrees(fp, rec); err != nil {
			return nil, fmt.Errorf("attest: execution %s: %v: %w", hash, err, execution.ErrCorrupt)
		}
		if rec.Discovery != nil {
			disc = *rec.Discovery
		}
	}
	st, err := NewStatement(fp, disc)
	if err != nil {
		return nil, err
	}
	return s.signer.Sign(ctx, st)
}

// agrees checks the footprint against its grounding record, whose id
// covers its bytes: the request it ran and the registry version it ran at
// are the grounding's (SPEC §7). Get checks the footprint against its own
// hash; this also catches a stored footprint edited to name another
// grounding or registry version, fields the execution hash does not cover.
func agrees(fp *execution.Footprint, rec ground.Record) error {
	req, err := rec.Request.Hash()
	if err != nil {
		return fmt.Errorf("grounding %s: %v", fp.Grounding, err)
	}
	switch {
	case req != fp.Layers.Request:
		return fmt.Errorf("grounding %s admitted request %s, the footprint ran %s", fp.Grounding, req, fp.Layers.Request)
	case rec.Registry != fp.Registry || rec.RegistryVersion != fp.RegistryVersion:
		return fmt.Errorf("grounding %s is at registry version %d (%s), the footprint says %d (%s)",
			fp.Grounding, rec.RegistryVersion, rec.Registry, fp.RegistryVersion, fp.Registry)
	}
	return nil
}

// Keys lists the public keys attestations verify with.
func (s *Service) Keys() []PublicKey { return []PublicKey{s.signer.PublicKey()} }
