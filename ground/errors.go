package ground

import (
	"fmt"

	"github.com/groundgate/groundgate/errkind"
	"github.com/groundgate/groundgate/hashing"
)

var (
	// ErrNotFound is returned by Load and Record for an id this server
	// never stored.
	ErrNotFound = errkind.New(errkind.NotFound, "grounding not found")

	// ErrNotAdmitted is returned by Load for a stored decision that
	// refused its request: only admitted requests execute.
	ErrNotAdmitted = errkind.Coded(errkind.Refused, "not-admitted", "grounding was not admitted")

	// ErrCorrupt is returned when a stored record no longer hashes to its
	// id.
	ErrCorrupt = errkind.New(errkind.Corrupt, "grounding record corrupt")
)

// ErrPolicyRefused is returned (in a *PolicyError) by Load for a grounding
// that a policy in force now refuses, though the set in force when it was
// grounded admitted it.
var ErrPolicyRefused = errkind.Coded(errkind.Refused, "policy-refused", "refused by the policies in force")

// PolicyError carries the F11 failures of a re-decided grounding.
type PolicyError struct {
	Grounding hashing.Digest
	Policies  hashing.Digest // the set that refuses it
	Failures  []Failure
}

func (e *PolicyError) Error() string {
	what := fmt.Sprintf("%d policies in force (set %s) refuse", len(e.Failures), e.Policies)
	if len(e.Failures) == 1 {
		what = fmt.Sprintf("policy %s, in force since (set %s), refuses", e.Failures[0].Policy, e.Policies)
	}
	return fmt.Sprintf("grounding %s: %s it: ground the request again within the policies", e.Grounding, what)
}

func (e *PolicyError) Unwrap() error { return ErrPolicyRefused }

// ErrNoAdvisor is returned by Ground for RepairLLM on a gate without an
// Advisor: the client asked for a repair this server cannot make.
var ErrNoAdvisor = errkind.New(errkind.Invalid, "this server has no LLM repair configured")

// ErrNoData marks a data source whose facts cannot be read because of the
// source itself (missing, outside the root, not parseable).
var ErrNoData = errkind.New(errkind.Invalid, "no usable data source")
