package agent

import "github.com/groundgate/groundgate/errkind"

// Sentinel errors, returned wrapped with context; match them with
// errors.Is.
var (
	// ErrNoExecutor is returned by Client.Execute (and reported by
	// Client.ExecutionsAvailable) when the server has no POST
	// /v1/executions route: it answers 404, 405 or 501. The harness then
	// records admitted proposals as "not executed" instead of failing.
	ErrNoExecutor = errkind.New(errkind.Unavailable, "the server has no executor (POST /v1/executions is not served)")

	// ErrProposer is returned by a Proposer that could not get any answer
	// at all (the endpoint is unreachable, refuses the key, keeps failing:
	// OpenAIProposer wraps llm.ErrFailed in it). An answer that cannot be
	// parsed is not an error: it is a Proposal with Malformed set,
	// classified F1.
	ErrProposer = errkind.New(errkind.Unavailable, "proposer failed")

	// ErrPrompts is returned by LoadPrompts for a prompt file that does not
	// decode or whose prompts are incomplete; the message names the prompt
	// and the field.
	ErrPrompts = errkind.New(errkind.Invalid, "invalid prompt set")
)
