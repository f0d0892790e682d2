// Package experiments holds the paper's deterministic experiments, written
// once, as runners over an in-process groundgate (Env): the grounding
// gate's selectivity (§4.1, Table 3, and a larger generated set), replay
// determinism (§4.2, Table 4) and the drift table (§4.2, Table 5; SPEC §6).
//
// Each runner returns a result with the measured figures, the paper's
// figure beside them and whether the claim holds. The package tests, the
// gate's tests (ground) and the reproducibility command
// (reproducibility/cmd/verify) all call these runners, so the experiment a
// test checks is the experiment the report shows.
//
// # What each experiment claims
//
//   - Selectivity96: over 96 proposals in 6 discovery contexts, Γ admits
//     the 27 whose family and metric were both discovered and rejects the
//     69 others, each with the right failure codes.
//   - SelectivityGenerated: the same over every context of
//     GeneratedContexts × every real and fabricated family and metric.
//   - ReplayDeterminism: the paper's five configurations, each run reps
//     times through discovery, Γ and the executor, give one execution hash,
//     identical at every layer, and every replay matches at every layer.
//   - DriftTable: each of SPEC §6's four targeted edits changes exactly the
//     layers SPEC's table says, on real data.
package experiments
