package storecopy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/store"
	"github.com/groundgate/groundgate/store/boltstore"
	"github.com/groundgate/groundgate/store/pgstore"
	"github.com/groundgate/groundgate/store/pgstore/pgstoretest"
	"github.com/groundgate/groundgate/store/s3store"
	"github.com/groundgate/groundgate/store/storecopy"
)

// One PostgreSQL cluster and one SeaweedFS per test binary; a database
// and a bucket per test.
func TestMain(m *testing.M) { pgstoretest.Main(m) }

var (
	records = store.Space{Name: "t.records"}
	blobs   = store.Space{Name: "t.blobs"}
	opts    = storecopy.Options{Blobs: []store.Space{blobs}, BatchRows: 7}
)

// fill writes every shape into a new bbolt file: records, versions past
// 255, two logs, values, a sequence, blobs; and an empty bucket.
func fill(t *testing.T, n int) (string, *boltstore.Store) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "src.db")
	src, err := boltstore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = src.Update(context.Background(), func(tx store.Tx) error {
		for i := range n {
			raw := fmt.Appendf(nil, "record %d", i)
			if err := tx.PutRecord(records, hashing.SumSHA256(raw), raw); err != nil {
				return err
			}
		}
		for v := uint64(1); v <= 300; v++ {
			if err := tx.PutVersion("t.versions", v, fmt.Appendf(nil, "v%d", v)); err != nil {
				return err
			}
		}
		for s := range uint64(5) {
			for _, log := range []string{"a", "a\x00b"} {
				if err := tx.AppendEntry("t.logs", []byte(log), s, fmt.Appendf(nil, "%s %d", log, s)); err != nil {
					return err
				}
			}
		}
		if err := tx.PutValue("t.values", []byte("current"), []byte{0, 0, 0, 0, 0, 0, 0, 9}); err != nil {
			return err
		}
		if err := tx.PutValue("t.values", []byte("empty"), []byte{}); err != nil {
			return err
		}
		for range 5 {
			if _, err := tx.NextSequence("t.runs"); err != nil {
				return err
			}
		}
		for i := range 10 {
			raw := bytes.Repeat(fmt.Appendf(nil, "blob %d ", i), 1000*i+1)
			if err := tx.PutBlob(blobs, hashing.SumBLAKE3(raw), raw); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.DB().Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucket([]byte("t.empty"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return path, src
}

func copyAndVerify(t *testing.T, src storecopy.Source, dst storecopy.Target) storecopy.Report {
	t.Helper()
	ctx := context.Background()
	if _, err := storecopy.Copy(ctx, src, dst, opts); err != nil {
		t.Fatal(err)
	}
	rep, err := storecopy.Verify(ctx, src, dst, opts)
	if err != nil {
		t.Fatalf("verify: %v %q", err, rep.Problems)
	}
	return rep
}

// Every shape copies byte for byte and answers through the target's
// store.Tx as through the file's; the sequence goes on past the source's;
// a second run writes nothing new and verifies the same.
func TestCopyEveryShape(t *testing.T) {
	ctx := context.Background()
	_, src := fill(t, 100)
	dst := pgstoretest.New(t).Open(t)
	defer dst.Close()
	rep := copyAndVerify(t, src, dst)
	if rep.Rows != 100+300+10+2 || rep.Blobs != 10 || len(rep.Keyspaces) != 7 {
		t.Fatalf("report: %+v", rep)
	}
	for _, ks := range rep.Keyspaces {
		if ks.Name == "t.runs" && ks.Sequence != 5 {
			t.Errorf("t.runs: sequence %d", ks.Sequence)
		}
		if ks.Name == "t.blobs" && !ks.Blobs {
			t.Errorf("t.blobs is not reported as blobs")
		}
	}

	// The same answers through both engines.
	read := func(s store.Viewer) string {
		var out bytes.Buffer
		err := s.View(ctx, func(tx store.Tx) error {
			raw := []byte("record 42")
			r, err := tx.Record(records, hashing.SumSHA256(raw))
			fmt.Fprintf(&out, "%s %v\n", r, err)
			n, v, err := tx.LatestVersion("t.versions")
			fmt.Fprintf(&out, "%d %s %v\n", n, v, err)
			v, err = tx.Version("t.versions", 256)
			fmt.Fprintf(&out, "%s %v\n", v, err)
			err = tx.ScanLog("t.logs", []byte("a"), 2, func(seq uint64, raw []byte) error {
				fmt.Fprintf(&out, "%d %s\n", seq, raw)
				return nil
			})
			fmt.Fprintln(&out, err)
			v, err = tx.Value("t.values", []byte("empty"))
			fmt.Fprintf(&out, "%q %v\n", v, err)
			b := bytes.Repeat([]byte("blob 3 "), 3001)
			v, err = tx.Blob(blobs, hashing.SumBLAKE3(b))
			fmt.Fprintf(&out, "%v %v\n", bytes.Equal(v, b), err)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	if a, b := read(src), read(dst); a != b {
		t.Fatalf("bbolt answers\n%s\nPostgreSQL answers\n%s", a, b)
	}
	var next uint64
	if err := dst.Update(ctx, func(tx store.Tx) error {
		var err error
		next, err = tx.NextSequence("t.runs")
		return err
	}); err != nil || next != 6 {
		t.Fatalf("the target's next sequence: %d %v, want 6", next, err)
	}

	// Again: nothing to do, the same digests; the raised sequence stays.
	again := copyAndVerify(t, src, dst)
	for i := range again.Keyspaces {
		if a, b := rep.Keyspaces[i].Digest, again.Keyspaces[i].Digest; a != b {
			t.Errorf("%s: digest %s then %s", rep.Keyspaces[i].Name, a, b)
		}
	}
}

// A target that holds another history is refused before anything is
// written: another value under a key, a version the source lacks, a
// keyspace the source lacks. A nested bucket is refused too.
func TestCopyRefuses(t *testing.T) {
	ctx := context.Background()
	_, src := fill(t, 20)
	for _, c := range []struct {
		name string
		put  func(tx store.Tx) error
		want error
	}{
		{"another value", func(tx store.Tx) error { return tx.PutValue("t.values", []byte("current"), []byte{1}) }, storecopy.ErrConflict},
		{"a version the source lacks", func(tx store.Tx) error {
			for v := uint64(1); v <= 301; v++ {
				if err := tx.PutVersion("t.versions", v, fmt.Appendf(nil, "v%d", v)); err != nil {
					return err
				}
			}
			return nil
		}, storecopy.ErrConflict},
		{"another keyspace", func(tx store.Tx) error { return tx.PutValue("t.other", []byte("k"), []byte("v")) }, storecopy.ErrConflict},
		{"another sequence", func(tx store.Tx) error { _, err := tx.NextSequence("t.other"); return err }, storecopy.ErrConflict},
	} {
		t.Run(c.name, func(t *testing.T) {
			dst := pgstoretest.New(t).Open(t)
			defer dst.Close()
			if err := dst.Update(ctx, c.put); err != nil {
				t.Fatal(err)
			}
			before, err := dst.Keyspaces(ctx)
			if err != nil {
				t.Fatal(err)
			}
			_, err = storecopy.Copy(ctx, src, dst, opts)
			if !errors.Is(err, c.want) {
				t.Fatalf("copy: %v, want %v", err, c.want)
			}
			t.Log(err)
			after, _ := dst.Keyspaces(ctx)
			if fmt.Sprint(before) != fmt.Sprint(after) {
				t.Fatalf("the refused copy wrote: %v, then %v", before, after)
			}
		})
	}

	t.Run("nested bucket", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "nested.db")
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucket([]byte("t.outer"))
			if err == nil {
				_, err = b.CreateBucket([]byte("inner"))
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		dst := pgstoretest.New(t).Open(t)
		defer dst.Close()
		if _, err := storecopy.Copy(ctx, boltstore.Wrap(db), dst, opts); !errors.Is(err, storecopy.ErrNested) {
			t.Fatalf("copy: %v, want ErrNested", err)
		}
		db.Close()
	})
}

// Verify finds every difference: a changed row, a missing blob, a
// sequence behind.
func TestVerifyFindsDifferences(t *testing.T) {
	ctx := context.Background()
	_, src := fill(t, 20)
	p := pgstoretest.New(t)
	dst := p.Open(t)
	defer dst.Close()
	copyAndVerify(t, src, dst)
	if err := dst.Update(ctx, func(tx store.Tx) error { return tx.PutValue("t.values", []byte("current"), []byte{2}) }); err != nil {
		t.Fatal(err)
	}
	b := p.Blobs(t)
	raw := []byte("blob 0 ")
	if err := b.Client().RemoveObject(ctx, b.Bucket(), b.Object(blobs.Name, hashing.SumBLAKE3(raw).Key()), minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	rep, err := storecopy.Verify(ctx, src, dst, opts)
	if !errors.Is(err, storecopy.ErrMismatch) || len(rep.Problems) != 2 {
		t.Fatalf("verify: %v %q", err, rep.Problems)
	}
}

// childEnv carries a copy to run in another process, killed mid-way.
const childEnv = "STORECOPY_CHILD"

type child struct {
	From string
	P    pgstoretest.Place
}

// TestCopyChild is the process TestCopyKilled kills: it copies slowly
// (a row per transaction) until killed.
func TestCopyChild(t *testing.T) {
	spec := os.Getenv(childEnv)
	if spec == "" {
		return // run by TestCopyKilled only
	}
	var c child
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	src, err := boltstore.OpenFile(c.From, boltstore.FileOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	bl, err := s3store.Open(ctx, c.P.S3)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := pgstore.Open(ctx, pgstore.Config{DSN: c.P.DSN, Blobs: bl})
	if err != nil {
		t.Fatal(err)
	}
	o := opts
	o.BatchRows = 1
	if _, err := storecopy.Copy(ctx, src, dst, o); err != nil {
		t.Fatal(err)
	}
}

// A copy killed with SIGKILL half-way leaves a target that the next run
// accepts and completes.
func TestCopyKilled(t *testing.T) {
	ctx := context.Background()
	path, src := fill(t, 2000)
	src.Close() // the child opens it (read-only; the parent again after)
	p := pgstoretest.New(t)
	spec, _ := json.Marshal(child{From: path, P: p})
	cmd := exec.Command(os.Args[0], "-test.run=^TestCopyChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+string(spec))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	dst := p.Open(t)
	defer dst.Close()
	var rows int64
	for deadline := time.Now().Add(60 * time.Second); rows < 200; {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the child copied %d rows in 60 s", rows)
		}
		time.Sleep(20 * time.Millisecond)
		ks, err := dst.Keyspaces(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rows = 0
		for _, k := range ks {
			rows += k.Rows
		}
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	cmd.Wait()
	ks, _ := dst.Keyspaces(ctx)
	t.Logf("killed with %v in the target", ks)
	if _, err := storecopy.Verify(ctx, reopen(t, path), dst, opts); !errors.Is(err, storecopy.ErrMismatch) {
		t.Fatalf("a half copy verifies: %v", err)
	}
	copyAndVerify(t, reopen(t, path), dst)
}

func reopen(t *testing.T, path string) *boltstore.Store {
	t.Helper()
	s, err := boltstore.OpenFile(path, boltstore.FileOptions{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// pgstore.Import, the copy's primitive: rows there with the same bytes
// are left, a row there with other bytes refuses the whole batch.
func TestImport(t *testing.T) {
	ctx := context.Background()
	dst := pgstoretest.New(t).Open(t)
	defer dst.Close()
	rows := func(vals ...string) []pgstore.Row {
		var out []pgstore.Row
		for i, v := range vals {
			out = append(out, pgstore.Row{Key: fmt.Appendf(nil, "k%d", i), Value: []byte(v)})
		}
		return out
	}
	if err := dst.Import(ctx, "t.kv", rows("a", "b")); err != nil {
		t.Fatal(err)
	}
	if err := dst.Import(ctx, "t.kv", rows("a", "b", "c")); err != nil {
		t.Fatalf("again, and one more: %v", err)
	}
	if err := dst.Import(ctx, "t.kv", rows("a", "B", "c", "d")); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("another value: %v, want ErrConflict", err)
	}
	var got []string
	if err := dst.View(ctx, func(tx store.Tx) error {
		return tx.Scan("t.kv", func(k, v []byte) error { got = append(got, string(k)+"="+string(v)); return nil })
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[k0=a k1=b k2=c]" {
		t.Fatalf("after a refused batch: %v", got)
	}
}
