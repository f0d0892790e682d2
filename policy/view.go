package policy

import "github.com/groundgate/groundgate/hashing"

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
