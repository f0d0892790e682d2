package policy

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/groundgate/groundgate/contract"
)

// derivedValue is a derived constant's value in one check: the literal the
// query defines it as, and the assignment a witness reports.
type derivedValue struct {
	A   Assignment
	lit string
}

// deriveValues evaluates c's derived constants on the call's state, or
// returns the refusal: ReasonMissing when an expression cannot be
// evaluated (with Next when it read() a result the state lacks),
// ReasonType when its value does not fit the constant's sort.
func deriveValues(c *Compiled, state func() (contract.State, error)) ([]derivedValue, *Refusal) {
	st, err := state()
	if err != nil {
		return nil, &Refusal{Policy: c.Name, Reason: ReasonMissing, Core: []string{},
			Detail: fmt.Sprintf("policy %s derives %s from the call: %v", c.Name, c.derived[0].Const, err)}
	}
	out := make([]derivedValue, 0, len(c.derived))
	for _, d := range c.derived {
		x, err := d.Expr.Eval(st)
		if err != nil {
			if errors.Is(err, contract.ErrNotScalar) {
				return nil, &Refusal{Policy: c.Name, Reason: ReasonType, Core: []string{},
					Detail: fmt.Sprintf("policy %s derives %s (%s) as %s: it %v", c.Name, d.Const, d.Sort, clipRule(d.Expr.Text), err)}
			}
			return nil, &Refusal{Policy: c.Name, Reason: ReasonMissing, Core: []string{}, Next: contract.NextCall(err),
				Detail: fmt.Sprintf("policy %s derives %s as %s: %v", c.Name, d.Const, clipRule(d.Expr.Text), err)}
		}
		a := Assignment{Const: d.Const, Pointer: DerivePointer(d.Const)}
		v, err := sortValue(x, d.Sort)
		if err == nil {
			a.Value = v
			var lit string
			if lit, err = literal(v, d.Sort); err == nil {
				out = append(out, derivedValue{A: a, lit: lit})
				continue
			}
		}
		r := &Refusal{Policy: c.Name, Reason: ReasonType, Core: []string{},
			Detail: fmt.Sprintf("policy %s derives %s (%s) as %s: %v", c.Name, d.Const, d.Sort, clipRule(d.Expr.Text), err)}
		if v, ok := anyValue(x); ok {
			a.Value = v
			r.Witness = []Assignment{a}
		}
		return nil, r
	}
	return out, nil
}

// sortValue is a CEL value as a constant of sort: an int an Int (within
// ±2^53, the integers a value holds exactly) or a Real; a double a Real
// (its shortest decimal, exactly); a string a String; a bool a Bool.
func sortValue(x any, sort string) (Value, error) {
	switch v := x.(type) {
	case int64:
		switch {
		case sort == "Real" && (v > 1<<53 || v < -(1<<53)):
			return Value{Num: float64(v), Exact: strconv.FormatInt(v, 10)}, nil
		case sort == "Real":
			return Num(float64(v)), nil
		case sort != "Int":
			return Value{}, fmt.Errorf("the int %d does not fit the policy's %s", v, sort)
		case v > 1<<53 || v < -(1<<53):
			return Value{}, fmt.Errorf("the int %d is beyond ±2^53", v)
		}
		return Num(float64(v)), nil
	case float64:
		switch {
		case sort != "Real":
			return Value{}, fmt.Errorf("the double %s does not fit the policy's %s (an Int is derived from an int)", strconv.FormatFloat(v, 'g', -1, 64), sort)
		case math.IsNaN(v) || math.IsInf(v, 0):
			return Value{}, fmt.Errorf("the double %v is not a finite number", v)
		}
		return Num(v), nil
	case string:
		if sort != "String" {
			return Value{}, fmt.Errorf("the string %q does not fit the policy's %s", clipRule(v), sort)
		}
		return Str(v), nil
	case bool:
		if sort != "Bool" {
			return Value{}, fmt.Errorf("the bool %v does not fit the policy's %s", v, sort)
		}
		return Boolean(v), nil
	}
	return Value{}, fmt.Errorf("a %T is not a policy value", x)
}

// anyValue is a CEL value as a witness reports it, whatever the sort.
func anyValue(x any) (Value, bool) {
	switch v := x.(type) {
	case int64:
		return Num(float64(v)), true
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return Value{}, false
		}
		return Num(v), true
	case string:
		return Str(v), true
	case bool:
		return Boolean(v), true
	}
	return Value{}, false
}
