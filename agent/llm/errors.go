package llm

import "errors"

// ErrFailed is returned, wrapped, when a call got no usable answer: the
// endpoint is unreachable, refuses the key, keeps failing or answers
// something that is not a chat completion — or, for Advisor and
// Paraphraser, the completion holds no JSON object of the kind asked for.
var ErrFailed = errors.New("LLM request failed")
