package main

import (
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// migrate takes exactly its three flags; a file a server holds is named
// as such (the copy itself runs on PostgreSQL + S3 in internal/app's
// TestMigrate…).
func TestMigrateCLI(t *testing.T) {
	for _, args := range [][]string{
		{"migrate"},
		{"migrate", "--from", "x.db", "--store", "postgres://h/db"},
		{"migrate", "--from", "x.db", "--blobs", "s3://b"},
		{"migrate", "--from", "x.db", "--store", "postgres://h/db", "--blobs", "s3://bucket", "extra"},
	} {
		if code, _, errs := runCLI(t, args...); code != 2 || !strings.Contains(errs, "--from, --store and --blobs") {
			t.Errorf("%q: exit %d, %s", args, code, errs)
		}
	}

	path := filepath.Join(t.TempDir(), "held.db")
	db, err := bolt.Open(path, 0o600, nil) // as a running server holds it
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	code, out, errs := runCLI(t, "migrate", "--from", path, "--store", "postgres://127.0.0.1:1/none", "--blobs", "s3://bucket?endpoint=http://127.0.0.1:1")
	if code == 0 || !strings.Contains(errs, "is a groundgate server using "+path) || out != "" {
		t.Fatalf("held file: exit %d\n%s\n%s", code, out, errs)
	}
}
