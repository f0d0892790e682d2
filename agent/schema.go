package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Check is the outcome of a validation step.
type Check struct {
	Passed   bool      `json:"passed"`
	Failures []Failure `json:"failures,omitempty"`
}

// Validator is the assertion-only pipeline's schema validation: a JSON
// Schema (draft 2020-12) built from the registry, with the family and the
// metric constrained to enums of every registered name and each family's
// parameters typed by its schema — what structured output or constrained
// decoding guarantees. It knows what the system supports, never what the
// researcher asked for.
type Validator struct {
	doc    map[string]any
	schema *jsonschema.Schema
	cat    *Catalog
}

// NewValidator compiles the schema of a catalog.
func NewValidator(cat *Catalog) (*Validator, error) {
	doc := SchemaDocument(cat)
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("urn:groundgate:agent:request-schema", inst); err != nil {
		return nil, err
	}
	sch, err := c.Compile("urn:groundgate:agent:request-schema")
	if err != nil {
		return nil, fmt.Errorf("request schema: %w", err)
	}
	return &Validator{doc: doc, schema: sch, cat: cat}, nil
}

// Document returns the schema document.
func (v *Validator) Document() map[string]any { return v.doc }

// SchemaDocument is the enum-constrained request schema of a catalog.
func SchemaDocument(cat *Catalog) map[string]any {
	names := func(os []Option) []any {
		out := make([]any, len(os))
		for i, o := range os {
			out[i] = o.Name
		}
		return out
	}
	var perFamily []any
	for _, f := range cat.Families {
		props := map[string]any{}
		required := []any{}
		for _, p := range f.Params {
			props[p.Name] = paramSchema(string(p.Type))
			if p.Default == nil {
				required = append(required, p.Name)
			}
		}
		perFamily = append(perFamily, map[string]any{
			"if": map[string]any{"properties": map[string]any{"family": map[string]any{"const": f.Name}}, "required": []any{"family"}},
			"then": map[string]any{"properties": map[string]any{"params": map[string]any{
				"type": "object", "additionalProperties": false, "properties": props, "required": required,
			}}},
		})
	}
	doc := map[string]any{
		"$schema":              "https://json-schema.org/draft/2020-12/schema",
		"title":                "groundgate request (assertion-only validation)",
		"type":                 "object",
		"additionalProperties": false,
		"required":             []any{"family", "metric", "params", "data"},
		"properties": map[string]any{
			"family": map[string]any{"enum": names(cat.Families)},
			"metric": map[string]any{"enum": names(cat.Metrics)},
			"data":   map[string]any{"type": "string", "minLength": 1},
			"params": map[string]any{"type": "object"},
		},
	}
	if len(perFamily) > 0 {
		doc["allOf"] = perFamily
	}
	return doc
}

func paramSchema(typ string) map[string]any {
	var scalar map[string]any
	switch typ {
	case "int":
		scalar = map[string]any{"type": "integer"}
	case "float":
		scalar = map[string]any{"type": "number"}
	default: // string, column
		scalar = map[string]any{"type": "string"}
	}
	return map[string]any{"anyOf": []any{scalar, map[string]any{"type": "array", "items": scalar, "minItems": 1}}}
}

var printer = message.NewPrinter(language.English)

// Validate checks a proposal's request. A family or metric that is a
// non-empty string but no registered name of its kind is F2 (hallucinated);
// everything else the schema refuses is F1 (malformed). Failures are
// sorted by field, then detail.
func (v *Validator) Validate(p Proposal) Check {
	b, err := p.requestJSON()
	if err != nil {
		return Check{Failures: []Failure{{Field: "request", Code: "F1", Codes: []string{"F1"}, Detail: err.Error()}}}
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return Check{Failures: []Failure{{Field: "request", Code: "F1", Codes: []string{"F1"}, Detail: err.Error()}}}
	}
	err = v.schema.Validate(inst)
	if err == nil {
		return Check{Passed: true}
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return Check{Failures: []Failure{{Field: "request", Code: "F1", Codes: []string{"F1"}, Detail: err.Error()}}}
	}
	// One failure per failing field, as the gate reports them; the
	// schema's messages for the field are joined.
	details := map[string][]string{}
	for _, leaf := range leaves(ve) {
		field := strings.Join(leaf.InstanceLocation, ".")
		if field == "" {
			field = "request"
		}
		d := leaf.ErrorKind.LocalizedString(printer)
		if !slices.Contains(details[field], d) {
			details[field] = append(details[field], d)
		}
	}
	fields := make([]string, 0, len(details))
	for f := range details {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	fails := make([]Failure, 0, len(fields))
	for _, field := range fields {
		code, value := "F1", ""
		switch field {
		case "family":
			value = p.Family
			if p.Family != "" && !v.cat.Has(KindFamily, p.Family) {
				code = "F2"
			}
		case "metric":
			value = p.Metric
			if p.Metric != "" && !v.cat.Has(KindMetric, p.Metric) {
				code = "F2"
			}
		}
		ds := details[field]
		sort.Strings(ds)
		fails = append(fails, Failure{Field: field, Code: code, Codes: []string{code}, Value: value, Detail: strings.Join(ds, "; ")})
	}
	return Check{Failures: fails}
}

// leaves returns the innermost causes of a validation error.
func leaves(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return []*jsonschema.ValidationError{e}
	}
	var out []*jsonschema.ValidationError
	for _, c := range e.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}
