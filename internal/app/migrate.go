package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/groundgate/groundgate/artifacts"
	"github.com/groundgate/groundgate/calls"
	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/fuzz/runs"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/policy"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/sampledata"
	"github.com/groundgate/groundgate/session"
	"github.com/groundgate/groundgate/store"
	"github.com/groundgate/groundgate/store/boltstore"
	"github.com/groundgate/groundgate/store/storecopy"
)

// MigrateConfig says what `groundgate migrate` copies where.
type MigrateConfig struct {
	// From is the bbolt file (--from), opened read-only.
	From string
	// Store and Blobs are the shared store's --store DSN and --blobs URL
	// (OpenShared; credentials from Env).
	Store, Blobs string
	Env          func(string) string
	// Copy tunes the copy (batches, blob workers); its Blobs are set here,
	// from their owners.
	Copy   storecopy.Options
	Logger *slog.Logger
}

// MigrateReport is what `groundgate migrate` prints (docs/operations.md).
type MigrateReport struct {
	From string `json:"from"`
	// The verified copy: every keyspace's keys, bytes and digest, equal on
	// both sides, and every difference found.
	storecopy.Report
	// Source is the file's verification before the copy; Target the same
	// verification of every record on the new engine after it (absent
	// when the command stopped before it).
	Source *Report `json:"source,omitempty"`
	Target *Report `json:"target,omitempty"`
	// CopySeconds, VerifySeconds and Seconds time the copy, its
	// verification and the whole command.
	CopySeconds   float64 `json:"copy_seconds"`
	VerifySeconds float64 `json:"verify_seconds"`
	Seconds       float64 `json:"seconds"`
}

// blobSpaces are the keyspaces whose values belong in the object store,
// as their owners declare them.
var blobSpaces = []store.Space{artifacts.Space}

// Migrate copies the bbolt file cfg.From into the shared store and
// verifies the copy (SPEC §17): first the file is verified, and a file
// with any bad record is refused (a copy of a corrupt file would carry the
// corruption to where it is harder to see; the report lists the
// problems); then storecopy.Copy, which refuses a target holding another
// history before it writes anything; then storecopy.Verify (the same
// bytes under the same keys, sequences not behind) and the verification
// of every record on the new engine. The error wraps ErrMismatch or the
// kinds' ErrCorrupt when anything differs or fails a check.
func Migrate(ctx context.Context, cfg MigrateConfig) (MigrateReport, error) {
	began := time.Now()
	rep := MigrateReport{From: cfg.From, Report: storecopy.Report{Keyspaces: []storecopy.Keyspace{}, Problems: []string{}}}
	done := func(err error) (MigrateReport, error) {
		rep.Seconds = time.Since(began).Seconds()
		return rep, err
	}
	src, err := boltstore.OpenFile(cfg.From, boltstore.FileOptions{ReadOnly: true, Timeout: LockWait})
	if err != nil {
		return done(HintLocked(err, cfg.From))
	}
	defer src.Close()
	srcRep, err := VerifyFile(ctx, cfg.From)
	rep.Source = &srcRep
	if err != nil {
		return done(fmt.Errorf("migrate: the file does not verify, nothing copied: %w", err))
	}

	dst, err := OpenShared(ctx, cfg.Store, cfg.Blobs, cfg.Env, cfg.Logger)
	if err != nil {
		return done(err)
	}
	defer dst.Close()
	opts := cfg.Copy
	opts.Blobs, opts.Logger = blobSpaces, cfg.Logger
	t := time.Now()
	if _, err := storecopy.Copy(ctx, src, dst, opts); err != nil {
		return done(fmt.Errorf("migrate: %w", err))
	}
	rep.CopySeconds = time.Since(t).Seconds()

	t = time.Now()
	rep.Report, err = storecopy.Verify(ctx, src, dst, opts)
	if err != nil {
		rep.VerifySeconds = time.Since(t).Seconds()
		return done(fmt.Errorf("migrate: %w", err))
	}
	tgtRep, err := verifyEngine(ctx, dst)
	rep.Target = &tgtRep
	rep.VerifySeconds = time.Since(t).Seconds()
	if err != nil {
		return done(fmt.Errorf("migrate: the copy does not verify on the new engine: %w", err))
	}
	return done(nil)
}

// verifyEngine is VerifyFile's checks over any engine: the registry, then
// each package's records through store.Verify.
//
// It belongs with VerifyFile, which is being made engine-neutral beside
// this change (`registry verify --store`); merged, Migrate calls that.
func verifyEngine(ctx context.Context, st store.Store) (Report, error) {
	rep := Report{Problems: []string{}}
	var corrupt []error
	var err error
	rep.Registry, err = registry.VerifyStore(ctx, st)
	rep.Problems = append(rep.Problems, rep.Registry.Problems...)
	if err != nil && !errors.Is(err, registry.ErrCorrupt) {
		return rep, err
	} else if err != nil {
		corrupt = append(corrupt, err)
	}
	arts, err := execution.OpenArtifacts(st)
	if err != nil {
		return rep, err
	}
	x, err := execution.New(noVersions{}, arts, st, sampledata.FS(), execution.Options{})
	if err != nil {
		return rep, err
	}
	for _, k := range []struct {
		name     string
		count    *int
		verify   func(context.Context, store.Viewer) (int, []string, error)
		sentinel error
	}{
		{"evidence", &rep.Evidence, discover.Verify, discover.ErrCorrupt},
		{"grounding", &rep.Groundings, ground.Verify, ground.ErrCorrupt},
		{"policies", &rep.Policies, policy.Verify, policy.ErrCorrupt},
		{"fuzz runs", &rep.FuzzRuns, runs.Verify, runs.ErrCorrupt},
		{"calls", &rep.Calls, calls.Verify, calls.ErrCorrupt},
		{"sessions", &rep.Sessions, session.Verify, session.ErrCorrupt},
		{"blobs", &rep.Blobs, func(ctx context.Context, _ store.Viewer) (int, []string, error) { return arts.Verify(ctx) }, artifacts.ErrCorrupt},
		{"footprints", &rep.Footprints, func(ctx context.Context, _ store.Viewer) (int, []string, error) { return x.Verify(ctx) }, execution.ErrCorrupt},
	} {
		n, problems, err := k.verify(ctx, st)
		*k.count = n
		for _, p := range problems {
			rep.Problems = append(rep.Problems, k.name+": "+p)
		}
		switch {
		case err == nil:
		case errors.Is(err, k.sentinel):
			corrupt = append(corrupt, err)
		default:
			return rep, err
		}
	}
	if len(rep.Problems) > 0 {
		return rep, fmt.Errorf("%d problem(s), first: %s: %w", len(rep.Problems), rep.Problems[0], errors.Join(corrupt...))
	}
	return rep, nil
}
