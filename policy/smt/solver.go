// Package smt speaks SMT-LIB 2 to real solver processes (Z3, cvc5) over
// pipes: a small pool of long-lived processes, one query at a time per
// process inside push/pop, a timeout per query enforced by the solver and by
// killing the process, and a restart after any crash or garbled answer. The
// query text is parsed and restricted to declarations and assertions before
// it reaches a solver, so a policy cannot drive the solver's own commands.
package smt

import (
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// Limits that keep one query's cost bounded.
const (
	// MaxQueryBytes caps the query text (commands plus goal).
	MaxQueryBytes = 1 << 20
	// MaxAnswerBytes caps one answer read from a solver; more is ErrSolver.
	MaxAnswerBytes = 1 << 20
	// DefaultTimeout applies when a Query sets none.
	DefaultTimeout = 2 * time.Second
)

// Kind names a supported solver dialect.
type Kind string

const (
	KindZ3   Kind = "z3"
	KindCVC5 Kind = "cvc5"
)

// Solver says how to start one solver process.
type Solver struct {
	Kind    Kind
	Command string   // executable name or path
	Args    []string // arguments that make it read SMT-LIB 2 on stdin
	Package string   // Debian package that provides Command
}

// Z3 is Z3 reading SMT-LIB 2 from stdin (Debian package z3).
func Z3() Solver {
	return Solver{Kind: KindZ3, Command: "z3", Args: []string{"-in", "-smt2"}, Package: "z3"}
}

// CVC5 is cvc5 in incremental mode (push/pop) with unsat cores and models
// (Debian package cvc5).
func CVC5() Solver {
	return Solver{Kind: KindCVC5, Command: "cvc5", Package: "cvc5",
		// --strings-exp: str.< and str.<= (date comparisons) are
		// "experimental" in cvc5 1.0 and refused without it.
		Args: []string{"--lang", "smt2", "--incremental", "--produce-unsat-cores", "--produce-models", "--strings-exp"}}
}

// Available reports ErrNotInstalled (also matching exec.ErrNotFound) with a
// one-line hint naming the Debian package when the executable is missing.
func (s Solver) Available() error {
	if _, err := exec.LookPath(s.Command); err != nil {
		return s.notInstalled(err)
	}
	return nil
}

func (s Solver) notInstalled(err error) error {
	pkg := s.Package
	if pkg == "" {
		pkg = s.Command
	}
	if !errors.Is(err, exec.ErrNotFound) {
		err = fmt.Errorf("%w: %w", exec.ErrNotFound, err)
	}
	return fmt.Errorf("%w: %s not found (install the Debian package: apt-get install %s): %w",
		ErrNotInstalled, s.Command, pkg, err)
}

// initCommands are sent once when a process starts.
func (s Solver) initCommands() string {
	cmds := "(set-option :print-success false)\n(set-option :produce-unsat-cores true)\n(set-option :produce-models true)\n"
	// Cores name the conflicting assertions: ask for minimal ones, else a
	// refusal may cite rules that played no part.
	if s.Kind == KindZ3 {
		cmds += "(set-option :smt.core.minimize true)\n"
	}
	if s.Kind == KindCVC5 {
		cmds += "(set-option :minimal-unsat-cores true)\n"
		// Without a logic cvc5 warns on stderr at the first assertion.
		cmds += "(set-logic ALL)\n"
	}
	return cmds
}

// timeoutOption is the solver-side per-check limit.
func (s Solver) timeoutOption(d time.Duration) string {
	ms := max(d.Milliseconds(), 1)
	if s.Kind == KindCVC5 {
		return fmt.Sprintf("(set-option :tlimit-per %d)\n", ms)
	}
	return fmt.Sprintf("(set-option :timeout %d)\n", ms)
}

// Status is a check-sat verdict.
type Status string

const (
	Sat     Status = "sat"
	Unsat   Status = "unsat"
	Unknown Status = "unknown"
)

// Query is one satisfiability check.
type Query struct {
	// Commands: declare-const, declare-fun, define-fun, define-sort and
	// assert only; name assertions with (! term :named n) to see them in a core.
	Commands string
	// Goal, if set, is one term asserted after Commands, e.g. "(not allow)".
	Goal string
	// Values lists the constants a sat answer reports; nil means every
	// constant the commands declare (declare-const, nullary declare-fun).
	Values []string
	// Timeout for this check; zero means DefaultTimeout.
	Timeout time.Duration
}

// Result is a solver's answer to a Query.
type Result struct {
	Status Status
	Core   []string          // unsat: the :named assertions of the core, sorted (empty when the query names none: then no core is asked for)
	Model  map[string]string // sat: constant → SMT-LIB value text, e.g. "(- 3)"
}

// prepared is a checked query: the canonical text sent to the solver and
// the constants to ask values for.
type prepared struct {
	text   string
	values []string
	// named: the query names an assertion, so an unsat answer has a core
	// worth asking for. Without names there is none, and asking costs:
	// cvc5 re-solves to minimise it (seconds on some policies), z3 ~0.1 ms.
	named bool
}

// commandArity gives the top-level commands a query may use and their
// lengths (head included). Anything that changes the solver's state beyond
// the query's own push/pop scope, or makes it talk back, is refused.
func commandArity(name string) (int, bool) {
	switch name {
	case "declare-const": // (declare-const name Sort)
		return 3, true
	case "declare-fun", "define-sort": // (declare-fun name (Sort…) Sort), (define-sort name (params…) Sort)
		return 4, true
	case "define-fun": // (define-fun name ((x Sort)…) Sort body)
		return 5, true
	case "assert": // (assert term)
		return 2, true
	}
	return 0, false
}

// prepare parses and checks q before any solver sees it.
func prepare(q Query) (prepared, error) {
	if n := len(q.Commands) + len(q.Goal); n > MaxQueryBytes {
		return prepared{}, fmt.Errorf("%w: query is %d bytes, limit %d", ErrBadQuery, n, MaxQueryBytes)
	}
	cmds, err := Parse(q.Commands)
	if err != nil {
		return prepared{}, fmt.Errorf("%w: %w", ErrBadQuery, err)
	}
	var b strings.Builder
	var declared []string
	for _, c := range cmds {
		name := c.head()
		want, ok := commandArity(name)
		switch {
		case !c.IsList:
			return prepared{}, fmt.Errorf("%w: %s: expected a command, got %q", ErrBadQuery, c.Pos, c.Atom)
		case name == "":
			return prepared{}, fmt.Errorf("%w: %s: expected a command name", ErrBadQuery, c.Pos)
		case !ok:
			return prepared{}, fmt.Errorf("%w: %s: command %q is not allowed (only declare-const, declare-fun, define-fun, define-sort, assert)", ErrBadQuery, c.Pos, name)
		case len(c.List) != want:
			return prepared{}, fmt.Errorf("%w: %s: %s takes %d arguments, got %d", ErrBadQuery, c.Pos, name, want-1, len(c.List)-1)
		case name != "assert" && !isSymbol(c.List[1]):
			return prepared{}, fmt.Errorf("%w: %s: %s needs a symbol name", ErrBadQuery, c.Pos, name)
		case (name == "declare-fun" || name == "define-fun" || name == "define-sort") && !c.List[2].IsList:
			return prepared{}, fmt.Errorf("%w: %s: %s needs a parameter list", ErrBadQuery, c.Pos, name)
		}
		if name == "declare-const" || name == "declare-fun" && len(c.List[2].List) == 0 {
			declared = append(declared, normSymbol(c.List[1].Atom))
		}
		b.WriteString(c.String())
		b.WriteByte('\n')
	}
	if strings.TrimSpace(q.Goal) != "" {
		goal, err := Parse(q.Goal)
		if err != nil {
			return prepared{}, fmt.Errorf("%w: goal: %w", ErrBadQuery, err)
		}
		if len(goal) != 1 {
			return prepared{}, fmt.Errorf("%w: goal must be one term, got %d", ErrBadQuery, len(goal))
		}
		b.WriteString("(assert " + goal[0].String() + ")\n")
	}
	values := declared
	if q.Values != nil {
		values = nil
		for _, v := range q.Values {
			s, err := Parse(v)
			if err != nil || len(s) != 1 || !isSymbol(s[0]) {
				return prepared{}, fmt.Errorf("%w: value %q is not a symbol", ErrBadQuery, v)
			}
			values = append(values, normSymbol(s[0].Atom))
		}
	}
	slices.Sort(values)
	text := b.String()
	return prepared{text: text, values: slices.Compact(values), named: hasNamed(cmds) || strings.Contains(q.Goal, ":named")}, nil
}

// hasNamed reports whether any term in xs carries a :named attribute.
func hasNamed(xs []Sexp) bool {
	for _, x := range xs {
		if !x.IsList {
			continue
		}
		if x.head() == "!" {
			for _, a := range x.List[1:] {
				if !a.IsList && a.Atom == ":named" {
					return true
				}
			}
		}
		if hasNamed(x.List) {
			return true
		}
	}
	return false
}
