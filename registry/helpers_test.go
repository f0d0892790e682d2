package registry

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// mustOpenStore opens a store in a fresh temp dir. At cleanup it closes the
// store, reopens the file and re-verifies every stored record against its
// key, every identity and every version's registry hash.
func mustOpenStore(t testing.TB) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "registry.db")
	s := mustOpen(t, path)
	t.Cleanup(func() {
		s.Close()
		mustVerifyFile(t, path)
	})
	return s, path
}

func mustOpen(t testing.TB, path string) *Store {
	t.Helper()
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s, err := Open(context.Background(), path, Options{Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	return s
}

func mustVerifyFile(t testing.TB, path string) {
	t.Helper()
	if rep, err := VerifyFile(context.Background(), path); err != nil {
		t.Errorf("verify %s at cleanup: %v (problems: %q)", path, err, rep.Problems)
	}
}

// fixtureEntries loads testdata/entries.json.
func fixtureEntries(t testing.TB) []Entry {
	t.Helper()
	data, err := os.ReadFile("testdata/entries.json")
	if err != nil {
		t.Fatal(err)
	}
	es, err := DecodeEntries(data, "testdata/entries.json")
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func mustSeed(t testing.TB, s *Store, es []Entry) {
	t.Helper()
	ok, err := s.Seed(context.Background(), es)
	if err != nil || !ok {
		t.Fatalf("seed: %v %v", ok, err)
	}
}

// entryRecords returns the entries of testdata/entries.json, one raw JSON
// document each: the fuzzers' seeds.
func entryRecords(tb testing.TB) []json.RawMessage {
	tb.Helper()
	data, err := os.ReadFile("testdata/entries.json")
	if err != nil {
		tb.Fatal(err)
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		tb.Fatal(err)
	}
	return raws
}
