package ground

import (
	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/policy"
)

// Code is a failure code from the paper's taxonomy (docs/failures.md).
type Code string

// The codes the gate reports. F6 belongs to the executor's risk filter; the
// gate uses F7 for evidence the registry has since drifted away from and F8
// for evidence whose provenance cannot be established.
const (
	F1 Code = "F1" // malformed request
	F2 Code = "F2" // name not in the registry (hallucinated)
	F3 Code = "F3" // family exists but was not discovered (valid but unwarranted)
	F4 Code = "F4" // metric exists but was not discovered (metric swap)
	F5 Code = "F5" // partially grounded: one field grounded, another not
	F6 Code = "F6" // parameter nonsense (risk filter)
	F7 Code = "F7" // registry drift: evidence names an identity no longer in the registry
	F8 Code = "F8" // provenance gap: evidence forged, altered, foreign or unknown
	// Contracts (SPEC §9): the gate reports F9 for preconditions over the
	// request alone; the executor reports both per morphism.
	F9  Code = "F9"  // a precondition does not hold
	F10 Code = "F10" // a postcondition does not hold
	// Policies (SPEC §10): a solver-checked policy does not entail allow
	// for some point of the request's grid.
	F11 Code = "F11"
	// The gateway (SPEC §14): a call to an upstream tool whose live
	// definition no longer matches the entry in force.
	F12 Code = "F12"
)

// Failure is one failing field of a proposal.
type Failure struct {
	// Field is the failing field: "family", "metric", "params.window",
	// "data", "request" (the document as a whole) or "discovery".
	Field string `json:"field"`
	Code  Code   `json:"code"`
	// Codes holds Code and, when the request is partially grounded, F5.
	Codes  []Code `json:"codes"`
	Value  string `json:"value,omitempty"`
	Detail string `json:"detail"`
	// Policy refusals (F11): the policy, the :named assertions of the unsat
	// core (present, possibly empty, on every F11) and the grid point.
	Policy  string              `json:"policy,omitempty"`
	Core    []string            `json:"core,omitzero"`
	Witness []policy.Assignment `json:"witness,omitempty"`
	// Next is the call that would supply a value a rule needs and the
	// session's state lacks (SPEC §15): {"tool": "U.T", "arguments": {…}},
	// on an F11 whose policy read() it (reason missing) and on an F9 or
	// F10 whose clause did. Left out otherwise.
	Next *contract.Call `json:"next,omitempty"`
}

func fail(field string, code Code, value, detail string) Failure {
	return Failure{Field: field, Code: code, Codes: []Code{code}, Value: clip(value), Detail: detail}
}
