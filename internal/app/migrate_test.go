package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/errkind"
	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/fuzz/runs"
	"github.com/groundgate/groundgate/gateway"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/internal/s3test"
	"github.com/groundgate/groundgate/internal/testio"
	"github.com/groundgate/groundgate/policy"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/sampledata"
	"github.com/groundgate/groundgate/session"
	"github.com/groundgate/groundgate/store"
	"github.com/groundgate/groundgate/store/boltstore"
	"github.com/groundgate/groundgate/store/pgstore/pgstoretest"
	"github.com/groundgate/groundgate/store/storecopy"
)

// richDB is fullDB (registry, policies, evidence, a grounding, an
// execution with its blobs and footprint) plus a session with calls, a
// finished fuzz run (a bucket sequence) and an upstream's configuration:
// every keyspace a server writes.
func richDB(t *testing.T) (path string, sessionID hashing.Digest) {
	t.Helper()
	ctx := context.Background()
	path = fullDB(t)
	e, err := OpenEngines(ctx, path, "")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	st := e.Store.Engine()

	ss, err := session.Open(st, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := ss.Create(ctx, session.NewTurn{Prompt: "cancel my reservation ZFA04Y", Evidence: hashing.SumSHA256([]byte("e"))}, false)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		call := session.Call{Request: hashing.SumSHA256(fmt.Appendf(nil, "req %d", i)), Hash: hashing.SumSHA256(fmt.Appendf(nil, "call %d", i)),
			Tool: "items.get", Decision: session.Admitted, Outcome: session.OutcomeOK}
		if _, err := ss.AppendCall(ctx, c.Session.ID, call); err != nil {
			t.Fatal(err)
		}
	}

	fz, err := runs.Open(ctx, st, e.Store, runs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fz.Close()
	for range 2 {
		run, err := fz.Start(ctx, runs.Request{Seconds: 1, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			s, err := fz.Get(ctx, run.ID)
			if err != nil {
				t.Fatal(err)
			}
			if s.Result != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("fuzz run %d still %s", run.ID, s.State)
			}
		}
	}

	ups, err := gateway.OpenManager(ctx, st, e.Store, gateway.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ups.Close()
	if _, err := ups.Put(ctx, "items", gateway.Config{Transport: gateway.TransportStdio, Command: []string{"/nonexistent/items-server"}}); err != nil {
		t.Fatal(err)
	}
	return path, c.Session.ID
}

// migrateTo runs Migrate from path into p.
func migrateTo(t *testing.T, path string, p pgstoretest.Place) (MigrateReport, error) {
	t.Helper()
	return Migrate(context.Background(), MigrateConfig{
		From: path, Store: p.DSN,
		Blobs: fmt.Sprintf("s3://%s?endpoint=http://%s", p.Bucket, p.S3.Endpoint), Env: s3test.Env,
		Copy: storecopy.Options{BatchRows: 50},
	})
}

// answers is what a server answers from st, byte for byte: the
// registry's export and history, every execution's footprint, the
// session, every policy version, the fuzz runs and the upstreams.
func answers(t *testing.T, st store.Store, sessionID hashing.Digest) string {
	t.Helper()
	ctx := context.Background()
	var out bytes.Buffer
	add := func(what string, v any, err error) {
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "%s %s\n", what, b)
	}
	reg, err := registry.OpenEngine(ctx, st, registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	add("export", reg.Current().Export(), nil)
	h, err := reg.History(ctx)
	add("history", h, err)
	arts, err := execution.OpenArtifacts(st)
	if err != nil {
		t.Fatal(err)
	}
	x, err := execution.New(reg, arts, st, sampledata.FS(), execution.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var hashes []hashing.Digest
	err = st.View(ctx, func(tx store.Tx) error {
		return tx.Scan("execution.footprints", func(k, _ []byte) error {
			d, err := hashing.Parse(string(k))
			hashes = append(hashes, d)
			return err
		})
	})
	add("executions", hashes, err)
	for _, h := range hashes {
		fp, err := x.Get(ctx, h)
		add("footprint", fp, err)
	}
	ss, err := session.Open(st, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := ss.Get(ctx, sessionID)
	add("session", s, err)
	ps, err := policy.OpenStore(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	ph, err := ps.History(ctx)
	add("policy history", ph, err)
	for _, v := range ph {
		set, err := ps.Version(ctx, v.Version)
		add("policy version", set, err)
	}
	fz, err := runs.Open(ctx, st, reg, runs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fz.Close()
	rs, err := fz.List(ctx)
	add("fuzz runs", rs, err)
	ups, err := gateway.OpenManager(ctx, st, reg, gateway.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ups.Close()
	add("upstreams", ups.Names(), nil)
	return out.String()
}

// A file holding every kind of record migrates, verifies, and answers
// through PostgreSQL + S3 with the bytes it answers from the file; a
// second run finds nothing to do and verifies the same.
func TestMigrateEverything(t *testing.T) {
	path, sid := richDB(t)
	p := pgstoretest.New(t)
	rep, err := migrateTo(t, path, p)
	if err != nil {
		t.Fatalf("migrate: %v\n%+v\n%q\n%+v", err, rep.Source, rep.Problems, rep.Target)
	}
	src, tgt := *rep.Source, *rep.Target
	src.Problems, tgt.Problems = nil, nil
	if fmt.Sprint(src) != fmt.Sprint(tgt) || tgt.Sessions != 1 || tgt.Calls != 0 || tgt.FuzzRuns == 0 || tgt.Blobs < 2 || tgt.Footprints != 1 {
		t.Fatalf("verified in the file %+v, on PostgreSQL %+v", src, tgt)
	}
	if rep.Blobs != int64(tgt.Blobs) || rep.Rows == 0 {
		t.Fatalf("copied %d rows, %d blobs; verified %d blobs", rep.Rows, rep.Blobs, tgt.Blobs)
	}
	seq := map[string]uint64{}
	for _, ks := range rep.Keyspaces {
		seq[ks.Name] = ks.Sequence
	}
	if seq["fuzz.runs"] != 2 {
		t.Fatalf("fuzz.runs sequence %d, want 2", seq["fuzz.runs"])
	}
	if b, err := json.Marshal(rep); err != nil || !bytes.Contains(b, []byte(`"digest":"sha256:`)) {
		t.Fatalf("report: %s %v", b, err)
	}

	bs := openFile(t, path)
	want := answers(t, bs, sid)
	bs.Close()
	for _, kind := range []string{"footprint {", `session {"id"`, "policy version {", "fuzz runs [{", `upstreams ["items"]`, `"calls":[{`} {
		if !strings.Contains(want, kind) {
			t.Fatalf("the file answers no %s:\n%s", kind, want)
		}
	}
	pg := p.Open(t)
	defer pg.Close()
	if got := answers(t, pg, sid); got != want {
		t.Fatalf("PostgreSQL answers\n%s\nthe file answers\n%s", got, want)
	}
	// The next fuzz run's id follows the file's.
	var next uint64
	if err := pg.Update(context.Background(), func(tx store.Tx) error {
		var err error
		next, err = tx.NextSequence("fuzz.runs")
		return err
	}); err != nil || next != 3 {
		t.Fatalf("next fuzz run id %d %v, want 3", next, err)
	}

	if rep2, err := migrateTo(t, path, p); err != nil || fmt.Sprint(rep2.Keyspaces) != fmt.Sprint(rep.Keyspaces) {
		t.Fatalf("again: %v\n%v\n%v", err, rep2.Keyspaces, rep.Keyspaces)
	}
}

func openFile(t *testing.T, path string) *boltstore.Store {
	t.Helper()
	s, err := boltstore.OpenFile(path, boltstore.FileOptions{ReadOnly: true, Timeout: LockWait})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A file with a corrupt record is refused before anything is written,
// and the report names the record.
func TestMigrateRefusesACorruptFile(t *testing.T) {
	path := fullDB(t)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("ground.records"))
		k, v := b.Cursor().First()
		v = bytes.Clone(v)
		v[len(v)-2] ^= 0x20
		return b.Put(k, v)
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	p := pgstoretest.New(t)
	rep, err := migrateTo(t, path, p)
	if errkind.Of(err) != errkind.Corrupt || rep.Source == nil || len(rep.Source.Problems) != 1 || rep.Target != nil {
		t.Fatalf("migrate: %v %+v", err, rep.Source)
	}
	pg := p.Open(t)
	defer pg.Close()
	if ks, err := pg.Keyspaces(context.Background()); err != nil || len(ks) != 0 {
		t.Fatalf("a refused migration wrote %v (%v)", ks, err)
	}
}

// The registry files earlier releases made (registry/testdata) migrate,
// verify, and answer the same on PostgreSQL.
func TestMigrateOldFiles(t *testing.T) {
	ctx := context.Background()
	gz, _ := filepath.Glob("../../registry/testdata/*.db.gz")
	if len(gz) < 3 {
		t.Fatalf("fixtures: %q", gz)
	}
	for _, f := range gz {
		t.Run(filepath.Base(f), func(t *testing.T) {
			path := testio.Gunzip(t, f)
			p := pgstoretest.New(t)
			rep, err := migrateTo(t, path, p)
			if err != nil || rep.Target == nil || rep.Target.Registry.Versions == 0 || fmt.Sprint(rep.Target.Registry) != fmt.Sprint(rep.Source.Registry) {
				t.Fatalf("migrate: %v\n%+v\n%+v", err, rep.Source.Registry, rep.Target.Registry)
			}
			reg, err := registry.Open(ctx, path, registry.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			want := registryAnswers(t, reg)
			reg.Close()
			pg := p.Open(t)
			defer pg.Close()
			reg, err = registry.OpenEngine(ctx, pg, registry.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := registryAnswers(t, reg); got != want {
				t.Fatalf("PostgreSQL answers\n%.2000s\nthe file answers\n%.2000s", got, want)
			}
		})
	}
}

func registryAnswers(t *testing.T, reg *registry.Store) string {
	t.Helper()
	ctx := context.Background()
	h, err := reg.History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for _, v := range h {
		snap, err := reg.Version(ctx, v.Version)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(snap.Export())
		fmt.Fprintf(&out, "%d %s\n", v.Version, b)
	}
	b, _ := json.Marshal(h)
	return out.String() + string(b)
}

// TestMigrateBig times `groundgate migrate` of a big file in a process of
// its own, for its wall time and peak RSS (docs/storage.md). It runs when
// GROUNDGATE_MIGRATE_FILE names the file (a 100,000-capability registry:
// tools/bench/testdata/synth, then registry put) and
// GROUNDGATE_MIGRATE_BIN the groundgate binary; GNU time measures it.
func TestMigrateBig(t *testing.T) {
	file, bin := os.Getenv("GROUNDGATE_MIGRATE_FILE"), os.Getenv("GROUNDGATE_MIGRATE_BIN")
	if file == "" || bin == "" {
		return // a measurement, run by hand
	}
	p := pgstoretest.New(t)
	for _, run := range []string{"first", "again"} {
		timing := filepath.Join(t.TempDir(), "time")
		cmd := exec.Command("/usr/bin/time", "-f", "%e %M", "-o", timing, bin, "migrate", "--from", file, "--store", p.DSN,
			"--blobs", fmt.Sprintf("s3://%s?endpoint=http://%s", p.Bucket, p.S3.Endpoint))
		cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+s3test.AccessKey, "AWS_SECRET_ACCESS_KEY="+s3test.SecretKey)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("migrate: %v\n%s", err, errb.String())
		}
		var rep MigrateReport
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		if errb.Len() > 0 {
			t.Log(errb.String())
		}
		tm, _ := os.ReadFile(timing)
		var wall float64
		var kb int
		fmt.Sscan(string(tm), &wall, &kb)
		t.Logf("%s: %d rows, %d blobs, %d bytes: copy %.1f s, verify %.1f s (%d registry records re-checked on PostgreSQL), whole %.1f s; wall %.1f s, peak RSS %d MB",
			run, rep.Rows, rep.Blobs, rep.Bytes, rep.CopySeconds, rep.VerifySeconds, rep.Target.Registry.Records, rep.Seconds, wall, kb/1024)
	}
}
