package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
)

// ServerInfo names an upstream server as its initialize result does.
type ServerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// maxServerText bounds the server's name and version.
const maxServerText = 256

// LiveTool is one tool as the upstream lists it now, decoded from the
// upstream's bytes with the project's strict codec.
type LiveTool struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// InputSchema and OutputSchema are in RFC 8785 form; OutputSchema is
	// nil when the tool declares none.
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  *Annotations    `json:"annotations,omitempty"`
	// Digest is the tool_digest of SPEC §14: SHA-256 of the JCS of the
	// tool's definition as listed (every member, the description too).
	Digest hashing.Digest `json:"tool_digest"`
	// Problem says why the tool cannot become a registry entry; empty
	// when it can. Such a tool is listed (it is there) but never called.
	Problem string `json:"problem,omitempty"`
	// Definition is the definition as listed, in RFC 8785 form.
	Definition json.RawMessage `json:"-"`
}

// Annotations are MCP's tool hints, nil where the upstream gave none.
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// toolWire is the part of an MCP Tool the gateway reads. Other members
// (icons, _meta, execution, …) are in Definition and tool_digest only.
type toolWire struct {
	Name         string         `json:"name"`
	Title        string         `json:"title"`
	Description  string         `json:"description"`
	InputSchema  jsontext.Value `json:"inputSchema"`
	OutputSchema jsontext.Value `json:"outputSchema"`
	Annotations  *Annotations   `json:"annotations"`
}

// listPage is a tools/list result.
type listPage struct {
	Tools      []jsontext.Value `json:"tools"`
	NextCursor string           `json:"nextCursor"`
}

// decodePage reads one tools/list result. The page is refused
// (ErrProtocol) when its envelope is not one; a tool that does not decode
// is kept with its Problem when its name can be read.
func decodePage(raw []byte) (tools []LiveTool, next string, err error) {
	var p listPage
	if err := decodeEnvelopeFields(raw, &p); err != nil {
		return nil, "", fmt.Errorf("%w: tools/list result: %s", ErrProtocol, hashing.Reason(err))
	}
	if p.Tools == nil {
		return nil, "", fmt.Errorf("%w: tools/list result has no tools array", ErrProtocol)
	}
	for i, v := range p.Tools {
		t, err := decodeTool(v)
		if err != nil {
			return nil, "", fmt.Errorf("%w: tools/list result: tools[%d]: %v", ErrProtocol, i, err)
		}
		tools = append(tools, t)
	}
	return tools, p.NextCursor, nil
}

// decodeEnvelopeFields decodes the members v declares from an object
// whose members are checked at the top level only: no name twice, none
// in two cases. Values v does not declare are left unread (a result's
// _meta, a tool's schema: they are checked where they are used).
func decodeEnvelopeFields(raw []byte, v any) error {
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.ReadToken(); err != nil {
		return err
	} else if tok.Kind() != '{' {
		return fmt.Errorf("want a JSON object, got %v", tok.Kind())
	}
	seen := map[string]bool{}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return err
		}
		k := foldASCII(name.String())
		if seen[k] {
			return fmt.Errorf("member %q twice (or in two cases)", clip(name.String(), 40))
		}
		seen[k] = true
		if err := dec.SkipValue(); err != nil {
			return err
		}
	}
	return hashing.DecodePartFields(raw, v)
}

// decodeTool reads one listed tool. It fails only when the tool has no
// readable name; other faults are its Problem.
func decodeTool(v jsontext.Value) (LiveTool, error) {
	def, err := hashing.CanonicalizeJSON(v)
	if err != nil {
		return LiveTool{}, err
	}
	t := LiveTool{Definition: def, Digest: hashing.SumSHA256(def)}
	var w toolWire
	if err := decodeEnvelopeFields(def, &w); err != nil {
		var name struct {
			Name string `json:"name"`
		}
		if hashing.DecodePartFields(def, &name) != nil || name.Name == "" {
			return LiveTool{}, fmt.Errorf("no readable name: %s", hashing.Reason(err))
		}
		t.Name, t.Problem = name.Name, hashing.Reason(err)
		return t, nil
	}
	if w.Name == "" {
		return LiveTool{}, fmt.Errorf("no name")
	}
	t.Name, t.Title, t.Description, t.Annotations = w.Name, w.Title, w.Description, w.Annotations
	var probs []string
	if !registry.ToolNameRE.MatchString(w.Name) {
		probs = append(probs, fmt.Sprintf("name %q is not one the registry holds (%s)", clip(w.Name, 60), registry.ToolNameRE))
	}
	if w.Annotations != nil {
		// Read again with its own top level checked: a hint spelt in
		// another case ("ReadOnlyHint") beside the real one is refused,
		// not skipped.
		if raw := memberOf(def, "annotations"); raw != nil {
			if err := decodeEnvelopeFields(raw, new(Annotations)); err != nil {
				probs = append(probs, "annotations: "+hashing.Reason(err))
			}
		}
	}
	var p string
	if t.InputSchema, p = schemaOf("inputSchema", w.InputSchema, true); p != "" {
		probs = append(probs, p)
	}
	if t.OutputSchema, p = schemaOf("outputSchema", w.OutputSchema, false); p != "" {
		probs = append(probs, p)
	}
	t.Problem = strings.Join(probs, "; ")
	return t, nil
}

// memberOf returns the raw value of the top-level member name of an
// object, or nil.
func memberOf(obj []byte, name string) jsontext.Value {
	dec := jsontext.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil
	}
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil
		}
		key := tok.String() // before the next read voids tok
		v, err := dec.ReadValue()
		if err != nil {
			return nil
		}
		if key == name {
			return bytes.Clone(v)
		}
	}
	return nil
}

// schemaOf checks one of a tool's schemas as MCP and the registry want
// it: a JSON object the strict codec accepts (an input schema of type
// "object"), within registry.MaxToolSchemaBytes. It returns the schema in
// RFC 8785 form, or nil and the problem.
func schemaOf(field string, v jsontext.Value, input bool) (json.RawMessage, string) {
	if len(v) == 0 || v.Kind() == 'n' {
		if input {
			return nil, field + ": missing"
		}
		return nil, ""
	}
	if v.Kind() != '{' {
		return nil, field + ": not a JSON object"
	}
	if len(v) > registry.MaxToolSchemaBytes {
		return nil, fmt.Sprintf("%s: %d bytes, at most %d", field, len(v), registry.MaxToolSchemaBytes)
	}
	if err := hashing.CheckStrict(v); err != nil {
		return nil, field + ": " + hashing.Reason(err)
	}
	if input {
		var typ struct {
			Type any `json:"type"`
		}
		if hashing.DecodePartFields(v, &typ) != nil || typ.Type != "object" {
			return nil, field + `: MCP wants a schema of "type": "object"`
		}
	}
	s, err := hashing.CanonicalizeJSON(v)
	if err != nil {
		return nil, field + ": " + hashing.Reason(err)
	}
	return s, ""
}

// ToolList is an upstream's tools as listed at one moment.
type ToolList struct {
	Upstream string     `json:"upstream"`
	Server   ServerInfo `json:"server"`
	// Tools are sorted by name.
	Tools []LiveTool `json:"tools"`
	// Generation counts the lists this Upstream has published (1 first).
	Generation uint64 `json:"generation"`
}

// Tool returns the listed tool called name.
func (l ToolList) Tool(name string) (LiveTool, bool) {
	i, ok := slices.BinarySearchFunc(l.Tools, name, func(t LiveTool, n string) int { return strings.Compare(t.Name, n) })
	if !ok {
		return LiveTool{}, false
	}
	return l.Tools[i], true
}

// finishList sorts the tools and marks the names listed twice: neither
// copy can be an entry.
func finishList(tools []LiveTool) []LiveTool {
	slices.SortStableFunc(tools, func(a, b LiveTool) int { return strings.Compare(a.Name, b.Name) })
	for i := 1; i < len(tools); i++ {
		if tools[i].Name == tools[i-1].Name {
			for _, j := range []int{i - 1, i} {
				if !strings.Contains(tools[j].Problem, "listed twice") {
					tools[j].Problem = strings.TrimPrefix(tools[j].Problem+"; listed twice", "; ")
				}
			}
		}
	}
	return tools
}

// initializeWire is the part of an initialize result the gateway reads.
type initializeWire struct {
	ServerInfo *struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"serverInfo"`
}

// decodeInitialize reads the server's name and version from its
// initialize result.
func decodeInitialize(raw []byte) (ServerInfo, error) {
	if raw == nil {
		return ServerInfo{}, fmt.Errorf("%w: no initialize result was read", ErrProtocol)
	}
	var w initializeWire
	if err := decodeEnvelopeFields(raw, &w); err != nil {
		return ServerInfo{}, fmt.Errorf("%w: initialize result: %s", ErrProtocol, hashing.Reason(err))
	}
	if w.ServerInfo == nil {
		return ServerInfo{}, fmt.Errorf("%w: initialize result has no serverInfo", ErrProtocol)
	}
	s := ServerInfo{Name: w.ServerInfo.Name, Version: w.ServerInfo.Version}
	if s.Name == "" || s.Version == "" || len(s.Name) > maxServerText || len(s.Version) > maxServerText {
		return ServerInfo{}, fmt.Errorf("%w: initialize result: serverInfo needs a name and a version of at most %d bytes each", ErrProtocol, maxServerText)
	}
	return s, nil
}
