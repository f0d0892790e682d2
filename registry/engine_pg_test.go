package registry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/store"
	"github.com/groundgate/groundgate/store/pgstore"
	"github.com/groundgate/groundgate/store/pgstore/pgstoretest"
)

// The PostgreSQL cluster and the S3 server start only for the tests that
// ask for them (TestOnPostgres…).
func TestMain(m *testing.M) { pgstoretest.Main(m) }

// openPG opens the engine over a fresh database (and bucket: the engine
// requires one, the registry keeps no blobs); reopen opens the same
// place again, as another replica would.
func openPG(t *testing.T) (st *pgstore.Store, reopen func() *pgstore.Store) {
	t.Helper()
	p := pgstoretest.New(t)
	reopen = func() *pgstore.Store {
		st := p.Open(t)
		t.Cleanup(func() { st.Close() })
		return st
	}
	return reopen(), reopen
}

func openEngine(t *testing.T, st store.Store) *Store {
	t.Helper()
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) // mustOpen's
	s, err := OpenEngine(context.Background(), st, Options{Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// storeDump is layoutDump read through the store: the registry's
// keyspaces in any engine.
func storeDump(t *testing.T, st store.Viewer) string {
	t.Helper()
	var out bytes.Buffer
	names := []string{spaceChunks.Name, spaceGroups.Name, identitiesName, metaName, namesName, spaceRecords.Name, versionsName} // sorted
	err := st.View(context.Background(), func(tx store.Tx) error {
		for _, name := range names {
			var all bytes.Buffer
			n := 0
			err := tx.Scan(name, func(k, v []byte) error {
				n++
				fmt.Fprintf(&all, "%d:%s%d:%s", len(k), k, len(v), v)
				return nil
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(&out, "%s %d %s\n", name, n, hashing.SumSHA256(all.Bytes()))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// On PostgreSQL the registry stores the bytes it stores in bbolt, and
// answers as it does there: the steps of testdata/grouped-v3 give the
// same keyspaces, versions, history and verification, and a second
// replica opening the same database reads the same current version.
func TestOnPostgresSameAsBolt(t *testing.T) {
	ctx := context.Background()
	st, reopen := openPG(t)
	s := openEngine(t, st)
	layoutSteps(t, s)

	want, err := os.ReadFile("testdata/grouped-v3.layout")
	if err != nil {
		t.Fatal(err)
	}
	if got := storeDump(t, st); got != string(want) {
		t.Errorf("PostgreSQL holds other bytes than bbolt:\n got %s\nwant %s", got, want)
	}
	_, g := goldenDB(t, "grouped-v3")
	checkLegacyVersions(t, s, g)
	rep, err := s.Verify(ctx)
	if err != nil || rep.Versions != 4 || rep.Current != 4 || rep.Registry != g.Versions[3].Registry || rep.Records != 605 {
		t.Fatalf("verify on PostgreSQL: %+v, %v", rep, err)
	}

	// Another replica: opens the same current version, reads every
	// version and diff the same.
	r2 := openEngine(t, reopen())
	if r2.Current().Registry() != s.Current().Registry() || r2.Current().Version() != 4 {
		t.Fatalf("second replica at version %d", r2.Current().Version())
	}
	checkLegacyVersions(t, r2, g)
	if _, err := r2.Version(ctx, 9); !errors.Is(err, ErrNotFound) {
		t.Fatalf("version 9: %v, want ErrNotFound", err)
	}

	// A stored record gone bad is found by verify, on this engine too.
	if err := st.Update(ctx, func(tx store.Tx) error {
		return tx.PutValue(metaName, keyCurrent, u64(3))
	}); err != nil {
		t.Fatal(err)
	}
	if rep, err := VerifyStore(ctx, st); !errors.Is(err, ErrCorrupt) || len(rep.Problems) == 0 {
		t.Fatalf("verify with current at 3 of 4: %v %q", err, rep.Problems)
	}
}

// Two replicas over one PostgreSQL database: the version sequence is one.
// Each puts a different edit at once; exactly one makes version n+1 first,
// the other's commit conflicts, catches up and applies its put on the
// winner's version as n+2 (a put replaces an entry whatever the version
// holds): both answer, in one history. A replica that is behind (the
// winner, which has not read the other's version) does the same.
func TestOnPostgresOneVersionSequence(t *testing.T) {
	ctx := context.Background()
	st, reopen := openPG(t)
	a := openEngine(t, st)
	mustSeed(t, a, synthEntries(t, 50))
	b := openEngine(t, reopen())

	edit := func(name, alias string) Entry {
		e := a.Current().Capabilities()[0].Entry.Clone()
		for _, c := range a.Current().Capabilities() {
			if c.Name == name {
				e = c.Entry.Clone()
			}
		}
		e.Disc.Aliases = append(e.Disc.Aliases, alias)
		return e
	}
	ea, eb := edit("SYN_000001", "from replica a"), edit("SYN_000002", "from replica b")
	var wg sync.WaitGroup
	res := make([]PutResult, 2)
	errs := make([]error, 2)
	for i, w := range []struct {
		s *Store
		e Entry
	}{{a, ea}, {b, eb}} {
		wg.Go(func() { res[i], errs[i] = w.s.Put(ctx, w.e) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
	}
	if got := []uint64{min(res[0].Version, res[1].Version), max(res[0].Version, res[1].Version)}; got[0] != 2 || got[1] != 3 {
		t.Fatalf("the two puts made versions %d and %d, want 2 and 3", res[0].Version, res[1].Version)
	}
	if _, err := VerifyStore(ctx, st); err != nil {
		t.Fatal(err)
	}
	h, err := openEngine(t, reopen()).History(ctx)
	if err != nil || len(h) != 3 {
		t.Fatalf("history: %d versions, %v", len(h), err)
	}
	// Version 3 holds both edits.
	v3, err := openEngine(t, reopen()).Version(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []Entry{ea, eb} {
		c, ok := v3.Get(want.Name)
		if !ok || len(c.Disc.Aliases) != len(want.Disc.Aliases) {
			t.Errorf("version 3 lacks the edit of %s", want.Name)
		}
	}
	// The replica that made version 2 is still there in memory; its next
	// put conflicts with version 3, catches up and applies as version 4.
	winner := a
	if res[1].Version == 2 {
		winner = b
	}
	if winner.Current().Version() != 2 {
		t.Fatalf("the first replica at version %d, want 2 (it has not read the other's)", winner.Current().Version())
	}
	if r, err := winner.Put(ctx, edit("SYN_000003", "from the winner")); err != nil || r.Version != 4 {
		t.Fatalf("the behind replica's put: %+v %v", r, err)
	}
	if _, err := VerifyStore(ctx, st); err != nil {
		t.Fatal(err)
	}
}
