package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/groundgate/groundgate/gateway"
)

type upstreamCmd struct{}

const upstreamUsage = `upstream SUBCOMMAND [--server URL] [flags]

subcommands:
  add NAME --stdio [flags] -- PROG ARG…   configure a stdio upstream (PUT /v1/upstreams/NAME)
  add NAME --http URL [flags]             configure a streamable HTTP upstream
  add NAME --file CONFIG.json             configure one from a PUT body (- is standard input)
      flags: --env K=V or --env K (the value from this environment), --header K:V,
             --dir DIR, --pin schema|version, --ground all|writes (each repeatable
             where it names a key)
  list                                    the configured upstreams and their status (GET /v1/upstreams)
  get NAME                                one upstream (GET /v1/upstreams/NAME)
  sync NAME [--apply] [--overlay FILE]    the plan of registry changes its tools call for;
                                          --apply writes it as one registry version

These talk to a running server (the upstreams' connections are its own):
--server URL (default $GROUNDGATE_SERVER, else ` + defaultServer + `), with
GROUNDGATE_ADMIN_TOKEN as the bearer token. They print the REST body, env and
header values redacted; an HTTP error exits 1 with the problem on standard
error. See docs/gateway.md.`

func (upstreamCmd) Run(ctx context.Context, cli *CLI, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(cli.Stderr, "usage: groundgate "+upstreamUsage)
		if len(args) == 0 {
			return errUsage
		}
		return nil
	}
	switch args[0] {
	case "add":
		return upstreamAdd(ctx, cli, args[1:])
	case "list":
		return upstreamList(ctx, cli, args[1:])
	case "get":
		return upstreamGet(ctx, cli, args[1:])
	case "sync":
		return upstreamSync(ctx, cli, args[1:])
	}
	return fmt.Errorf("%w: unknown subcommand %q\n%s", errUsage, args[0], upstreamUsage)
}

// pairs is a repeatable KEY<sep>VALUE flag.
type pairs struct {
	sep  string
	what string
	env  func(string) string // KEY alone takes its value from here (nil: refused)
	m    map[string]string
}

func (p *pairs) String() string { return "" } // never the values: they are secrets

func (p *pairs) Set(s string) error {
	k, v, ok := strings.Cut(s, p.sep)
	if !ok {
		if p.env == nil {
			return fmt.Errorf("want %s%sVALUE", p.what, p.sep)
		}
		v = p.env(k)
		if v == "" {
			return fmt.Errorf("%s is not set in this environment (give %s=VALUE)", k, k)
		}
	}
	if p.sep == ":" {
		v = strings.TrimSpace(v)
	}
	if k == "" {
		return fmt.Errorf("want %s%sVALUE: the %s is empty", p.what, p.sep, strings.ToLower(p.what))
	}
	if p.m == nil {
		p.m = map[string]string{}
	}
	if _, dup := p.m[k]; dup {
		return fmt.Errorf("%s %s given twice", strings.ToLower(p.what), k)
	}
	p.m[k] = v
	return nil
}

func upstreamAdd(ctx context.Context, cli *CLI, args []string) error {
	const usage = "upstream add NAME (--stdio [flags] -- PROG ARG… | --http URL [flags] | --file CONFIG.json) [--server URL]"
	fs := cli.newFlags("upstream add", usage)
	client := cli.serverFlag(fs)
	stdio := fs.Bool("stdio", false, "a child process, its argv after the flags and a double dash: -- PROG ARG…")
	httpURL := fs.String("http", "", "a streamable HTTP endpoint's `URL`")
	file := fs.String("file", "", "the PUT body, a JSON configuration `file` (- is standard input), instead of the flags")
	env := &pairs{sep: "=", what: "NAME", env: cli.Getenv}
	fs.Var(env, "env", "a variable for a stdio upstream, `NAME=VALUE`, or NAME alone to pass this environment's value (repeatable; a secret: shown redacted)")
	headers := &pairs{sep: ":", what: "NAME"}
	fs.Var(headers, "header", "a header sent to an http upstream, `NAME:VALUE` (repeatable; a secret: shown redacted)")
	dir := fs.String("dir", "", "a stdio upstream's working `directory` (absolute)")
	pin := fs.String("pin", "", "what a tool's identity pins: `schema` (the default) or version")
	ground := fs.String("ground", "", "which calls need discovery evidence: `all` (the default) or writes")
	// Everything after the first -- is the upstream's argv, never flags
	// of ours (flag.Parse would take the -- and go on parsing after the
	// program's name).
	var argv []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, argv = args[:i], args[i+1:]
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return fmt.Errorf("%w: upstream add takes the upstream's name", errUsage)
	}
	name := pos[0]
	if len(pos) > 1 {
		return fmt.Errorf("%w: upstream add takes one name; a stdio upstream's command goes after --", errUsage)
	}
	var body []byte
	switch {
	case *file != "":
		if *stdio || *httpURL != "" || env.m != nil || headers.m != nil || *dir != "" || *pin != "" || *ground != "" || len(argv) > 0 {
			return fmt.Errorf("%w: --file is the whole configuration: give no other flags or arguments", errUsage)
		}
		if *file == "-" {
			body, err = io.ReadAll(io.LimitReader(cli.Stdin, gateway.MaxConfigBytes+1))
		} else {
			body, err = readLimited(*file, gateway.MaxConfigBytes+1)
		}
		if err != nil {
			return err
		}
	case *stdio == (*httpURL != ""):
		return fmt.Errorf("%w: give one of --stdio (then -- PROG ARG…), --http URL or --file", errUsage)
	case *stdio && len(argv) == 0:
		return fmt.Errorf("%w: --stdio needs the command after --: upstream add %s --stdio -- PROG ARG…", errUsage, name)
	case *httpURL != "" && len(argv) > 0:
		return fmt.Errorf("%w: an http upstream takes no command (%q)", errUsage, argv[0])
	default:
		cfg := gateway.Config{Command: argv, Env: env.m, Dir: *dir, URL: *httpURL, Headers: headers.m,
			Pin: gateway.Pin(*pin), Ground: gateway.Ground(*ground)}
		cfg.Transport = gateway.TransportHTTP
		if *stdio {
			cfg.Transport = gateway.TransportStdio
		}
		// A Config's JSON holds the secret values: it is the PUT body,
		// sent and never printed.
		if body, err = json.Marshal(cfg); err != nil {
			return err
		}
	}
	c, err := client()
	if err != nil {
		return err
	}
	out, status, err := c.do(ctx, "PUT", "/v1/upstreams/"+url.PathEscape(name), body)
	if err != nil {
		return err
	}
	what := "stored"
	if status == 201 {
		what = "created"
	}
	fmt.Fprintf(cli.Stderr, "upstream %s %s; `groundgate upstream sync %s` shows the registry changes its tools call for\n", name, what, name)
	return cli.printJSON(json.RawMessage(out))
}

func upstreamList(ctx context.Context, cli *CLI, args []string) error {
	fs := cli.newFlags("upstream list", "upstream list [--server URL]")
	client := cli.serverFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return fmt.Errorf("%w: upstream list takes no arguments", errUsage)
	}
	return upstreamGetPath(ctx, cli, client, "/v1/upstreams")
}

func upstreamGet(ctx context.Context, cli *CLI, args []string) error {
	fs := cli.newFlags("upstream get", "upstream get [--server URL] NAME")
	client := cli.serverFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: upstream get takes one upstream name", errUsage)
	}
	return upstreamGetPath(ctx, cli, client, "/v1/upstreams/"+url.PathEscape(pos[0]))
}

func upstreamGetPath(ctx context.Context, cli *CLI, client func() (*apiClient, error), path string) error {
	c, err := client()
	if err != nil {
		return err
	}
	out, _, err := c.do(ctx, "GET", path, nil)
	if err != nil {
		return err
	}
	return cli.printJSON(json.RawMessage(out))
}

func upstreamSync(ctx context.Context, cli *CLI, args []string) error {
	fs := cli.newFlags("upstream sync", "upstream sync [--server URL] [--apply] [--overlay FILE] NAME")
	client := cli.serverFlag(fs)
	apply := fs.Bool("apply", false, "write the plan as one registry version (without it, only show it)")
	overlay := fs.String("overlay", "", "a JSON `file` of contracts and discovery words per tool: {TOOL: {\"contract\": …, \"disc\": …}} (- is standard input)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: upstream sync takes one upstream name", errUsage)
	}
	req := struct {
		Apply   bool            `json:"apply"`
		Overlay json.RawMessage `json:"overlay,omitempty"`
	}{Apply: *apply}
	if *overlay != "" {
		var raw []byte
		if *overlay == "-" {
			raw, err = io.ReadAll(io.LimitReader(cli.Stdin, gateway.MaxConfigBytes+1))
		} else {
			raw, err = readLimited(*overlay, gateway.MaxConfigBytes+1)
		}
		if err != nil {
			return err
		}
		if !json.Valid(raw) {
			return fmt.Errorf("--overlay %s: not JSON", *overlay)
		}
		req.Overlay = raw
	}
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	c, err := client()
	if err != nil {
		return err
	}
	out, _, err := c.do(ctx, "POST", "/v1/upstreams/"+url.PathEscape(pos[0])+"/sync", body)
	if err != nil {
		return err
	}
	if err := cli.printJSON(json.RawMessage(out)); err != nil {
		return err
	}
	summarizePlan(cli, out)
	return nil
}

// summarizePlan says on standard error what a plan changes, and which
// tools it holds back and why.
func summarizePlan(cli *CLI, body []byte) {
	var p gateway.Plan
	if json.Unmarshal(body, &p) != nil {
		return
	}
	counts := map[gateway.Change]int{}
	for _, it := range p.Plan {
		counts[it.Change]++
	}
	changes := make([]string, 0, len(counts))
	for ch, n := range counts {
		changes = append(changes, fmt.Sprintf("%d %s", n, ch))
	}
	sort.Strings(changes)
	if len(changes) == 0 {
		changes = []string{"no tools"}
	}
	state := "a plan only: --apply writes it"
	if p.Applied {
		state = fmt.Sprintf("applied: registry version %d", p.Version)
	}
	fmt.Fprintf(cli.Stderr, "upstream %s: %s (%s)\n", p.Upstream, strings.Join(changes, ", "), state)
	for _, it := range p.Plan {
		if it.Held != "" {
			fmt.Fprintf(cli.Stderr, "  %s held: %s\n", it.Tool, it.Held)
		}
		for _, f := range it.Findings {
			fmt.Fprintf(cli.Stderr, "  %s: poisoning screen: %s\n", it.Tool, f.Why)
		}
	}
}
