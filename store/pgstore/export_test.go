package pgstore

import "github.com/jackc/pgx/v5/pgxpool"

// LockStat is the lock pool's statistics, for tests that check a
// cancelled wait gave its connection back.
func (s *Store) LockStat() *pgxpool.Stat { return s.locks.Stat() }
