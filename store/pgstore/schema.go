package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// migrations are the schema's steps, in order: step i takes the schema
// from version i to i+1. A released step is never edited; a change is a
// new step.
var migrations = []string{
	// 1: the keyspaces (bbolt's buckets, one row per key), the sequences
	// and the schema's version. COLLATE "C": names compare as bytes.
	`CREATE TABLE store_kv (
		space text COLLATE "C" NOT NULL,
		key   bytea NOT NULL,
		value bytea NOT NULL,
		PRIMARY KEY (space, key)
	);
	CREATE TABLE store_sequences (
		space text COLLATE "C" PRIMARY KEY,
		n     bigint NOT NULL
	);`,
}

// migrateLock is the advisory lock key under which Open migrates, so that
// replicas starting at once migrate one after the other.
const migrateLock = 0x67726f756e64 // "ground"

// migrate brings the schema to len(migrations), or refuses a newer one.
func (s *Store) migrate(ctx context.Context) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrateLock)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS store_schema (version integer NOT NULL)`); err != nil {
			return err
		}
		var have int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM store_schema`).Scan(&have); err != nil {
			return err
		}
		if have > len(migrations) {
			return fmt.Errorf("%w: the database is at version %d, this build knows %d", ErrSchema, have, len(migrations))
		}
		for v := have; v < len(migrations); v++ {
			if _, err := tx.Exec(ctx, migrations[v]); err != nil {
				return fmt.Errorf("step %d: %w", v+1, err)
			}
			s.log.Debug("pgstore: schema migrated", "version", v+1)
		}
		if have < len(migrations) {
			if _, err := tx.Exec(ctx, `DELETE FROM store_schema`); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO store_schema VALUES ($1)`, len(migrations)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("pgstore: migrate: %w", classify(err))
	}
	return nil
}
