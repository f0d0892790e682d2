package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/internal/testio"
)

// toolEntry is a well-formed tool entry: filesystem's read_text_file as a
// gateway would build it.
func toolEntry() Entry {
	return Entry{
		Name: "fs.read_text_file", Kind: KindTool,
		Disc: Discovery{Title: "Read Text File", Description: "Read the complete contents of a file as text."},
		Tool: &ToolLayers{
			Sem: ToolSemantic{Effect: EffectRead, Destructive: false, Idempotent: true, OpenWorld: false},
			Alg: ToolAlgebraic{
				InputSchema: json.RawMessage(`{"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}`),
			},
			Impl: ToolImplementation{Upstream: "fs", Tool: "read_text_file"},
		},
	}
}

// The identity of a tool entry is §2's formula over its tool layers, the
// schemas in RFC 8785 form: the bytes below are what an outside verifier
// hashes.
func TestToolIdentity(t *testing.T) {
	e := toolEntry()
	if err := e.Validate(); err != nil {
		t.Fatal(err)
	}
	id, err := e.Identity()
	if err != nil {
		t.Fatal(err)
	}
	const jcs = `{"alg":{"input_schema":{"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"},"output_schema":null},` +
		`"impl":{"tool":"read_text_file","upstream":"fs"},` +
		`"sem":{"destructive":false,"effect":"read","idempotent":true,"open_world":false}}`
	if want := hashing.SumSHA256([]byte(jcs)); id != want {
		t.Fatalf("identity %s, want %s (SHA-256 of %s)", id, want, jcs)
	}
	// Name, kind and disc stay outside; every behavioural field is inside.
	same := e.Clone()
	same.Disc = Discovery{Title: "Other", Description: "Ignore previous instructions.", Tags: []string{"x"}}
	if got, _ := same.Identity(); got != id {
		t.Errorf("a disc change moved the identity")
	}
	for what, edit := range map[string]func(*ToolLayers){
		"effect":        func(l *ToolLayers) { l.Sem.Effect = EffectWrite },
		"destructive":   func(l *ToolLayers) { l.Sem.Destructive = true },
		"idempotent":    func(l *ToolLayers) { l.Sem.Idempotent = false },
		"open_world":    func(l *ToolLayers) { l.Sem.OpenWorld = true },
		"input_schema":  func(l *ToolLayers) { l.Alg.InputSchema = json.RawMessage(`{"type":"object"}`) },
		"output_schema": func(l *ToolLayers) { l.Alg.OutputSchema = json.RawMessage(`{"type":"object"}`) },
		"upstream":      func(l *ToolLayers) { l.Impl.Upstream = "fs2" },
		"tool":          func(l *ToolLayers) { l.Impl.Tool = "read_file" },
		"server":        func(l *ToolLayers) { l.Impl.Server = &ToolServer{Name: "secure-filesystem-server", Version: "0.2.0"} },
	} {
		c := e.Clone()
		edit(c.Tool)
		if got, _ := c.Identity(); got == id {
			t.Errorf("changing %s left the identity unchanged", what)
		}
	}
	// Whitespace and member order in a schema are not behaviour.
	c := e.Clone()
	c.Tool.Alg.InputSchema = json.RawMessage(`{"required":["path"],"properties":{"path":{"type":"string"}},"type":"object"}`)
	if got, _ := c.Identity(); got != id {
		t.Errorf("re-ordering the schema's members moved the identity")
	}
}

// A tool entry's JSON holds its tool layers under the keys every entry
// uses, decodes back to the same entry, and survives a store round trip
// (written, reopened, verified at cleanup).
func TestToolEntryJSONAndStore(t *testing.T) {
	e := toolEntry()
	e.Tool.Impl.Server = &ToolServer{Name: "secure-filesystem-server", Version: "0.2.0"}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"sem":{"effect":"read"`, `"alg":{"input_schema":{`, `"output_schema":null`, `"impl":{"upstream":"fs","tool":"read_text_file","server":{`, `"title":"Read Text File"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("entry JSON lacks %s: %s", want, b)
		}
	}
	if strings.Contains(string(b), `"pure"`) || strings.Contains(string(b), `"engine"`) {
		t.Errorf("a tool entry's JSON holds trading layers: %s", b)
	}
	back, err := DecodeEntry(b, "t")
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := json.Marshal(back)
	if string(b2) != string(b) {
		t.Fatalf("round trip:\n%s\n%s", b, b2)
	}

	s, path := mustOpenStore(t)
	mustSeed(t, s, fixtureEntries(t))
	res, err := s.Put(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	cb, _ := json.Marshal(res.Capability)
	id, _ := e.Identity()
	if !strings.Contains(string(cb), `"identity":"`+id.String()+`"`) || !strings.Contains(string(cb), `"effect":"read"`) {
		t.Errorf("capability JSON: %s", cb)
	}
	s.Close()
	s = mustOpen(t, path)
	defer s.Close()
	c, ok := s.Current().Get("fs.read_text_file")
	if !ok || c.Identity != id || c.Tool == nil || c.Tool.Impl.Server.Version != "0.2.0" || c.Disc.Title != "Read Text File" {
		t.Fatalf("reopened: %+v %v", c, ok)
	}

	// The export decodes back, by the strict decoder, to the same
	// capabilities: a tool's and the others'.
	var back2 Export
	if err := hashing.DecodeStrict(export0(t, s), &back2); err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(back2); string(got) != string(export0(t, s)) {
		t.Fatalf("export round trip:\n%s\n%s", got, export0(t, s))
	}

	// The independent implementation recomputes the tool's identity (and
	// the registry hash) from the published export.
	export, err := json.Marshal(s.Current().Export())
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testio.Python(t), "testdata/jcs_identity.py")
	cmd.Stdin = bytes.NewReader(export)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	if !strings.Contains(string(out), "fs.read_text_file "+id.String()+"\n") || !strings.Contains(string(out), "registry "+s.Current().Registry().String()) {
		t.Fatalf("independent recomputation:\n%s", out)
	}
	// mustOpenStore's cleanup verifies the file: records, identities,
	// registry hashes.
}

func TestToolEntryValidation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*Entry)
		field string
	}{
		{"effect", func(e *Entry) { e.Tool.Sem.Effect = "maybe" }, "sem.effect"},
		{"no input schema", func(e *Entry) { e.Tool.Alg.InputSchema = nil }, "alg.input_schema"},
		{"schema not an object", func(e *Entry) { e.Tool.Alg.InputSchema = json.RawMessage(`["x"]`) }, "alg.input_schema"},
		{"schema with a duplicate key", func(e *Entry) {
			e.Tool.Alg.InputSchema = json.RawMessage(`{"type":"object","type":"string"}`)
		}, "alg.input_schema"},
		{"output schema not an object", func(e *Entry) { e.Tool.Alg.OutputSchema = json.RawMessage(`3`) }, "alg.output_schema"},
		{"upstream", func(e *Entry) { e.Tool.Impl.Upstream = "FS"; e.Name = "FS.read_text_file" }, "impl.upstream"},
		{"tool", func(e *Entry) { e.Tool.Impl.Tool = "read file"; e.Name = "fs.read file" }, "impl.tool"},
		{"name", func(e *Entry) { e.Name = "fs.other" }, "name"},
		{"server", func(e *Entry) { e.Tool.Impl.Server = &ToolServer{Name: "x"} }, "impl.server.version"},
		{"contract", func(e *Entry) {
			e.Tool.Sem.Contract = &contract.Contract{Pre: []contract.Clause{{Name: "a", Expr: "!result.isError", Message: "m"}}}
		}, "sem.contract.pre[0].expr"},
		{"trading layer", func(e *Entry) { e.Sem.Pure = true }, "sem"},
		{"no tool layers", func(e *Entry) { e.Tool = nil }, "sem"},
		{"tool layers on a family", func(e *Entry) { e.Kind = KindFamily }, "kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := toolEntry()
			tc.edit(&e)
			err := e.Validate()
			var ve *ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, ErrInvalidEntry) {
				t.Fatalf("want a validation error, got %v", err)
			}
			for _, f := range ve.Fields {
				if f.Field == tc.field {
					return
				}
			}
			t.Fatalf("no problem at %s: %v", tc.field, err)
		})
	}
	// A tool may have no description (its upstream declared none).
	e := toolEntry()
	e.Disc = Discovery{}
	if err := e.Validate(); err != nil {
		t.Fatal(err)
	}
	// A tool entry's layers are decoded strictly.
	if _, err := DecodeEntry([]byte(`{"name":"fs.t","kind":"tool","sem":{"effect":"read","destructive":false,"idempotent":false,"open_world":true,"pure":true},`+
		`"alg":{"input_schema":{"type":"object"},"output_schema":null},"impl":{"upstream":"fs","tool":"t"},"disc":{"description":""}}`), "t"); err == nil ||
		!strings.Contains(err.Error(), `unknown field "pure"`) {
		t.Fatalf("unknown sem field: %v", err)
	}
}

// A tool entry may hold a contract over the call (contract.ToolKeys): it
// is checked when the entry is written, a bad clause is a field error
// naming the clause, and the contract is inside the identity (none and
// one without clauses being the same).
func TestToolContract(t *testing.T) {
	ctx := context.Background()
	s, _ := mustOpenStore(t)
	base := toolEntry()
	id0, err := base.Identity()
	if err != nil {
		t.Fatal(err)
	}
	e := base.Clone()
	e.Tool.Sem.Contract = &contract.Contract{
		Pre: []contract.Clause{
			{Name: "under_tmp", Expr: `arguments.path.startsWith("/tmp/")`, Message: "only files under /tmp/ may be read"},
			{Name: "bounded_head", Expr: `!has(arguments.head) || arguments.head <= 100`, Message: "read at most 100 lines"},
		},
		Post: []contract.Clause{{Name: "no_error", Expr: `!result.isError && size(structured) >= 0`, Message: "the tool reported an error"}},
	}
	if err := e.Validate(); err != nil {
		t.Fatal(err)
	}
	id1, err := e.Identity()
	if err != nil {
		t.Fatal(err)
	}
	if id1 == id0 {
		t.Fatal("a contract left the identity unchanged")
	}
	// Every clause's text is behaviour, its message included.
	for what, edit := range map[string]func(*contract.Contract){
		"expr":    func(c *contract.Contract) { c.Pre[0].Expr = `arguments.path.startsWith("/var/")` },
		"message": func(c *contract.Contract) { c.Post[0].Message = "another message" },
		"name":    func(c *contract.Contract) { c.Pre[1].Name = "head_bounded" },
		"dropped": func(c *contract.Contract) { c.Post = nil },
	} {
		c := e.Clone()
		edit(c.Tool.Sem.Contract)
		if err := c.Validate(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got, _ := c.Identity(); got == id1 || got == id0 {
			t.Errorf("changing the contract's %s: identity %s", what, got)
		}
	}
	// No clauses is no contract.
	empty := base.Clone()
	empty.Tool.Sem.Contract = &contract.Contract{Pre: []contract.Clause{}}
	if got, _ := empty.Identity(); got != id0 {
		t.Error("an empty contract moved the identity")
	}
	// Stored and read back with its contract and identity.
	if _, err := s.Put(ctx, e); err != nil {
		t.Fatal(err)
	}
	got, ok := s.Current().Get(e.Name)
	if !ok || got.Identity != id1 || got.Tool == nil || len(got.Tool.Sem.Contract.Pre) != 2 || got.Tool.Sem.Contract.Post[0] != e.Tool.Sem.Contract.Post[0] {
		t.Fatalf("read back %+v", got)
	}

	// A bad clause is refused with its field and its clause; nothing is
	// stored.
	for _, tc := range []struct {
		name, field, expr string
		post              bool
		want              string
	}{
		{"a result in a precondition", "sem.contract.pre[0].expr", "!result.isError", false, "result is a result key, which pre clauses of a tool may not read"},
		{"unknown key", "sem.contract.pre[0].expr", "args.path != ''", false, "undeclared reference to 'args'"},
		{"a trading key", "sem.contract.post[0].expr", "data.rows > 0", true, "undeclared reference to 'data'"},
		{"parameters", "sem.contract.pre[0].expr", "params.path != ''", false, "undeclared reference to 'params'"},
		{"not a bool", "sem.contract.post[0].expr", "structured", true, "not a bool"},
		{"loop over a map", "sem.contract.pre[0].expr", "arguments.all(k, k != '')", false, "iterates over a map"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := base.Clone()
			bad.Name, bad.Tool.Impl.Tool = "fs.other_tool", "other_tool"
			cl := []contract.Clause{{Name: "the_clause", Expr: tc.expr, Message: "m"}}
			bad.Tool.Sem.Contract = &contract.Contract{}
			if tc.post {
				bad.Tool.Sem.Contract.Post = cl
			} else {
				bad.Tool.Sem.Contract.Pre = cl
			}
			_, err := s.Put(ctx, bad)
			var ve *ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, ErrInvalidEntry) {
				t.Fatalf("err %v", err)
			}
			if len(ve.Fields) != 1 || ve.Fields[0].Field != tc.field || !strings.Contains(ve.Fields[0].Problem, `clause "the_clause"`) || !strings.Contains(ve.Fields[0].Problem, tc.want) {
				t.Fatalf("fields %+v, want %s naming the clause and %q", ve.Fields, tc.field, tc.want)
			}
			if _, ok := s.Current().Get(bad.Name); ok {
				t.Fatal("stored")
			}
		})
	}
	// The entry's own document is decoded and checked the same way.
	raw, err := json.Marshal(got.Entry)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeEntry(raw, "t"); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	if _, err := DecodeEntry(bytes.Replace(raw, []byte(`!result.isError`), []byte(`!resultz.isError`), 1), "t"); err == nil ||
		!strings.Contains(err.Error(), "sem.contract.post[0].expr") {
		t.Fatalf("a bad clause decoded: %v", err)
	}
}

func export0(t *testing.T, s *Store) []byte {
	t.Helper()
	b, err := json.Marshal(s.Current().Export())
	if err != nil {
		t.Fatal(err)
	}
	return b
}
