package llm

import "github.com/groundgate/groundgate/errkind"

// ErrFailed is returned, wrapped, when a call got no usable answer: the
// endpoint is unreachable, refuses the key, keeps failing or answers
// something that is not a chat completion — or, for Advisor and
// Paraphraser, the completion holds no JSON object of the kind asked for.
var ErrFailed = errkind.New(errkind.Unavailable, "LLM request failed")
