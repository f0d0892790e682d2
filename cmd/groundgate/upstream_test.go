package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/gateway/upstreamtest"
)

// runCLIEnv is runCLI with an environment.
func runCLIEnv(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	cli := &CLI{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }}
	code := cli.Main(context.Background(), args)
	return code, out.String(), errb.String()
}

// groundgate upstream add, list, get and sync against a real wired server,
// with cmd/mcp-testupstream as a stdio upstream: secrets never printed,
// the plan, then applied, and the server's refusals shown with exit 1.
func TestUpstreamCLI(t *testing.T) {
	bin := upstreamtest.Build(t)
	ts := startServer(t, "")
	const secret = "hunter2-never-printed"
	env := map[string]string{"GROUNDGATE_ADMIN_TOKEN": testToken, "GROUNDGATE_SERVER": ts.base, "FROM_ENV": "also-" + secret}
	gg := func(args ...string) (int, string, string) {
		t.Helper()
		code, out, errs := runCLIEnv(t, env, args...)
		for _, s := range []string{secret, "also-" + secret} {
			if strings.Contains(out, s) || strings.Contains(errs, s) {
				t.Fatalf("%v printed a secret:\n%s\n%s", args, out, errs)
			}
		}
		return code, out, errs
	}
	type view struct {
		Name   string `json:"name"`
		Config struct {
			Transport string            `json:"transport"`
			Command   []string          `json:"command"`
			Env       map[string]string `json:"env"`
			Ground    string            `json:"ground"`
			Pin       string            `json:"pin"`
		} `json:"config"`
		Status struct {
			Connected bool `json:"connected"`
		} `json:"status"`
	}

	code, out, errs := gg("upstream", "add", "items", "--stdio", "--env", "API_TOKEN="+secret, "--env", "FROM_ENV",
		"--ground", "writes", "--", bin, "--name", "items-server")
	var v view
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil {
		t.Fatalf("add: %d %s %s", code, out, errs)
	}
	if v.Name != "items" || v.Config.Transport != "stdio" || len(v.Config.Command) != 3 || v.Config.Command[0] != bin ||
		v.Config.Ground != "writes" || v.Config.Pin != "schema" ||
		v.Config.Env["API_TOKEN"] != "[redacted]" || v.Config.Env["FROM_ENV"] != "[redacted]" || !strings.Contains(errs, "created") {
		t.Fatalf("add: %+v\n%s", v, errs)
	}
	// The same configuration again: stored, unchanged.
	if code, _, errs := gg("upstream", "add", "items", "--stdio", "--env", "API_TOKEN="+secret, "--env", "FROM_ENV",
		"--ground", "writes", "--", bin, "--name", "items-server"); code != 0 || strings.Contains(errs, "created") {
		t.Fatalf("add again: %d %s", code, errs)
	}

	code, out, errs = gg("upstream", "list")
	var list struct {
		Upstreams []view `json:"upstreams"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Upstreams) != 1 || list.Upstreams[0].Name != "items" ||
		list.Upstreams[0].Config.Env["API_TOKEN"] != "[redacted]" {
		t.Fatalf("list: %d %s %s", code, out, errs)
	}
	if code, out, errs := gg("upstream", "get", "items"); code != 0 || !strings.Contains(out, `"name": "items"`) {
		t.Fatalf("get: %d %s %s", code, out, errs)
	}

	type plan struct {
		Upstream string `json:"upstream"`
		Plan     []struct {
			Tool   string `json:"tool"`
			Change string `json:"change"`
		} `json:"plan"`
		Applied bool   `json:"applied"`
		Version uint64 `json:"version"`
	}
	changes := func(p plan) map[string]string {
		m := map[string]string{}
		for _, it := range p.Plan {
			m[it.Tool] = it.Change
		}
		return m
	}
	code, out, errs = gg("upstream", "sync", "items")
	var p plan
	if code != 0 || json.Unmarshal([]byte(out), &p) != nil || p.Applied || len(p.Plan) != 4 ||
		changes(p)["get_item"] != "added" || changes(p)["delete_all"] != "added" || !strings.Contains(errs, "4 added (a plan only") {
		t.Fatalf("sync plan: %d %s %s", code, out, errs)
	}
	before := p.Version
	code, out, errs = gg("upstream", "sync", "--apply", "items")
	if code != 0 || json.Unmarshal([]byte(out), &p) != nil || !p.Applied || p.Version != before+1 || changes(p)["echo"] != "added" ||
		!strings.Contains(errs, "applied: registry version") {
		t.Fatalf("sync --apply: %d %s %s", code, out, errs)
	}
	code, out, errs = gg("upstream", "sync", "items")
	if code != 0 || json.Unmarshal([]byte(out), &p) != nil || changes(p)["put_item"] != "unchanged" || p.Version != before+1 {
		t.Fatalf("sync after apply: %d %s %s", code, out, errs)
	}
	// The tools are registry entries now, of kind tool.
	if r := ts.do("GET", "/v1/registry/capabilities/items.get_item", ""); r.status != 200 || !strings.Contains(string(r.body), `"kind":"tool"`) {
		t.Fatalf("items.get_item: %d %.300s", r.status, r.body)
	}

	// An overlay naming a tool the upstream does not list: the server's
	// 422, shown.
	dir := t.TempDir()
	ov := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(ov, []byte(`{"no_such_tool": {"disc": {"aliases": ["x"]}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := gg("upstream", "sync", "items", "--overlay", ov); code != 5 || out != "" ||
		!strings.Contains(errs, "422") || !strings.Contains(errs, "no_such_tool") {
		t.Fatalf("bad overlay: %d %q %s", code, out, errs)
	}

	// Refused configurations: the 400 and its detail on standard error,
	// nothing stored.
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"transport": "stdio", "command": ["x"], "shell": true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"upstream", "add", "bad", "--http", "ftp://example.com/mcp"},
		{"upstream", "add", "bad", "--file", bad},
		{"upstream", "add", "Bad_Name", "--stdio", "--", bin},
		{"upstream", "add", "bad", "--stdio", "--pin", "sometimes", "--", bin},
	} {
		code, out, errs := gg(args...)
		if code != 5 || out != "" || !strings.Contains(errs, "400 Invalid upstream configuration (invalid-upstream): ") {
			t.Errorf("%v: %d %q %s", args, code, out, errs)
		}
	}
	if code, out, errs := gg("upstream", "get", "bad"); code != 3 || out != "" || !strings.Contains(errs, "404") {
		t.Errorf("a refused configuration was stored: %d %s %s", code, out, errs)
	}
	if code, out, _ := gg("upstream", "list"); code != 0 || strings.Contains(out, `"bad"`) {
		t.Errorf("list after refusals: %d %s", code, out)
	}

	// Without the token: the server's 401, shown.
	noToken := map[string]string{"GROUNDGATE_SERVER": ts.base}
	if code, out, errs := runCLIEnv(t, noToken, "upstream", "sync", "--apply", "items"); code != 10 || out != "" || !strings.Contains(errs, "401") {
		t.Errorf("sync without the token: %d %q %s", code, out, errs)
	}

	// Usage errors never reach the server.
	for _, args := range [][]string{
		{"upstream", "add", "x"},
		{"upstream", "add", "x", "--stdio"},
		{"upstream", "add", "x", "--stdio", "--http", "http://127.0.0.1:1/mcp", "--", "prog"},
		{"upstream", "add", "x", "--file", bad, "--ground", "writes"},
		{"upstream", "add", "x", "--stdio", "--env", "NOT_SET_ANYWHERE", "--", "prog"},
		{"upstream", "add", "x", "--http", "http://127.0.0.1:1/mcp", "--header", "no-colon"},
		{"upstream", "get"},
		{"upstream", "nope"},
	} {
		if code, _, errs := gg(args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage): %s", args, code, errs)
		}
	}
	// No server there: exit 1, saying so.
	if code, _, errs := runCLIEnv(t, nil, "upstream", "list", "--server", "127.0.0.1:1"); code != 1 || !strings.Contains(errs, "cannot reach the server") {
		t.Errorf("no server: %d %s", code, errs)
	}
}
