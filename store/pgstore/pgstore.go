// Package pgstore is the engine of package store for many servers (SPEC
// §17): records, versions, logs and values in PostgreSQL, blobs in an
// object store (store/s3store), so that any number of groundgate
// processes over one database are one service.
//
// # Layout
//
// One table holds what bbolt holds in its buckets, byte for byte, so that
// a bbolt file copies over bucket by bucket and verifies unchanged:
//
//	store_kv(space text, key bytea, value bytea, PRIMARY KEY (space, key))
//
// where space is the keyspace's name and key the engine-neutral key
// (a digest's text, store.VersionKey, store.EntryKey, a value's own key);
// bytea compares bytewise, so rows come back in bbolt's key order.
// NextSequence counts in store_sequences(space, n); store_schema records
// the schema's version. Open creates them when missing (idempotent, under
// an advisory lock, so that replicas starting together do not race).
//
// # Consistency
//
// Update runs SERIALIZABLE: a transaction that read what another
// committed meanwhile fails with a serialisation failure and fn is run
// again on a fresh snapshot (up to MaxAttempts), so that domain code
// written for bbolt's single writer (read, decide, write) keeps its
// meaning across replicas. A version or log entry is one row whose
// primary key two writers cannot both insert: exactly one PutVersion of n
// commits, whichever replica runs it. View runs REPEATABLE READ, READ
// ONLY: one snapshot. Every replica must talk to the primary: a write
// acknowledged by one is then seen by every View begun after it on any.
//
// Durability is PostgreSQL's: a commit returns once its WAL is flushed
// (synchronous_commit on, the default). Batch is Update: PostgreSQL
// already flushes the WAL of concurrent commits together, so concurrent
// writers on a pool share fsyncs without sharing a transaction (and one
// writer's failure never touches another's).
//
// # Locks
//
// Lock holds a key across every process on the database (a session-level
// advisory lock, on a connection of a second pool, LockConns): what
// package session holds a session's call under, from reading its state
// to filing its result, which no transaction can span (see Lock).
//
// Blobs go to the object store at once, outside the transaction: a blob
// put by an Update that then fails may stay, which store allows (an
// orphan blob is content-addressed and never read through a record).
package pgstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/groundgate/groundgate/errkind"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/store"
)

// Blobs is where the engine keeps blobs: *s3store.Blobs.
type Blobs interface {
	// Get returns key's bytes in sp, checked by sp's check.
	Get(ctx context.Context, sp store.Space, key hashing.Digest) ([]byte, error)
	// Has reports whether key is stored in sp.
	Has(ctx context.Context, sp store.Space, key hashing.Digest) (bool, error)
	// Put stores raw under key in sp, replacing what is there.
	Put(ctx context.Context, sp store.Space, key hashing.Digest, raw []byte) error
	// Scan calls fn with every blob of space in key order, unchecked.
	Scan(ctx context.Context, space string, fn func(key, raw []byte) error) error
}

// Config says which database and which blobs.
type Config struct {
	// DSN is the database's connection string (postgres://…, or
	// key=value pairs), as pgx parses it.
	DSN string
	// Blobs keeps the blobs (required).
	Blobs Blobs
	// MaxConns bounds the pool; 0 is pgxpool's default (4, or the number
	// of CPUs if greater).
	MaxConns int32
	// LockConns bounds the pool Lock holds its locks on, apart from
	// MaxConns (see Lock); 0 is DefaultLockConns. PostgreSQL's
	// max_connections must cover MaxConns + LockConns per process.
	LockConns int32
	// MaxAttempts bounds how often Update runs fn when serialisation
	// failures keep aborting it; 0 is DefaultMaxAttempts.
	MaxAttempts int
	// Logger receives retries and migrations at debug level; nil discards.
	Logger *slog.Logger
}

// DefaultMaxAttempts is Update's bound on runs of fn by default.
const DefaultMaxAttempts = 20

// Store is the PostgreSQL engine. It is safe for concurrent use.
type Store struct {
	pool     *pgxpool.Pool
	locks    *pgxpool.Pool // Lock's, apart from pool's (see Lock)
	blobs    Blobs
	attempts int
	log      *slog.Logger
	closed   atomic.Bool
	retries  atomic.Int64 // serialisation failures retried, for tests
}

var _ store.Store = (*Store)(nil)

// Open connects to cfg's database, creates or checks the schema, and
// returns the engine.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Blobs == nil {
		return nil, fmt.Errorf("%w: no blob store", ErrConfig)
	}
	pc, err := pgxpool.ParseConfig(cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if cfg.MaxConns > 0 {
		pc.MaxConns = cfg.MaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", classify(err))
	}
	if cfg.LockConns <= 0 {
		cfg.LockConns = DefaultLockConns
	}
	locks, err := lockPool(ctx, pc, cfg.LockConns)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s := &Store{pool: pool, locks: locks, blobs: cfg.Blobs, attempts: cfg.MaxAttempts, log: cfg.Logger}
	if s.attempts <= 0 {
		s.attempts = DefaultMaxAttempts
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if err := s.migrate(ctx); err != nil {
		locks.Close()
		pool.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the pools, waiting for every lock held to be unlocked
// (and every transaction to end); the store answers ErrClosed afterwards.
func (s *Store) Close() error {
	if s.closed.CompareAndSwap(false, true) {
		s.locks.Close()
		s.pool.Close()
	}
	return nil
}

// Pool is the engine's connection pool, for what shares the database
// beside the store (the job queue of `groundgate worker`); closed by Close.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Retries is how many times Update ran fn again after a serialisation
// failure since Open.
func (s *Store) Retries() int64 { return s.retries.Load() }

// View implements store.Viewer: one REPEATABLE READ, READ ONLY snapshot.
func (s *Store) View(ctx context.Context, fn func(store.Tx) error) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	ptx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("pgstore: begin: %w", classify(err))
	}
	defer ptx.Rollback(context.WithoutCancel(ctx))
	if err := fn(&tx{ctx: ctx, tx: ptx, s: s}); err != nil {
		return err
	}
	if err := ptx.Commit(ctx); err != nil {
		return fmt.Errorf("pgstore: commit: %w", classify(err))
	}
	return nil
}

// Update implements store.Updater: fn runs in a SERIALIZABLE transaction,
// again on a fresh one when PostgreSQL aborts it for a serialisation
// failure or a deadlock (so fn must, as Batch's, only write what it was
// called to write), at most MaxAttempts times; then ErrContention.
func (s *Store) Update(ctx context.Context, fn func(store.Tx) error) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		err := s.update(ctx, fn)
		if !retryable(err) {
			return err
		}
		if attempt >= s.attempts {
			return fmt.Errorf("%w: %d attempts: %w", ErrContention, attempt, err)
		}
		s.retries.Add(1)
		s.log.Debug("pgstore: serialisation failure, running the transaction again", "attempt", attempt, "err", err)
		// A short, growing pause lets the transaction that won finish.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt*attempt) * time.Millisecond):
		}
	}
}

// Batch implements store.Updater as Update: PostgreSQL flushes the WAL
// of concurrent commits together already (see the package comment).
func (s *Store) Batch(ctx context.Context, fn func(store.Tx) error) error {
	return s.Update(ctx, fn)
}

func (s *Store) update(ctx context.Context, fn func(store.Tx) error) error {
	ptx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.Serializable, AccessMode: pgx.ReadWrite})
	if err != nil {
		return fmt.Errorf("pgstore: begin: %w", classify(err))
	}
	defer ptx.Rollback(context.WithoutCancel(ctx))
	if err := fn(&tx{ctx: ctx, tx: ptx, s: s, write: true}); err != nil {
		return err
	}
	if err := ptx.Commit(ctx); err != nil {
		return fmt.Errorf("pgstore: commit: %w", classify(err))
	}
	return nil
}

func (s *Store) ready(ctx context.Context) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return ctx.Err()
}

// retryable reports a PostgreSQL abort that running the transaction again
// may not meet: serialization_failure, deadlock_detected.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// classify gives a driver error its kind: the server's refusals for lack
// of resources are Busy, a connection that failed or a server going down
// Unavailable; SQL errors (the engine's own bugs) stay unclassified.
func classify(err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "40001" || pe.Code == "40P01":
			return err // retried by Update; ErrContention when it gives up
		case pe.Code[:2] == "53": // insufficient_resources (too_many_connections, …)
			return errkind.Wrap(errkind.Busy, err)
		case pe.Code[:2] == "08", pe.Code[:2] == "57": // connection exception, operator intervention
			return errkind.Wrap(errkind.Unavailable, err)
		case pe.Code == "25006": // read_only_sql_transaction: a standby
			return fmt.Errorf("%w: %w", store.ErrReadOnly, err)
		}
		return err
	}
	if pgconn.SafeToRetry(err) || pgconn.Timeout(err) || isConnErr(err) {
		return errkind.Wrap(errkind.Unavailable, err)
	}
	return err
}

func isConnErr(err error) bool {
	var ce *pgconn.ConnectError
	return errors.As(err, &ce)
}

// tx is one PostgreSQL transaction seen as a store.Tx. Tx's methods take
// no context: they run under the one View or Update was given.
type tx struct {
	ctx   context.Context
	tx    pgx.Tx
	s     *Store
	write bool
}

func (t *tx) writable() error {
	if !t.write {
		return store.ErrReadOnly
	}
	return nil
}

// get is the value under key in space: store.ErrNotFound when absent.
func (t *tx) get(space string, key []byte) ([]byte, error) {
	var v []byte
	err := t.tx.QueryRow(t.ctx, `SELECT value FROM store_kv WHERE space = $1 AND key = $2`, space, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("pgstore: read %s: %w", space, classify(err))
	}
	return v, nil
}

// Record implements store.RecordReader.
func (t *tx) Record(sp store.Space, key hashing.Digest) ([]byte, error) {
	raw, err := t.get(sp.Name, key.Key())
	if err != nil {
		return nil, fmt.Errorf("%w: %s %s", err, sp.Name, key)
	}
	if err := sp.Verify(key, raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// PutRecord implements store.RecordWriter: a key that holds bytes keeps
// them.
func (t *tx) PutRecord(sp store.Space, key hashing.Digest, raw []byte) error {
	if err := t.writable(); err != nil {
		return err
	}
	_, err := t.tx.Exec(t.ctx, `INSERT INTO store_kv (space, key, value) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
		sp.Name, key.Key(), nonNil(raw))
	if err != nil {
		return fmt.Errorf("pgstore: put %s %s: %w", sp.Name, key, classify(err))
	}
	return nil
}

// HasRecord implements store.RecordReader.
func (t *tx) HasRecord(sp store.Space, key hashing.Digest) (bool, error) {
	var ok bool
	err := t.tx.QueryRow(t.ctx, `SELECT EXISTS (SELECT 1 FROM store_kv WHERE space = $1 AND key = $2)`, sp.Name, key.Key()).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("pgstore: %s %s: %w", sp.Name, key, classify(err))
	}
	return ok, nil
}

// DeleteRecord implements store.RecordWriter.
func (t *tx) DeleteRecord(sp store.Space, key hashing.Digest) error {
	return t.delete(sp.Name, key.Key())
}

func (t *tx) delete(space string, key []byte) error {
	if err := t.writable(); err != nil {
		return err
	}
	if _, err := t.tx.Exec(t.ctx, `DELETE FROM store_kv WHERE space = $1 AND key = $2`, space, nonNil(key)); err != nil {
		return fmt.Errorf("pgstore: delete %s %q: %w", space, key, classify(err))
	}
	return nil
}

// scanPage is how many rows a scan reads per query: scans go page by page
// (keyset pagination), so that fn may itself read through the transaction
// (one connection runs one query at a time) and a big keyspace is never
// held in memory whole.
const scanPage = 256

// scan calls fn with the rows of space whose keys lie in [from, to] (to
// nil: no upper bound), in key order, and reports whether it saw any.
func (t *tx) scan(space string, from, to []byte, fn func(key, raw []byte) error) (bool, error) {
	type row struct{ k, v []byte }
	seen := false
	after, inclusive := nonNil(from), true
	for {
		var page []row
		rows, err := t.tx.Query(t.ctx, `SELECT key, value FROM store_kv
			WHERE space = $1 AND (key > $2 OR ($3 AND key = $2)) AND ($4::bytea IS NULL OR key <= $4)
			ORDER BY key LIMIT `+fmt.Sprint(scanPage), space, after, inclusive, to)
		if err != nil {
			return seen, fmt.Errorf("pgstore: scan %s: %w", space, classify(err))
		}
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.k, &r.v); err != nil {
				rows.Close()
				return seen, fmt.Errorf("pgstore: scan %s: %w", space, err)
			}
			page = append(page, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return seen, fmt.Errorf("pgstore: scan %s: %w", space, classify(err))
		}
		for _, r := range page {
			seen = true
			if err := fn(r.k, r.v); err != nil {
				return seen, err
			}
		}
		if len(page) < scanPage {
			return seen, nil
		}
		after, inclusive = page[len(page)-1].k, false
	}
}

// Scan implements store.Scanner. A keyspace with no rows may be a blob
// space: its blobs are listed from the object store (a name is one or
// the other, never both).
func (t *tx) Scan(name string, fn func(key, raw []byte) error) error {
	seen, err := t.scan(name, nil, nil, fn)
	if err != nil || seen {
		return err
	}
	return t.s.blobs.Scan(t.ctx, name, fn)
}

// LatestVersion implements store.Versions.
func (t *tx) LatestVersion(name string) (uint64, []byte, error) {
	var k, v []byte
	err := t.tx.QueryRow(t.ctx, `SELECT key, value FROM store_kv WHERE space = $1 ORDER BY key DESC LIMIT 1`, name).Scan(&k, &v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, fmt.Errorf("pgstore: latest version of %s: %w", name, classify(err))
	}
	if len(k) != 8 {
		return 0, nil, fmt.Errorf("%w: %s: version key %x is not 8 bytes", store.ErrCorrupt, name, k)
	}
	return binary.BigEndian.Uint64(k), v, nil
}

// Version implements store.Versions.
func (t *tx) Version(name string, n uint64) ([]byte, error) {
	raw, err := t.get(name, store.VersionKey(n))
	if err != nil {
		return nil, fmt.Errorf("%w: %s version %d", err, name, n)
	}
	return raw, nil
}

// PutVersion implements store.Versions: version n is inserted only if
// n-1 is there and n is not, in one statement; the primary key makes a
// concurrent insert of n by another replica wait for it and then fail
// (a serialisation failure, retried by Update, or no row: ErrConflict).
func (t *tx) PutVersion(name string, n uint64, raw []byte) error {
	if err := t.writable(); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%w: %s version 0", store.ErrConflict, name)
	}
	var prev []byte
	if n > 1 {
		prev = store.VersionKey(n - 1)
	}
	if err := t.insertAfter(name, store.VersionKey(n), prev, raw); err != nil {
		return fmt.Errorf("%w: %s version %d", err, name, n)
	}
	return nil
}

// insertAfter inserts raw under key in space if prev (when not nil) is
// there and key is not: store.ErrConflict otherwise.
func (t *tx) insertAfter(space string, key, prev, raw []byte) error {
	tag, err := t.tx.Exec(t.ctx, `INSERT INTO store_kv (space, key, value)
		SELECT $1, $2, $3
		WHERE $4::bytea IS NULL OR EXISTS (SELECT 1 FROM store_kv WHERE space = $1 AND key = $4)
		ON CONFLICT DO NOTHING`, space, key, nonNil(raw), prev)
	if err != nil {
		return fmt.Errorf("pgstore: insert into %s: %w", space, classify(err))
	}
	if tag.RowsAffected() == 0 {
		return store.ErrConflict
	}
	return nil
}

// Entry implements store.Logs.
func (t *tx) Entry(name string, log []byte, seq uint64) ([]byte, error) {
	raw, err := t.get(name, store.EntryKey(log, seq))
	if err != nil {
		return nil, fmt.Errorf("%w: %s log %q entry %d", err, name, log, seq)
	}
	return raw, nil
}

// AppendEntry implements store.Logs, as PutVersion.
func (t *tx) AppendEntry(name string, log []byte, seq uint64, raw []byte) error {
	if err := t.writable(); err != nil {
		return err
	}
	var prev []byte
	if seq > 0 {
		prev = store.EntryKey(log, seq-1)
	}
	if err := t.insertAfter(name, store.EntryKey(log, seq), prev, raw); err != nil {
		return fmt.Errorf("%w: %s log %q entry %d", err, name, log, seq)
	}
	return nil
}

// ScanLog implements store.Logs.
func (t *tx) ScanLog(name string, log []byte, from uint64, fn func(seq uint64, raw []byte) error) error {
	_, err := t.scan(name, store.EntryKey(log, from), store.EntryKey(log, math.MaxUint64), func(k, v []byte) error {
		if len(k) != len(log)+9 {
			return nil // another log whose id extends this one's past a zero byte
		}
		return fn(binary.BigEndian.Uint64(k[len(k)-8:]), v)
	})
	return err
}

// Value implements store.Values.
func (t *tx) Value(name string, key []byte) ([]byte, error) {
	raw, err := t.get(name, key)
	if err != nil {
		return nil, fmt.Errorf("%w: %s %q", err, name, key)
	}
	return raw, nil
}

// PutValue implements store.Values.
func (t *tx) PutValue(name string, key, raw []byte) error {
	if err := t.writable(); err != nil {
		return err
	}
	_, err := t.tx.Exec(t.ctx, `INSERT INTO store_kv (space, key, value) VALUES ($1, $2, $3)
		ON CONFLICT (space, key) DO UPDATE SET value = EXCLUDED.value`, name, nonNil(key), nonNil(raw))
	if err != nil {
		return fmt.Errorf("pgstore: put %s %q: %w", name, key, classify(err))
	}
	return nil
}

// DeleteValue implements store.Values.
func (t *tx) DeleteValue(name string, key []byte) error { return t.delete(name, key) }

// NextSequence implements store.Values: a counter row per name, taken
// under the transaction's row lock (a number of a transaction that fails
// is given again; one that commits never is).
func (t *tx) NextSequence(name string) (uint64, error) {
	if err := t.writable(); err != nil {
		return 0, err
	}
	var n int64
	err := t.tx.QueryRow(t.ctx, `INSERT INTO store_sequences (space, n) VALUES ($1, 1)
		ON CONFLICT (space) DO UPDATE SET n = store_sequences.n + 1 RETURNING n`, name).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("pgstore: sequence %s: %w", name, classify(err))
	}
	return uint64(n), nil
}

// Blob implements store.Blobs, from the object store.
func (t *tx) Blob(sp store.Space, key hashing.Digest) ([]byte, error) {
	return t.s.blobs.Get(t.ctx, sp, key)
}

// HasBlob implements store.Blobs.
func (t *tx) HasBlob(sp store.Space, key hashing.Digest) (bool, error) {
	return t.s.blobs.Has(t.ctx, sp, key)
}

// PutBlob implements store.Blobs: written to the object store at once,
// whatever becomes of the transaction.
func (t *tx) PutBlob(sp store.Space, key hashing.Digest, raw []byte) error {
	if err := t.writable(); err != nil {
		return err
	}
	return t.s.blobs.Put(t.ctx, sp, key, raw)
}

// nonNil turns nil into an empty slice: pgx sends a nil []byte as NULL,
// and the columns are NOT NULL (an empty value is a value).
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
