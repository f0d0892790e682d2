package ground

import (
	"errors"
	"fmt"

	"github.com/groundgate/groundgate/hashing"
)

var (
	// ErrNotFound is returned by Load and Record for an id this server
	// never stored.
	ErrNotFound = errors.New("grounding not found")

	// ErrNotAdmitted is returned by Load for a stored decision that
	// refused its request: only admitted requests execute.
	ErrNotAdmitted = errors.New("grounding was not admitted")

	// ErrCorrupt is returned when a stored record no longer hashes to its
	// id.
	ErrCorrupt = errors.New("grounding record corrupt")
)

// ErrPolicyRefused is returned (in a *PolicyError) by Load for a grounding
// that a policy in force now refuses, though the set in force when it was
// grounded admitted it.
var ErrPolicyRefused = errors.New("refused by the policies in force")

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
