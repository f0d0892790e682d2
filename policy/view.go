package policy

import (
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
)

// Body is one policy as the API and the command line show it.
type Body struct {
	Name string         `json:"name"`
	ID   hashing.Digest `json:"id"`
	Policy
}

// SetBody is a version of the set as the API and the command line show it
// (GET /v1/policies).
type SetBody struct {
	Version  uint64         `json:"version"`
	Digest   hashing.Digest `json:"digest"`
	Policies []Body         `json:"policies"`
}

// Body shows one compiled policy.
func (c *Compiled) Body() Body {
	p := c.Policy
	if p.Bind == nil {
		p.Bind = map[string]string{}
	}
	if p.AppliesTo == nil {
		p.AppliesTo = []string{}
	}
	return Body{Name: c.Name, ID: c.ID, Policy: p}
}

// Body shows the set, policies in name order.
func (s *Set) Body() SetBody {
	out := SetBody{Version: s.Version, Digest: s.Digest, Policies: []Body{}}
	for _, n := range s.names {
		out.Policies = append(out.Policies, s.policies[n].Body())
	}
	return out
}

// ParamsIn lists, for CheckParams, the parameters of what an applies_to
// entry denotes in snap: a kind, every capability of that kind; a name,
// that capability.
func ParamsIn(snap *registry.Snapshot) func(string) ([]string, bool) {
	return func(entry string) ([]string, bool) {
		var names []string
		found := false
		for _, c := range snap.Capabilities() {
			if string(c.Kind) != entry && c.Name != entry {
				continue
			}
			found = true
			for _, p := range c.Alg.Params {
				names = append(names, p.Name)
			}
		}
		return names, found
	}
}
