package app

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/groundgate/groundgate/artifacts"
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
	tgtRep, err := VerifyStore(ctx, dst, "the copy")
	rep.Target = &tgtRep
	rep.VerifySeconds = time.Since(t).Seconds()
	if err != nil {
		return done(fmt.Errorf("migrate: the copy does not verify on the new engine: %w", err))
	}
	return done(nil)
}
