package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"text/tabwriter"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/internal/app"
	"github.com/groundgate/groundgate/registry"
)

type registryCmd struct{}

const registryUsage = `registry <subcommand> [--db FILE | --store DSN --blobs URL] [args]

subcommands:
  export               print the current registry (the GET /v1/registry body)
  verify               check the whole store: identities, registry hashes, evidence, groundings, footprints, call footprints, blobs
  list                 one line per capability: name, kind, identity
  show NAME            one capability (the GET /v1/registry/capabilities/{name} body)
  history              every version, newest first
  version N            a past version (the GET /v1/registry/versions/{n} body)
  put FILE             add or change the entries in FILE (a JSON entry or array, or a disc patch from groundgate fuzz --patch)`

func (r *registryCmd) Run(ctx context.Context, cli *CLI, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(cli.Stderr, "usage: groundgate "+registryUsage)
		if len(args) == 0 {
			return errUsage
		}
		return nil
	}
	sub, args := args[0], args[1:]
	fs := cli.newFlags("registry "+sub, "registry "+sub+" [--db FILE | --store DSN --blobs URL]")
	where := addStoreFlags(fs, "bbolt database `file`")
	db := where.db
	asJSON := fs.Bool("json", false, "print JSON (list, history)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	wantArgs := map[string]int{"export": 0, "verify": 0, "list": 0, "history": 0, "show": 1, "version": 1, "put": 1}
	n, ok := wantArgs[sub]
	if !ok {
		return fmt.Errorf("%w: unknown subcommand %q\n%s", errUsage, sub, registryUsage)
	}
	if len(pos) != n {
		return fmt.Errorf("%w: %s takes %d argument(s), got %d", errUsage, sub, n, len(pos))
	}

	shared, err := where.shared()
	if err != nil {
		return err
	}
	if shared && sub == "put" {
		return fmt.Errorf("%w: put writes a file; on a shared store, put entries through a server (PUT /v1/registry/capabilities/{name})", errUsage)
	}
	if sub == "verify" {
		if shared {
			return verifyShared(ctx, cli, *where.store, *where.blobs)
		}
		return verify(ctx, cli, *db)
	}
	var s *registry.Store
	if shared {
		pg, err := app.OpenShared(ctx, *where.store, *where.blobs, cli.Getenv, nil)
		if err != nil {
			return err
		}
		defer pg.Close()
		if s, err = registry.OpenEngine(ctx, pg, registry.Options{}); err != nil {
			return err
		}
	} else {
		mode := app.OpenReadOnly
		if sub == "put" {
			mode = app.OpenWrite
		}
		if s, err = app.OpenRegistry(ctx, *db, mode); err != nil {
			return err
		}
	}
	defer s.Close()
	cur := s.Current()

	switch sub {
	case "export":
		return cli.printJSON(cur.Export())
	case "list":
		if *asJSON {
			return cli.printJSON(cur.Export().Capabilities)
		}
		tw := tabwriter.NewWriter(cli.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tKIND\tIDENTITY")
		for _, c := range cur.Capabilities() {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Name, c.Kind, c.Identity)
		}
		return tw.Flush()
	case "show":
		c, ok := cur.Get(pos[0])
		if !ok {
			return fmt.Errorf("capability %q: %w", pos[0], registry.ErrNotFound)
		}
		return cli.printJSON(c)
	case "history":
		h, err := s.History(ctx)
		if err != nil {
			return err
		}
		if *asJSON {
			return cli.printJSON(h)
		}
		tw := tabwriter.NewWriter(cli.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "VERSION\tOP\tENTRIES\tREGISTRY\tCHANGED")
		for _, v := range h {
			changed := fmt.Sprint(v.Change.Names)
			if len(v.Change.Names) > 5 {
				changed = fmt.Sprintf("%d entries", len(v.Change.Names))
			}
			fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\n", v.Version, v.Change.Op, v.Count, v.Registry, changed)
		}
		return tw.Flush()
	case "version":
		v, err := strconv.ParseUint(pos[0], 10, 64)
		if err != nil {
			return fmt.Errorf("%w: version %q is not a non-negative integer", errUsage, pos[0])
		}
		// History starts at 1, as GET /v1/registry/versions/{n} says.
		if v == 0 {
			return fmt.Errorf("registry version 0: %w (history starts at 1)", registry.ErrNotFound)
		}
		snap, err := s.Version(ctx, v)
		if err != nil {
			return err
		}
		return cli.printJSON(snap.Export())
	case "put":
		return put(ctx, cli, s, *db, pos[0])
	}
	return nil
}

func verify(ctx context.Context, cli *CLI, db string) error {
	if _, err := os.Stat(db); err != nil {
		return fmt.Errorf("%s: %w", db, err)
	}
	// The whole file: registry, evidence, grounding records, footprints,
	// call footprints, blobs.
	rep, err := app.VerifyFile(ctx, db)
	if err != nil && len(rep.Problems) == 0 {
		return app.HintLocked(err, db)
	}
	return report(cli, db, rep)
}

// verifyShared is verify on a shared store: the same checks, by the same
// code, through the storage layer.
func verifyShared(ctx context.Context, cli *CLI, dsn, blobs string) error {
	pg, err := app.OpenShared(ctx, dsn, blobs, cli.Getenv, nil)
	if err != nil {
		return err
	}
	defer pg.Close()
	rep, err := app.VerifyStore(ctx, pg, "the shared store")
	if err != nil && len(rep.Problems) == 0 {
		return err
	}
	return report(cli, "the shared store", rep)
}

// report prints what verify found: every problem and a summary on stderr
// (exit status 1), else one line of counts.
func report(cli *CLI, name string, rep app.Report) error {
	reg := rep.Registry
	for _, p := range rep.Problems {
		fmt.Fprintf(cli.Stderr, "MISMATCH: %s\n", p)
	}
	if len(rep.Problems) > 0 {
		fmt.Fprintf(cli.Stderr, "groundgate registry verify: %s: %d problem(s) in %d version(s), %d record(s)\n", name, len(rep.Problems), reg.Versions, reg.Records)
		return exitError{code: 1}
	}
	fmt.Fprintf(cli.Stdout, "ok: %d version(s), %d record(s) verified; version %d, registry %s; also %d chunk(s), %d group(s), %d evidence record(s), %d grounding record(s), %d footprint(s), %d call(s), %d session(s), %d blob(s)\n",
		reg.Versions, reg.Records, reg.Current, reg.Registry, reg.Chunks, reg.Groups, rep.Evidence, rep.Groundings, rep.Footprints, rep.Calls, rep.Sessions, rep.Blobs)
	return nil
}

func put(ctx context.Context, cli *CLI, s *registry.Store, db, file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var entries []registry.Entry
	if registry.IsDiscPatch(data) {
		// A fuzz run's suggestions (groundgate fuzz --patch): disc layers
		// only, pinned to the identities they were made for.
		var p registry.DiscPatch
		if p, err = registry.DecodeDiscPatch(data, file); err == nil {
			entries, err = p.Apply(s.Current())
		}
	} else if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		entries, err = registry.DecodeEntries(data, file)
	} else {
		var e registry.Entry
		e, err = registry.DecodeEntry(data, file)
		entries = []registry.Entry{e}
	}
	if err != nil {
		return err
	}
	// The keyword tier's index kept beside the file follows the registry:
	// opened (only if needed) at the version before the change, then
	// updated with the names the change touches, so that the next start
	// opens it instead of building it (at 100,000 entries, seconds instead
	// of tens of seconds before the server is ready); so does the
	// relevance tier's (relevance.snap, written when d closes).
	d, err := discover.New(ctx, s, s.Engine(), discover.Options{LazyText: true, TextIndexDir: discover.DefaultTextIndexDir(db)})
	if err != nil {
		return err
	}
	defer d.Close()
	v, changed, err := s.Apply(ctx, entries)
	if err != nil {
		return err
	}
	if len(changed) == 0 {
		fmt.Fprintf(cli.Stdout, "unchanged: version %d\n", v)
		return nil
	}
	cur := s.Current()
	for _, name := range changed {
		c, _ := cur.Get(name)
		fmt.Fprintf(cli.Stdout, "stored %s %s\n", name, c.Identity)
	}
	fmt.Fprintf(cli.Stdout, "version %d, registry %s\n", v, cur.Registry())
	if err := d.Sync(ctx); err != nil {
		// The version is stored; only the next start's speed is at stake.
		fmt.Fprintf(cli.Stderr, "groundgate registry put: the discovery index was not updated (the next start rebuilds it): %v\n", err)
	}
	return nil
}
