package registry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/store/boltstore"
)

// An open checks every record and chunk of the version it reads against
// its digest, so a changed byte anywhere in them is refused (ErrCorrupt)
// before any entry is served, and `registry verify` names it too.
func TestOpenRefusesChangedBytes(t *testing.T) {
	ctx := context.Background()
	clean := historyDB(t)
	flip := func(v []byte, at int) []byte {
		v = bytes.Clone(v)
		v[at%len(v)] ^= 0x01
		return v
	}
	type target struct {
		name  string
		value func(tx *bolt.Tx) (*bolt.Bucket, []byte) // the bucket and key changed
	}
	recordOf := func(name string) func(tx *bolt.Tx) (*bolt.Bucket, []byte) {
		return func(tx *bolt.Tx) (*bolt.Bucket, []byte) {
			id := tx.Bucket(bucketNames).Get([]byte(name))
			return tx.Bucket(bucketRecords), bytes.Clone(tx.Bucket(bucketIdentities).Get(id))
		}
	}
	for _, tg := range []target{
		{"record of neg", recordOf("neg")},
		{"record of add3", recordOf("add3")},
		{"chunk", func(tx *bolt.Tx) (*bolt.Bucket, []byte) {
			k, _, _ := firstChunk(t, tx, 4)
			return tx.Bucket(bucketChunks), k
		}},
		{"group", func(tx *bolt.Tx) (*bolt.Bucket, []byte) {
			k, _ := firstGroup(t, tx, 4)
			return tx.Bucket(bucketGroups), k
		}},
	} {
		for _, at := range []int{0, 1, 17, 100, 211, -1} {
			t.Run(fmt.Sprintf("%s byte %d", tg.name, at), func(t *testing.T) {
				path := copyFile(t, clean)
				rawUpdate(t, path, func(tx *bolt.Tx) error {
					b, k := tg.value(tx)
					v := b.Get(k)
					return b.Put(k, flip(v, (at+len(v))%len(v)))
				})
				if _, err := Open(ctx, path, Options{ReadOnly: true}); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("open: %v, want ErrCorrupt", err)
				}
				if _, err := VerifyFile(ctx, path); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("verify: %v, want ErrCorrupt", err)
				}
			})
		}
	}
}

// A changed byte in a version's root is refused by the open too, except in
// the header fields nothing derives from the entries: when the version was
// made, by which operation, naming which changes after which parent
// (`registry verify` checks the last two against the versions' contents).
func TestOpenRefusesChangedRoot(t *testing.T) {
	ctx := context.Background()
	clean := historyDB(t)
	var root []byte
	rawUpdate(t, clean, func(tx *bolt.Tx) error {
		root = bytes.Clone(tx.Bucket(bucketVersions).Get(u64(4)))
		return nil
	})
	// The spans of the header's informational values.
	var free [][2]int
	for _, field := range []string{`"names":`, `"op":`, `"created":`, `"parent":`} {
		i := bytes.Index(root, []byte(field))
		if i < 0 {
			t.Fatalf("no %s in %s", field, root)
		}
		i += len(field)
		end := i + bytes.IndexAny(root[i+1:], ",}") + 1
		if field == `"names":` {
			end = i + bytes.IndexByte(root[i:], ']') + 1
		}
		free = append(free, [2]int{i, end})
	}
	informational := func(at int) bool {
		return slices.ContainsFunc(free, func(s [2]int) bool { return at >= s[0] && at < s[1] })
	}
	// Each change is tried inside one transaction that is rolled back,
	// reading the version as Open does; a few go through Open itself.
	path := copyFile(t, clean)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	errRollback := errors.New("rollback")
	refused := 0
	for at := range root {
		if informational(at) {
			continue
		}
		err := db.Update(func(tx *bolt.Tx) error {
			v := bytes.Clone(root)
			v[at] ^= 0x01
			if err := tx.Bucket(bucketVersions).Put(u64(4), v); err != nil {
				return err
			}
			if _, err := readVersion(ctx, boltstore.Tx(tx), 4, nil); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("byte %d of the root (%q…) changed: read %v, want ErrCorrupt", at, clip(root[at:]), err)
			}
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			t.Fatal(err)
		}
		refused++
	}
	if refused < len(root)/2 {
		t.Fatalf("only %d of %d bytes changed", refused, len(root))
	}
	db.Close()
	for _, at := range []int{0, bytes.Index(root, []byte(`"registry":`)) + 20, len(root) - 2} {
		path := copyFile(t, clean)
		rawUpdate(t, path, func(tx *bolt.Tx) error {
			v := bytes.Clone(root)
			v[at] ^= 0x01
			return tx.Bucket(bucketVersions).Put(u64(4), v)
		})
		if _, err := Open(ctx, path, Options{ReadOnly: true}); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("byte %d of the root changed: open %v, want ErrCorrupt", at, err)
		}
	}
}

// forge rewrites name's entry in the current version of the file at path
// as a forger who re-hashes would: edit changes its record (the new bytes
// are stored under their digest) and its chunk entry, and the chunk, the
// root (with the registry hash of the listed identities) and the current
// indexes are rewritten to match. Every digest then checks out.
func forge(t *testing.T, path, name string, edit func(rec []byte, ref *chunkRef) []byte) {
	t.Helper()
	rawUpdate(t, path, func(tx *bolt.Tx) error {
		cb, rb := tx.Bucket(bucketChunks), tx.Bucket(bucketRecords)
		n, err := currentVersion(boltstore.Tx(tx))
		if err != nil {
			t.Fatal(err)
		}
		doc, r := chunkList(t, tx, n)
		b := bucketOf(name)
		refs, _, err := decodeChunk(r[b], cb.Get(r[b].Key()))
		if err != nil {
			t.Fatal(err)
		}
		refs = slices.Clone(refs)
		i := slices.IndexFunc(refs, func(c chunkRef) bool { return c.Name == name })
		if i < 0 {
			t.Fatalf("no %s", name)
		}
		old := refs[i]
		rec := edit(bytes.Clone(rb.Get(old.Record.Key())), &refs[i])
		if rec != nil {
			refs[i].Record = hashing.SumSHA256(rec)
			if err := rb.Put(refs[i].Record.Key(), rec); err != nil {
				return err
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
		var ids []hashing.Digest
		for _, cd := range r {
			if !cd.IsZero() {
				rs, _, err := decodeChunk(cd, cb.Get(cd.Key()))
				if err != nil {
					t.Fatal(err)
				}
				for _, ref := range rs {
					ids = append(ids, ref.Identity)
				}
			}
		}
		doc.Registry = hashing.RegistryHash(ids)
		if err := putVersion(t, tx, n, doc, r); err != nil {
			return err
		}
		ib := tx.Bucket(bucketIdentities)
		if err := ib.Delete(old.Identity.Key()); err != nil {
			return err
		}
		if err := ib.Put(refs[i].Identity.Key(), refs[i].Record.Key()); err != nil {
			return err
		}
		return tx.Bucket(bucketNames).Put([]byte(name), refs[i].Identity.Key())
	})
}

// A forged chunk or record — re-hashed so that every digest checks out —
// passes an open, which checks bytes against digests only; the entry's own
// check then refuses it on its first read by name or identity, so that
// the gate and the executor never act on it, and `registry verify`
// names it.
func TestForgedEntryNeverServed(t *testing.T) {
	ctx := context.Background()
	clean := historyDB(t)
	var negID hashing.Digest
	{
		s, err := Open(ctx, clean, Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		c, _ := s.Current().Get("neg")
		negID = c.Identity
		s.Close()
	}
	forgedID := hashing.MustParse(flipHex(negID.String()))
	for _, tc := range []struct {
		name   string
		edit   func(rec []byte, ref *chunkRef) []byte
		listed hashing.Digest // the identity the forged version lists
		want   string         // in the lookup's error and verify's problems
	}{
		{
			name:   "chunk lists another identity",
			edit:   func(_ []byte, ref *chunkRef) []byte { ref.Identity = forgedID; return nil },
			listed: forgedID,
			want:   `lists "neg" with identity ` + forgedID.String(),
		},
		{
			name: "record not canonical",
			edit: func(rec []byte, _ *chunkRef) []byte {
				return bytes.Replace(rec, []byte(`{"alg":`), []byte(`{ "alg":`), 1)
			},
			listed: negID,
			want:   "is not the canonical form of the entry it holds",
		},
		{
			name: "record holds an invalid entry",
			edit: func(rec []byte, _ *chunkRef) []byte {
				// The kind is outside the identity: only validation refuses it.
				return bytes.Replace(rec, []byte(`"kind":"operation"`), []byte(`"kind":"oper"`), 1)
			},
			listed: negID,
			want:   `unknown kind "oper"`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := copyFile(t, clean)
			forge(t, path, "neg", tc.edit)
			s := mustOpen(t, path)
			defer s.Close()
			cur := s.Current()
			// Listed (its bytes are the ones written) …
			i := slices.IndexFunc(cur.Capabilities(), func(c Capability) bool { return c.Name == "neg" })
			if i < 0 || cur.Capabilities()[i].Identity != tc.listed {
				t.Fatalf("neg is not listed with identity %s", tc.listed)
			}
			// … but never served by name or identity.
			if c, ok := cur.Get("neg"); ok {
				t.Fatalf("Get served the forged entry %+v", c)
			}
			if c, ok := cur.ByIdentity(tc.listed); ok {
				t.Fatalf("ByIdentity served the forged entry %+v", c)
			}
			_, err := cur.Lookup("neg")
			if !errors.Is(err, ErrCorrupt) || errors.Is(err, ErrInvalidEntry) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Lookup: %v, want ErrCorrupt saying %q", err, tc.want)
			}
			if _, err := cur.Lookup("neg"); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("second Lookup: %v", err)
			}
			if c, err := cur.LookupShared("neg"); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("LookupShared served the forged entry %+v (%v)", c, err)
			}
			// A past version holding the same entry refuses it as well
			// (version 3 made neg what it is now).
			if old, err := s.Version(ctx, 3); err != nil {
				t.Fatal(err)
			} else if _, ok := old.Get("neg"); !ok {
				t.Fatal("version 3's neg (not forged) is refused")
			}
			// The other entries are served.
			for _, c := range cur.Capabilities() {
				got, err := cur.Lookup(c.Name)
				if err != nil && c.Name != "neg" {
					t.Fatalf("%s: %v", c.Name, err)
				}
				if shared, serr := cur.LookupShared(c.Name); c.Name != "neg" && (serr != nil || !reflect.DeepEqual(*shared, got)) {
					t.Fatalf("%s: LookupShared %+v (%v), Lookup %+v", c.Name, shared, serr, got)
				}
			}
			if _, err := cur.Lookup("nope"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Lookup of a missing name: %v", err)
			}
			if _, err := cur.LookupShared("nope"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("LookupShared of a missing name: %v", err)
			}
			rep, err := s.Verify(ctx)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(strings.Join(rep.Problems, "\n"), tc.want) {
				t.Fatalf("verify: %v, problems %q, want %q", err, rep.Problems, tc.want)
			}
			// Putting the entry back as it should be is a change, not a
			// no-op, and serves it again.
			es := fixtureEntries(t)
			n := es[1]
			n.Impl.Expr = "(neg (neg (neg x)))"
			r, err := s.Put(ctx, n)
			if err != nil || !r.Changed || r.Capability.Identity != negID {
				t.Fatalf("put back: %+v, %v", r, err)
			}
			if c, ok := s.Current().Get("neg"); !ok || c.Identity != negID {
				t.Fatalf("after the put: %+v, %v", c, ok)
			}
		})
	}
}

// A chunk that points a name at another entry's record is refused by the
// open: the record's name is read with it.
func TestOpenRefusesRecordOfAnotherName(t *testing.T) {
	path := historyDB(t)
	var addRec hashing.Digest
	rawUpdate(t, path, func(tx *bolt.Tx) error {
		id := tx.Bucket(bucketNames).Get([]byte("add"))
		d, err := hashing.Parse(string(tx.Bucket(bucketIdentities).Get(id)))
		addRec = d
		return err
	})
	forge(t, path, "neg", func(_ []byte, ref *chunkRef) []byte { ref.Record = addRec; return nil })
	_, err := Open(context.Background(), path, Options{ReadOnly: true})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `lists "neg", its record `+addRec.String()+` holds "add"`) {
		t.Fatalf("open: %v", err)
	}
}

// Every entry of every version of the previous release's file passes its
// own check: the records it wrote are read as they are.
func TestLegacyEntriesPassTheirCheck(t *testing.T) {
	ctx := context.Background()
	path, g := legacyDB(t)
	s, err := Open(ctx, path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, want := range g.Versions {
		snap, err := s.Version(ctx, want.Version)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range snap.Capabilities() {
			if _, err := snap.Lookup(c.Name); err != nil {
				t.Fatalf("version %d: %v", want.Version, err)
			}
		}
	}
}

// An open does not make the entries' own checks (the point of deferring
// them): no contract is compiled until an entry is read by name.
func TestOpenLeavesChecksForFirstRead(t *testing.T) {
	ctx := context.Background()
	path := historyDB(t)
	s, err := Open(ctx, path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cur := s.Current()
	for i := range cur.caps {
		if st := cur.checks[i].state.Load(); st != unchecked {
			t.Fatalf("%s checked (%d) by the open", cur.caps[i].Name, st)
		}
	}
	if _, ok := cur.Get("neg"); !ok {
		t.Fatal("no neg")
	}
	i := cur.byName["neg"]
	if cur.checks[i].state.Load() != sound {
		t.Fatal("Get did not record the check")
	}
	// Entries a commit writes are checked already; the others keep
	// their state.
	c, _ := cur.Get("dlog")
	c.Disc.Aliases = append(c.Disc.Aliases, "another")
	s.Close()
	s = mustOpen(t, path)
	mustPut(t, s, c.Entry)
	cur = s.Current()
	if st := cur.checks[cur.byName["dlog"]].state.Load(); st != sound {
		t.Fatalf("a committed entry is %d", st)
	}
	if st := cur.checks[cur.byName["add"]].state.Load(); st != unchecked {
		t.Fatalf("an entry nobody read is %d", st)
	}
}
