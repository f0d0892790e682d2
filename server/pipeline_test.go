package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/groundgate/groundgate/server"
)

// openAPIDoc validates responses against the served OpenAPI document: the
// route, method and status must be documented and the body must match the
// schema of that response.
type openAPIDoc struct {
	paths    map[string]any
	compiler *jsonschema.Compiler
	cache    map[string]*jsonschema.Schema
}

func loadOpenAPIDoc(t *testing.T) *openAPIDoc {
	t.Helper()
	var doc struct {
		Paths map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(server.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(server.OpenAPI))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("openapi.json", inst); err != nil {
		t.Fatal(err)
	}
	return &openAPIDoc{paths: doc.Paths, compiler: c, cache: map[string]*jsonschema.Schema{}}
}

var pathParam = regexp.MustCompile(`\{[^}]+\}`)

func (d *openAPIDoc) check(t *testing.T, method, path string, r reply) {
	t.Helper()
	path, _, _ = strings.Cut(path, "?")
	tpl := ""
	for p := range d.paths {
		// A literal segment wins over a parameter, as in the router.
		re := "^" + pathParam.ReplaceAllString(p, `[^/]+`) + "$"
		if ok, _ := regexp.MatchString(re, path); ok && (tpl == "" || strings.Count(p, "{") < strings.Count(tpl, "{")) {
			tpl = p
		}
	}
	if tpl == "" {
		t.Errorf("%s %s: path not in openapi.json", method, path)
		return
	}
	op, ok := d.paths[tpl].(map[string]any)[strings.ToLower(method)].(map[string]any)
	if !ok {
		t.Errorf("%s %s: method not in openapi.json", method, tpl)
		return
	}
	status := fmt.Sprint(r.status)
	resp, ok := op["responses"].(map[string]any)[status].(map[string]any)
	if !ok {
		t.Errorf("%s %s: status %s not documented", method, tpl, status)
		return
	}
	ct, _, _ := strings.Cut(r.header.Get("Content-Type"), ";")
	if _, ok := resp["content"].(map[string]any)[ct]; !ok {
		t.Errorf("%s %s %s: content type %q not documented", method, tpl, status, ct)
		return
	}
	esc := strings.NewReplacer("~", "~0", "/", "~1")
	ptr := "openapi.json#/paths/" + esc.Replace(tpl) + "/" + strings.ToLower(method) + "/responses/" + status + "/content/" + esc.Replace(ct) + "/schema"
	sch, ok := d.cache[ptr]
	if !ok {
		var err error
		if sch, err = d.compiler.Compile(ptr); err != nil {
			t.Fatalf("compile %s: %v", ptr, err)
		}
		d.cache[ptr] = sch
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(r.body))
	if err != nil {
		t.Errorf("%s %s: body is not JSON: %v", method, path, err)
		return
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("%s %s %s: response does not match openapi.json: %v\n%.600s", method, tpl, status, err, r.body)
	}
}

// pipelineAPI is a real server whose every answer is checked against the
// OpenAPI document.
type pipelineAPI struct {
	*api
	doc *openAPIDoc
}

// call sends a JSON body (none when body is ""), checks the status and the
// document, and returns the decoded answer.
func (p pipelineAPI) call(method, path, body string, want int) map[string]any {
	p.t.Helper()
	var b []byte
	if body != "" {
		b = []byte(body)
	}
	r := p.do(method, path, b)
	p.doc.check(p.t, method, path, r)
	if r.status != want {
		p.t.Fatalf("%s %s: %d, want %d: %.600s", method, path, r.status, want, r.body)
	}
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		p.t.Fatalf("%s %s: %v: %.300s", method, path, err, r.body)
	}
	return m
}

// The example pipeline of SPEC §11: log returns, their z-score over a
// window (a list: two morphisms), clipped, sized to a volatility target
// against the data's own volatility.
func wtiPipeline(lo, hi float64) string {
	return fmt.Sprintf(`{"pipeline":[
 {"id":"r","capability":"dlog","inputs":["data"]},
 {"id":"z","capability":"wzs","params":{"window":[25,50]},"inputs":["r"]},
 {"id":"k","capability":"clip","params":{"lo":%g,"hi":%g},"inputs":["z"]},
 {"id":"out","capability":"SIZE_BY_VOL","params":{"target_vol":0.1},"inputs":["k","data"]}],
 "output":"out","metric":"SRP","data":"oil-spot/wti-daily.csv"}`, lo, hi)
}

// The same pipeline with one fault of form per repair rule.
const faultyPipeline = `{"pipeline":[
 {"id":"r","capability":"dlog","inputs":"data"},
 {"id":"z","capability":"wzs","params":{"windwo":[25,50]},"inputs":["r"]},
 {"id":"k","capability":"clip","params":{"lo":"-2","hi":2},"inputs":["z"]},
 {"id":"out","capabilty":"SIZE_BY_VOL","params":{"target_vol":0.1},"inputs":["k","data"]}],
 "output":"out","metric":"SRP","data":"oil-spot/wti-daily.csv"}`

func groundBody(request, discovery, extra string) string {
	return fmt.Sprintf(`{"request":%s,"discovery":%q%s}`, request, discovery, extra)
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// A pipeline over REST (SPEC §11): discovered from its terms, grounded
// as given, repaired, refused with repair off, executed in layers,
// replayed, diffed step by step; a dry run refuses it. Every answer
// matches openapi.json.
func TestPipelineOverREST(t *testing.T) {
	p := pipelineAPI{start(t, ""), loadOpenAPIDoc(t)}
	disc := p.call("POST", "/v1/discover", `{"terms":["dlog","wzs","clip","SIZE_BY_VOL","SRP"]}`, 200)["id"].(string)

	// As given: admitted, nothing repaired.
	clean := p.call("POST", "/v1/ground", groundBody(wtiPipeline(-2, 2), disc, ""), 200)
	req := clean["request"].(map[string]any)
	if _, ok := req["repairs"]; ok {
		t.Errorf("a valid pipeline was repaired: %v", req["repairs"])
	}
	if _, ok := req["family"]; ok {
		t.Errorf("a pipeline's record has a family: %v", req)
	}
	if d := clean["decision"].(map[string]any); d["admitted"] != true {
		t.Fatalf("not admitted: %v", d)
	}

	// Four faults of form: each repaired by its rule, the record says so.
	repaired := p.call("POST", "/v1/ground", groundBody(faultyPipeline, disc, ""), 200)
	rreq := repaired["request"].(map[string]any)
	var got []string
	for _, r := range rreq["repairs"].([]any) {
		r := r.(map[string]any)
		got = append(got, fmt.Sprintf("%v %v %v %s→%s", r["step"], r["rule"], r["field"], jsonString(r["from"]), jsonString(r["to"])))
	}
	want := []string{
		`r inputs_list inputs "data"→["data"]`,
		`z param_spelling params.windwo "windwo"→"window"`,
		`k string_to_number params.lo "-2"→-2`,
		`out field_spelling capabilty "capabilty"→"capability"`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("repairs:\n got %q\nwant %q", got, want)
	}
	delete(rreq, "repairs")
	if jsonString(rreq) != jsonString(req) {
		t.Errorf("the repaired request is not the clean one:\n%s\n%s", jsonString(rreq), jsonString(req))
	}
	if repaired["id"] == clean["id"] {
		t.Error("repairs are not hashed with the request: same grounding id")
	}
	p.call("GET", "/v1/groundings/"+repaired["id"].(string), "", 200)

	// Repair off: refused, every failure on a pipeline field.
	refused := p.call("POST", "/v1/ground", groundBody(faultyPipeline, disc, `,"repair":"none"`), 422)
	var fields []string
	for _, f := range refused["failures"].([]any) {
		fields = append(fields, f.(map[string]any)["field"].(string))
	}
	for _, f := range fields {
		if !strings.HasPrefix(f, "pipeline[") {
			t.Errorf("failure on %q, want a pipeline step field", f)
		}
	}
	for _, f := range []string{"pipeline[0].inputs", "pipeline[3].capabilty"} {
		if !slices.Contains(fields, f) {
			t.Errorf("no failure on %s: %q", f, fields)
		}
	}
	if refused["grounding"].(map[string]any)["decision"].(map[string]any)["admitted"] != false {
		t.Error("the refused record says admitted")
	}

	// Executed: steps in their layers, each morphism's steps run.
	fp := p.call("POST", "/v1/executions", fmt.Sprintf(`{"grounding":%q}`, clean["id"]), 201)
	if _, ok := fp["family"]; ok {
		t.Errorf("a pipeline's footprint names a family: %v", fp["family"])
	}
	var layers []string
	for _, s := range fp["steps"].([]any) {
		s := s.(map[string]any)
		layers = append(layers, fmt.Sprintf("%v@%v", s["id"], s["layer"]))
	}
	if want := []string{"r@1", "z@2", "k@3", "out@4"}; !slices.Equal(layers, want) {
		t.Errorf("steps and layers %q, want %q", layers, want)
	}
	ms := fp["morphisms"].([]any)
	if len(ms) != 2 {
		t.Fatalf("%d morphisms, want 2 (window 25, 50)", len(ms))
	}
	for i, m := range ms {
		m := m.(map[string]any)
		if w := m["params"].(map[string]any)["z.window"]; w != []float64{25, 50}[i] {
			t.Errorf("morphism %d: z.window %v", i, w)
		}
		runs := m["steps"].([]any)
		if len(runs) != 4 {
			t.Fatalf("morphism %d: %d step runs, want 4", i, len(runs))
		}
		for _, r := range runs {
			if r.(map[string]any)["output"] == nil {
				t.Errorf("morphism %d: step %v ran but has no output digest", i, r.(map[string]any)["id"])
			}
		}
	}
	for d, plan := range fp["plans"].(map[string]any) {
		plan := plan.(map[string]any)
		if _, ok := plan["family"]; ok || len(plan["steps"].([]any)) != 4 {
			t.Errorf("plan %s: family %v, steps %v", d, plan["family"], plan["steps"])
		}
	}
	hash := fp["hash"].(string)
	p.call("GET", "/v1/executions/"+hash, "", 200)

	// Replayed: every layer and step reproduced.
	rep := p.call("POST", "/v1/executions/"+hash+"/replay", "", 200)
	if rep["match"] != true || rep["steps"] != nil {
		t.Errorf("replay: match %v, steps %v", rep["match"], rep["steps"])
	}

	// The repaired grounding runs the same steps: only the request layer
	// (which hashes the repairs) differs, and no step.
	fr := p.call("POST", "/v1/executions", fmt.Sprintf(`{"grounding":%q}`, repaired["id"]), 201)
	d := p.call("GET", "/v1/diff/"+hash+"/"+fr["hash"].(string), "", 200)
	if changed := changedLayers(d); d["steps"] != nil || !slices.Equal(changed, []string{"request"}) {
		t.Errorf("clean vs repaired: layers %q, steps %v", changed, d["steps"])
	}

	// Another clip: the diff names the clip step and what reads it, in
	// both morphisms, and not the steps upstream.
	g2 := p.call("POST", "/v1/ground", groundBody(wtiPipeline(-1, 1), disc, ""), 200)
	f2 := p.call("POST", "/v1/executions", fmt.Sprintf(`{"grounding":%q}`, g2["id"]), 201)
	d = p.call("GET", "/v1/diff/"+hash+"/"+f2["hash"].(string), "", 200)
	var steps []string
	for _, s := range d["steps"].([]any) {
		s := s.(map[string]any)
		steps = append(steps, fmt.Sprintf("%v:%v@%v%v", s["morphism"], s["step"], s["layer"], s["what"]))
	}
	if want := []string{"0:k@3[plan output]", "0:out@4[plan output]", "1:k@3[plan output]", "1:out@4[plan output]"}; !slices.Equal(steps, want) {
		t.Errorf("diff steps %q, want %q", steps, want)
	}

	// A dry run takes family requests only.
	dry := p.call("POST", "/v1/contracts/check", fmt.Sprintf(`{"request":%s}`, wtiPipeline(-2, 2)), 422)
	if dry["type"] != "urn:groundgate:problem:not-runnable" {
		t.Errorf("dry run of a pipeline: %v", dry["type"])
	}
	if strings.Contains(p.logs.String(), "level=ERROR") {
		t.Errorf("server errors logged:\n%s", p.logs)
	}
}

func changedLayers(diff map[string]any) []string {
	var out []string
	for _, l := range diff["layers"].([]any) {
		if l := l.(map[string]any); l["same"] != true {
			out = append(out, l["layer"].(string))
		}
	}
	return out
}

// steps builds a pipeline body of n steps s0…s(n-1); step i's inputs and
// params come from in(i) and params(i).
func steps(n int, in func(i int) string, params func(i int) string) string {
	var b strings.Builder
	b.WriteString(`{"pipeline":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"s%d","capability":"dlog","params":%s,"inputs":%s}`, i, params(i), in(i))
	}
	b.WriteString(`],"output":"s0","metric":"SRP","data":"oil-spot/wti-daily.csv"}`)
	return b.String()
}

// Hostile pipeline bodies are refused as 4xx problems, naming the field,
// quickly, never a 5xx; the answers match openapi.json.
func TestHostilePipelinesAre4xx(t *testing.T) {
	p := pipelineAPI{start(t, ""), loadOpenAPIDoc(t)}
	disc := p.call("POST", "/v1/discover", `{"terms":["dlog","wzs","clip","SIZE_BY_VOL","SRP"]}`, 200)["id"].(string)
	data := func(int) string { return `["data"]` }
	none := func(int) string { return `{}` }
	list := func(n int) string {
		vs := make([]string, n)
		for i := range vs {
			vs[i] = fmt.Sprint(i + 2)
		}
		return "[" + strings.Join(vs, ",") + "]"
	}
	chain := func(n int) func(int) string {
		return func(i int) string { return fmt.Sprintf(`["s%d"]`, (i+1)%n) }
	}
	hugeID := strings.Repeat("a", 1<<20)
	bigID := strings.Repeat("a", 900<<10)
	nested := strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000)
	cases := []struct {
		name, request, extra string
		status               int
		field, detail        string
	}{
		{"33 steps", steps(33, data, none), "", 422, "pipeline", "33 steps, at most 32"},
		{"1000-step cycle", steps(1000, chain(1000), none), "", 422, "pipeline", "1000 steps, at most 32"},
		{"32-step cycle", steps(32, chain(32), none), "", 422, "", "cycle"},
		{"grid over 4096 across steps", `{"pipeline":[{"id":"r","capability":"dlog","inputs":["data"]},` +
			`{"id":"z","capability":"wzs","params":{"window":` + list(64) + `},"inputs":["r"]},` +
			`{"id":"k","capability":"clip","params":{"lo":` + list(64) + `,"hi":[1,2]},"inputs":["z"]},` +
			`{"id":"out","capability":"SIZE_BY_VOL","inputs":["k","data"]}],"output":"out","metric":"SRP","data":"oil-spot/wti-daily.csv"}`,
			"", 422, "pipeline", "more than 4096"},
		{"5 inputs", steps(1, func(int) string { return `["data","data","data","data","data"]` }, none), "", 422, "pipeline[0].inputs", "5 inputs, at most 4"},
		{"nested params", steps(1, data, func(int) string { return `{"window":` + nested + `}` }), "", 400, "", ""},
		{"nested list param", steps(1, data, func(int) string { return `{"window":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}` }), "", 422, "pipeline[0].params.window", ""},
		{"1 MiB id", `{"pipeline":[{"id":"` + hugeID + `","capability":"dlog","inputs":["data"]}],"output":"x","metric":"SRP","data":"d"}`, "", 413, "", ""},
		{"900 KiB id", `{"pipeline":[{"id":"` + bigID + `","capability":"dlog","inputs":["data"]}],"output":"x","metric":"SRP","data":"d"}`, "", 422, "pipeline[0].id", ""},
		{"repair maybe", wtiPipeline(-2, 2), `,"repair":"maybe"`, 400, "", `repair "maybe"`},
		{"repair number", wtiPipeline(-2, 2), `,"repair":1`, 400, "", ""},
		{"non-object steps", `{"pipeline":[1,"x",null,[]],"output":"x","metric":"SRP","data":"d"}`, "", 422, "pipeline[1]", "a step is an object"},
		{"null pipeline", `{"pipeline":null,"output":"x","metric":"SRP","data":"d"}`, "", 422, "pipeline", "no steps"},
		{"pipeline and family", `{"family":"MOM_WZS","pipeline":[],"output":"x","metric":"SRP","data":"d"}`, "", 422, "family", "not both"},
		{"pipeline params", `{"pipeline":[{"id":"r","capability":"dlog","inputs":["data"]}],"params":{"window":5},"output":"r","metric":"SRP","data":"d"}`, "", 422, "params", "belong to its steps"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := pipelineAPI{&api{t: t, m: p.m, addr: p.addr, base: p.base, logs: p.logs}, p.doc}
			began := time.Now()
			r := p.do("POST", "/v1/ground", []byte(groundBody(c.request, disc, c.extra)))
			took := time.Since(began)
			p.doc.check(t, "POST", "/v1/ground", r)
			if r.status != c.status {
				t.Fatalf("%d, want %d: %.400s", r.status, c.status, r.body)
			}
			if took > 10*time.Second {
				t.Errorf("took %v", took)
			}
			prob := r.problem(t)
			if !strings.Contains(fmt.Sprint(prob["detail"], prob["failures"]), c.detail) {
				t.Errorf("detail %q, failures %v: want %q", prob["detail"], prob["failures"], c.detail)
			}
			if c.field == "" {
				return
			}
			var fields []string
			for _, f := range prob["failures"].([]any) {
				fields = append(fields, f.(map[string]any)["field"].(string))
			}
			if !slices.Contains(fields, c.field) {
				t.Errorf("failures on %q, want one on %q", fields, c.field)
			}
		})
	}
	if strings.Contains(p.logs.String(), "level=ERROR") {
		t.Errorf("hostile input was logged as a server error:\n%s", p.logs)
	}
}
