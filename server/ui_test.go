package server_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/ui"
)

// The UI is served from the embedded build under a strict CSP, with the
// right content types, hashed assets cached for good and index.html
// revalidated, and index.html for every app path (deep links).
func TestUIServed(t *testing.T) {
	a := start(t, token)
	index := a.do("GET", "/ui/", nil)
	if index.status != 200 || index.header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET /ui/: %d %q", index.status, index.header.Get("Content-Type"))
	}
	csp := index.header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'", "object-src 'none'", "frame-ancestors 'none'", "base-uri 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("CSP allows inline code: %q", csp)
	}
	if index.header.Get("Cache-Control") != "no-cache" || index.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("index.html: Cache-Control %q, X-Content-Type-Options %q", index.header.Get("Cache-Control"), index.header.Get("X-Content-Type-Options"))
	}
	// No inline script or style in the page: every script is a file.
	body := string(index.body)
	if regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`).MatchString(body) || strings.Contains(body, "<style") || strings.Contains(body, " style=") {
		t.Errorf("index.html has inline script or style:\n%s", body)
	}
	assets := regexp.MustCompile(`/ui/assets/[^"]+`).FindAllString(body, -1)
	if len(assets) < 2 {
		t.Fatalf("index.html names %d assets, want the script and the stylesheet", len(assets))
	}
	types := map[string]string{".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
	for _, p := range assets {
		r := a.do("GET", p, nil)
		ext := p[strings.LastIndex(p, "."):]
		if r.status != 200 || r.header.Get("Content-Type") != types[ext] {
			t.Errorf("GET %s: %d %q, want 200 %q", p, r.status, r.header.Get("Content-Type"), types[ext])
		}
		if cc := r.header.Get("Cache-Control"); cc != "public, max-age=31536000, immutable" {
			t.Errorf("GET %s: Cache-Control %q, want immutable", p, cc)
		}
		want, err := fs.ReadFile(ui.Dist, strings.TrimPrefix(p, "/ui/"))
		if err != nil || string(want) != string(r.body) {
			t.Errorf("GET %s: not the embedded file (%v)", p, err)
		}
		// Revalidation by ETag: 304, no body.
		again := a.do("GET", p, nil, "If-None-Match", r.header.Get("ETag"))
		if again.status != http.StatusNotModified || len(again.body) != 0 {
			t.Errorf("GET %s with its ETag: %d, %d bytes, want 304 and none", p, again.status, len(again.body))
		}
	}
	// Deep links load the app; an unknown asset is a 404 problem.
	for _, p := range []string{"/ui/executions/sha256:" + strings.Repeat("ab", 32), "/ui/registry/capabilities/MOM_WZS", "/ui/sessions"} {
		if r := a.do("GET", p, nil); r.status != 200 || string(r.body) != body {
			t.Errorf("GET %s: %d, want index.html", p, r.status)
		}
	}
	if r := a.do("GET", "/ui/assets/nope.js", nil); r.status != 404 {
		t.Errorf("GET an unknown asset: %d, want 404", r.status)
	} else {
		r.problem(t)
	}
	// The API keeps its own headers: no CSP there.
	if r := a.do("GET", "/healthz", nil); r.header.Get("Content-Security-Policy") != "" {
		t.Errorf("/healthz has a CSP: the UI's headers leaked to the API")
	}
}

// GET /v1/registry/history pages with limit and the before cursor: the
// pages, followed by next, give every version once, newest first.
func TestHistoryPagination(t *testing.T) {
	a := start(t, token)
	doc := loadOpenAPIDoc(t)
	for i := range 5 {
		body := strings.Replace(entry, "Nine-day mean absolute log move.", fmt.Sprintf("Nine-day mean absolute log move, take %d.", i), 1)
		if r := a.do("PUT", "/v1/registry/capabilities/CHOP9", []byte(body), "Authorization", "Bearer "+token); r.status != 200 && r.status != 201 {
			t.Fatalf("PUT: %d %s", r.status, r.body)
		}
	}
	all := a.json("GET", "/v1/registry/history", "", 200)
	want := all["versions"].([]any)
	if len(want) != 6 || all["next"] != nil {
		t.Fatalf("history: %d versions, next %v; want 6 and no next", len(want), all["next"])
	}
	got, pages := walkPages(t, a, doc, "/v1/registry/history?limit=4", "versions", nil)
	if pages != 2 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%d pages gave %d versions, want 2 pages giving the 6 of one request", pages, len(got))
	}
	wantMalformed(t, a, doc, "/v1/registry/history", "limit=0", "limit=1001", "limit=x", "before=-1", "before=x", "before=1&before=2", "after=x", "LIMIT=1")
}

// A morphism's P&L, as the equity curve needs it: one value per date,
// null where NA; 404 for an index past the grid.
func TestMorphismPnL(t *testing.T) {
	a := start(t, token)
	doc := loadOpenAPIDoc(t)
	tr := a.execute()
	fp := a.json("GET", "/v1/executions/"+tr.execution, "", 200)
	path := "/v1/executions/" + tr.execution + "/morphisms/1/pnl"
	r := a.do("GET", path, nil)
	doc.check(t, "GET", path, r)
	var p struct {
		Morphism string     `json:"morphism"`
		Dates    []string   `json:"dates"`
		PnL      []*float64 `json:"pnl"`
	}
	if r.status != 200 || json.Unmarshal(r.body, &p) != nil {
		t.Fatalf("GET %s: %d %s", path, r.status, r.body)
	}
	m := fp["morphisms"].([]any)[1].(map[string]any)
	data := fp["data"].(map[string]any)
	if p.Morphism != m["hash"] || len(p.Dates) != int(data["rows"].(float64)) || len(p.PnL) != len(p.Dates) {
		t.Fatalf("morphism %s, %d dates, %d values; want %s and %v rows", p.Morphism, len(p.Dates), len(p.PnL), m["hash"], data["rows"])
	}
	if p.Dates[0] != data["from"] || p.Dates[len(p.Dates)-1] != data["to"] {
		t.Errorf("dates %s…%s, data %v…%v", p.Dates[0], p.Dates[len(p.Dates)-1], data["from"], data["to"])
	}
	defined := 0
	for _, v := range p.PnL {
		if v != nil {
			defined++
		}
	}
	if p.PnL[0] != nil || defined < len(p.PnL)/2 {
		t.Errorf("%d of %d values defined, first %v: want NA before the window fills, then values", defined, len(p.PnL), p.PnL[0])
	}
	// A morphism the risk filter rejected (leverage over the bound of 10)
	// never ran: it has no P&L.
	g := a.json("POST", "/v1/ground", fmt.Sprintf(`{"request":{"family":"MOM_WZS","metric":"SRP","params":{"window":25,"leverage":[1,12]},"data":"oil-spot/wti-daily.csv"},"discovery":%q}`, tr.discovery), 200)
	rej := a.json("POST", "/v1/executions", fmt.Sprintf(`{"grounding":%q}`, g["id"]), 201)["hash"].(string)
	if r := a.do("GET", "/v1/executions/"+rej+"/morphisms/0/pnl", nil); r.status != 200 {
		t.Errorf("the admitted morphism's P&L: %d %s", r.status, r.body)
	}
	for _, c := range []struct {
		path string
		want int
	}{
		{"/v1/executions/" + rej + "/morphisms/1/pnl", 404},
		{"/v1/executions/" + tr.execution + "/morphisms/2/pnl", 404},
		{"/v1/executions/" + tr.execution + "/morphisms/-1/pnl", 400},
		{"/v1/executions/" + tr.execution + "/morphisms/x/pnl", 400},
		{"/v1/executions/sha256:" + strings.Repeat("0", 64) + "/morphisms/0/pnl", 404},
	} {
		r := a.do("GET", c.path, nil)
		if r.status != c.want {
			t.Errorf("GET %s: %d, want %d", c.path, r.status, c.want)
		}
		doc.check(t, "GET", c.path, r)
	}
}
