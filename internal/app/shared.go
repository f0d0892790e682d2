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
