// Package agent is the client side of groundgate's comparison harness: the
// paper's assertion-only vs verified experiment (§4.3, Tables 6, 7, 10).
//
// # Client
//
// Client speaks the REST API (docs/api.md): registry, discovery, the gate
// and executions. Errors are *Problem values (RFC 9457 bodies). A server
// without an executor is detected (ErrNoExecutor) and its admitted
// proposals are recorded as not executed rather than failing the run.
//
// # Pipelines
//
// Verified (A): POST /v1/discover on the prompt → the proposer sees only
// the discovered families and metrics → POST /v1/ground with that evidence
// → POST /v1/executions.
//
// Assertion-only (B): the proposer sees every family and metric (every
// pair is valid) → a JSON Schema built from the registry (enums of every
// family and metric name, each family's parameters typed) → execute. The
// server executes only grounded requests, so B grounds its proposal with
// discovery run on the proposal's own names ({"terms": [family, metric]}):
// evidence about the proposal, none about the researcher's words. That is
// what an assertion is; the gate passes it, as schema validation would.
//
// Both pipelines describe an option the same way (name, description,
// aliases, tags, parameters); they differ only in which options are shown.
//
// # Proposers
//
// A Proposer turns a prompt and its options into a Proposal. Two exist:
//
// OpenAIProposer posts to any OpenAI-compatible {base}/chat/completions
// through package llm (model, messages, temperature, response_format
// json_object, dropped if the endpoint refuses it). Messages shows the
// exact chat. Both pipelines may abstain; this is looser than a strictly
// enum-constrained decoder and can only lower the assertion-only
// pipeline's unwarranted executions.
//
// ScriptedProposer is a deterministic stand-in, labelled ScriptedLabel
// ("scripted (deterministic, not an LLM)") in every output. Its rules:
//
//  1. Words: the prompt and every cue are folded to lower-case words split
//     at anything not a letter or digit, with a final "s" dropped from
//     words of more than three letters not ending in "ss". An option's
//     cues are its name (underscores read as spaces), its aliases and its
//     tags, from GET /v1/registry. A cue hits when its words occur as a
//     contiguous run in the prompt.
//  2. The latest cue wins: of the options with a hit, choose the one whose
//     hit ends latest in the prompt; ties go to the longer cue, then to
//     more distinct cues hit, then to the name in byte order. This is the
//     natural mistake of a reader who lets the last qualifier decide: "a
//     momentum strategy that captures reversals" becomes MOM_REV, "ranked
//     by downside-risk-adjusted return" becomes SRP ("risk-adjusted
//     return").
//  3. With no hit, choose the option sharing the most description words
//     with the prompt (words of four letters or more, stop words left out);
//     ties, and no overlap at all, go to the name in byte order. Shown
//     every family, it therefore always picks one.
//  4. With no family or no metric offered, abstain.
//  5. Parameters: integers counting days ("60-day", "25, 50 and 100 day")
//     become window (a list when several), or risk_window for a family
//     without window; a family needing window with none in the prompt gets
//     the sweep DefaultWindows [25, 50, 100]; a percentage becomes
//     target_vol (10% → 0.1). Nothing else is set: defaults apply.
//  6. Data: the file attached to the prompt.
//
// Families and metrics are chosen independently by rules 1–3.
//
// # Classification
//
// Classify is intent-based, as in the paper: the executed family and
// metric are compared with the prompt's annotated ones. F1 malformed
// output (or a malformed request caught by schema or gate), F2 a name not
// in the registry, F3 a family that is not the intended one reached the
// executor (Inversion marks the semantic opposite, the paper's F3_INV;
// on an undiscoverable prompt any execution is F3), F4 the intended family
// with another metric, F5 beside F3/F4 when the other field was right, F6
// the risk filter rejected every morphism, F7/F8 the post-run audit found
// registry drift or a provenance gap. Refusals are kept apart from wrong
// executions: "refused" (Γ refused real names for a prompt with an
// intended family; Intent says whether the refused proposal was the
// intended one, a false block) and "correct-refusal" (nothing executed for
// an undiscoverable prompt because the proposer abstained or Γ refused).
package agent
