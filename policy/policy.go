// Package policy holds tool-use policies checked by an SMT solver (SPEC §10):
// SMT-LIB 2 documents whose constants are bound to fields of a request, and
// whose `allow` constant must be entailed for the request to be admitted —
// `(not allow)` unsatisfiable with the bound constants fixed to the
// request's values, over every point of its parameter grid. A refusal names
// the policy, the `:named` assertions of the unsat core and the grid point
// that violates it.
//
// The package compiles and validates policies (compile.go), checks requests
// against the set in force with one solver query per request (check.go),
// stores versioned, content-addressed sets in bbolt (store.go), and analyses
// policies: vacuity, tautology, redundancy, conflicts (lint.go) and the
// difference between two sets (diff.go).
package policy

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
)

// Policy is one policy as written and stored (SPEC §10). Its id is the
// SHA-256 of its RFC 8785 form; its name is where the set keeps it.
type Policy struct {
	// SMTLIB declares constants, defines helpers and asserts rules:
	// declare-const, define-fun and assert only. Name the rules with
	// (! term :named name) so a refusal can cite them.
	SMTLIB string `json:"smtlib"`
	// Bind maps a declared constant to a JSON pointer into the request
	// (see Pointer): its value, or at a grid, each of its values.
	Bind map[string]string `json:"bind"`
	// Allow names the Bool constant (declared or defined) that must be
	// entailed for a request to be admitted.
	Allow string `json:"allow"`
	// Derive maps a declared constant to a CEL expression over the call
	// (groundgate.call/v1's pre-state: tool, arguments, state, facts, now,
	// and read()): its value, for a policy over tool calls only. A derived
	// constant is never also bound. Left out when empty, so a policy
	// without one keeps its bytes and its id.
	Derive map[string]string `json:"derive,omitempty"`
	// AppliesTo lists capability names and kinds ("family", "metric"): the
	// policy governs a request whose family or metric is named here, or
	// every request when it names a kind.
	AppliesTo []string `json:"applies_to"`
}

// Limits on a policy, so that a stored policy cannot make every check
// expensive.
const (
	MaxSMTLIB    = 64 << 10
	MaxBindings  = 32
	MaxDerived   = 32   // derived constants of one policy
	MaxDeriveLen = 2048 // bytes of one derived constant's expression
	MaxAppliesTo = 32
	MaxNameLen   = 64
	MaxPolicies  = 256
)

// ValidationError lists what is wrong with a policy, field by field.
type ValidationError struct {
	Policy string
	Fields []registry.FieldError
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		if f.Field == "" {
			parts[i] = f.Problem
		} else {
			parts[i] = f.Field + ": " + f.Problem
		}
	}
	return fmt.Sprintf("policy %q: %s", e.Policy, strings.Join(parts, "; "))
}

func (e *ValidationError) Unwrap() error { return ErrInvalid }

func invalid(name, field, format string, args ...any) *ValidationError {
	return &ValidationError{Policy: name, Fields: []registry.FieldError{{Field: field, Problem: fmt.Sprintf(format, args...)}}}
}

var nameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]*$`)

// ValidName reports whether name can name a policy: a letter, then
// letters, digits, '_', '.', '-'; at most MaxNameLen bytes.
func ValidName(name string) error {
	if len(name) > MaxNameLen || !nameRE.MatchString(name) {
		return fmt.Errorf("%w: policy name %q must be a letter followed by letters, digits, '_', '.' or '-', at most %d bytes", ErrInvalid, clip(name), MaxNameLen)
	}
	return nil
}

// ID is the policy's content address: SHA-256 of its RFC 8785 form.
func (p Policy) ID() (hashing.Digest, error) {
	if p.Bind == nil {
		p.Bind = map[string]string{}
	}
	if p.AppliesTo == nil {
		p.AppliesTo = []string{}
	}
	return hashing.SHA256Of(p)
}

// Decode strictly decodes a policy body (unknown fields refused).
func Decode(name string, raw []byte) (Policy, error) {
	var p Policy
	if err := hashing.DecodeStrict(raw, &p); err != nil {
		return Policy{}, invalid(name, "", "not a policy document: %v (want {\"smtlib\", \"bind\", \"allow\", \"applies_to\"}, and \"derive\" for a policy over tool calls)", err)
	}
	return p, nil
}

func clip(s string) string {
	if len(s) > MaxNameLen {
		return s[:MaxNameLen] + "…"
	}
	return s
}
