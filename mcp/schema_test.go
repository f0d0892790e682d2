package mcp_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestToolsListSchemaBytes: the tools' schemas are encoded once, at start,
// and tools/list must show them as the SDK showed the schema maps it
// encoded itself on every request: keys sorted, no HTML escapes (a
// contract's "data.rows > params.window" stays so), compact.
func TestToolsListSchemaBytes(t *testing.T) {
	base := httpServer(t, token)
	req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("tools/list: %d %v %.300s", resp.StatusCode, err, body)
	}
	if !bytes.Contains(body, []byte(`data.rows > params.window`)) || bytes.Contains(body, []byte(`\u003e`)) {
		t.Errorf("tools/list escapes HTML characters in schemas")
	}
	var list struct {
		Result struct {
			Tools []struct {
				Name         string          `json:"name"`
				InputSchema  json.RawMessage `json:"inputSchema"`
				OutputSchema json.RawMessage `json:"outputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Result.Tools) != 7 {
		t.Fatalf("%d tools, want 7", len(list.Result.Tools))
	}
	for _, tool := range list.Result.Tools {
		for what, raw := range map[string]json.RawMessage{"input": tool.InputSchema, "output": tool.OutputSchema} {
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatalf("%s %s schema: %v", tool.Name, what, err)
			}
			// encoding/json writes a map's keys sorted.
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(v); err != nil {
				t.Fatal(err)
			}
			if got := string(raw); got != strings.TrimSuffix(want.String(), "\n") {
				t.Errorf("%s %s schema is not the map's encoding:\n got %.200s\nwant %.200s", tool.Name, what, got, want.String())
			}
		}
	}
}
