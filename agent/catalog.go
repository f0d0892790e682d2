package agent

import (
	"sort"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/registry"
)

// Kinds the comparison uses.
const (
	KindFamily = "family"
	KindMetric = "metric"
)

// Option is one capability a proposer may choose: its name and what the
// registry says about it. Both pipelines describe an option the same way;
// they differ only in which options they show.
type Option struct {
	Name        string   `json:"name"`
	Kind        string   `json:"kind"`
	Description string   `json:"description"`
	Aliases     []string `json:"aliases,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	Params      []Param  `json:"params,omitempty"`
}

// Catalog is the families and metrics of one registry version, the
// vocabulary of both pipelines.
type Catalog struct {
	Version  uint64
	Registry string
	// Families and Metrics are sorted by name; deprecated entries are left
	// out (nobody should propose them).
	Families []Option
	Metrics  []Option

	caps map[string]Capability
}

// NewCatalog builds the catalog from a registry export.
func NewCatalog(e *Export) *Catalog {
	c := &Catalog{Version: e.Version, Registry: e.Registry.String(), caps: map[string]Capability{}}
	for _, cp := range e.Capabilities {
		if cp.Kind != registry.KindFamily && cp.Kind != registry.KindMetric {
			continue
		}
		c.caps[cp.Name] = cp
		if cp.Disc.Deprecated {
			continue
		}
		o := Option{Name: cp.Name, Kind: string(cp.Kind), Description: cp.Disc.Description,
			Aliases: cp.Disc.Aliases, Tags: cp.Disc.Tags, Params: cp.Alg.Params}
		if cp.Kind == registry.KindFamily {
			c.Families = append(c.Families, o)
		} else {
			c.Metrics = append(c.Metrics, o)
		}
	}
	byName := func(os []Option) func(i, j int) bool { return func(i, j int) bool { return os[i].Name < os[j].Name } }
	sort.Slice(c.Families, byName(c.Families))
	sort.Slice(c.Metrics, byName(c.Metrics))
	return c
}

// Has reports whether name is a capability of the given kind (deprecated
// ones included: they exist, schema validation accepts them).
func (c *Catalog) Has(kind, name string) bool {
	cp, ok := c.caps[name]
	return ok && string(cp.Kind) == kind
}

// Select returns the catalog's options of the given kind whose names are
// in names, sorted by name; unknown names are skipped.
func (c *Catalog) Select(kind string, names []string) []Option {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	all := c.Families
	if kind == KindMetric {
		all = c.Metrics
	}
	var out []Option
	for _, o := range all {
		if want[o.Name] {
			out = append(out, o)
		}
	}
	return out
}

// Opposite reports whether families a and b are semantic inversions of
// each other, by the discovery package's own rule (discover.Opposite): the
// harness and discovery share one definition.
func (c *Catalog) Opposite(a, b string) bool {
	x, ok1 := c.caps[a]
	y, ok2 := c.caps[b]
	return ok1 && ok2 && discover.Opposite(x.Entry, y.Entry)
}
