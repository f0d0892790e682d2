package discover

import (
	"fmt"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
)

// Mode says by which tier of the cascade a match was made.
type Mode string

// The modes, in tier order. The first four are pinned by SPEC §4;
// ModeInversion is groundgate's own (see docs/discovery.md).
const (
	ModeExact     Mode = "exact"
	ModeAlias     Mode = "alias"
	ModeTag       Mode = "tag"
	ModeKeyword   Mode = "keyword"
	ModeInversion Mode = "inversion"
	ModeRelevance Mode = "relevance"
)

// Confidence of each mode. The first four are pinned by SPEC §4. A
// relevance match's confidence is its own, derived from its score and
// below ConfidenceKeyword (SPEC §16): ConfidenceRelevanceMax at most.
const (
	ConfidenceExact     = 1.0
	ConfidenceAlias     = 0.9
	ConfidenceTag       = 0.7
	ConfidenceKeyword   = 0.5
	ConfidenceInversion = 0.4
	// ConfidenceRelevanceMax bounds a relevance match's confidence:
	// ⌊499·score⌋ thousandths for a score in 0…1.
	ConfidenceRelevanceMax = 0.499
)

// tier orders modes: matches of one term are sorted by it.
func (m Mode) tier() int {
	switch m {
	case ModeExact:
		return 1
	case ModeAlias:
		return 2
	case ModeTag:
		return 3
	case ModeKeyword:
		return 4
	case ModeInversion:
		return 5
	case ModeRelevance:
		return 6
	}
	return 7
}

func (m Mode) confidence() float64 {
	switch m {
	case ModeExact:
		return ConfidenceExact
	case ModeAlias:
		return ConfidenceAlias
	case ModeTag:
		return ConfidenceTag
	case ModeKeyword:
		return ConfidenceKeyword
	case ModeInversion:
		return ConfidenceInversion
	}
	return 0
}

// Match is one capability discovered from one term. It is comparable with
// ==, so evidence can be checked field by field.
type Match struct {
	// Term is the term, as listed in Result.Terms, the match was made from.
	// For an inversion match it is the inversion cue ("opposite", "other way
	// round", …).
	Term string        `json:"term"`
	Name string        `json:"name"`
	Kind registry.Kind `json:"kind"`
	Mode Mode          `json:"mode"`
	// Confidence is fixed by Mode, except a relevance match's, which is
	// derived from its score (thousandths, below 0.5).
	Confidence float64 `json:"confidence"`
	// Capability is the identity of the matched entry (sem, alg, impl).
	Capability hashing.Digest `json:"capability"`
	// Disc is registry.Entry.DiscoveryDigest of the matched entry: the
	// aliases, tags and description the match was made on.
	Disc hashing.Digest `json:"disc"`
	// Inverts names, for an inversion match only, the family whose
	// opposite Name is.
	Inverts string `json:"inverts,omitempty"`
}

// Result is a discovery: the evidence record the gate checks. Its ID is the
// SHA-256 of the JCS encoding of everything else (see Canonical).
type Result struct {
	ID       hashing.Digest `json:"id"`
	Registry hashing.Digest `json:"registry"`
	Version  uint64         `json:"version"`
	// Terms are the folded terms matched, in prompt (or given) order.
	Terms []string `json:"terms"`
	// Matches are ordered by term order, then tier, then name.
	Matches []Match `json:"matches"`
	// Unresolved lists, in term order, the terms nothing matched: those
	// the named tiers left and the relevance tier did not match on.
	Unresolved []string `json:"unresolved"`
	// OK is true when at least one family and one metric were matched;
	// inversion and relevance matches count.
	OK bool `json:"ok"`
	// Relevance records what the relevance tier read when it ran; absent
	// when it did not (fewer than two unresolved terms).
	Relevance *Relevance `json:"relevance,omitempty"`
}

// body is the hashed shape of a Result: every field but the id, which is
// left out on purpose because it is the hash of the rest.
type body struct {
	Registry   hashing.Digest `json:"registry"`
	Version    uint64         `json:"version"`
	Terms      []string       `json:"terms"`
	Matches    []Match        `json:"matches"`
	Unresolved []string       `json:"unresolved"`
	OK         bool           `json:"ok"`
	Relevance  *Relevance     `json:"relevance,omitempty"`
}

func (r Result) body() body {
	return body{
		Registry:   r.Registry,
		Version:    r.Version,
		Terms:      nonNil(r.Terms),
		Matches:    nonNil(r.Matches),
		Unresolved: nonNil(r.Unresolved),
		OK:         r.OK,
		Relevance:  r.Relevance,
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Canonical returns the RFC 8785 bytes of the result without its id: the
// bytes the id hashes and the bytes stored as the evidence record. Nil
// slices encode as empty arrays.
func (r Result) Canonical() ([]byte, error) {
	b, err := hashing.Canonical(r.body())
	if err != nil {
		return nil, fmt.Errorf("discover: canonical result: %w", err)
	}
	return b, nil
}

// ComputeID returns the content address of r: SHA-256 of r.Canonical().
// r.ID itself is ignored.
func ComputeID(r Result) (hashing.Digest, error) {
	b, err := r.Canonical()
	if err != nil {
		return hashing.Digest{}, err
	}
	return hashing.SumSHA256(b), nil
}

// seal normalises nil slices to empty ones and sets the id.
func (r *Result) seal() ([]byte, error) {
	r.Terms, r.Matches, r.Unresolved = nonNil(r.Terms), nonNil(r.Matches), nonNil(r.Unresolved)
	b, err := r.Canonical()
	if err != nil {
		return nil, err
	}
	r.ID = hashing.SumSHA256(b)
	return b, nil
}
