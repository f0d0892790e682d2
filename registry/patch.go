package registry

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/groundgate/groundgate/hashing"
)

// PatchDisc is the value of a DiscPatch's "patch" field.
const PatchDisc = "disc"

// DiscPatch changes discovery layers only — what a fuzz run suggests
// (SPEC §12). It can change no identity and so no registry hash: the disc
// layer is outside both. Each change is pinned to the identity it was
// made for, so a patch never re-describes a capability that has since
// changed behaviour.
type DiscPatch struct {
	Patch string `json:"patch"`
	// Registry and Version say what the patch was made against (for
	// people: a patch applies to any version whose named identities
	// match).
	Registry hashing.Digest `json:"registry"`
	Version  uint64         `json:"version"`
	Changes  []DiscChange   `json:"changes"`
}

// DiscChange adds and removes aliases and tags of one capability.
type DiscChange struct {
	Name          string         `json:"name"`
	Identity      hashing.Digest `json:"identity"`
	AddAliases    []string       `json:"add_aliases,omitempty"`
	RemoveAliases []string       `json:"remove_aliases,omitempty"`
	AddTags       []string       `json:"add_tags,omitempty"`
	// Because lists what motivated the change (fuzz finding ids).
	Because []string `json:"because,omitempty"`
}

// IsDiscPatch says whether a document is a DiscPatch (an object with a
// "patch" member) rather than an entry or an array of entries.
func IsDiscPatch(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\r\n")
	if len(t) == 0 || t[0] != '{' {
		return false
	}
	var probe struct {
		Patch *string `json:"patch"`
	}
	return hashing.DecodeFields(data, &probe) == nil && probe.Patch != nil
}

// DecodeDiscPatch reads a patch document strictly (unknown fields are
// refused, like entries).
func DecodeDiscPatch(data []byte, label string) (DiscPatch, error) {
	var p DiscPatch
	if err := hashing.DecodeStrict(data, &p); err != nil {
		return DiscPatch{}, fmt.Errorf("%w: %s: %v", ErrInvalidEntry, label, err)
	}
	if p.Patch != PatchDisc {
		return DiscPatch{}, fmt.Errorf("%w: %s: patch is %q; only %q patches exist", ErrInvalidEntry, label, p.Patch, PatchDisc)
	}
	return p, nil
}

// Apply returns the entries of snap the patch changes, with their disc
// layers patched (aliases and tags added once, case-insensitively;
// removals by exact text). A change naming a missing capability or one
// whose identity differs from the patch's is refused (ErrNotFound,
// ErrStalePatch): nothing is applied.
func (p DiscPatch) Apply(snap *Snapshot) ([]Entry, error) {
	var out []Entry
	for i, c := range p.Changes {
		cur, ok := snap.Get(c.Name)
		if !ok {
			return nil, fmt.Errorf("%w: changes[%d] names %s, which version %d does not have", ErrNotFound, i, c.Name, snap.Version())
		}
		e, err := c.apply(i, cur.Entry, cur.Identity)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// ApplyEntries returns es with the patch applied (a copy; the same
// refusals as Apply).
func (p DiscPatch) ApplyEntries(es []Entry) ([]Entry, error) {
	out := slices.Clone(es)
	for i, c := range p.Changes {
		j := slices.IndexFunc(out, func(e Entry) bool { return e.Name == c.Name })
		if j < 0 {
			return nil, fmt.Errorf("%w: changes[%d] names %s, which the entries do not hold", ErrNotFound, i, c.Name)
		}
		id, err := out[j].Identity()
		if err != nil {
			return nil, err
		}
		if out[j], err = c.apply(i, out[j], id); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (c DiscChange) apply(i int, e Entry, id hashing.Digest) (Entry, error) {
	if id != c.Identity {
		return Entry{}, fmt.Errorf("%w: changes[%d]: %s is %s now; the patch was made for %s", ErrStalePatch, i, c.Name, id, c.Identity)
	}
	e.Disc.Aliases = addFolded(slices.DeleteFunc(slices.Clone(e.Disc.Aliases), func(a string) bool {
		return slices.Contains(c.RemoveAliases, a)
	}), c.AddAliases)
	e.Disc.Tags = addFolded(slices.Clone(e.Disc.Tags), c.AddTags)
	if err := e.validate(fmt.Sprintf("changes[%d] (%s)", i, c.Name), nil); err != nil {
		return Entry{}, err // too many aliases, an empty one, …
	}
	return e, nil
}

// addFolded appends each of add not already in xs (ignoring case).
func addFolded(xs, add []string) []string {
	for _, a := range add {
		if !slices.ContainsFunc(xs, func(x string) bool { return strings.EqualFold(x, a) }) {
			xs = append(xs, a)
		}
	}
	return xs
}
