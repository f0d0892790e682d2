package server_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/groundgate/groundgate/gateway/upstreamtest"
	"github.com/groundgate/groundgate/server"
)

// The gateway's routes over a real server and a real upstream
// (cmd/mcp-testupstream over stdio): every answer, success or problem,
// matches openapi.json, and the document's examples are such answers.
func TestGatewayRoutesMatchOpenAPI(t *testing.T) {
	a := start(t, token)
	doc := loadOpenAPIDoc(t)
	bin := upstreamtest.Build(t)
	auth := []string{"Authorization", "Bearer " + token}
	send := func(method, path, body string, want int, hdr ...string) reply {
		t.Helper()
		var b []byte
		if body != "" {
			b = []byte(body)
		}
		r := a.do(method, path, b, hdr...)
		if r.status != want {
			t.Fatalf("%s %s: %d, want %d: %.600s", method, path, r.status, want, r.body)
		}
		if method != "HEAD" {
			doc.check(t, method, path, r)
		}
		return r
	}
	field := func(r reply, ptr ...string) string {
		t.Helper()
		var v any
		if err := json.Unmarshal(r.body, &v); err != nil {
			t.Fatal(err)
		}
		for _, k := range ptr {
			v = v.(map[string]any)[k]
		}
		return v.(string)
	}
	state := filepath.Join(t.TempDir(), "state.json")
	if err := os.WriteFile(state, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{"transport": "stdio", "command": []string{bin, "--state", state, "--state-poll", "50ms"}, "ground": "writes"})

	send("GET", "/v1/upstreams", "", 200)
	send("GET", "/v1/upstreams/shop", "", 404)
	send("PUT", "/v1/upstreams/shop", string(cfg), 401)
	send("PUT", "/v1/upstreams/shop", `{"transport":"smoke signals"}`, 400, auth...)
	send("PUT", "/v1/upstreams/Shop", string(cfg), 400, auth...)
	send("PUT", "/v1/upstreams/shop", string(cfg), 201, auth...)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(string(a.do("GET", "/v1/upstreams/shop", nil).body), `"connected":true`) {
		if time.Now().After(deadline) {
			t.Fatal("the upstream did not connect within 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	send("PUT", "/v1/upstreams/shop", string(cfg), 200, auth...)
	send("GET", "/v1/upstreams/shop", "", 200)
	plan := send("POST", "/v1/upstreams/shop/sync", `{"apply":false}`, 200, auth...)
	sameAsExample(t, "/v1/upstreams/{name}/sync", "post", "200", plan.body)
	send("POST", "/v1/upstreams/shop/sync", `{"apply":true,"overlay":{"nope":{}}}`, 422, auth...)
	send("POST", "/v1/upstreams/nope/sync", `{"apply":true}`, 404, auth...)
	send("POST", "/v1/upstreams/shop/sync", `{"apply":true,"overlay":{"put_item":{"disc":{"aliases":["store an item"]}}}}`, 200, auth...)
	send("GET", "/v1/upstreams", "", 200)

	d := send("POST", "/v1/discover", `{"prompt":"please store an item called apples"}`, 200)
	put := send("POST", "/v1/calls", fmt.Sprintf(`{"tool":"shop.put_item","arguments":{"id":"apples","value":"12"},"discovery":%q}`, field(d, "id")), 200, auth...)
	send("POST", "/v1/calls", fmt.Sprintf(`{"tool":"shop.delete_all","arguments":{},"discovery":%q}`, field(d, "id")), 422, auth...)
	send("POST", "/v1/calls", `{"tool":"shop.put_item","arguments":{"id":7}}`, 422, auth...)
	send("POST", "/v1/calls", `{"tool":"shop.get_item","arguments":{"id":"apples"}}`, 401)
	get := send("POST", "/v1/calls", `{"tool":"shop.get_item","arguments":{"id":"apples"}}`, 200, auth...)
	get2 := send("POST", "/v1/calls", `{"tool":"shop.get_item","arguments":{"id":"pears"}}`, 200, auth...)
	send("POST", "/v1/calls", `{"tool":"shop.get_item","arguments":{"id":"apples"},"discovery":"sha256:x"}`, 400, auth...)
	sameAsExample(t, "/v1/calls", "post", "200", get.body)
	h, hp, h2 := field(get, "call", "hash"), field(put, "call", "hash"), field(get2, "call", "hash")
	sameAsExample(t, "/v1/calls/{hash}", "get", "200", send("GET", "/v1/calls/"+h, "", 200, auth...).body)
	send("HEAD", "/v1/calls/"+h, "", 200, auth...)
	send("GET", "/v1/calls/"+h, "", 401)
	send("GET", "/v1/calls/sha256:"+strings.Repeat("0", 64), "", 404, auth...)
	send("GET", "/v1/calls/sha256:0", "", 400, auth...)
	sameAsExample(t, "/v1/calls/{hash}/replay", "post", "200", send("POST", "/v1/calls/"+h+"/replay", "", 200, auth...).body)
	send("POST", "/v1/calls/"+hp+"/replay", "", 409, auth...)
	send("GET", "/v1/calls/"+h+"/attestation", "", 200, auth...)
	sameAsExample(t, "/v1/calls/{a}/diff/{b}", "get", "200", send("GET", "/v1/calls/"+h+"/diff/"+h2, "", 200, auth...).body)
	send("GET", "/v1/calls/"+h+"/diff/"+h, "", 200, auth...)
	send("GET", "/v1/calls/"+h+"/diff/"+"sha256:"+strings.Repeat("0", 64), "", 404, auth...)
}

// sameAsExample fails unless body is, as JSON, the example openapi.json
// gives for the response: the gateway's examples are real answers (the
// walk-through of docs/gateway.md on a fresh server).
func sameAsExample(t *testing.T, path, method, status string, body []byte) {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	var op struct {
		Responses map[string]struct {
			Content map[string]struct {
				Example json.RawMessage `json:"example"`
			} `json:"content"`
		} `json:"responses"`
	}
	if err := json.Unmarshal(server.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(doc.Paths[path][method], &op); err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	ex := op.Responses[status].Content["application/json"].Example
	var want, got any
	if err := json.Unmarshal(ex, &want); err != nil {
		t.Fatalf("%s %s %s: example: %v", method, path, status, err)
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s %s %s: the example is not the real answer\nexample: %s\nreal:    %s", method, path, status, ex, body)
	}
}

// Every route the server answers is an operation of openapi.json, and every
// operation of openapi.json is a route: a new route cannot ship
// undocumented, nor a documented one disappear. HEAD mirrors GET, and /mcp
// is MCP, not REST (docs/api.md).
func TestOpenAPICoversEveryRoute(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(server.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for p, item := range doc.Paths {
		for m := range item {
			if m != "parameters" {
				documented[strings.ToUpper(m)+" "+p] = true
			}
		}
	}
	param := regexp.MustCompile(`:([A-Za-z_]+)`)
	routed := map[string]bool{}
	s := server.New(server.Deps{}, server.Config{})
	s.MountMCP(http.NotFoundHandler(), 1<<20)
	for _, r := range s.Echo().Routes() {
		if r.Method == http.MethodHead || r.Path == server.MCPPath || !strings.HasPrefix(r.Path, "/") || strings.Contains(r.Path, "*") {
			continue
		}
		routed[r.Method+" "+param.ReplaceAllString(r.Path, "{$1}")] = true
	}
	for _, r := range slices.Sorted(maps.Keys(routed)) {
		if !documented[r] {
			t.Errorf("%s is routed but not in openapi.json", r)
		}
	}
	for _, o := range slices.Sorted(maps.Keys(documented)) {
		if !routed[o] {
			t.Errorf("%s is in openapi.json but not routed", o)
		}
	}
}
