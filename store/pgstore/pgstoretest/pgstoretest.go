// Package pgstoretest gives a test a PostgreSQL engine of its own: a fresh
// database in the test binary's cluster (internal/pgtest) and a fresh
// bucket in its S3 server (internal/s3test), which the engine keeps blobs
// in. A package using it runs both harnesses from its TestMain:
//
//	func TestMain(m *testing.M) { pgstoretest.Main(m) }
package pgstoretest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/groundgate/groundgate/internal/pgtest"
	"github.com/groundgate/groundgate/internal/s3test"
	"github.com/groundgate/groundgate/internal/testio"
	"github.com/groundgate/groundgate/store/pgstore"
	"github.com/groundgate/groundgate/store/s3store"
)

// Place is one test's database and bucket: what Open opens again after a
// Close, as a restarted server, or another replica, would.
type Place struct {
	DSN    string
	S3     s3store.Config
	Bucket string
	// BlobsURL is the bucket as --blobs gives it (s3://…), its
	// credentials in Env.
	BlobsURL string
}

// Env is the environment the credentials of every place's bucket are
// read from (s3store.ParseURL's env).
func Env(k string) string { return s3test.Env(k) }

// New makes a place; it skips tb where PostgreSQL or weed is missing
// (fails it under GROUNDGATE_REQUIRE_TOOLS).
func New(tb testing.TB) Place {
	tb.Helper()
	dsn := pgtest.DB(tb)
	srv, bucket := s3test.Bucket(tb)
	// As an operator would give it (--blobs), credentials in the
	// environment.
	u := srv.URL(bucket)
	cfg, err := s3store.ParseURL(u, s3test.Env)
	if err != nil {
		tb.Fatal(err)
	}
	return Place{DSN: dsn, S3: cfg, Bucket: bucket, BlobsURL: u}
}

// Blobs opens the place's bucket.
func (p Place) Blobs(tb testing.TB) *s3store.Blobs {
	tb.Helper()
	b, err := s3store.Open(context.Background(), p.S3)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// Open opens the engine over the place; the caller closes it.
func (p Place) Open(tb testing.TB) *pgstore.Store {
	tb.Helper()
	s, err := pgstore.Open(context.Background(), pgstore.Config{DSN: p.DSN, Blobs: p.Blobs(tb)})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// Exec runs one SQL statement on the place's database, behind the
// engine's back.
func (p Place) Exec(tb testing.TB, sql string, args ...any) pgconn.CommandTag {
	tb.Helper()
	var tag pgconn.CommandTag
	p.on(tb, func(ctx context.Context, conn *pgx.Conn) (err error) {
		tag, err = conn.Exec(ctx, sql, args...)
		return err
	})
	return tag
}

// Scan runs one query on the place's database, behind the engine's
// back, and scans its one row into dest.
func (p Place) Scan(tb testing.TB, sql string, args []any, dest ...any) {
	tb.Helper()
	p.on(tb, func(ctx context.Context, conn *pgx.Conn) error {
		return conn.QueryRow(ctx, sql, args...).Scan(dest...)
	})
}

// on runs fn on a connection of its own to the place's database.
func (p Place) on(tb testing.TB, fn func(context.Context, *pgx.Conn) error) {
	tb.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, p.DSN)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := fn(ctx, conn); err != nil {
		tb.Fatal(err)
	}
}

// Corrupt flips one bit of the last byte of the value under key in
// keyspace name: in store_kv if the row is there, else in the blob's
// object. A test's stand-in for a disk that went bad.
func (p Place) Corrupt(tb testing.TB, name string, key []byte) {
	tb.Helper()
	tag := p.Exec(tb, `UPDATE store_kv SET value = set_byte(value, length(value) - 1, get_byte(value, length(value) - 1) # 32)
		WHERE space = $1 AND key = $2`, name, key)
	if tag.RowsAffected() == 1 {
		return
	}
	if err := p.Blobs(tb).Corrupt(context.Background(), name, key); err != nil {
		tb.Fatal(err)
	}
}

// Main runs a test binary's tests, then stops its cluster and S3 server:
// call it from TestMain.
func Main(m *testing.M) { testio.RunStopping(m, pgtest.Shared, s3test.Shared) }

// Stop stops the cluster and the S3 server: for a TestMain that cannot
// call Main (testscript's runs m itself), after its tests ran.
func Stop() {
	pgtest.Shared.Stop()
	s3test.Shared.Stop()
}
