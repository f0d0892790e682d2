package upstreamtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/groundgate/groundgate/hashing"
)

// ToolBenchFile is the file of Config.ToolBench's directory that lists the
// APIs.
const ToolBenchFile = "stabletoolbench-tools.json"

// benchAPI is one API of ToolBenchFile, as its README describes it.
type benchAPI struct {
	Name        string      `json:"name"`
	Tool        string      `json:"tool"`
	API         string      `json:"api"`
	Category    string      `json:"category"`
	Description string      `json:"description"`
	Parameters  benchParams `json:"parameters"`
}

type benchParams struct {
	Type       string                `json:"type"`
	Properties map[string]benchParam `json:"properties"`
	Required   []string              `json:"required"`
}

type benchParam struct {
	Type        string `json:"type"`
	Description string `json:"description"`
}

// benchTypes maps the source's loose parameter types to JSON Schema: the
// type, and a format where the source names one.
var benchTypes = map[string][2]string{
	"string":               {"string", ""},
	"number":               {"number", ""},
	"boolean":              {"boolean", ""},
	"array":                {"array", ""},
	"object":               {"object", ""},
	"enum":                 {"string", ""}, // an enum without its values
	"date (yyyy-mm-dd)":    {"string", "date"},
	"time (24-hour hh:mm)": {"string", ""}, // JSON Schema's "time" wants seconds
	"binary":               {"string", ""},
}

// ToolBenchCount is how many APIs dir's ToolBenchFile lists: how many tools
// Config{ToolBench: dir} serves.
func ToolBenchCount(dir string) (int, error) {
	apis, err := readToolBench(dir)
	return len(apis), err
}

func readToolBench(dir string) ([]benchAPI, error) {
	path := filepath.Join(dir, ToolBenchFile)
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: ToolBench: %v", ErrConfig, err)
	}
	var apis []benchAPI
	if err := hashing.DecodeStrict(raw, &apis); err != nil {
		return nil, fmt.Errorf("%w: ToolBench: %s: %v", ErrConfig, path, err)
	}
	return apis, nil
}

// toolBenchTools are dir's APIs as tools.
func toolBenchTools(dir string) ([]*tool, error) {
	apis, err := readToolBench(dir)
	if err != nil {
		return nil, err
	}
	ts := make([]*tool, 0, len(apis))
	for _, a := range apis {
		schema, err := a.inputSchema()
		if err != nil {
			return nil, fmt.Errorf("%w: ToolBench: API %q: %v", ErrConfig, a.Name, err)
		}
		name := a.Name
		ts = append(ts, &tool{
			def: sdk.Tool{
				Name:        name,
				Title:       a.Tool + ": " + a.API,
				Description: a.Description,
				InputSchema: schema,
			},
			handler: func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				args, err := arguments(req)
				if err != nil {
					return errorResult(err.Error()), nil
				}
				text, err := json.Marshal(struct {
					API       string          `json:"api"`
					Arguments json.RawMessage `json:"arguments"`
				}{name, args})
				if err != nil {
					return nil, err
				}
				return textResult(string(text)), nil
			},
		})
	}
	return ts, nil
}

// inputSchema is a's parameters as JSON Schema: an object of the
// properties it lists, each typed and described, and the ones it
// requires.
func (a benchAPI) inputSchema() (json.RawMessage, error) {
	if a.Parameters.Type != "object" {
		return nil, fmt.Errorf("parameters of type %q, not object", a.Parameters.Type)
	}
	props := make(map[string]map[string]string, len(a.Parameters.Properties))
	for name, p := range a.Parameters.Properties {
		t, ok := benchTypes[p.Type]
		if !ok {
			return nil, fmt.Errorf("parameter %q: type %q is not one this package maps", name, p.Type)
		}
		s := map[string]string{"type": t[0]}
		if t[1] != "" {
			s["format"] = t[1]
		}
		if p.Description != "" {
			s["description"] = p.Description
		}
		props[name] = s
	}
	for _, r := range a.Parameters.Required {
		if _, ok := props[r]; !ok {
			return nil, fmt.Errorf("requires %q, which it does not list", r)
		}
	}
	schema := map[string]any{"type": "object", "properties": props}
	if len(a.Parameters.Required) > 0 {
		schema["required"] = a.Parameters.Required
	}
	return json.Marshal(schema) // keys sorted: the same bytes every time
}
