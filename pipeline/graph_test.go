package pipeline

import (
	"slices"
	"strings"
	"testing"
)

func nodes(spec ...string) []Node {
	// "id:in1,in2"
	var out []Node
	for _, s := range spec {
		id, ins, _ := strings.Cut(s, ":")
		out = append(out, Node{ID: id, Inputs: strings.Split(ins, ",")})
	}
	return out
}

func TestLay(t *testing.T) {
	cases := []struct {
		name   string
		nodes  []Node
		output string
		layer  []int
		order  []string
		width  int
		field  string // the first problem's field; "" when well formed
		detail string // a substring of its detail
	}{
		{name: "chain", nodes: nodes("r:data", "z:r", "out:z,data"), output: "out",
			layer: []int{1, 2, 3}, order: []string{"r", "z", "out"}, width: 1},
		{name: "listing order does not matter", nodes: nodes("out:z,data", "z:r", "r:data"), output: "out",
			layer: []int{3, 2, 1}, order: []string{"r", "z", "out"}, width: 1},
		{name: "wide", nodes: nodes("r:data", "a:r", "b:r", "c:r", "s:a,b", "t:s,c", "out:t,data"), output: "out",
			layer: []int{1, 2, 2, 2, 3, 4, 5}, order: []string{"r", "a", "b", "s", "c", "t", "out"}, width: 3},
		{name: "cycle", nodes: nodes("a:c", "b:a", "c:b", "out:c,data"), output: "out",
			field: "pipeline[1].inputs", detail: "b → c → a → b"},
		{name: "self loop", nodes: nodes("a:a", "out:a,data"), output: "out", field: "pipeline[0].inputs", detail: "a → a"},
		{name: "dangling", nodes: nodes("a:data", "out:q,data"), output: "out", field: "pipeline[1].inputs[0]", detail: `"q"`},
		{name: "no output", nodes: nodes("a:data"), output: "zz", field: "output"},
		{name: "dead step", nodes: nodes("a:data", "b:data", "out:a,data"), output: "out", field: "pipeline[1]", detail: "does not feed"},
		{name: "duplicate id", nodes: nodes("a:data", "a:data"), output: "a", field: "pipeline[1].id"},
		{name: "reserved id", nodes: nodes("data:data"), output: "data", field: "pipeline[0].id"},
		{name: "bad id", nodes: nodes("A-1:data"), output: "A-1", field: "pipeline[0].id"},
		{name: "no inputs", nodes: []Node{{ID: "a"}}, output: "a", field: "pipeline[0].inputs"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, probs := Lay(tc.nodes, tc.output)
			if tc.field != "" {
				if len(probs) == 0 || probs[0].Field != tc.field || !strings.Contains(probs[0].Detail, tc.detail) {
					t.Fatalf("problems %+v, want the first on %s containing %q", probs, tc.field, tc.detail)
				}
				return
			}
			if len(probs) > 0 {
				t.Fatalf("problems: %+v", probs)
			}
			var order []string
			for _, i := range l.Order {
				order = append(order, tc.nodes[i].ID)
			}
			if !slices.Equal(l.Layer, tc.layer) || !slices.Equal(order, tc.order) || l.Width != tc.width {
				t.Fatalf("layers %v order %v width %d; want %v %v %d", l.Layer, order, l.Width, tc.layer, tc.order, tc.width)
			}
		})
	}
}
