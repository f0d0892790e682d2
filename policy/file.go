package policy

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/groundgate/groundgate/hashing"
)

// MaxFileBytes bounds a policy file read by the command line.
const MaxFileBytes = 8 << 20

// ParseFile reads a policy file: a set, {"NAME": POLICY…}, or one policy,
// which takes its name from the file's base name (trading.json → trading).
// Every policy is compiled; the errors of all of them are reported.
func ParseFile(path string, raw []byte) ([]*Compiled, error) {
	if len(raw) > MaxFileBytes {
		return nil, fmt.Errorf("%s: %d bytes, at most %d: %w", path, len(raw), MaxFileBytes, ErrInvalid)
	}
	var probe map[string]json.RawMessage
	if err := hashing.DecodeStrict(raw, &probe); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object: %v: %w", path, err, ErrInvalid)
	}
	bodies := map[string]json.RawMessage{}
	if _, single := probe["smtlib"]; single {
		bodies[strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))] = raw
	} else {
		bodies = probe
	}
	if len(bodies) > MaxPolicies {
		return nil, fmt.Errorf("%s: %d policies, at most %d: %w", path, len(bodies), MaxPolicies, ErrInvalid)
	}
	var (
		out  []*Compiled
		errs []string
	)
	for _, name := range slices.Sorted(maps.Keys(bodies)) {
		p, err := Decode(name, bodies[name])
		if err == nil {
			var c *Compiled
			if c, err = Compile(name, p); err == nil {
				out = append(out, c)
				continue
			}
		}
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s: %s: %w", path, strings.Join(errs, "; "), ErrInvalid)
	}
	return out, nil
}
