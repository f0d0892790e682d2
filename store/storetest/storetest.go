// Package storetest is the one test suite of the store interfaces, run
// against every engine (the litestream pattern): an engine's test calls
// Run with a Harness, and passes when it keeps every promise package store
// documents — checked reads, durability across a reopen, atomic updates,
// one version sequence, append-only logs with conflicts, group commit.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/groundgate/groundgate/errkind"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/store"
)

// Harness is how the suite drives one engine over one place of storage
// (a file, a database schema).
type Harness struct {
	// Open opens the store. Called again after Close, it opens the same
	// data: it must see every write acknowledged before.
	Open func(t *testing.T) store.Store
	// Close closes what Open returned, as a process that exits would.
	Close func(t *testing.T, s store.Store)
	// Corrupt changes one byte of the value stored under key in the
	// keyspace name (key as Scan gives it). The store is closed meanwhile.
	Corrupt func(t *testing.T, name string, key []byte)
}

// Run runs every test of the suite, each on a fresh Harness from h.
func Run(t *testing.T, h func(t *testing.T) Harness) {
	t.Run("Records", func(t *testing.T) { TestRecords(t, h(t)) })
	t.Run("RecordCorruption", func(t *testing.T) { TestRecordCorruption(t, h(t)) })
	t.Run("Versions", func(t *testing.T) { TestVersions(t, h(t)) })
	t.Run("VersionRace", func(t *testing.T) { TestVersionRace(t, h(t)) })
	t.Run("Logs", func(t *testing.T) { TestLogs(t, h(t)) })
	t.Run("LogRace", func(t *testing.T) { TestLogRace(t, h(t)) })
	t.Run("Values", func(t *testing.T) { TestValues(t, h(t)) })
	t.Run("Blobs", func(t *testing.T) { TestBlobs(t, h(t)) })
	t.Run("Transactions", func(t *testing.T) { TestTransactions(t, h(t)) })
	t.Run("Batch", func(t *testing.T) { TestBatch(t, h(t)) })
	t.Run("Durability", func(t *testing.T) { TestDurability(t, h(t)) })
}

var (
	ctx = context.Background()
	// records is a content-addressed space; calls a space whose key is
	// not the hash of its bytes (the first line of the bytes names it).
	records = store.Space{Name: "storetest.records"}
	named   = store.Space{Name: "storetest.named", Check: func(key hashing.Digest, raw []byte) error {
		if string(raw) != "record "+key.String() {
			return errors.New("does not name its key")
		}
		return nil
	}}
	blobs = store.Space{Name: "storetest.blobs"}
)

func open(t *testing.T, h Harness) store.Store {
	t.Helper()
	s := h.Open(t)
	t.Cleanup(func() {
		if s != nil {
			h.Close(t, s)
		}
	})
	return s
}

// reopen closes s and opens the same data again.
func reopen(t *testing.T, h Harness, s *store.Store) {
	t.Helper()
	h.Close(t, *s)
	*s = nil
	n := h.Open(t)
	*s = n
	t.Cleanup(func() { h.Close(t, n) })
}

// view runs fn in a View and fails the test on its error.
func view(t *testing.T, s store.Store, fn func(store.Tx) error) {
	t.Helper()
	if err := s.View(ctx, fn); err != nil {
		t.Fatal(err)
	}
}

func update(t *testing.T, s store.Store, fn func(store.Tx) error) {
	t.Helper()
	if err := s.Update(ctx, fn); err != nil {
		t.Fatal(err)
	}
}

func wantKind(t *testing.T, what string, err error, k errkind.Kind) {
	t.Helper()
	if errkind.Of(err) != k {
		t.Errorf("%s: error %v is of kind %q, want %q", what, err, errkind.Of(err), k)
	}
}

// read runs a View and returns a copy of what get read.
func read(s store.Store, get func(store.Tx) ([]byte, error)) ([]byte, error) {
	var out []byte
	err := s.View(ctx, func(tx store.Tx) error {
		raw, err := get(tx)
		out = slices.Clone(raw)
		return err
	})
	return out, err
}

// TestRecords: a record reads back checked; absent is NotFound; bytes that
// fail the check are Corrupt; a second put of a key writes nothing; Scan
// lists keys in order; Verify counts and reports.
func TestRecords(t *testing.T, h Harness) {
	s := open(t, h)
	vals := [][]byte{[]byte(`{"a":1}`), []byte(`{"b":2}`), []byte(`{"c":3}`)}
	update(t, s, func(tx store.Tx) error {
		for _, v := range vals {
			if err := tx.PutRecord(records, hashing.SumSHA256(v), v); err != nil {
				return err
			}
		}
		return nil
	})
	for _, v := range vals {
		got, err := read(s, func(tx store.Tx) ([]byte, error) { return tx.Record(records, hashing.SumSHA256(v)) })
		if err != nil || string(got) != string(v) {
			t.Errorf("Record %s = %q, %v", v, got, err)
		}
	}
	absent := hashing.SumSHA256([]byte("absent"))
	_, err := read(s, func(tx store.Tx) ([]byte, error) { return tx.Record(records, absent) })
	wantKind(t, "absent record", err, errkind.NotFound)
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("absent record: %v is not store.ErrNotFound", err)
	}
	_, err = read(s, func(tx store.Tx) ([]byte, error) { return tx.Record(store.Space{Name: "storetest.never"}, absent) })
	wantKind(t, "record of a keyspace never written", err, errkind.NotFound)

	// Bytes under the wrong key: written (a writer's bug), never served.
	wrong := hashing.SumSHA256([]byte("something else"))
	update(t, s, func(tx store.Tx) error { return tx.PutRecord(records, wrong, []byte("these bytes")) })
	_, err = read(s, func(tx store.Tx) ([]byte, error) { return tx.Record(records, wrong) })
	wantKind(t, "record under the wrong key", err, errkind.Corrupt)
	if !errors.Is(err, store.ErrCorrupt) {
		t.Errorf("record under the wrong key: %v is not store.ErrCorrupt", err)
	}

	// A space with its own check.
	k := hashing.SumBLAKE3([]byte("k"))
	update(t, s, func(tx store.Tx) error {
		if err := tx.PutRecord(named, k, []byte("record "+k.String())); err != nil {
			return err
		}
		return tx.PutRecord(named, absent, []byte("record "+k.String()))
	})
	if got, err := read(s, func(tx store.Tx) ([]byte, error) { return tx.Record(named, k) }); err != nil || string(got) != "record "+k.String() {
		t.Errorf("Record in a checked space = %q, %v", got, err)
	}
	_, err = read(s, func(tx store.Tx) ([]byte, error) { return tx.Record(named, absent) })
	wantKind(t, "record failing its space's check", err, errkind.Corrupt)

	// A second put of a key leaves the first bytes.
	update(t, s, func(tx store.Tx) error { return tx.PutRecord(records, hashing.SumSHA256(vals[0]), []byte("other")) })
	if got, err := read(s, func(tx store.Tx) ([]byte, error) { return tx.Record(records, hashing.SumSHA256(vals[0])) }); err != nil || string(got) != string(vals[0]) {
		t.Errorf("after a second put: %q, %v", got, err)
	}

	view(t, s, func(tx store.Tx) error {
		for key, want := range map[hashing.Digest]bool{hashing.SumSHA256(vals[1]): true, wrong: true, absent: false} {
			if ok, err := tx.HasRecord(records, key); ok != want || err != nil {
				t.Errorf("HasRecord %s = %v, %v; want %v", key, ok, err, want)
			}
		}
		return nil
	})

	// A deleted record is gone; deleting it again is no error.
	gone := []byte("to be deleted")
	update(t, s, func(tx store.Tx) error { return tx.PutRecord(records, hashing.SumSHA256(gone), gone) })
	update(t, s, func(tx store.Tx) error {
		if err := tx.DeleteRecord(records, hashing.SumSHA256(gone)); err != nil {
			return err
		}
		return tx.DeleteRecord(records, hashing.SumSHA256(gone))
	})
	_, err = read(s, func(tx store.Tx) ([]byte, error) { return tx.Record(records, hashing.SumSHA256(gone)) })
	wantKind(t, "deleted record", err, errkind.NotFound)

	// Scan: every key, in order; Verify: the one bad record.
	var keys []string
	view(t, s, func(tx store.Tx) error {
		return tx.Scan(records.Name, func(k, _ []byte) error { keys = append(keys, string(k)); return nil })
	})
	if len(keys) != 4 || !slices.IsSorted(keys) {
		t.Errorf("Scan gave %d keys %q, want 4 in order", len(keys), keys)
	}
	var n int
	var problems []string
	err = s.View(ctx, func(tx store.Tx) error {
		var err error
		n, problems, err = store.Verify(ctx, tx, records, nil)
		return err
	})
	if n != 4 || len(problems) != 1 || errkind.Of(err) != errkind.Corrupt {
		t.Errorf("Verify = %d, %q, %v; want 4 records, 1 problem, corrupt", n, problems, err)
	}
	if err := s.View(ctx, func(tx store.Tx) error {
		n, problems, err = store.Verify(ctx, tx, store.Space{Name: "storetest.never"}, nil)
		return err
	}); err != nil || n != 0 || len(problems) != 0 {
		t.Errorf("Verify of an empty keyspace = %d, %q, %v", n, problems, err)
	}
}

// TestRecordCorruption: one byte changed on disk makes the read Corrupt
// and Verify report it, for records and blobs.
func TestRecordCorruption(t *testing.T, h Harness) {
	s := h.Open(t)
	v := []byte(`{"payload":"some bytes to flip"}`)
	key := hashing.SumSHA256(v)
	b := []byte("a blob's bytes")
	bkey := hashing.SumBLAKE3(b)
	update(t, s, func(tx store.Tx) error {
		if err := tx.PutRecord(records, key, v); err != nil {
			return err
		}
		return tx.PutBlob(blobs, bkey, b)
	})
	h.Close(t, s)
	h.Corrupt(t, records.Name, key.Key())
	h.Corrupt(t, blobs.Name, bkey.Key())
	s = h.Open(t)
	t.Cleanup(func() { h.Close(t, s) })
	_, err := read(s, func(tx store.Tx) ([]byte, error) { return tx.Record(records, key) })
	wantKind(t, "flipped record", err, errkind.Corrupt)
	_, err = read(s, func(tx store.Tx) ([]byte, error) { return tx.Blob(blobs, bkey) })
	wantKind(t, "flipped blob", err, errkind.Corrupt)
	if err := s.View(ctx, func(tx store.Tx) error {
		_, problems, err := store.Verify(ctx, tx, records, nil)
		if len(problems) != 1 {
			t.Errorf("Verify after a flip: %q", problems)
		}
		return err
	}); errkind.Of(err) != errkind.Corrupt {
		t.Errorf("Verify after a flip: %v, want corrupt", err)
	}
}

// TestVersions: one sequence from 1; a skipped or repeated number is a
// conflict; every version stays readable.
func TestVersions(t *testing.T, h Harness) {
	s := open(t, h)
	const name = "storetest.versions"
	if err := s.View(ctx, func(tx store.Tx) error {
		n, raw, err := tx.LatestVersion(name)
		if n != 0 || raw != nil || err != nil {
			t.Errorf("LatestVersion of nothing = %d, %q, %v", n, raw, err)
		}
		_, err = tx.Version(name, 1)
		wantKind(t, "Version of nothing", err, errkind.NotFound)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 300; i++ { // past 255: keys sort as numbers
		update(t, s, func(tx store.Tx) error { return tx.PutVersion(name, i, fmt.Appendf(nil, "v%d", i)) })
	}
	err := s.Update(ctx, func(tx store.Tx) error { return tx.PutVersion(name, 300, []byte("again")) })
	wantKind(t, "PutVersion of a taken number", err, errkind.Conflict)
	err = s.Update(ctx, func(tx store.Tx) error { return tx.PutVersion(name, 302, []byte("gap")) })
	wantKind(t, "PutVersion past the next", err, errkind.Conflict)
	err = s.Update(ctx, func(tx store.Tx) error { return tx.PutVersion(name+".other", 2, []byte("gap")) })
	wantKind(t, "PutVersion 2 of an empty sequence", err, errkind.Conflict)
	view(t, s, func(tx store.Tx) error {
		n, raw, err := tx.LatestVersion(name)
		if n != 300 || string(raw) != "v300" || err != nil {
			t.Errorf("LatestVersion = %d, %q, %v", n, raw, err)
		}
		for _, i := range []uint64{1, 255, 256, 299} {
			if raw, err := tx.Version(name, i); err != nil || string(raw) != fmt.Sprintf("v%d", i) {
				t.Errorf("Version %d = %q, %v", i, raw, err)
			}
		}
		_, err = tx.Version(name, 301)
		wantKind(t, "Version past the latest", err, errkind.NotFound)
		return nil
	})
}

// TestVersionRace: writers that all read the latest version and put the
// next: exactly one wins each number, the others see a conflict.
func TestVersionRace(t *testing.T, h Harness) {
	s := open(t, h)
	const name, writers = "storetest.race", 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	won, conflicts := 0, 0
	for w := range writers {
		wg.Go(func() {
			err := s.Update(ctx, func(tx store.Tx) error {
				n, _, err := tx.LatestVersion(name)
				if err != nil {
					return err
				}
				return tx.PutVersion(name, n+1, fmt.Appendf(nil, "writer %d", w))
			})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case errors.Is(err, store.ErrConflict):
				conflicts++
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	view(t, s, func(tx store.Tx) error {
		n, _, err := tx.LatestVersion(name)
		if int(n) != won || won+conflicts != writers || won == 0 {
			t.Errorf("latest %d after %d wins and %d conflicts of %d writers", n, won, conflicts, writers)
		}
		return err
	})
}

// TestLogs: entries 0, 1, 2… in order; a taken or skipped position is a
// conflict; logs whose ids share a prefix stay apart.
func TestLogs(t *testing.T, h Harness) {
	s := open(t, h)
	const name = "storetest.logs"
	a, ab := []byte("sha256:a"), []byte("sha256:ab")
	for i := range uint64(260) {
		update(t, s, func(tx store.Tx) error {
			if err := tx.AppendEntry(name, a, i, fmt.Appendf(nil, "a%d", i)); err != nil {
				return err
			}
			if i < 3 {
				// A log whose id extends a's past a zero byte: its keys
				// fall inside a's range of keys; ScanLog of a skips them.
				if err := tx.AppendEntry(name, append(bytes.Clone(a), 0, 'z'), i, []byte("a0z")); err != nil {
					return err
				}
				return tx.AppendEntry(name, ab, i, fmt.Appendf(nil, "ab%d", i))
			}
			return nil
		})
	}
	for _, c := range []struct {
		log []byte
		seq uint64
	}{{a, 0}, {a, 259}, {a, 261}, {ab, 4}, {[]byte("sha256:new"), 1}} {
		err := s.Update(ctx, func(tx store.Tx) error { return tx.AppendEntry(name, c.log, c.seq, []byte("x")) })
		wantKind(t, fmt.Sprintf("AppendEntry %s %d", c.log, c.seq), err, errkind.Conflict)
	}
	view(t, s, func(tx store.Tx) error {
		if raw, err := tx.Entry(name, a, 257); err != nil || string(raw) != "a257" {
			t.Errorf("Entry a 257 = %q, %v", raw, err)
		}
		_, err := tx.Entry(name, ab, 3)
		wantKind(t, "Entry past the end", err, errkind.NotFound)
		var got []string
		err = tx.ScanLog(name, ab, 1, func(seq uint64, raw []byte) error {
			got = append(got, fmt.Sprintf("%d=%s", seq, raw))
			return nil
		})
		if want := []string{"1=ab1", "2=ab2"}; !slices.Equal(got, want) || err != nil {
			t.Errorf("ScanLog ab from 1 = %q, %v; want %q", got, err, want)
		}
		n := 0
		err = tx.ScanLog(name, a, 0, func(seq uint64, raw []byte) error {
			if seq != uint64(n) || string(raw) != fmt.Sprintf("a%d", n) {
				t.Errorf("ScanLog a: entry %d is %d=%s", n, seq, raw)
			}
			n++
			return nil
		})
		if n != 260 || err != nil {
			t.Errorf("ScanLog a gave %d entries, %v", n, err)
		}
		return nil
	})
}

// TestLogRace: writers appending to one log at the length they read: no
// position is written twice, no entry is lost.
func TestLogRace(t *testing.T, h Harness) {
	s := open(t, h)
	const name, writers, each = "storetest.lograce", 4, 10
	log := []byte("sha256:race")
	length := func(tx store.Tx) (uint64, error) {
		var n uint64
		err := tx.ScanLog(name, log, 0, func(uint64, []byte) error { n++; return nil })
		return n, err
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := 0; i < each; {
				err := s.Update(ctx, func(tx store.Tx) error {
					n, err := length(tx)
					if err != nil {
						return err
					}
					return tx.AppendEntry(name, log, n, fmt.Appendf(nil, "%d.%d", w, i))
				})
				switch {
				case err == nil:
					i++
				case !errors.Is(err, store.ErrConflict):
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	view(t, s, func(tx store.Tx) error {
		return tx.ScanLog(name, log, 0, func(_ uint64, raw []byte) error { seen[string(raw)] = true; return nil })
	})
	if len(seen) != writers*each {
		t.Errorf("%d distinct entries, want %d", len(seen), writers*each)
	}
}

// TestValues: put, replace, delete; sequences increase.
func TestValues(t *testing.T, h Harness) {
	s := open(t, h)
	const name = "storetest.values"
	update(t, s, func(tx store.Tx) error { return tx.PutValue(name, []byte("k"), []byte("one")) })
	update(t, s, func(tx store.Tx) error { return tx.PutValue(name, []byte("k"), []byte("two")) })
	if got, err := read(s, func(tx store.Tx) ([]byte, error) { return tx.Value(name, []byte("k")) }); err != nil || string(got) != "two" {
		t.Errorf("Value after a replace = %q, %v", got, err)
	}
	update(t, s, func(tx store.Tx) error {
		if err := tx.DeleteValue(name, []byte("k")); err != nil {
			return err
		}
		return tx.DeleteValue(name, []byte("never"))
	})
	_, err := read(s, func(tx store.Tx) ([]byte, error) { return tx.Value(name, []byte("k")) })
	wantKind(t, "deleted value", err, errkind.NotFound)
	var last uint64
	for range 3 {
		update(t, s, func(tx store.Tx) error {
			n, err := tx.NextSequence(name)
			if n <= last {
				t.Errorf("NextSequence %d after %d", n, last)
			}
			last = n
			return err
		})
	}
	// A sequence taken in a failed transaction may be reused or skipped;
	// one taken in a committed one never comes back, even after a reopen.
	reopen(t, h, &s)
	update(t, s, func(tx store.Tx) error {
		n, err := tx.NextSequence(name)
		if n <= last {
			t.Errorf("NextSequence %d after a reopen, after %d", n, last)
		}
		return err
	})
}

// TestBlobs: a blob reads back checked; HasBlob; a put over a blob
// replaces it.
func TestBlobs(t *testing.T, h Harness) {
	s := open(t, h)
	b := make([]byte, 1<<20)
	for i := range b {
		b[i] = byte(i * 7)
	}
	key := hashing.SumBLAKE3(b)
	update(t, s, func(tx store.Tx) error { return tx.PutBlob(blobs, key, []byte("wrong")) })
	_, err := read(s, func(tx store.Tx) ([]byte, error) { return tx.Blob(blobs, key) })
	wantKind(t, "blob under the wrong key", err, errkind.Corrupt)
	update(t, s, func(tx store.Tx) error { return tx.PutBlob(blobs, key, b) }) // repairs it
	got, err := read(s, func(tx store.Tx) ([]byte, error) { return tx.Blob(blobs, key) })
	if err != nil || string(got) != string(b) {
		t.Errorf("Blob after a repair: %d bytes, %v", len(got), err)
	}
	view(t, s, func(tx store.Tx) error {
		ok, err := tx.HasBlob(blobs, key)
		if !ok || err != nil {
			t.Errorf("HasBlob of a stored blob = %v, %v", ok, err)
		}
		ok, err = tx.HasBlob(blobs, hashing.SumBLAKE3(nil))
		if ok || err != nil {
			t.Errorf("HasBlob of an absent blob = %v, %v", ok, err)
		}
		_, err = tx.Blob(blobs, hashing.SumBLAKE3(nil))
		wantKind(t, "absent blob", err, errkind.NotFound)
		return nil
	})
}

// TestTransactions: an Update that fails writes nothing; a View writes
// nothing; a cancelled context runs nothing.
func TestTransactions(t *testing.T, h Harness) {
	s := open(t, h)
	v := []byte("rolled back")
	boom := errors.New("boom")
	err := s.Update(ctx, func(tx store.Tx) error {
		if err := tx.PutRecord(records, hashing.SumSHA256(v), v); err != nil {
			return err
		}
		if err := tx.PutVersion("storetest.versions", 1, v); err != nil {
			return err
		}
		if err := tx.AppendEntry("storetest.logs", []byte("l"), 0, v); err != nil {
			return err
		}
		if err := tx.PutValue("storetest.values", []byte("k"), v); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Errorf("Update returned %v, want the function's error", err)
	}
	view(t, s, func(tx store.Tx) error {
		if _, err := tx.Record(records, hashing.SumSHA256(v)); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("record of a failed update: %v", err)
		}
		if n, _, _ := tx.LatestVersion("storetest.versions"); n != 0 {
			t.Errorf("version of a failed update: %d", n)
		}
		if _, err := tx.Entry("storetest.logs", []byte("l"), 0); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("log entry of a failed update: %v", err)
		}
		if _, err := tx.Value("storetest.values", []byte("k")); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("value of a failed update: %v", err)
		}
		if err := tx.PutValue("storetest.values", []byte("k"), v); !errors.Is(err, store.ErrReadOnly) {
			t.Errorf("PutValue in a View: %v, want ErrReadOnly", err)
		}
		if err := tx.PutRecord(records, hashing.SumSHA256(v), v); !errors.Is(err, store.ErrReadOnly) {
			t.Errorf("PutRecord in a View: %v, want ErrReadOnly", err)
		}
		if err := tx.DeleteRecord(records, hashing.SumSHA256(v)); !errors.Is(err, store.ErrReadOnly) {
			t.Errorf("DeleteRecord in a View: %v, want ErrReadOnly", err)
		}
		return nil
	})
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	ran := false
	if err := s.Update(cancelled, func(store.Tx) error { ran = true; return nil }); !errors.Is(err, context.Canceled) || ran {
		t.Errorf("Update with a cancelled context: %v, ran %v", err, ran)
	}
	if err := s.View(cancelled, func(store.Tx) error { ran = true; return nil }); !errors.Is(err, context.Canceled) || ran {
		t.Errorf("View with a cancelled context: %v, ran %v", err, ran)
	}
}

// TestBatch: concurrent batched writes are all durable when acknowledged,
// and one writer's failure is only its own.
func TestBatch(t *testing.T, h Harness) {
	s := open(t, h)
	const writers = 64
	boom := errors.New("boom")
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			v := fmt.Appendf(nil, "batched %d", w)
			errs[w] = s.Batch(ctx, func(tx store.Tx) error {
				if err := tx.PutRecord(records, hashing.SumSHA256(v), v); err != nil {
					return err
				}
				if w%16 == 5 {
					return boom
				}
				return nil
			})
		})
	}
	wg.Wait()
	reopen(t, h, &s)
	view(t, s, func(tx store.Tx) error {
		for w := range writers {
			v := fmt.Appendf(nil, "batched %d", w)
			_, err := tx.Record(records, hashing.SumSHA256(v))
			switch {
			case w%16 == 5:
				if !errors.Is(errs[w], boom) || !errors.Is(err, store.ErrNotFound) {
					t.Errorf("failing writer %d: Batch %v, record %v", w, errs[w], err)
				}
			case errs[w] != nil || err != nil:
				t.Errorf("writer %d: Batch %v, record %v", w, errs[w], err)
			}
		}
		return nil
	})
}

// TestDurability: everything acknowledged is there after a reopen, in
// every shape.
func TestDurability(t *testing.T, h Harness) {
	s := open(t, h)
	v := []byte("durable")
	update(t, s, func(tx store.Tx) error {
		for _, err := range []error{
			tx.PutRecord(records, hashing.SumSHA256(v), v),
			tx.PutVersion("storetest.versions", 1, v),
			tx.AppendEntry("storetest.logs", []byte("l"), 0, v),
			tx.PutValue("storetest.values", []byte("k"), v),
			tx.PutBlob(blobs, hashing.SumBLAKE3(v), v),
		} {
			if err != nil {
				return err
			}
		}
		return nil
	})
	reopen(t, h, &s)
	view(t, s, func(tx store.Tx) error {
		for what, get := range map[string]func() ([]byte, error){
			"record":  func() ([]byte, error) { return tx.Record(records, hashing.SumSHA256(v)) },
			"version": func() ([]byte, error) { return tx.Version("storetest.versions", 1) },
			"entry":   func() ([]byte, error) { return tx.Entry("storetest.logs", []byte("l"), 0) },
			"value":   func() ([]byte, error) { return tx.Value("storetest.values", []byte("k")) },
			"blob":    func() ([]byte, error) { return tx.Blob(blobs, hashing.SumBLAKE3(v)) },
		} {
			if raw, err := get(); err != nil || string(raw) != string(v) {
				t.Errorf("%s after a reopen: %q, %v", what, raw, err)
			}
		}
		return nil
	})
}
