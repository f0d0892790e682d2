package execution

import (
	"fmt"
	"sort"

	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/registry"
)

// gridParam is one axis of the grid: a parameter and the values it takes.
type gridParam struct {
	name   string
	spec   *registry.Param // nil when the family does not declare it
	values []Value         // nil when declared, required and not given
	given  bool            // the request set it (else the default is bound)
}

// gridAxes lists the grid's axes in the fixed order of the Cartesian
// product: the family's declared parameters in schema order (alg.params),
// then any parameter the request gives that the family does not declare,
// sorted by name. A declared parameter the request leaves out is bound to
// its default (one value); one without a default has no value.
func gridAxes(family registry.Capability, req ground.Request) []gridParam {
	return axesOf(family.Alg.Params, req.Params, func(p string) string { return p })
}

// axesOf lists the axes of one capability's parameters: the declared ones
// in schema order, each bound to the given values or its default, then
// the given ones it does not declare, sorted by name. key names each
// parameter on the grid.
func axesOf(declared []registry.Param, given map[string]ground.Param, key func(string) string) []gridParam {
	var axes []gridParam
	known := map[string]bool{}
	for i := range declared {
		spec := &declared[i]
		known[spec.Name] = true
		gp := gridParam{name: key(spec.Name), spec: spec}
		if p, ok := given[spec.Name]; ok {
			gp.given = true
			for _, s := range p.Values {
				gp.values = append(gp.values, fromScalar(s))
			}
		} else {
			switch d := spec.Default.(type) {
			case float64:
				gp.values = []Value{Num(d)}
			case string:
				gp.values = []Value{Str(d)}
			}
		}
		axes = append(axes, gp)
	}
	var extra []string
	for name := range given {
		if !known[name] {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	for _, name := range extra {
		gp := gridParam{name: key(name), given: true}
		for _, s := range given[name].Values {
			gp.values = append(gp.values, fromScalar(s))
		}
		axes = append(axes, gp)
	}
	return axes
}

// expand returns the grid points in order: the Cartesian product of the
// axes, the first axis varying slowest (like nested loops, or
// itertools.product), each axis in the order its values were listed.
// Every point binds every axis that has a value.
func expand(axes []gridParam) []map[string]Value {
	points := []map[string]Value{{}}
	for _, ax := range axes {
		if len(ax.values) == 0 {
			continue
		}
		next := make([]map[string]Value, 0, len(points)*len(ax.values))
		for _, pt := range points {
			for _, v := range ax.values {
				q := make(map[string]Value, len(pt)+1)
				for k, x := range pt {
					q[k] = x
				}
				q[ax.name] = v
				next = append(next, q)
			}
		}
		points = next
	}
	return points
}

// schemaFailures checks a grid point against the family's parameter
// schema: the "schema" predicate (declared, of the declared type, present
// when required) and the "bounds" predicate (min and max).
func schemaFailures(axes []gridParam, pt map[string]Value) (schema, bounds []string) {
	for _, ax := range axes {
		v, ok := pt[ax.name]
		switch {
		case ax.spec == nil:
			schema = append(schema, fmt.Sprintf("the family declares no parameter %q", ax.name))
			continue
		case !ok:
			schema = append(schema, fmt.Sprintf("parameter %q is required and has no default", ax.name))
			continue
		}
		if msg := ax.spec.Type.Mismatch(v.IsString(), v.Float()); msg != "" {
			schema = append(schema, fmt.Sprintf("parameter %q = %s: %s", ax.name, v, msg))
			continue
		}
		if v.IsString() {
			continue
		}
		if m := ax.spec.Min; m != nil && v.Float() < *m {
			bounds = append(bounds, fmt.Sprintf("parameter %q = %s is below its minimum %s", ax.name, v, formatNumber(*m)))
		}
		if m := ax.spec.Max; m != nil && v.Float() > *m {
			bounds = append(bounds, fmt.Sprintf("parameter %q = %s is above its maximum %s", ax.name, v, formatNumber(*m)))
		}
	}
	return schema, bounds
}

// negativeParams is the "non_negative" predicate: every numeric parameter
// value must be ≥ 0. Names are visited in sorted order.
func negativeParams(pt map[string]Value) []string {
	names := make([]string, 0, len(pt))
	for n := range pt {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []string
	for _, n := range names {
		if v := pt[n]; !v.IsString() && v.Float() < 0 {
			out = append(out, fmt.Sprintf("parameter %q = %s is negative", n, v))
		}
	}
	return out
}
