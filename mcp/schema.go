package mcp

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/groundgate/groundgate/hashing"
)

// The tools' JSON Schemas are the REST API's (server/openapi.json, which
// tests validate real responses against): an argument or a result means
// the same over MCP as over REST, and the two cannot drift apart.

const componentRef = "#/components/schemas/"

// components are the OpenAPI document's named schemas.
type components map[string]json.RawMessage

func parseComponents(openapi []byte) (components, error) {
	var doc struct {
		Components struct {
			Schemas components `json:"schemas"`
		} `json:"components"`
	}
	if err := hashing.DecodeFields(openapi, &doc); err != nil {
		return nil, fmt.Errorf("mcp: the OpenAPI document: %w", err)
	}
	if len(doc.Components.Schemas) == 0 {
		return nil, fmt.Errorf("mcp: the OpenAPI document has no component schemas")
	}
	return doc.Components.Schemas, nil
}

// schema is root as a self-contained JSON Schema (2020-12): every
// component it refers to, directly or not, is copied under $defs and its
// references rewritten to point there.
func (cs components) schema(root string) (map[string]any, error) {
	var top map[string]any
	if err := hashing.DecodeStrict([]byte(root), &top); err != nil {
		return nil, fmt.Errorf("mcp: schema %.60s: %w", root, err)
	}
	defs := map[string]any{}
	var walk func(v any) error
	walk = func(v any) error {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				name, ok := strings.CutPrefix(ref, componentRef)
				if !ok {
					return fmt.Errorf("mcp: reference %q is not to a component schema", ref)
				}
				v["$ref"] = "#/$defs/" + name
				if _, seen := defs[name]; !seen {
					raw, ok := cs[name]
					if !ok {
						return fmt.Errorf("mcp: no component schema %q", name)
					}
					var def any
					if err := hashing.DecodeStrict(raw, &def); err != nil {
						return fmt.Errorf("mcp: component %s: %w", name, err)
					}
					defs[name] = def
					if err := walk(def); err != nil {
						return err
					}
				}
			}
			// Fixed order: the schema is what tools/list shows, and two
			// runs must show the same bytes.
			for _, k := range slices.Sorted(maps.Keys(v)) {
				if err := walk(v[k]); err != nil {
					return err
				}
			}
		case []any:
			for _, x := range v {
				if err := walk(x); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(top); err != nil {
		return nil, err
	}
	if len(defs) > 0 {
		top["$defs"] = defs
	}
	return top, nil
}

// component is the named component schema itself, self-contained.
func (cs components) component(name string) (map[string]any, error) {
	raw, ok := cs[name]
	if !ok {
		return nil, fmt.Errorf("mcp: no component schema %q", name)
	}
	return cs.schema(string(raw))
}

// input is a component by name, or an inline schema (JSON, starting "{").
func (cs components) input(s string) (map[string]any, error) {
	if strings.HasPrefix(s, "{") {
		return cs.schema(s)
	}
	return cs.component(s)
}

// output is a tool's output schema: the named component (or an inline
// schema, JSON starting "{"), or, on a result with isError set, the
// problem REST would answer (clients such as the TypeScript SDK validate
// structured content even on errors).
func (cs components) output(name string) (map[string]any, error) {
	what, ok := name, !strings.HasPrefix(name, "{")
	if ok {
		name = `{"$ref": "` + componentRef + name + `"}`
	} else {
		what = "The result"
	}
	return cs.schema(`{"type": "object", "description": "` + what + `, or with isError set the Problem REST answers the same call with", "anyOf": [` +
		name + `, {"$ref": "` + componentRef + `Problem"}]}`)
}
