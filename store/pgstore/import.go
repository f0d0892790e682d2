package pgstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/groundgate/groundgate/store"
)

// Row is one key and its value, as an engine stores it in a keyspace
// (store.Scanner's keys): the unit of a copy from another engine.
type Row struct{ Key, Value []byte }

// Import writes rows into space as they are, in one transaction: the
// primitive of a copy from a bbolt file (groundgate migrate, package
// store/storecopy), used by nothing else. It is here, not a walk through
// store.Tx, because store_kv is defined as bbolt's buckets byte for byte:
// a row goes in as the row it is, whatever shape its keyspace has (a
// file does not say which shape a bucket holds, and PutVersion,
// AppendEntry and PutRecord each check what a copy must not re-decide).
//
// A key already there with the same value is left as it is (a copy run
// again after an interruption); a key there with another value is
// store.ErrConflict and nothing of the batch is written: two histories are
// never merged.
func (s *Store) Import(ctx context.Context, space string, rows []Row) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	if len(rows) == 0 {
		return nil
	}
	keys, values := make([][]byte, len(rows)), make([][]byte, len(rows))
	for i, r := range rows {
		keys[i], values[i] = nonNil(r.Key), nonNil(r.Value)
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// Insert what is not there; only the keys that were there already
		// (none on a first copy, all on a run again) are read back and
		// compared. A first copy then reads nothing: a lookup of the batch
		// planned while the table's statistics still call it empty scanned
		// the growing table for every batch (a 100,000-entry registry's
		// identities took 70 s where its names took 3 s).
		ins, err := tx.Query(ctx, `INSERT INTO store_kv (space, key, value)
			SELECT $1, k, v FROM unnest($2::bytea[], $3::bytea[]) AS r(k, v)
			ON CONFLICT DO NOTHING RETURNING key`, space, keys, values)
		if err != nil {
			return err
		}
		inserted := map[string]bool{}
		for ins.Next() {
			var k []byte
			if err := ins.Scan(&k); err != nil {
				ins.Close()
				return err
			}
			inserted[string(k)] = true
		}
		ins.Close()
		if err := ins.Err(); err != nil {
			return err
		}
		if len(inserted) == len(rows) {
			return nil
		}
		want := map[string][]byte{}
		var there [][]byte
		for _, r := range rows {
			if !inserted[string(r.Key)] {
				want[string(r.Key)] = r.Value
				there = append(there, nonNil(r.Key))
			}
		}
		got, err := tx.Query(ctx, `SELECT key, value FROM store_kv WHERE space = $1 AND key = ANY($2::bytea[])`, space, there)
		if err != nil {
			return err
		}
		defer got.Close()
		for got.Next() {
			var k, v []byte
			if err := got.Scan(&k, &v); err != nil {
				return err
			}
			if !bytes.Equal(v, want[string(k)]) {
				return fmt.Errorf("%w: %s %q holds another value", store.ErrConflict, space, k[:min(len(k), 80)])
			}
		}
		return got.Err()
	})
	if errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("pgstore: import: %w", err)
	}
	if err != nil {
		return fmt.Errorf("pgstore: import into %s: %w", space, classify(err))
	}
	return nil
}

// RaiseSequence makes space's NextSequence give numbers above n from now
// on: a copy carries the source's counter so that no number is given
// twice. A counter already past n stays.
func (s *Store) RaiseSequence(ctx context.Context, space string, n uint64) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	if n > math.MaxInt64 {
		return fmt.Errorf("pgstore: sequence %s: %d does not fit a bigint", space, n)
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO store_sequences (space, n) VALUES ($1, $2)
		ON CONFLICT (space) DO UPDATE SET n = greatest(store_sequences.n, EXCLUDED.n)`, space, int64(n))
	if err != nil {
		return fmt.Errorf("pgstore: sequence %s: %w", space, classify(err))
	}
	return nil
}

// Keyspace is what the database holds under one keyspace name.
type Keyspace struct {
	Name string
	// Rows counts its rows in store_kv (0 for a blob space, whose blobs
	// are in the object store, or a name that has only a sequence).
	Rows int64
	// Sequence is the last number NextSequence gave (0: none).
	Sequence uint64
}

// Keyspaces lists every name with rows or a sequence, in name order, in
// one snapshot: what a copy checks the database against before writing.
func (s *Store) Keyspaces(ctx context.Context) ([]Keyspace, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT coalesce(k.space, q.space), coalesce(k.n, 0), coalesce(q.n, 0)
		FROM (SELECT space, count(*) AS n FROM store_kv GROUP BY space) k
		FULL JOIN store_sequences q ON q.space = k.space ORDER BY 1`)
	if err != nil {
		return nil, fmt.Errorf("pgstore: keyspaces: %w", classify(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Keyspace, error) {
		var ks Keyspace
		var seq int64
		err := r.Scan(&ks.Name, &ks.Rows, &seq)
		ks.Sequence = uint64(seq)
		return ks, err
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: keyspaces: %w", classify(err))
	}
	return out, nil
}
