package pipeline

import (
	"fmt"
	"slices"
	"strings"

	"github.com/groundgate/groundgate/registry"
)

// Type is the type of the value on an edge, from the registry's alg types.
type Type string

// The types a step can pass on. A frame is the data source's table (named
// columns); a series is a panel of one or more columns computed from it; a
// P&L (with its weights) ends a pipeline.
const (
	Frame  Type = "frame"
	Series Type = "series"
	PnL    Type = "pnl"
)

// Stepable reports whether a capability of kind k can be a step.
// Families and recipes are whole strategies; metrics score the output.
func Stepable(k registry.Kind) bool {
	return k == registry.KindOperation || k == registry.KindSignal
}

// Yields is the type of a capability's output as a step.
func Yields(c registry.Capability) (Type, error) {
	out := c.Alg.Outputs
	switch {
	case slices.Contains(out, "pnl"):
		return PnL, nil
	case len(out) == 1 && out[0] == "series":
		return Series, nil
	case len(out) == 1 && out[0] == "frame":
		return Frame, nil
	}
	return "", fmt.Errorf("%s yields %s, which no step can pass on", c.Name, strings.Join(out, ", "))
}

// Accepts reports whether an input declared as want takes a value of type
// got: a series input takes a frame too (column by column); a frame input
// needs the table itself, with its named columns.
func Accepts(want string, got Type) bool {
	switch want {
	case "series":
		return got == Series || got == Frame
	case "frame":
		return got == Frame
	}
	return false
}

// CheckEdges type-checks every edge of a laid-out pipeline. caps holds each
// step's capability by listing index, nil where it did not resolve (the
// gate reports that); those steps' edges are not checked.
func CheckEdges(nodes []Node, caps []*registry.Capability, output int) []Problem {
	var probs []Problem
	index := make(map[string]int, len(nodes))
	for i, n := range nodes {
		index[n.ID] = i
	}
	yields := make([]Type, len(nodes))
	for i, c := range caps {
		if c == nil {
			continue
		}
		t, err := Yields(*c)
		if err != nil {
			probs = append(probs, Problem{StepField(i, "capability"), err.Error()})
			caps[i] = nil
			continue
		}
		yields[i] = t
	}
	for i, n := range nodes {
		c := caps[i]
		if c == nil {
			continue
		}
		if len(n.Inputs) != c.Alg.Arity {
			probs = append(probs, Problem{StepField(i, "inputs"), fmt.Sprintf("%s takes %d input(s) (%s), step %q lists %d", c.Name, c.Alg.Arity, strings.Join(c.Alg.Inputs, ", "), n.ID, len(n.Inputs))})
			continue
		}
		for j, in := range n.Inputs {
			got, from := Frame, "the data source"
			if in != Data {
				k := index[in]
				if caps[k] == nil {
					continue
				}
				got, from = yields[k], fmt.Sprintf("step %q (%s)", in, caps[k].Name)
			}
			want := ""
			if j < len(c.Alg.Inputs) {
				want = c.Alg.Inputs[j]
			}
			if Accepts(want, got) {
				continue
			}
			var detail string
			switch {
			case got == PnL:
				detail = fmt.Sprintf("%s yields a P&L, which only the output can be; %s cannot read it", from, c.Name)
			case want == "frame":
				detail = fmt.Sprintf("%s reads named columns from the data source (input %d is a frame); %s yields a %s: give it %q", c.Name, j+1, from, got, Data)
			default:
				detail = fmt.Sprintf("%s takes a %s as input %d; %s yields a %s", c.Name, want, j+1, from, got)
			}
			probs = append(probs, Problem{StepField(i, fmt.Sprintf("inputs[%d]", j)), detail})
		}
	}
	if c := caps[output]; c != nil && yields[output] != PnL {
		probs = append(probs, Problem{"output", fmt.Sprintf("the output step %q (%s) yields a %s, not a P&L: end the pipeline with a step that sizes positions and trades them (one whose outputs include pnl)", nodes[output].ID, c.Name, yields[output])})
	}
	return probs
}
