// Package llm is groundgate's client for OpenAI-compatible
// chat-completions endpoints ({base}/chat/completions) and the two helpers
// the groundgate command builds on it: Advisor, the repair advisor behind
// "repair": "llm" (ground.Advisor), and Paraphraser, the fuzzer's source of
// rephrasings (fuzz.Paraphraser, groundgate fuzz --paraphrase-llm). The
// comparison harness's LLM proposer (agent.OpenAIProposer) is built on the
// same Client.
//
// It is a package of its own so that the groundgate command links the
// client without the comparison harness (package agent), whose JSON Schema
// validator compiles its metaschemas when the program starts.
//
// Everything an endpoint answers is untrusted: callers get the answer's
// text (Client.Complete) or a bounded, validated extract of it.
package llm
