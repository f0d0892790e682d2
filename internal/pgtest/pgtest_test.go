package pgtest

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

func TestMain(m *testing.M) { Main(m) }

// Two databases of one cluster are separate: a table made in one is not in
// the other, and each test's database starts empty.
func TestDBIsolated(t *testing.T) {
	ctx := context.Background()
	a, b := DB(t), DB(t)
	if a == b {
		t.Fatalf("two databases, one DSN: %s", a)
	}
	ca, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close(ctx)
	if _, err := ca.Exec(ctx, "CREATE TABLE x (v int); INSERT INTO x VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	var v int
	if err := ca.QueryRow(ctx, "SELECT v FROM x").Scan(&v); err != nil || v != 7 {
		t.Fatalf("read back %d, %v", v, err)
	}
	cb, err := pgx.Connect(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close(ctx)
	_, err = cb.Exec(ctx, "SELECT v FROM x")
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42P01" { // undefined_table
		t.Fatalf("table of one database seen in another: %v", err)
	}
}

// The session's user is the superuser the DSN names, and the server is at
// least 13 (Debian bookworm's is 15), the oldest the engine is tested on.
func TestServer(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, DB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var who string
	var num int
	if err := conn.QueryRow(ctx, "SELECT current_user, current_setting('server_version_num')::int").Scan(&who, &num); err != nil {
		t.Fatal(err)
	}
	if who != Superuser || num < 130000 {
		t.Fatalf("user %q, server_version_num %d", who, num)
	}
}
