package pgstore

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultLockConns is the lock pool's size by default: how many locks one
// process holds at once (see Lock).
const DefaultLockConns = 16

// unlockTimeout bounds pg_advisory_unlock; a connection that cannot
// answer in that time is closed instead, which frees its locks as well.
const unlockTimeout = 5 * time.Second

// LockID is the PostgreSQL advisory lock key Lock takes for key: the
// first 8 bytes of SHA-256("groundgate/" ‖ key), big-endian, as a signed
// bigint. Two keys that share an id only wait for each other: a
// collision serialises, it never lets two holders in at once.
func LockID(key []byte) int64 {
	sum := sha256.Sum256(append([]byte("groundgate/"), key...))
	return int64(binary.BigEndian.Uint64(sum[:8]))
}

// Lock holds key across every process on the database until unlock is
// called (once; later calls do nothing): a PostgreSQL session-level
// advisory lock (pg_advisory_lock(LockID(key))) on a connection of the
// lock pool, kept until unlock. It waits while another holder has key,
// until ctx ends (ctx's error).
//
// The locks have a pool of their own (Config.LockConns connections),
// apart from the one transactions use: a holder runs transactions while it
// holds, so a lock sharing their pool could take the last connection its
// own transaction waits for. With separate pools, holders wait only for
// each other's locks and for a free lock connection, and transactions
// never wait for a holder. At most LockConns keys are held (or waited
// for) by one process at once; more wait for a lock connection, bounded
// by their ctx.
//
// A connection whose wait ended with ctx, or whose unlock failed, is
// closed rather than given back: a lock granted as the wait was
// cancelled must not stay held by a pooled connection. A process that
// dies, or loses its connection, while holding loses the lock too:
// PostgreSQL releases a session's advisory locks when its connection
// ends, so another process may take the key while the one that died
// never finished its work.
func (s *Store) Lock(ctx context.Context, key []byte) (unlock func(), err error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	id := LockID(key)
	c, err := s.locks.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("pgstore: lock %q: %w", key, classify(err))
	}
	if _, err := c.Exec(ctx, `SELECT pg_advisory_lock($1)`, id); err != nil {
		destroy(c)
		if cerr := ctx.Err(); cerr != nil {
			// The server answers a cancelled wait with 57014
			// (query_canceled): the wait ended because ctx did.
			return nil, fmt.Errorf("pgstore: lock %q: %w", key, cerr)
		}
		return nil, fmt.Errorf("pgstore: lock %q: %w", key, classify(err))
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			uctx, cancel := context.WithTimeout(context.Background(), unlockTimeout)
			defer cancel()
			var held bool
			if err := c.QueryRow(uctx, `SELECT pg_advisory_unlock($1)`, id).Scan(&held); err != nil || !held {
				// The connection broke, or it no longer holds the lock:
				// either way it is not one to pool.
				s.log.Debug("pgstore: unlock failed; closing the connection", "key", string(key), "held", held, "err", err)
				destroy(c)
				return
			}
			c.Release()
		})
	}, nil
}

// destroy takes c out of its pool and closes it: PostgreSQL ends its
// session, and with it every advisory lock the session held or waited
// for.
func destroy(c *pgxpool.Conn) {
	conn := c.Hijack()
	ctx, cancel := context.WithTimeout(context.Background(), unlockTimeout)
	defer cancel()
	conn.Close(ctx)
}

// lockPool is the pool Lock takes connections from: pc's database, n
// connections at most, made on demand. A cancelled wait sends PostgreSQL
// a cancel request (rather than only dropping the socket, pgx's default),
// so the server stops waiting for the lock at once instead of staying in
// the lock's queue until it is granted.
func lockPool(ctx context.Context, pc *pgxpool.Config, n int32) (*pgxpool.Pool, error) {
	lc := pc.Copy()
	lc.MaxConns, lc.MinConns = n, 0
	lc.ConnConfig.BuildContextWatcherHandler = func(pg *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: pg, DeadlineDelay: time.Second}
	}
	p, err := pgxpool.NewWithConfig(ctx, lc)
	if err != nil {
		return nil, fmt.Errorf("pgstore: lock pool: %w", classify(err))
	}
	return p, nil
}
