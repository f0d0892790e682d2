package server_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/gateway/upstreamtest"
)

// walkPages follows next from path and returns the items at key of every
// page and the number of pages; each answer is checked against
// openapi.json.
func walkPages(t *testing.T, a *api, doc *openAPIDoc, path, key string, between func()) (items []any, pages int) {
	t.Helper()
	for path != "" {
		r := a.do("GET", path, nil)
		doc.check(t, "GET", path, r)
		var page map[string]any
		if r.status != 200 || json.Unmarshal(r.body, &page) != nil {
			t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
		items = append(items, page[key].([]any)...)
		path, _ = page["next"].(string)
		pages++
		if between != nil {
			between()
		}
	}
	return items, pages
}

// wantMalformed asks path with each query and wants a 400 problem as
// openapi.json describes it.
func wantMalformed(t *testing.T, a *api, doc *openAPIDoc, path string, queries ...string) {
	t.Helper()
	for _, q := range queries {
		r := a.do("GET", path+"?"+q, nil)
		if r.status != 400 {
			t.Errorf("GET %s?%s: %d, want 400", path, q, r.status)
			continue
		}
		doc.check(t, "GET", path, r)
	}
}

// GET /v1/registry pages its entries in name order with limit and the
// after cursor; the pages stay on the first page's version while another
// is written, and without limit or after the answer is the whole version,
// as before pagination.
func TestRegistryPagination(t *testing.T) {
	a := start(t, token)
	doc := loadOpenAPIDoc(t)
	whole := a.json("GET", "/v1/registry", "", 200)
	want := whole["capabilities"].([]any)
	if whole["next"] != nil || len(want) < 3 {
		t.Fatalf("GET /v1/registry: %d entries, next %v; want the whole list and no next", len(want), whole["next"])
	}
	limit := (len(want) + 2) / 3 // three pages, the last maybe shorter
	put := 0
	got, pages := walkPages(t, a, doc, fmt.Sprintf("/v1/registry?limit=%d", limit), "capabilities", func() {
		// A new version between pages: the next pages are still the first's.
		body := strings.Replace(entry, "Nine-day mean absolute log move.", fmt.Sprintf("Nine-day mean absolute log move, take %d.", put), 1)
		put++
		if r := a.do("PUT", "/v1/registry/capabilities/CHOP9", []byte(body), "Authorization", "Bearer "+token); r.status != 200 && r.status != 201 {
			t.Fatalf("PUT: %d %s", r.status, r.body)
		}
	})
	if pages != 3 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%d pages of %d gave %d entries, want 3 pages giving the %d of version %v", pages, limit, len(got), len(want), whole["version"])
	}
	// A page names its version and hash, like the whole answer.
	first := a.json("GET", "/v1/registry?limit=1", "", 200)
	now := a.json("GET", "/v1/registry", "", 200)
	if first["version"] != now["version"] || first["registry"] != now["registry"] || len(first["capabilities"].([]any)) != 1 || first["next"] == nil {
		t.Errorf("?limit=1: version %v registry %v next %v; want the current version's first entry and a next", first["version"], first["registry"], first["next"])
	}
	// after alone pages with the default limit, from past the cursor.
	last := want[len(want)-1].(map[string]any)["name"].(string)
	if r := a.json("GET", "/v1/registry?after="+last, "", 200); len(r["capabilities"].([]any)) != 0 || r["next"] != nil {
		t.Errorf("?after=%s: %v", last, r)
	}
	wantMalformed(t, a, doc, "/v1/registry", "limit=0", "limit=1001", "limit=x", "version=x", "version=0&limit=1",
		"limit=2&limit=3", "Limit=2", "limt=2", "after=%ff", "after=a&after=b")
	if r := a.do("GET", "/v1/registry?version=999&limit=1", nil); r.status != 404 {
		t.Errorf("?version=999: %d, want 404", r.status)
	}
}

// GET /v1/upstreams pages in name order the same way.
func TestUpstreamsPagination(t *testing.T) {
	a := start(t, token)
	doc := loadOpenAPIDoc(t)
	bin := upstreamtest.Build(t)
	state := filepath.Join(t.TempDir(), "state.json")
	if err := os.WriteFile(state, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{"transport": "stdio", "command": []string{bin, "--state", state}})
	for _, name := range []string{"delta", "alpha", "echo", "charlie", "bravo"} {
		if r := a.do("PUT", "/v1/upstreams/"+name, cfg, "Authorization", "Bearer "+token); r.status != 201 {
			t.Fatalf("PUT %s: %d %s", name, r.status, r.body)
		}
	}
	got, pages := walkPages(t, a, doc, "/v1/upstreams?limit=2", "upstreams", nil)
	var names []string
	for _, u := range got {
		names = append(names, u.(map[string]any)["name"].(string))
	}
	if pages != 3 || strings.Join(names, " ") != "alpha bravo charlie delta echo" {
		t.Fatalf("%d pages: %v; want 3 pages of the five in name order", pages, names)
	}
	if whole := a.json("GET", "/v1/upstreams", "", 200); len(whole["upstreams"].([]any)) != 5 || whole["next"] != nil {
		t.Errorf("GET /v1/upstreams: %d upstreams, next %v; want all five and no next", len(whole["upstreams"].([]any)), whole["next"])
	}
	wantMalformed(t, a, doc, "/v1/upstreams", "limit=0", "limit=x", "limit=1&limit=1", "before=1", "%ff=1")
}
