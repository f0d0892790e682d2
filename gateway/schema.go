package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/groundgate/groundgate/hashing"
)

// A tool's input and output schemas are JSON Schema 2020-12 documents an
// upstream wrote. They are compiled once (at sync, and cached by the
// caller per identity) with a maintained validator,
// github.com/santhosh-tekuri/jsonschema/v6, under three rules that keep a
// hostile schema's cost bounded:
//
//   - nothing is loaded from outside the document: a "$ref" to a URL or a
//     file is refused at compile, never fetched;
//   - "$dynamicRef" and "$recursiveRef" are refused: where they lead is
//     decided while validating, so no compile-time check can bound it;
//   - a cycle of subschemas applied to the same instance location ("$ref",
//     "allOf", "anyOf", "oneOf", "not", "if"/"then"/"else",
//     "dependentSchemas") is refused: the validator would recurse without
//     end and exhaust the stack. A cycle that descends into the instance
//     ("properties", "items", …) ends with the instance, and is allowed.

// MaxSchemaBytes bounds one schema document.
const MaxSchemaBytes = 1 << 20

// Schema is a compiled tool schema.
type Schema struct {
	s *jsonschema.Schema
}

// schemaURL names the one document a compiler holds.
const schemaURL = "urn:groundgate:tool-schema"

// noLoader refuses every URL: a tool schema is self-contained.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("refers to %q outside the schema: a tool schema must be self-contained", url)
}

// CompileSchema compiles raw, a tool's inputSchema or outputSchema.
func CompileSchema(raw []byte) (*Schema, error) {
	if len(raw) > MaxSchemaBytes {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrInvalidSchema, len(raw), MaxSchemaBytes)
	}
	doc, err := decodeInstance(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	if _, ok := doc.(map[string]any); !ok {
		return nil, fmt.Errorf("%w: a tool schema is a JSON object", ErrInvalidSchema)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	if err := checkCycles(s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	return &Schema{s: s}, nil
}

// SchemaProblem is one way a value fails a schema: where in the value
// (a JSON pointer, "" for the whole) and why.
type SchemaProblem struct {
	Pointer string `json:"pointer"`
	Detail  string `json:"detail"`
}

// Validate checks value, a JSON document (a call's arguments, a result's
// structuredContent), against s. It returns every leaf problem in a fixed
// order, none when value is valid. A value that is not strict JSON is one
// problem at "".
func (s *Schema) Validate(value []byte) []SchemaProblem {
	inst, err := decodeInstance(value)
	if err != nil {
		return []SchemaProblem{{Pointer: "", Detail: err.Error()}}
	}
	err = s.s.Validate(inst)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []SchemaProblem{{Pointer: "", Detail: err.Error()}}
	}
	var out []SchemaProblem
	for _, u := range ve.BasicOutput().Errors {
		if u.Error == nil || len(u.Errors) > 0 {
			continue
		}
		out = append(out, SchemaProblem{Pointer: u.InstanceLocation, Detail: u.Error.String()})
	}
	if len(out) == 0 {
		out = append(out, SchemaProblem{Pointer: "", Detail: ve.Error()})
	}
	slices.SortFunc(out, func(a, b SchemaProblem) int {
		return strings.Compare(a.Pointer+"\x00"+a.Detail, b.Pointer+"\x00"+b.Detail)
	})
	return slices.Compact(out)
}

// decodeInstance reads a JSON document for the validator, which wants
// numbers as json.Number: checked by the one strict codec first (no key
// twice, in any case), then read into generic values only.
func decodeInstance(raw []byte) (any, error) {
	if err := hashing.CheckStrict(raw); err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(raw))
}

// checkCycles refuses dynamic references, and cycles of subschemas that
// apply to the same instance location.
func checkCycles(root *jsonschema.Schema) error {
	const (
		white = iota
		grey
		black
	)
	color := map[*jsonschema.Schema]int{}
	// all collects every subschema, so each is also checked as the start
	// of a same-location walk.
	all := map[*jsonschema.Schema]bool{}
	var collect func(s *jsonschema.Schema)
	collect = func(s *jsonschema.Schema) {
		if s == nil || all[s] {
			return
		}
		all[s] = true
		for _, c := range children(s) {
			collect(c)
		}
		for _, c := range sameLocation(s) {
			collect(c)
		}
	}
	collect(root)
	var visit func(s *jsonschema.Schema) error
	visit = func(s *jsonschema.Schema) error {
		if s.DynamicRef != nil || s.RecursiveRef != nil {
			return fmt.Errorf("%s uses a dynamic reference ($dynamicRef or $recursiveRef), which a tool schema may not", where(s))
		}
		color[s] = grey
		for _, n := range sameLocation(s) {
			switch color[n] {
			case grey:
				return fmt.Errorf("%s refers back to itself without descending into the value (a $ref cycle): validating would never end", where(n))
			case white:
				if err := visit(n); err != nil {
					return err
				}
			}
		}
		color[s] = black
		return nil
	}
	// A fixed order, so the same schema gives the same error.
	starts := make([]*jsonschema.Schema, 0, len(all))
	for s := range all {
		starts = append(starts, s)
	}
	slices.SortFunc(starts, func(a, b *jsonschema.Schema) int { return strings.Compare(a.Location, b.Location) })
	for _, s := range starts {
		if color[s] == white {
			if err := visit(s); err != nil {
				return err
			}
		}
	}
	return nil
}

// where names a subschema by its location inside the document.
func where(s *jsonschema.Schema) string {
	loc := strings.TrimPrefix(s.Location, schemaURL)
	if loc == "" || loc == "#" {
		return "the schema"
	}
	return "the subschema at " + strings.TrimPrefix(loc, "#")
}

// sameLocation lists the subschemas s applies to the instance it is
// applied to.
func sameLocation(s *jsonschema.Schema) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	add := func(xs ...*jsonschema.Schema) {
		for _, x := range xs {
			if x != nil {
				out = append(out, x)
			}
		}
	}
	add(s.Ref, s.Not, s.If, s.Then, s.Else)
	add(s.AllOf...)
	add(s.AnyOf...)
	add(s.OneOf...)
	for _, k := range sortedKeys(s.DependentSchemas) {
		add(s.DependentSchemas[k])
	}
	for _, k := range sortedKeys(s.Dependencies) {
		if d, ok := s.Dependencies[k].(*jsonschema.Schema); ok {
			add(d)
		}
	}
	return out
}

// children lists the subschemas s applies to parts of the instance.
func children(s *jsonschema.Schema) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	add := func(xs ...*jsonschema.Schema) {
		for _, x := range xs {
			if x != nil {
				out = append(out, x)
			}
		}
	}
	for _, k := range sortedKeys(s.Properties) {
		add(s.Properties[k])
	}
	for _, p := range s.PatternProperties {
		add(p)
	}
	if a, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
		add(a)
	}
	add(s.PropertyNames, s.UnevaluatedProperties, s.Contains, s.Items2020, s.UnevaluatedItems, s.ContentSchema)
	add(s.PrefixItems...)
	switch it := s.Items.(type) {
	case *jsonschema.Schema:
		add(it)
	case []*jsonschema.Schema:
		add(it...)
	}
	if a, ok := s.AdditionalItems.(*jsonschema.Schema); ok {
		add(a)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	})
}
