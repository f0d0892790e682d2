package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/groundgate/groundgate/store/pgstore"
	"github.com/groundgate/groundgate/store/s3store"
)

// OpenShared opens the engine many processes share (SPEC §17): records,
// versions, logs and values in the PostgreSQL database dsn names
// (--store), blobs in the S3 bucket blobsURL names (--blobs, credentials
// from env: s3store.ParseURL). serve, worker, migrate and registry verify
// all open it here, so there is one way to reach a shared store.
func OpenShared(ctx context.Context, dsn, blobsURL string, env func(string) string, logger *slog.Logger) (*pgstore.Store, error) {
	if dsn == "" || blobsURL == "" {
		return nil, fmt.Errorf("%w: a shared store needs both --store postgres://… and --blobs s3://…", pgstore.ErrConfig)
	}
	bcfg, err := s3store.ParseURL(blobsURL, env)
	if err != nil {
		return nil, fmt.Errorf("--blobs: %w", err)
	}
	blobs, err := s3store.Open(ctx, bcfg)
	if err != nil {
		return nil, fmt.Errorf("--blobs: %w", err)
	}
	st, err := pgstore.Open(ctx, pgstore.Config{DSN: dsn, Blobs: blobs, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("--store: %w", err)
	}
	return st, nil
}

// checkShared refuses a configuration that names both a bbolt file and a
// shared store, half a shared store, or a shared store without the
// attestation key every replica must share.
func checkShared(db, dsn, blobs, keyFile string, shared bool) error {
	switch {
	case !shared:
		return nil
	case db != "":
		return fmt.Errorf("%w: --db and --store/--blobs name two stores; give one: --db FILE (one server) or --store postgres://… --blobs s3://… (several)", pgstore.ErrConfig)
	case dsn == "" || blobs == "":
		return fmt.Errorf("%w: a shared store needs both --store postgres://… and --blobs s3://…", pgstore.ErrConfig)
	case keyFile == "":
		return fmt.Errorf("%w: a shared store needs --key FILE: there is no database file to keep the attestation key beside, and every server sharing the store must sign with the same key", pgstore.ErrConfig)
	}
	return nil
}
