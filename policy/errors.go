package policy

import "github.com/groundgate/groundgate/errkind"

// Errors. The HTTP layer maps them to problems in one place.
var (
	// ErrInvalid: a policy fails validation (wrapped in *ValidationError).
	ErrInvalid = errkind.Coded(errkind.Invalid, "invalid-policy", "invalid policy")
	// ErrNotFound: no policy or version by that name or number.
	ErrNotFound = errkind.New(errkind.NotFound, "policy not found")
	// ErrCorrupt: stored policy bytes no longer hash to their id.
	ErrCorrupt = errkind.New(errkind.Corrupt, "policy store corrupt")
	// ErrNoSolver: policies are in force, or were asked to be checked, and
	// no SMT solver is installed.
	ErrNoSolver = errkind.Coded(errkind.Unavailable, "solver-unavailable", "no SMT solver")
	// ErrSolver: the solver failed (crashed, answered garbage) while
	// checking; the request is refused and may be retried.
	ErrSolver = errkind.Coded(errkind.Unavailable, "solver-unavailable", "policy solver failed")
	// ErrTooMany: the set would exceed MaxPolicies.
	ErrTooMany = errkind.Coded(errkind.TooLarge, "invalid-policy", "too many policies")
)
