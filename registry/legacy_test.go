package registry

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/internal/testio"
)

// testdata/legacy-v1.db.gz is a database written by the release before
// chunked versions (every version a full manifest), made with that
// release's CLI:
//
//	groundgate registry list --db legacy.db     # seeds the built-in catalog: v1
//	groundgate registry put --db legacy.db p2.json  # MOM_WZS gains an alias: v2
//	groundgate registry put --db legacy.db p3.json  # MOM_REV risk_window default 61: v3
//	groundgate registry put --db legacy.db p4.json  # new MOM_REV_SLOW + MOM_WZS re-described: v4
//
// then compacted with bbolt.Compact. legacy-v1.golden.json holds what that
// release's registry.Store said about it: the history, and per version the
// registry hash, the count and the SHA-256 of json.Marshal(Export()).
type legacyGolden struct {
	History  []VersionInfo `json:"history"`
	Versions []struct {
		Version  uint64         `json:"version"`
		Registry hashing.Digest `json:"registry"`
		Count    int            `json:"count"`
		Export   hashing.Digest `json:"export"`
	} `json:"versions"`
}

func legacyDB(t *testing.T) (string, legacyGolden) {
	t.Helper()
	return goldenDB(t, "legacy-v1")
}

// goldenDB unpacks testdata/NAME.db.gz into a temp file and reads
// testdata/NAME.golden.json.
func goldenDB(t *testing.T, name string) (string, legacyGolden) {
	t.Helper()
	path := testio.Gunzip(t, "testdata/"+name+".db.gz")
	var g legacyGolden
	data, err := os.ReadFile("testdata/" + name + ".golden.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	return path, g
}

func checkLegacyVersions(t *testing.T, s *Store, g legacyGolden) {
	t.Helper()
	ctx := context.Background()
	for _, want := range g.Versions {
		snap, err := s.Version(ctx, want.Version)
		if err != nil {
			t.Fatalf("legacy version %d: %v", want.Version, err)
		}
		b, _ := json.Marshal(snap.Export())
		if snap.Registry() != want.Registry || len(snap.Capabilities()) != want.Count || hashing.SumSHA256(b) != want.Export {
			t.Errorf("legacy version %d reads differently: registry %s count %d", want.Version, snap.Registry(), len(snap.Capabilities()))
		}
	}
	hist, err := s.History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := hist[len(hist)-len(g.History):]
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(g.History)
	if !bytes.Equal(gb, wb) {
		t.Errorf("legacy history:\n got %s\nwant %s", gb, wb)
	}
}

func countKeys(t *testing.T, path string, bucket []byte) int {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n := 0
	_ = db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucket); b != nil {
			n = b.Stats().KeyN
		}
		return nil
	})
	return n
}

// editTwice puts two alias edits of name over the four versions of the
// file at path and checks what they wrote in bucket: at most most keys
// the first, one key the second. It returns the entry last put and the
// count after the first edit.
func editTwice(t *testing.T, path string, g legacyGolden, name string, bucket []byte, most int) (Entry, int) {
	t.Helper()
	s := mustOpen(t, path)
	e := mustGet(t, s, 4, name).Entry
	e.Disc.Aliases = append(e.Disc.Aliases, "first alias on top")
	if r := mustPut(t, s, e); r.Version != 5 {
		t.Fatalf("put on an earlier release's file: %+v", r)
	}
	s.Close()
	first := countKeys(t, path, bucket)
	if first == 0 || first > most {
		t.Fatalf("%d keys in %s after the first new version", first, bucket)
	}
	s = mustOpen(t, path)
	e.Disc.Aliases = append(e.Disc.Aliases, "second alias on top")
	mustPut(t, s, e)
	if s.Current().Registry() != g.Versions[3].Registry {
		t.Fatal("alias edits changed the registry hash")
	}
	checkLegacyVersions(t, s, g)
	s.Close()
	if n := countKeys(t, path, bucket); n != first+1 {
		t.Fatalf("an alias edit wrote %d keys in %s, want 1", n-first, bucket)
	}
	return e, first
}

// A database written by the previous release reads, verifies and accepts
// new versions; its old versions stay byte-for-byte what they were.
func TestLegacyDatabase(t *testing.T) {
	ctx := context.Background()
	path, g := legacyDB(t)

	rep, err := VerifyFile(ctx, path)
	if err != nil || rep.Versions != 4 || rep.Records != 243 || rep.Chunks != 0 || rep.Registry != g.Versions[3].Registry {
		t.Fatalf("verify legacy file: %+v, %v", rep, err)
	}
	ro, err := Open(ctx, path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if ro.Current().Version() != 4 {
		t.Fatalf("legacy current version %d", ro.Current().Version())
	}
	checkLegacyVersions(t, ro, g)
	ro.Close()

	// Writing on top: the first new version chunks every bucket once; the
	// next one writes one chunk.
	e, first := editTwice(t, path, g, "MOM_WZS", bucketChunks, NumBuckets)
	rep, err = VerifyFile(ctx, path)
	if err != nil || rep.Versions != 6 || rep.Records != 245 || rep.Chunks != first+1 {
		t.Fatalf("verify after chunked versions: %+v, %v", rep, err)
	}
	if n := countKeys(t, path, bucketGroups); n == 0 || n > NumGroups+1 {
		t.Fatalf("%d groups after two versions over manifests", n)
	}
	s := mustOpen(t, path)
	defer s.Close()
	checkLegacyVersions(t, s, g)
	if c := mustGet(t, s, 6, "MOM_WZS"); len(c.Disc.Aliases) != len(e.Disc.Aliases) {
		t.Fatalf("version 6 MOM_WZS aliases %q", c.Disc.Aliases)
	}
}

// testdata/chunked-v2.db.gz is a database written by the release before
// groups (every version a root of 256 chunk digests, format 2), made with
// that release's CLI as legacy-v1.db.gz was (the same four steps; v2's
// alias is "chunked era alias"), compacted with bbolt.Compact;
// chunked-v2.golden.json holds what that release's registry.Store said
// about it.
//
// It reads and verifies as it is; the first version written on top stores
// every group once and later ones one group an edit; the old roots stay
// byte for byte what they were, and read as they did.
func TestChunkedV2Database(t *testing.T) {
	ctx := context.Background()
	path, g := goldenDB(t, "chunked-v2")
	roots := func() map[uint64][]byte {
		out := map[uint64][]byte{}
		db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		_ = db.View(func(tx *bolt.Tx) error {
			return tx.Bucket(bucketVersions).ForEach(func(k, v []byte) error {
				out[binary.BigEndian.Uint64(k)] = bytes.Clone(v)
				return nil
			})
		})
		return out
	}
	old := roots()
	for n, raw := range old {
		if !bytes.Contains(raw, []byte(`"format":2`)) {
			t.Fatalf("version %d of the fixture is not format 2", n)
		}
	}

	rep, err := VerifyFile(ctx, path)
	if err != nil || rep.Versions != 4 || rep.Records != 243 || rep.Chunks != 160 || rep.Groups != 0 || rep.Registry != g.Versions[3].Registry {
		t.Fatalf("verify format-2 file: %+v, %v", rep, err)
	}
	ro, err := Open(ctx, path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	checkLegacyVersions(t, ro, g)
	ro.Close()

	e, first := editTwice(t, path, g, "SRP", bucketGroups, NumGroups)
	rep, err = VerifyFile(ctx, path)
	if err != nil || rep.Versions != 6 || rep.Records != 245 || rep.Chunks != 162 || rep.Groups != first+1 {
		t.Fatalf("verify after grouped versions: %+v, %v", rep, err)
	}
	now := roots()
	for n, raw := range old {
		if !bytes.Equal(now[n], raw) {
			t.Errorf("version %d's root changed", n)
		}
	}
	if !bytes.Contains(now[6], []byte(`"format":3`)) {
		t.Errorf("version 6 is not format 3: %.200s", now[6])
	}
	s := mustOpen(t, path)
	defer s.Close()
	checkLegacyVersions(t, s, g)
	if c := mustGet(t, s, 6, "SRP"); !slices.Equal(c.Disc.Aliases, e.Disc.Aliases) {
		t.Fatalf("version 6 SRP aliases %q", c.Disc.Aliases)
	}
	if c := mustGet(t, s, 5, "SRP"); !slices.Equal(c.Disc.Aliases, e.Disc.Aliases[:len(e.Disc.Aliases)-1]) {
		t.Fatalf("version 5 SRP aliases %q", c.Disc.Aliases)
	}
}
