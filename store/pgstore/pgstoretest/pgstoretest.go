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
	// URL is the bucket as `--blobs` takes it; the credentials are Env's.
	URL string
	// Env is the S3 credentials as a process's environment (NAME=value).
	Env []string
}

// New makes a place; it skips tb where PostgreSQL or weed is missing
// (fails it under GROUNDGATE_REQUIRE_TOOLS).
func New(tb testing.TB) Place {
	tb.Helper()
	dsn := pgtest.DB(tb)
	srv, bucket := s3test.Bucket(tb)
	// As an operator would give it (--blobs), credentials in the
	// environment.
	cfg, err := s3store.ParseURL(srv.URL(bucket), s3test.Env)
	if err != nil {
		tb.Fatal(err)
	}
	env := []string{s3store.AccessKeyEnv + "=" + s3test.Env(s3store.AccessKeyEnv), s3store.SecretKeyEnv + "=" + s3test.Env(s3store.SecretKeyEnv)}
	return Place{DSN: dsn, S3: cfg, Bucket: bucket, URL: srv.URL(bucket), Env: env}
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

// Main runs a test binary's tests, then stops its cluster and S3 server:
// call it from TestMain.
func Main(m *testing.M) { testio.RunStopping(m, pgtest.Shared, s3test.Shared) }
