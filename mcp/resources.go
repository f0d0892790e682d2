package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Resource URIs: a capability by name at the current registry version, a
// footprint by execution hash.
const (
	capabilityURI = "groundgate://capabilities/"
	executionURI  = "groundgate://executions/"
)

func addResources(s *sdk.Server, api API) {
	s.AddResourceTemplate(&sdk.ResourceTemplate{
		Name: "capability", Title: "Capability", MIMEType: "application/json",
		URITemplate: capabilityURI + "{name}",
		Description: "A registry entry by exact name, at the current registry version (as get_capability returns it).",
	}, resource(api, capabilityURI, func(ctx context.Context, name string) (any, error) { return api.Capability(ctx, name) }))
	s.AddResourceTemplate(&sdk.ResourceTemplate{
		Name: "footprint", Title: "Execution footprint", MIMEType: "application/json",
		URITemplate: executionURI + "{+hash}", // + : a hash holds a colon
		Description: "A stored execution's footprint by its hash (sha256:…), as execute returned it.",
	}, resource(api, executionURI, func(ctx context.Context, hash string) (any, error) { return api.Footprint(ctx, hash) }))
}

// resource reads what follows prefix in the URI with get. A record that
// does not exist is the protocol's resource-not-found; a malformed key is
// invalid params; anything else is the problem REST would answer.
func resource(api API, prefix string, get func(context.Context, string) (any, error)) sdk.ResourceHandler {
	return func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		uri := req.Params.URI
		key, ok := strings.CutPrefix(uri, prefix)
		if !ok || key == "" || strings.Contains(key, "/") {
			return nil, sdk.ResourceNotFoundError(uri)
		}
		v, err := get(ctx, key)
		if err != nil {
			switch p := api.ProblemOf(ctx, err); p.Status {
			case http.StatusNotFound:
				return nil, sdk.ResourceNotFoundError(uri)
			default:
				return nil, errors.New(p.Title + ": " + p.Detail)
			}
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("mcp: encode %s: %w", uri, err)
		}
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
	}
}
