// Package pipeline is what the gate and the executor share about a
// pipeline request (SPEC §11): how its steps form layers, how their types
// meet at every edge, and the named repair rules that fix a refused step
// without changing what it means.
//
// It knows the registry's types and nothing of requests' values: the gate
// (ground) decodes requests and reports failures; the executor
// (execution) compiles and runs the steps in the order Lay gives.
package pipeline

import (
	"fmt"
	"regexp"
	"strings"
)

// Data is the input name that stands for the request's data source.
const Data = "data"

// Limits on a pipeline, so a hostile proposal stays cheap to analyse.
const (
	MaxSteps  = 32
	MaxInputs = 4
	MaxIDLen  = 32
)

var idPattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// ValidID reports whether s can name a step: lower-case letters, digits
// and underscores, starting with a letter, and not the reserved "data".
func ValidID(s string) bool { return idPattern.MatchString(s) && s != Data }

// Node is what layering needs of a step: its id and its inputs, in the
// order listed.
type Node struct {
	ID     string
	Inputs []string
}

// Problem is one structural or typing fault, on the request field it
// concerns ("pipeline[2].inputs[0]", "output").
type Problem struct {
	Field  string
	Detail string
}

// StepField names a step's field as a failure reports it.
func StepField(i int, field string) string {
	if field == "" {
		return fmt.Sprintf("pipeline[%d]", i)
	}
	return fmt.Sprintf("pipeline[%d].%s", i, field)
}

// Layout is how a well-formed pipeline runs.
type Layout struct {
	// Layer of each step, by listing index: one more than the deepest of
	// its inputs; the data source is layer 0.
	Layer []int
	// Order lists the steps (by listing index) in the order they compile:
	// depth first from the output, inputs in the order listed, each step
	// after its inputs. It depends on the graph, not on how the steps are
	// listed, and it is exactly the order a family's expression compiles
	// in when the pipeline spells that expression out.
	Order []int
	// Output is the listing index of the output step.
	Output int
	// Depth is the deepest layer; Width the most steps in one layer.
	Depth, Width int
}

// Lay checks the step graph — unique ids, inputs that name a step or the
// data, no cycle, an output step, every step feeding the output — and
// returns the layout. Problems name the field and, for a cycle, the path.
func Lay(nodes []Node, output string) (Layout, []Problem) {
	var probs []Problem
	index := make(map[string]int, len(nodes))
	for i, n := range nodes {
		switch {
		case !ValidID(n.ID):
			probs = append(probs, Problem{StepField(i, "id"), fmt.Sprintf("step id %q: want lower-case letters, digits and _ (starting with a letter, at most %d), not %q", clip(n.ID), MaxIDLen, Data)})
		case hasKey(index, n.ID):
			probs = append(probs, Problem{StepField(i, "id"), fmt.Sprintf("step id %q is used by pipeline[%d] too", n.ID, index[n.ID])})
		default:
			index[n.ID] = i
		}
	}
	for i, n := range nodes {
		if len(n.Inputs) == 0 {
			probs = append(probs, Problem{StepField(i, "inputs"), fmt.Sprintf("step %q has no inputs: list step ids or %q", clip(n.ID), Data)})
		}
		for j, in := range n.Inputs {
			if in != Data && !hasKey(index, in) {
				probs = append(probs, Problem{StepField(i, fmt.Sprintf("inputs[%d]", j)), fmt.Sprintf("step %q reads %q, which is neither a step of this pipeline nor %q", clip(n.ID), clip(in), Data)})
			}
		}
	}
	out, ok := index[output]
	if !ok {
		probs = append(probs, Problem{"output", fmt.Sprintf("output %q is not a step of this pipeline", clip(output))})
	}
	if len(probs) > 0 {
		return Layout{}, probs // the graph is not well defined enough to walk
	}

	// Depth first from every step: a grey node met again closes a cycle.
	const (
		white = iota
		grey
		black
	)
	color := make([]int, len(nodes))
	layer := make([]int, len(nodes))
	var stack []int
	var cycle []Problem
	var visit func(i int) bool
	visit = func(i int) bool {
		color[i] = grey
		stack = append(stack, i)
		for _, in := range nodes[i].Inputs {
			if in == Data {
				layer[i] = max(layer[i], 1)
				continue
			}
			j := index[in]
			switch color[j] {
			case grey:
				cycle = append(cycle, Problem{StepField(i, "inputs"), "the steps form a cycle: " + cyclePath(nodes, stack, j)})
				return false
			case white:
				if !visit(j) {
					return false
				}
			}
			layer[i] = max(layer[i], layer[j]+1)
		}
		stack = stack[:len(stack)-1]
		color[i] = black
		return true
	}
	for i := range nodes {
		if color[i] == white && !visit(i) {
			return Layout{}, cycle
		}
	}

	// Compile order: post-order from the output, inputs in listed order.
	seen := make([]bool, len(nodes))
	var order []int
	var walk func(i int)
	walk = func(i int) {
		seen[i] = true
		for _, in := range nodes[i].Inputs {
			if j, ok := index[in]; ok && !seen[j] {
				walk(j)
			}
		}
		order = append(order, i)
	}
	walk(out)
	for i, n := range nodes {
		if !seen[i] {
			probs = append(probs, Problem{StepField(i, ""), fmt.Sprintf("step %q does not feed the output %q: remove it or use it", n.ID, output)})
		}
	}
	if len(probs) > 0 {
		return Layout{}, probs
	}
	l := Layout{Layer: layer, Order: order, Output: out}
	width := map[int]int{}
	for _, d := range layer {
		l.Depth = max(l.Depth, d)
		width[d]++
		l.Width = max(l.Width, width[d])
	}
	return l, nil
}

// cyclePath words the cycle that closes at step j: "a → b → a".
func cyclePath(nodes []Node, stack []int, j int) string {
	var ids []string
	for k := len(stack) - 1; k >= 0; k-- {
		ids = append(ids, nodes[stack[k]].ID)
		if stack[k] == j {
			break
		}
	}
	// Read from the top of the stack down, each step feeds the next.
	ids = append(ids, ids[0])
	return strings.Join(ids, " → ") + " (a step's input must be computed before it)"
}

func hasKey(m map[string]int, k string) bool {
	_, ok := m[k]
	return ok
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
