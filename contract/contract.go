// Package contract is groundgate's Hoare contracts (ToolGate, SPEC §9): a
// capability's sem layer may name preconditions and postconditions, each a
// CEL expression over a typed, trusted state (schema.go). A precondition
// gates invocation; a postcondition decides whether a step's outputs are
// committed. The package compiles and evaluates clauses; what the state
// holds is filled in by the gate (request facts) and the executor (data and
// result facts), which know where the facts come from.
package contract

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/groundgate/groundgate/hashing"
)

// Clause is one named condition. Message says, for the agent or the
// researcher, what a failure means and what to change.
type Clause struct {
	Name    string `json:"name"`
	Expr    string `json:"expr"`
	Message string `json:"message"`
}

// Contract is a capability's Hoare pair {Pre} t {Post}. Empty lists are
// left out of the JSON, so a contract's canonical form (and with it the
// capability's identity) does not depend on how "no clauses" was written.
type Contract struct {
	Pre  []Clause `json:"pre,omitempty"`
	Post []Clause `json:"post,omitempty"`
}

// Empty reports whether c has no clauses.
func (c *Contract) Empty() bool { return c == nil || len(c.Pre)+len(c.Post) == 0 }

// IsZero makes a contract without clauses vanish from JSON (omitzero), so
// that "contract": {} and no contract are one canonical form, one
// identity.
func (c *Contract) IsZero() bool { return c.Empty() }

// Phase says when a clause is checked.
type Phase string

// The phases.
const (
	Pre  Phase = "pre"
	Post Phase = "post"
)

// Limits on what one entry may declare: a contract is checked on every
// morphism, so its size is part of every request's cost.
const (
	MaxClauses    = 32   // per phase
	MaxExprLen    = 2048 // bytes of one expression
	MaxMessageLen = 512
	MaxNameLen    = 64
)

var clauseNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// Problem is one thing wrong with one clause, found when an entry is
// written. Field is the JSON path inside the contract ("pre[1].expr").
type Problem struct {
	Field   string
	Clause  string
	Problem string
}

// Clauses returns c's clauses of one phase.
func (c *Contract) Clauses(p Phase) []Clause {
	if c == nil {
		return nil
	}
	if p == Pre {
		return c.Pre
	}
	return c.Post
}

// Check reports every problem with c as the contract of a capability of
// the given kind with the given parameters: malformed clauses, duplicate
// names, and expressions that do not compile against the state schema
// (unknown key, wrong type, syntax, not a bool, too costly). Nil when the
// contract is sound.
func Check(c *Contract, kind string, params []Param) []Problem {
	return check(nil, c, kind, params)
}

// Check is the package's Check, compiling each clause through the cache: a
// registry that checks an entry's contract when it first serves it and a
// gate that then compiles it to evaluate share the work. A nil cache
// compiles every time.
func (c *Cache) Check(con *Contract, kind string, params []Param) []Problem {
	return check(c, con, kind, params)
}

func check(cache *Cache, c *Contract, kind string, params []Param) []Problem {
	if c == nil {
		return nil
	}
	var out []Problem
	seen := map[string]bool{}
	for _, ph := range []Phase{Pre, Post} {
		clauses := c.Clauses(ph)
		if len(clauses) > MaxClauses {
			out = append(out, Problem{Field: string(ph), Problem: fmt.Sprintf("%d clauses, at most %d", len(clauses), MaxClauses)})
			continue
		}
		for i, cl := range clauses {
			field := fmt.Sprintf("%s[%d]", ph, i)
			add := func(sub, format string, a ...any) {
				out = append(out, Problem{Field: field + sub, Clause: cl.Name, Problem: fmt.Sprintf(format, a...)})
			}
			switch {
			case !clauseNameRE.MatchString(cl.Name) || len(cl.Name) > MaxNameLen:
				add(".name", "%q must be lower-case letters, digits and _, starting with a letter, at most %d bytes", clip(cl.Name), MaxNameLen)
			case seen[cl.Name]:
				add(".name", "duplicate clause name %q (names are unique across pre and post)", cl.Name)
			}
			seen[cl.Name] = true
			if strings.TrimSpace(cl.Message) == "" {
				add(".message", "must not be empty: it is what an agent reads when the clause fails")
			} else if len(cl.Message) > MaxMessageLen {
				add(".message", "longer than %d bytes", MaxMessageLen)
			}
			if len(cl.Expr) > MaxExprLen {
				add(".expr", "longer than %d bytes", MaxExprLen)
				continue
			}
			if _, err := compileIn(cache, kind, ph, params, cl); err != nil {
				add(".expr", "%v", err)
			}
		}
	}
	return out
}

// Decode strictly decodes a contract document (unknown fields refused) and
// checks it as Check does.
func Decode(data []byte, kind string, params []Param) (*Contract, []Problem, error) {
	var c Contract
	if err := hashing.DecodeStrict(data, &c); err != nil {
		return nil, nil, fmt.Errorf("contract: %w", err)
	}
	return &c, Check(&c, kind, params), nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}
