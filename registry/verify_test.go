package registry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/store/boltstore"
)

// historyDB writes four versions over the fixture entries and returns the
// closed file: v1 seed; v2 an alias of dlog (identities unchanged); v3 a
// behavioural change of neg; v4 a new entry.
func historyDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "history.db")
	s := mustOpen(t, path)
	es := fixtureEntries(t)
	mustSeed(t, s, es)
	e := es[0]
	e.Disc.Aliases = append(e.Disc.Aliases, "log return")
	mustPut(t, s, e)
	n := es[1]
	n.Impl.Expr = "(neg (neg (neg x)))"
	mustPut(t, s, n)
	a := es[2]
	a.Name, a.Impl.Expr = "add3", "(add (add x y) y)"
	mustPut(t, s, a)
	s.Close()
	return path
}

func copyFile(t *testing.T, from string) string {
	t.Helper()
	raw, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	to := filepath.Join(t.TempDir(), "copy.db")
	if err := os.WriteFile(to, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return to
}

// rawUpdate edits the file with bbolt directly, as an attacker or a disk
// fault would, bypassing the store.
func rawUpdate(t *testing.T, path string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
}

// editVersion rewrites the stored bytes of version n with edit, which must
// change them.
func editVersion(t *testing.T, tx *bolt.Tx, n uint64, edit func([]byte) []byte) error {
	t.Helper()
	b := tx.Bucket(bucketVersions)
	old := bytes.Clone(b.Get(u64(n)))
	v := edit(bytes.Clone(old))
	if bytes.Equal(v, old) {
		t.Fatalf("edit of version %d changed nothing", n)
	}
	return b.Put(u64(n), v)
}

var registryField = regexp.MustCompile(`"registry":"(sha256:[0-9a-f]{64})"`)

// recordedRegistry returns the registry hash version n records.
func recordedRegistry(t *testing.T, tx *bolt.Tx, n uint64) string {
	t.Helper()
	m := registryField.FindSubmatch(tx.Bucket(bucketVersions).Get(u64(n)))
	if m == nil {
		t.Fatalf("version %d: no registry field", n)
	}
	return string(m[1])
}

// flipHex changes the first hex digit of a digest string: still a valid,
// canonical digest, another value.
func flipHex(d string) string {
	c := byte('0')
	if d[7] == '0' {
		c = '1'
	}
	return d[:7] + string(c) + d[8:]
}

func replaceRegistry(t *testing.T, tx *bolt.Tx, n uint64, to string) error {
	return editVersion(t, tx, n, func(v []byte) []byte {
		return registryField.ReplaceAll(v, []byte(`"registry":"`+to+`"`))
	})
}

// chunkList decodes version n and returns its chunk list, its groups read
// for a format-3 version (nil for a legacy manifest).
func chunkList(t *testing.T, tx *bolt.Tx, n uint64) (*versionDoc, *root) {
	t.Helper()
	doc, err := decodeVersion(u64(n), tx.Bucket(bucketVersions).Get(u64(n)))
	if err != nil {
		t.Fatalf("version %d: %v", n, err)
	}
	if doc.groups == nil {
		return doc, doc.chunks
	}
	r, err := readGroups(boltstore.Tx(tx), n, doc.groups, nil)
	if err != nil {
		t.Fatalf("version %d: %v", n, err)
	}
	return doc, r
}

// putVersion stores doc as version n listing the chunks r, as a forger
// would: a format-3 version's groups are re-encoded and stored under
// their digests, a format-2 version's chunk list rewritten.
func putVersion(t *testing.T, tx *bolt.Tx, n uint64, doc *versionDoc, r *root) error {
	t.Helper()
	if doc.groups == nil {
		doc.Chunks = digestStrings(r[:])
	} else {
		var gr groupRoot
		for g := range gr {
			raw, d, err := encodeGroup(groupOf(r, g))
			if err != nil {
				t.Fatal(err)
			}
			if raw != nil {
				if err := tx.Bucket(bucketGroups).Put(d.Key(), raw); err != nil {
					return err
				}
			}
			gr[g] = d
		}
		doc.Groups = digestStrings(gr[:])
	}
	raw, err := marshalVersion(doc)
	if err != nil {
		t.Fatal(err)
	}
	return tx.Bucket(bucketVersions).Put(u64(n), raw)
}

// firstChunk returns the key and value of the chunk that version n lists
// first, and its bucket.
func firstChunk(t *testing.T, tx *bolt.Tx, n uint64) ([]byte, []byte, int) {
	t.Helper()
	_, r := chunkList(t, tx, n)
	if r == nil {
		t.Fatalf("version %d is a legacy manifest", n)
	}
	for b, d := range r {
		if !d.IsZero() {
			return d.Key(), bytes.Clone(tx.Bucket(bucketChunks).Get(d.Key())), b
		}
	}
	t.Fatal("no chunk")
	return nil, nil, 0
}

// firstGroup returns the key and value of the group that version n (a
// format-3 version) lists first.
func firstGroup(t *testing.T, tx *bolt.Tx, n uint64) ([]byte, []byte) {
	t.Helper()
	doc, _ := chunkList(t, tx, n)
	if doc.groups == nil {
		t.Fatalf("version %d is not stored over groups", n)
	}
	for _, d := range doc.groups {
		if !d.IsZero() {
			return d.Key(), bytes.Clone(tx.Bucket(bucketGroups).Get(d.Key()))
		}
	}
	t.Fatal("no group")
	return nil, nil
}

// Every tamper with the stored bytes — keeping them valid, canonical JSON
// — is reported, naming what was tampered with, and nothing else is.
func TestVerifyDetectsTampering(t *testing.T) {
	ctx := context.Background()
	clean := historyDB(t)
	rep, err := VerifyFile(ctx, clean)
	if err != nil || rep.Versions != 4 || rep.Records != 11 || rep.Current != 4 {
		t.Fatalf("clean history: %+v, %v", rep, err)
	}

	var (
		v1Hash, v3Hash string
		tamperedHash   string
	)
	for _, tc := range []struct {
		name   string
		tamper func(t *testing.T, tx *bolt.Tx) error
		want   func() []string // substrings of the one problem (or of all problems, in order)
		all    bool            // want lists every problem, not only the first
	}{
		{
			name: "v1 registry hash",
			tamper: func(t *testing.T, tx *bolt.Tx) error {
				v1Hash = recordedRegistry(t, tx, 1)
				tamperedHash = flipHex(v1Hash)
				return replaceRegistry(t, tx, 1, tamperedHash)
			},
			// Exactly one problem: v2 keeps v1's identities, and its hash
			// is recomputed, not copied from what v1 records.
			want: func() []string {
				return []string{"version 1 records registry " + tamperedHash + ", its entries hash to " + v1Hash}
			},
			all: true,
		},
		{
			name: "registry hash of a disc-only version",
			tamper: func(t *testing.T, tx *bolt.Tx) error {
				v1Hash = recordedRegistry(t, tx, 2)
				tamperedHash = flipHex(v1Hash)
				return replaceRegistry(t, tx, 2, tamperedHash)
			},
			want: func() []string { return []string{"version 2 records registry " + tamperedHash} },
			all:  true,
		},
		{
			name: "registry hash of another version",
			tamper: func(t *testing.T, tx *bolt.Tx) error {
				v1Hash, v3Hash = recordedRegistry(t, tx, 1), recordedRegistry(t, tx, 3)
				return replaceRegistry(t, tx, 3, v1Hash)
			},
			want: func() []string {
				return []string{"version 3 records registry " + v1Hash + ", its entries hash to " + v3Hash}
			},
			all: true,
		},
		{
			name: "parent",
			tamper: func(t *testing.T, tx *bolt.Tx) error {
				return editVersion(t, tx, 3, func(v []byte) []byte { return bytes.Replace(v, []byte(`"parent":2,`), []byte(`"parent":1,`), 1) })
			},
			want: func() []string { return []string{"version 3 records parent 1, want 2"} },
			all:  true,
		},
		{
			name: "count",
			tamper: func(t *testing.T, tx *bolt.Tx) error {
				return editVersion(t, tx, 2, func(v []byte) []byte { return bytes.Replace(v, []byte(`"count":8,`), []byte(`"count":9,`), 1) })
			},
			want: func() []string { return []string{"version 2 records 9 entries, holds 8"} },
			all:  true,
		},
		{
			name: "changed names",
			tamper: func(t *testing.T, tx *bolt.Tx) error {
				return editVersion(t, tx, 3, func(v []byte) []byte {
					return bytes.Replace(v, []byte(`"names":["neg"]`), []byte(`"names":["add"]`), 1)
				})
			},
			want: func() []string {
				return []string{`version 3 records changed names ["add"], its entries changed ["neg"]`}
			},
			all: true,
		},
		{
			name: "chunk bytes",
			tamper: func(t *testing.T, tx *bolt.Tx) error {
				k, v, _ := firstChunk(t, tx, 4)
				i := bytes.Index(v, []byte(`"record":"`)) + len(`"record":"`)
				v = slices.Concat(v[:i], []byte(flipHex(string(v[i:i+71]))), v[i+71:])
				return tx.Bucket(bucketChunks).Put(k, v)
			},
			want: func() []string {
				return []string{"chunk sha256:", "hashes to sha256:", "version 4, bucket", "is corrupt"}
			},
		},
		{
			name: "record bytes",
			tamper: func(t *testing.T, tx *bolt.Tx) error {
				b := tx.Bucket(bucketRecords)
				k, v := b.Cursor().First()
				v = bytes.Replace(bytes.Clone(v), []byte(`"description":"`), []byte(`"description":"X`), 1)
				return b.Put(bytes.Clone(k), v)
			},
			want: func() []string { return []string{"record sha256:", "hashes to sha256:"} },
		},
		{
			name: "chunk listed in another bucket",
			tamper: func(t *testing.T, tx *bolt.Tx) error {
				// Put the chunk of bucket b into the next bucket too.
				_, _, b := firstChunk(t, tx, 4)
				doc, r := chunkList(t, tx, 4)
				r[(b+1)%NumBuckets] = r[b]
				return putVersion(t, tx, 4, doc, r)
			},
			want: func() []string { return []string{"version 4, bucket", "belongs to bucket"} },
		},
		{
			name: "group bytes",
			tamper: func(t *testing.T, tx *bolt.Tx) error {
				k, v := firstGroup(t, tx, 4)
				i := bytes.Index(v, []byte(`"sha256:`)) + 1
				v = slices.Concat(v[:i], []byte(flipHex(string(v[i:i+71]))), v[i+71:])
				return tx.Bucket(bucketGroups).Put(k, v)
			},
			want: func() []string {
				return []string{"group sha256:", "hashes to sha256:", "version 4, group", "is corrupt"}
			},
		},
		{
			name: "missing group",
			tamper: func(t *testing.T, tx *bolt.Tx) error {
				k, _ := firstGroup(t, tx, 4)
				return tx.Bucket(bucketGroups).Delete(k)
			},
			want: func() []string { return []string{"version 4, group", "is missing", "registry hash not recomputed"} },
		},
		{
			name: "orphan group",
			tamper: func(t *testing.T, tx *bolt.Tx) error {
				_, r := chunkList(t, tx, 4)
				i := slices.IndexFunc(r[:], func(d hashing.Digest) bool { return !d.IsZero() })
				raw, d, err := encodeGroup(&group{1: r[i]})
				if err != nil || raw == nil {
					t.Fatalf("group %v", err)
				}
				return tx.Bucket(bucketGroups).Put(d.Key(), raw)
			},
			want: func() []string { return []string{"group sha256:", "is not referenced by any version"} },
		},
		{
			name: "missing chunk",
			tamper: func(t *testing.T, tx *bolt.Tx) error {
				k, _, _ := firstChunk(t, tx, 4)
				return tx.Bucket(bucketChunks).Delete(k)
			},
			want: func() []string { return []string{"version 4, bucket", "is missing"} },
		},
		{
			name: "name index",
			tamper: func(t *testing.T, tx *bolt.Tx) error {
				nb := tx.Bucket(bucketNames)
				return nb.Put([]byte("neg"), bytes.Clone(nb.Get([]byte("add"))))
			},
			want: func() []string { return []string{`name index: "neg" ->`} },
			all:  true,
		},
		{
			name: "orphan record",
			tamper: func(t *testing.T, tx *bolt.Tx) error {
				e := fixtureEntries(t)[0]
				e.Disc.Description = "never committed"
				raw, _ := e.recordBytes()
				return tx.Bucket(bucketRecords).Put(hashing.SumSHA256(raw).Key(), raw)
			},
			want: func() []string { return []string{"is not referenced by any version"} },
			all:  true,
		},
		{
			name: "non-canonical version",
			tamper: func(t *testing.T, tx *bolt.Tx) error {
				return editVersion(t, tx, 2, func(v []byte) []byte { return bytes.Replace(v, []byte(`{"change":`), []byte(`{ "change":`), 1) })
			},
			want: func() []string { return []string{"version 2:", "not in canonical form"} },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := copyFile(t, clean)
			rawUpdate(t, path, func(tx *bolt.Tx) error { return tc.tamper(t, tx) })
			rep, err := VerifyFile(ctx, path)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("verify after tamper: %v, want ErrCorrupt (report %+v)", err, rep)
			}
			want := tc.want()
			if tc.all {
				if len(rep.Problems) != len(want) {
					t.Fatalf("problems %q, want %d", rep.Problems, len(want))
				}
				for i, w := range want {
					if !strings.Contains(rep.Problems[i], w) {
						t.Errorf("problem %d %q does not say %q", i, rep.Problems[i], w)
					}
				}
				return
			}
			all := strings.Join(rep.Problems, "\n")
			for _, w := range want {
				if !strings.Contains(all, w) {
					t.Errorf("problems %q do not say %q", rep.Problems, w)
				}
			}
		})
	}
}

// The previous release's manifests are verified as strictly: a tampered
// registry hash in a legacy manifest is named too.
func TestVerifyLegacyTamperedHash(t *testing.T) {
	path, g := legacyDB(t)
	var tampered string
	rawUpdate(t, path, func(tx *bolt.Tx) error {
		tampered = flipHex(recordedRegistry(t, tx, 1))
		return replaceRegistry(t, tx, 1, tampered)
	})
	rep, err := VerifyFile(context.Background(), path)
	want := fmt.Sprintf("version 1 records registry %s, its entries hash to %s", tampered, g.Versions[0].Registry)
	if !errors.Is(err, ErrCorrupt) || len(rep.Problems) != 1 || rep.Problems[0] != want {
		t.Fatalf("verify: %v %q, want only %q", err, rep.Problems, want)
	}
}

// A version costs what changed: one alias edit writes one record, one
// chunk, one group and one root, and a behavioural edit the same.
func TestEditWritesOneChunk(t *testing.T) {
	cat, err := BuiltinCatalog()
	if err != nil {
		t.Fatal(err)
	}
	s, path := mustOpenStore(t)
	mustSeed(t, s, cat)
	count := func() [4]int {
		var n [4]int
		_ = s.DB().View(func(tx *bolt.Tx) error {
			for i, b := range [][]byte{bucketRecords, bucketChunks, bucketGroups, bucketVersions} {
				n[i] = tx.Bucket(b).Stats().KeyN
			}
			return nil
		})
		return n
	}
	before := count()
	aliasEdit(t, s, "MOM_WZS", 1)
	c, _ := s.Current().Get("SRP")
	c.Impl.Expr = "(seq " + c.Impl.Expr + " (const 1))"
	mustPut(t, s, c.Entry)
	after := count()
	if d := [4]int{after[0] - before[0], after[1] - before[1], after[2] - before[2], after[3] - before[3]}; d != [4]int{2, 2, 2, 2} {
		t.Fatalf("two one-entry edits added %v records, chunks, groups, versions; want 2 each", d)
	}
	var size int
	_ = s.DB().View(func(tx *bolt.Tx) error { size = len(tx.Bucket(bucketVersions).Get(u64(3))); return nil })
	if size > 1500 {
		t.Fatalf("a version root is %d bytes", size)
	}
	_ = path
}

// What 300 single-alias edits on the built-in catalog add to the file
// (issue 25): 2.0 MB of pages (6.9 KB an edit: the record, the chunk, the
// group and the root, and the pages they half fill). With 256 chunk
// digests in every root it was 4.8 MB, and bbolt's default 16 MB
// allocation step showed it to a user as 0 or 16 MB. Bytes, not time:
// the bound holds on any machine.
func TestEditGrowth(t *testing.T) {
	cat, err := BuiltinCatalog()
	if err != nil {
		t.Fatal(err)
	}
	s, path := mustOpenStore(t)
	mustSeed(t, s, cat)
	fileSize := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	used0, file0 := usedBytes(t, s), fileSize()
	e, _ := s.Current().Get("SRP")
	for i := range 300 {
		e.Disc.Aliases[0] = fmt.Sprintf("sharpe edit %d", i) // one alias changed, as tools/bench/registry-edits.sh does
		mustPut(t, s, e.Entry)
	}
	used, file := usedBytes(t, s)-used0, fileSize()
	t.Logf("300 edits: pages +%d bytes (%d an edit), file %d → %d bytes", used, used/300, file0, file)
	if used > 3<<20 {
		t.Errorf("300 alias edits use %.1f MB of pages, want under 3 MB", float64(used)/(1<<20))
	}
	// The file is its pages and at most one allocation step more.
	if file > usedBytes(t, s)+allocSize+4096 || file-file0 > used+allocSize {
		t.Errorf("file %d → %d bytes for %d bytes of pages", file0, file, used)
	}
}

// Two entries may swap identities in one change; the indexes keep both
// (the cleanup verification checks them).
func TestSwapIdentities(t *testing.T) {
	s, _ := mustOpenStore(t)
	es := fixtureEntries(t)
	mustSeed(t, s, es)
	a, b := es[1], es[2] // neg, add
	a.Sem, a.Alg, a.Impl, b.Sem, b.Alg, b.Impl = b.Sem, b.Alg, b.Impl, a.Sem, a.Alg, a.Impl
	if _, _, err := s.Apply(context.Background(), []Entry{a, b}); err != nil {
		t.Fatal(err)
	}
	v1, err := s.Version(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if s.Current().Registry() != v1.Registry() {
		t.Fatal("swapping two identities changed the registry hash")
	}
	if mustGet(t, s, 2, "neg").Identity != mustGet(t, s, 1, "add").Identity {
		t.Fatal("neg did not take add's identity")
	}
	if rep, err := s.Verify(context.Background()); err != nil {
		t.Fatalf("verify after swap: %v %q", err, rep.Problems)
	}
}

// Every version reads back, after reopening, exactly as it was committed,
// over a random mix of alias edits, behavioural edits and additions.
func TestEveryVersionReadsBack(t *testing.T) {
	ctx := context.Background()
	s, path := mustOpenStore(t)
	cat, err := BuiltinCatalog()
	if err != nil {
		t.Fatal(err)
	}
	mustSeed(t, s, cat)
	rng := rand.New(rand.NewPCG(1, 2))
	want := map[uint64][]byte{1: exportJSON(t, s.Current())}
	for i := 0; i < 60; i++ {
		var batch []Entry
		for k := 0; k <= rng.IntN(3); k++ {
			caps := s.Current().Capabilities()
			c := caps[rng.IntN(len(caps))].Entry.Clone()
			switch rng.IntN(3) {
			case 0:
				c.Disc.Aliases = append(c.Disc.Aliases, fmt.Sprintf("alias %d-%d", i, k))
			case 1:
				c.Impl.Expr = fmt.Sprintf("(seq %s (const %d))", c.Impl.Expr, i)
			default:
				c.Name = fmt.Sprintf("NEW_%d_%d", i, k)
				c.Impl.Expr = fmt.Sprintf("(seq %s (const -%d))", c.Impl.Expr, i)
			}
			if !slices.ContainsFunc(batch, func(e Entry) bool { return e.Name == c.Name }) {
				batch = append(batch, c)
			}
		}
		v, _, err := s.Apply(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		want[v] = exportJSON(t, s.Current())
	}
	last := s.Current().Version()
	s.Close()
	s2 := mustOpen(t, path)
	defer s2.Close()
	for v := uint64(1); v <= last; v++ {
		snap, err := s2.Version(ctx, v)
		if err != nil {
			t.Fatalf("version %d: %v", v, err)
		}
		if got := exportJSON(t, snap); !bytes.Equal(got, want[v]) {
			t.Fatalf("version %d reads back differently", v)
		}
		if ids := snap.Identities(); hashing.RegistryHash(ids) != snap.Registry() {
			t.Fatalf("version %d: registry hash", v)
		}
	}
}

// registryHashSorted (over sorted input) and registryHash are the pinned
// registry hash.
func TestRegistryHashSorted(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := range 50 {
		ds := make([]hashing.Digest, n)
		ss := make([]string, n)
		for i := range ds {
			ds[i] = hashing.SumSHA256([]byte{byte(rng.IntN(20))}) // with repeats
			ss[i] = ds[i].String()
		}
		slices.Sort(ss)
		if got, want := registryHashSorted(ss), hashing.RegistryHash(ds); got != want {
			t.Fatalf("n=%d: %s, want %s", n, got, want)
		}
		if got, want := registryHash(ds), hashing.RegistryHash(ds); got != want {
			t.Fatalf("registryHash, n=%d: %s, want %s", n, got, want)
		}
	}
}

// twin rewrites version n so that name's chunk entry claims other's
// identity, re-hashing the chunk and re-pointing the root at it.
func twin(t *testing.T, tx *bolt.Tx, n uint64, name, other string) error {
	t.Helper()
	cb := tx.Bucket(bucketChunks)
	doc, r := chunkList(t, tx, n)
	var otherID hashing.Digest
	for _, d := range r {
		if d.IsZero() {
			continue
		}
		refs, _, _ := decodeChunk(d, cb.Get(d.Key()))
		for _, ref := range refs {
			if ref.Name == other {
				otherID = ref.Identity
			}
		}
	}
	b := bucketOf(name)
	refs, _, err := decodeChunk(r[b], cb.Get(r[b].Key()))
	if err != nil {
		t.Fatal(err)
	}
	refs = slices.Clone(refs)
	for i := range refs {
		if refs[i].Name == name {
			refs[i].Identity = otherID
		}
	}
	raw, d, err := encodeChunk(refs)
	if err != nil {
		t.Fatal(err)
	}
	if err := cb.Put(d.Key(), raw); err != nil {
		return err
	}
	r[b] = d
	return putVersion(t, tx, n, doc, r)
}

// Two names claiming one identity are named, whether the version adds a
// few identities (v4 of the history) or a whole catalog (a seed).
func TestVerifyNamesTwins(t *testing.T) {
	cat, err := BuiltinCatalog()
	if err != nil {
		t.Fatal(err)
	}
	seeded := filepath.Join(t.TempDir(), "seeded.db")
	s := mustOpen(t, seeded)
	mustSeed(t, s, cat)
	s.Close()
	for _, tc := range []struct {
		name, path  string
		version     uint64
		entry, twin string
	}{
		{"small change", historyDB(t), 4, "add3", "neg"},
		{"seed", seeded, 1, "MOM_WZS", "MOM_REV"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rawUpdate(t, tc.path, func(tx *bolt.Tx) error { return twin(t, tx, tc.version, tc.entry, tc.twin) })
			rep, err := VerifyFile(context.Background(), tc.path)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("verify: %v", err)
			}
			want := fmt.Sprintf("version %d: identity ", tc.version)
			n := 0
			for _, p := range rep.Problems {
				if strings.HasPrefix(p, want) && strings.HasSuffix(p, "is held by two names") {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("%d problems name the twins: %q", n, rep.Problems)
			}
		})
	}
}
