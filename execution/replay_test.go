package execution

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/artifacts"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
)

// determinismConfigs span the four families, five metrics and five real
// data files (one gzipped).
var determinismConfigs = []map[string]any{
	request("MOM_WZS", "SRP", "wti-daily.csv", map[string]any{"window": []any{25, 50, 100}}),
	request("MOM_REV", "MDD", "ffn-test-data.csv", map[string]any{"window": []any{5, 20}, "leverage": []any{1, 2}}),
	request("CARRY", "CLM", "crude-oil-wti-cushing.csv", map[string]any{"window": []any{60, 120}, "front": []any{"C1", "C2"}, "next": "C3"}),
	request("VOL_TGT", "SRT", "sp500.csv.gz", map[string]any{"risk_window": []any{20, 60}, "target_vol": []any{0.1, 0.15}}),
	request("MOM_WZS", "TRN", "natural-gas-daily.csv", map[string]any{"window": []any{10, 50}, "lag": []any{1, 2}}),
}

// TestReplayDeterminism: each configuration executed 10 times (every run
// recomputes everything; the stored footprint is found by the recomputed
// hash) and replayed 10 times, identical at every layer.
func TestReplayDeterminism(t *testing.T) {
	t.Parallel() // the slowest tests of the package run side by side
	r := newRig(t, realData, Options{})
	ctx := context.Background()
	const reps = 10
	for _, req := range determinismConfigs {
		name := req["family"].(string) + "/" + req["metric"].(string) + "/" + req["data"].(string)
		t.Run(name, func(t *testing.T) {
			first := r.execute(t, req)
			if first.Selected == nil {
				t.Fatalf("nothing selected: %s", mustJSON(t, first.Morphisms))
			}
			g := r.ground(t, req)
			for i := range reps {
				out, err := compute(ctx, r.inputFor(t, g), r.x.runOptions())
				if err != nil {
					t.Fatal(err)
				}
				if out.fp.Layers != first.Layers || out.fp.Hash != first.Hash {
					t.Fatalf("rep %d: layers differ: %s", i, layerRow(changedLayers(first, out.fp)))
				}
				fp, err := r.x.Execute(ctx, g)
				if err != nil || fp.Hash != first.Hash {
					t.Fatalf("rep %d: Execute = %v, %v", i, fp.Hash, err)
				}
				rep, err := r.x.Replay(ctx, first.Hash)
				if err != nil {
					t.Fatal(err)
				}
				if !rep.Match || rep.ReplayHash != first.Hash || len(rep.Layers) != len(LayerNames) || len(rep.Morphisms) != 0 {
					t.Fatalf("rep %d: replay %s", i, mustJSON(t, rep))
				}
				for k, l := range rep.Layers {
					if l.Layer != LayerNames[k] || !l.Match || l.Stored != l.Replayed {
						t.Fatalf("rep %d: layer %+v", i, l)
					}
				}
			}
			t.Logf("%s: %d morphisms, %d executions and %d replays identical at every layer", first.Hash, len(first.Morphisms), reps, reps)
		})
	}
}

// inputFor rebuilds Execute's input for a grounded request.
func (r *rig) inputFor(t testing.TB, g *ground.Grounded) input {
	t.Helper()
	req := g.Request()
	src, err := readSource(r.x.data, req.Data, r.x.opt.MaxDataBytes)
	if err != nil {
		t.Fatal(err)
	}
	return input{snap: r.store.Current(), req: req, grounding: g.ID(), src: src, risk: r.x.policy(), maxBytes: r.x.opt.MaxDataBytes}
}

// One worker or many, node values shared between morphisms or not, a memo
// too small to keep anything: the same footprint byte for byte — and so
// the same artifacts, whose digests it holds.
func TestWorkersAndSharingIdentical(t *testing.T) {
	r := newRig(t, realData, Options{})
	ctx := context.Background()
	for _, req := range append(determinismConfigs,
		request("MOM_WZS", "SRP", "ffn-test-data.csv", map[string]any{"window": []any{5, 10, 20, 40}, "risk_window": []any{20, 60}, "leverage": []any{0.5, 1, 2}})) {
		in := r.inputFor(t, r.ground(t, req))
		var ref []byte
		for _, ro := range []runOptions{
			{workers: 1, share: false, artifacts: true},
			{workers: 1, share: true, artifacts: true},
			{workers: 4, share: true, artifacts: true},
			{workers: 3, share: true, artifacts: true, memoBytes: 1},
			{workers: 16, share: false, artifacts: true},
		} {
			out, err := compute(ctx, in, ro)
			if err != nil {
				t.Fatal(err)
			}
			b, err := hashing.Canonical(out.fp)
			if err != nil {
				t.Fatal(err)
			}
			if ref == nil {
				ref = b
				continue
			}
			if !bytes.Equal(b, ref) {
				t.Fatalf("%v with %+v: footprint differs", req, ro)
			}
		}
	}
}

// After closing and reopening the bbolt file, every footprint reads back
// byte for byte, replays at every layer, and executing again finds it.
func TestRestart(t *testing.T) {
	r := newRig(t, realData, Options{Workers: 3})
	ctx := context.Background()
	var hashes []hashing.Digest
	var stored [][]byte
	for _, req := range determinismConfigs {
		fp := r.execute(t, req)
		hashes = append(hashes, fp.Hash)
		b, _ := hashing.Canonical(fp)
		stored = append(stored, b)
	}
	r.reopen(t)
	for i, h := range hashes {
		fp, err := r.x.Get(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := hashing.Canonical(fp); !bytes.Equal(b, stored[i]) {
			t.Fatalf("%s reads back differently after a restart", h)
		}
		rep, err := r.x.Replay(ctx, h)
		if err != nil || !rep.Match {
			t.Fatalf("replay after restart: %v %+v", err, rep)
		}
		if again := r.execute(t, determinismConfigs[i]); again.Hash != h {
			t.Fatalf("execute after restart: %s, want %s", again.Hash, h)
		}
	}
	n, problems, err := r.x.Verify(ctx)
	if err != nil || n != len(hashes) {
		t.Fatalf("verify: %d, %q, %v", n, problems, err)
	}
}

// Replay uses the stored data blob, not the file at the path: after the
// file changes, the old execution still replays exactly, and a new
// execution differs in the data layer.
func TestReplayUsesStoredBlob(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, dir, "px.csv", "ffn-test-data.csv")
	r := newRig(t, dir, Options{})
	ctx := context.Background()
	req := request("MOM_WZS", "SRP", "px.csv", map[string]any{"window": []any{10, 20}})
	a := r.execute(t, req)
	// Rewrite one price.
	b, _ := os.ReadFile(filepath.Join(dir, "px.csv"))
	b = bytes.Replace(b, []byte("\n3/10/2014,"), []byte("\n3/10/2014,1"), 1)
	if err := os.WriteFile(filepath.Join(dir, "px.csv"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := r.x.Replay(ctx, a.Hash)
	if err != nil || !rep.Match {
		t.Fatalf("replay after the file changed: %v %+v", err, rep)
	}
	c := r.execute(t, req)
	if c.Hash == a.Hash || c.Layers.Data == a.Layers.Data {
		t.Fatal("a changed file did not change the data layer")
	}
	// Remove the file altogether: the old execution still replays.
	os.Remove(filepath.Join(dir, "px.csv"))
	if rep, err := r.x.Replay(ctx, a.Hash); err != nil || !rep.Match {
		t.Fatalf("replay after the file was removed: %v %+v", err, rep)
	}
}

// Stored records that no longer hash right are reported, never served.
func TestCorruptRecords(t *testing.T) {
	r := newRig(t, realData, Options{})
	ctx := context.Background()
	fp := r.execute(t, determinismConfigs[1])
	db := r.store.DB()
	put := func(bucket []byte, key, val []byte) {
		t.Helper()
		if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucket).Put(key, val) }); err != nil {
			t.Fatal(err)
		}
	}
	get := func(bucket, key []byte) []byte {
		var v []byte
		db.View(func(tx *bolt.Tx) error { v = bytes.Clone(tx.Bucket(bucket).Get(key)); return nil })
		return v
	}
	if _, err := r.x.Get(ctx, hashing.SumSHA256([]byte("nothing"))); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(unknown) = %v", err)
	}
	if _, err := r.x.Replay(ctx, hashing.SumSHA256([]byte("nothing"))); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Replay(unknown) = %v", err)
	}

	// A changed score in the stored footprint: the score layer no longer
	// matches the body.
	orig := get(Bucket, fp.Hash.Key())
	bad := bytes.Replace(orig, []byte(`"score":0.`), []byte(`"score":1.`), 1)
	if bytes.Equal(bad, orig) {
		t.Fatal("no score to tamper with")
	}
	put(Bucket, fp.Hash.Key(), bad)
	for _, f := range []func() error{
		func() error { _, err := r.x.Get(ctx, fp.Hash); return err },
		func() error { _, err := r.x.Replay(ctx, fp.Hash); return err },
		func() error { _, err := r.x.Diff(ctx, fp.Hash, fp.Hash); return err },
	} {
		if err := f(); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("tampered footprint: %v, want ErrCorrupt", err)
		}
	}
	if _, problems, err := r.x.Verify(ctx); !errors.Is(err, ErrCorrupt) || len(problems) != 1 {
		t.Fatalf("Verify: %q %v", problems, err)
	}
	// Executing again repairs it.
	if again := r.execute(t, determinismConfigs[1]); again.Hash != fp.Hash {
		t.Fatal("re-execution changed the hash")
	}
	if _, err := r.x.Get(ctx, fp.Hash); err != nil {
		t.Fatalf("after repair: %v", err)
	}

	// A change no layer covers (the recorded grounding id), still in
	// canonical form: the record digest refuses it. Without the digest the
	// record is checked by its layers alone and passes.
	orig = get(Bucket, fp.Hash.Key())
	other := hashing.SumSHA256([]byte("another grounding")).String()
	bad = bytes.Replace(orig, []byte(`"grounding":"`+fp.Grounding.String()+`"`), []byte(`"grounding":"`+other+`"`), 1)
	if bytes.Equal(bad, orig) {
		t.Fatal("no grounding to tamper with")
	}
	put(Bucket, fp.Hash.Key(), bad)
	if _, err := r.x.Get(ctx, fp.Hash); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "not the ones written") {
		t.Fatalf("a tampered unhashed field: %v, want ErrCorrupt", err)
	}
	if _, problems, err := r.x.Verify(ctx); !errors.Is(err, ErrCorrupt) || len(problems) != 1 {
		t.Fatalf("Verify: %q %v", problems, err)
	}
	sum := get(DigestBucket, fp.Hash.Key())
	if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(DigestBucket).Delete(fp.Hash.Key()) }); err != nil {
		t.Fatal(err)
	}
	if got, err := r.x.Get(ctx, fp.Hash); err != nil || got.Grounding.String() != other {
		t.Fatalf("a record from before digests: %v", err)
	}
	put(Bucket, fp.Hash.Key(), orig)
	put(DigestBucket, fp.Hash.Key(), sum)
	if _, err := r.x.Get(ctx, fp.Hash); err != nil {
		t.Fatalf("restored: %v", err)
	}

	// A corrupt data blob: replay refuses it.
	data := get(artifacts.Bucket, fp.Data.Digest.Key())
	put(artifacts.Bucket, fp.Data.Digest.Key(), append(bytes.Clone(data), '\n'))
	if _, err := r.x.Replay(ctx, fp.Hash); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("replay with a corrupt data blob: %v", err)
	}
	// The blob store's Verify finds the corrupt bytes (the executor's
	// checks the footprints and that their blobs are there: together they
	// hash every record once).
	if _, problems, err := r.arts.Verify(ctx); !errors.Is(err, artifacts.ErrCorrupt) || len(problems) != 1 || !strings.Contains(problems[0], fp.Data.Digest.String()) {
		t.Fatalf("artifacts Verify: %q %v", problems, err)
	}
	// A missing data blob: ErrNotFound, and the executor's Verify names it.
	db.Update(func(tx *bolt.Tx) error { return tx.Bucket(artifacts.Bucket).Delete(fp.Data.Digest.Key()) })
	if _, err := r.x.Replay(ctx, fp.Hash); !errors.Is(err, ErrNotFound) {
		t.Fatalf("replay without the data blob: %v", err)
	}
	if _, problems, err := r.x.Verify(ctx); !errors.Is(err, ErrCorrupt) || len(problems) != 1 || !strings.Contains(problems[0], "missing") {
		t.Fatalf("Verify: %q %v", problems, err)
	}
	// Executing again stores the blob again.
	r.execute(t, determinismConfigs[1])
	if rep, err := r.x.Replay(ctx, fp.Hash); err != nil || !rep.Match {
		t.Fatalf("replay after re-execution: %v", err)
	}
}
