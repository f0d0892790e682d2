package pipeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
)

// The repair rules. Each fires only on something the schema gate refuses,
// and each keeps what the step means: a valid request is never changed.
const (
	// RuleFieldSpelling renames an unknown field of the request or of a
	// step to the one declared field it unambiguously spells.
	RuleFieldSpelling = "field_spelling"
	// RuleParamSpelling renames an unknown parameter of a step to the one
	// parameter its capability declares that the name unambiguously spells.
	RuleParamSpelling = "param_spelling"
	// RuleStringToNumber turns a string holding exactly a JSON number into
	// that number, where the parameter is an int or a float (and, for an
	// int, the number is whole).
	RuleStringToNumber = "string_to_number"
	// RuleInputsList wraps a step's single input given as a string in the
	// list the schema asks for.
	RuleInputsList = "inputs_list"
)

// Rules lists the repair rules in the order they are tried.
func Rules() []string {
	return []string{RuleFieldSpelling, RuleInputsList, RuleParamSpelling, RuleStringToNumber}
}

// Repair is one recorded change: the step (its id), the field as it was
// given, the value before and after, and the rule that made it. It is
// hashed with the request.
type Repair struct {
	Step  string `json:"step"`
	Field string `json:"field"`
	From  any    `json:"from"`
	To    any    `json:"to"`
	Rule  string `json:"rule"`
}

// Lookup resolves a capability name in the registry version being decided.
type Lookup func(name string) (registry.Capability, bool)

// The fields a pipeline request and its steps declare.
var (
	requestFields = []string{"data", "family", "metric", "output", "params", "pipeline"}
	stepFields    = []string{"capability", "id", "inputs", "params"}
)

// RepairRequest applies the repair rules to a request document: only to
// fields the schema refuses, only within the step at fault. It returns the
// repaired document and the repairs, or (nil, nil) when no rule applies —
// the document is not a pipeline (family requests are never repaired), or
// nothing in it is repairable. The
// repaired document must go through the gate again: repair fixes form,
// never grounding.
func RepairRequest(doc []byte, lookup Lookup) ([]byte, []Repair, error) {
	// Only a document the gate reads the same way: no duplicate keys, no
	// trailing data (a lenient decoder would silently drop them, a change
	// no repair would record).
	if err := hashing.CheckStrict(doc); err != nil {
		return nil, nil, nil
	}
	// Numbers keep their exact text (UseNumber), which the one strict
	// decoder does not offer for generic values; CheckStrict has refused
	// every document this decoder could read differently (duplicate or
	// case-variant keys, trailing data), and it decodes only into maps.
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber() // numbers keep their exact text
	var top map[string]any
	if err := dec.Decode(&top); err != nil {
		return nil, nil, fmt.Errorf("pipeline: repair: %w", err)
	}
	var reps []Repair
	rename(top, requestFields, "", "", &reps)
	steps, ok := top["pipeline"].([]any)
	if !ok || len(steps) > MaxSteps {
		// A family request is never repaired; an oversized pipeline is
		// refused for its size, whatever else is wrong with it.
		return nil, nil, nil
	}
	for i, s := range steps {
		step, ok := s.(map[string]any)
		if !ok {
			continue
		}
		name := fmt.Sprintf("pipeline[%d]", i)
		first := len(reps)
		rename(step, stepFields, name, "", &reps)
		if id, ok := step["id"].(string); ok && ValidID(id) {
			for k := first; k < len(reps); k++ {
				reps[k].Step = id
			}
			name = id
		}
		if in, ok := step["inputs"].(string); ok {
			step["inputs"] = []any{in}
			reps = append(reps, Repair{Step: name, Field: "inputs", From: in, To: []any{in}, Rule: RuleInputsList})
		}
		capName, _ := step["capability"].(string)
		c, found := lookup(capName)
		params, isObj := step["params"].(map[string]any)
		if !found || !Stepable(c.Kind) || !isObj {
			continue
		}
		declared := make([]string, len(c.Alg.Params))
		specs := map[string]registry.Param{}
		for k, p := range c.Alg.Params {
			declared[k] = p.Name
			specs[p.Name] = p
		}
		rename(params, declared, name, "params.", &reps)
		for _, key := range slices.Sorted(maps.Keys(params)) {
			spec, ok := specs[key]
			if !ok || (spec.Type != registry.ParamInt && spec.Type != registry.ParamFloat) {
				continue
			}
			if to, changed := numbers(params[key], spec.Type); changed {
				reps = append(reps, Repair{Step: name, Field: "params." + key, From: params[key], To: to, Rule: RuleStringToNumber})
				params[key] = to
			}
		}
	}
	if len(reps) == 0 {
		return nil, nil, nil
	}
	return encode(top, reps)
}

func encode(top map[string]any, reps []Repair) ([]byte, []Repair, error) {
	out, err := json.Marshal(top)
	if err != nil {
		return nil, nil, fmt.Errorf("pipeline: repair: %w", err)
	}
	for i := range reps {
		reps[i].From, reps[i].To = plain(reps[i].From), plain(reps[i].To)
	}
	return out, reps, nil
}

// plain turns json.Numbers into float64s, so a repair hashes and decodes
// like any other JSON value.
func plain(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := x.Float64()
		return f
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	}
	return v
}

// rename moves every unknown key of obj that spells exactly one declared,
// absent key onto it (RuleFieldSpelling at the top level and in steps,
// RuleParamSpelling in params). Keys are visited in sorted order.
func rename(obj map[string]any, declared []string, step, prefix string, reps *[]Repair) {
	rule := RuleFieldSpelling
	if prefix != "" {
		rule = RuleParamSpelling
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if slices.Contains(declared, k) {
			continue
		}
		var hits []string
		for _, d := range declared {
			if _, taken := obj[d]; !taken && spells(k, d) {
				hits = append(hits, d)
			}
		}
		if len(hits) != 1 {
			continue // unknown, or ambiguous: the gate refuses it as it is
		}
		obj[hits[0]] = obj[k]
		delete(obj, k)
		*reps = append(*reps, Repair{Step: step, Field: prefix + k, From: k, To: hits[0], Rule: rule})
	}
}

// spells reports whether key is a spelling of want: equal once case and
// separators are folded, or (for names of four letters or more) one
// insertion, deletion, substitution or transposition away.
func spells(key, want string) bool {
	a, b := fold(key), fold(want)
	if a == b {
		return true
	}
	return len(b) >= 4 && osa(a, b) == 1
}

func fold(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r != '_' && r != '-' && r != ' ' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// osa is the optimal string alignment distance (Damerau–Levenshtein with
// adjacent transpositions), bounded by the short names it compares.
func osa(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 64 || len(rb) > 64 {
		return math.MaxInt
	}
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range rb {
		d[0][j+1] = j + 1
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// jsonNumber is the JSON number grammar (RFC 8259 §6), nothing around it.
var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// numbers converts a string value, or the strings of a list, that hold
// exactly a finite JSON number fitting the type; anything else is left
// for the gate to refuse.
func numbers(v any, t registry.ParamType) (any, bool) {
	conv := func(e any) (any, bool) {
		s, ok := e.(string)
		if !ok || !jsonNumber.MatchString(s) {
			return e, false
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) || (t == registry.ParamInt && t.Mismatch(false, f) != "") {
			return e, false
		}
		return json.Number(s), true
	}
	if list, ok := v.([]any); ok {
		out := make([]any, len(list))
		changed := false
		for i, e := range list {
			var c bool
			out[i], c = conv(e)
			changed = changed || c
		}
		return out, changed
	}
	return conv(v)
}
