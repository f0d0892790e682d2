package execution

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/artifacts"
	"github.com/groundgate/groundgate/hashing"
)

// A grid over the budget is refused before anything runs or is stored,
// with a message that names the budget and the estimate.
func TestBudgetRefusesUpFront(t *testing.T) {
	grid := map[string]any{"window": []any{5, 10, 20, 40}, "risk_window": []any{20, 60}}
	for _, c := range []struct {
		opt  Options
		want string
	}{
		{Options{MaxCells: 1000}, "the budget is 1000 cells"},
		{Options{MaxHeldBytes: 1000}, "the budget is 1000 bytes"},
	} {
		r := newRig(t, realData, c.opt)
		fps, blobs := r.counts(t)
		fp, err := r.x.Execute(context.Background(), r.ground(t, request("MOM_WZS", "SRP", "ffn-test-data.csv", grid)))
		if !errors.Is(err, ErrOverBudget) || fp != nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "8 admissible morphisms") {
			t.Fatalf("%+v: %v, %v", c.opt, fp, err)
		}
		if f2, b2 := r.counts(t); f2 != fps || b2 != blobs {
			t.Fatalf("a refused execution stored something: %d→%d footprints, %d→%d blobs", fps, f2, blobs, b2)
		}
	}
	// The defaults admit it.
	r := newRig(t, realData, Options{})
	r.execute(t, request("MOM_WZS", "SRP", "ffn-test-data.csv", grid))
}

// With every slot taken and the queue full, an execution is refused at
// once with ErrBusy; a queued one waits at most QueueWait; a freed slot
// is taken.
func TestBusy(t *testing.T) {
	r := newRig(t, realData, Options{MaxConcurrent: 1, MaxQueued: 1, QueueWait: 200 * time.Millisecond})
	ctx := context.Background()
	g := r.ground(t, request("VOL_TGT", "SRP", "wti-daily.csv", nil))
	release, err := r.x.admit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A queued execution gives up after QueueWait.
	start := time.Now()
	if _, err := r.x.Execute(ctx, g); !errors.Is(err, ErrBusy) || time.Since(start) < 200*time.Millisecond {
		t.Fatalf("queued past QueueWait: %v after %v", err, time.Since(start))
	}
	// With the one queue place taken, the next is refused at once.
	queued := make(chan error, 1)
	go func() {
		_, err := r.x.Execute(ctx, g)
		queued <- err
	}()
	for r.x.waiting.Load() != 1 {
		time.Sleep(time.Millisecond)
	}
	start = time.Now()
	if _, err := r.x.Replay(ctx, hashing.SumSHA256(nil)); !errors.Is(err, ErrBusy) && !errors.Is(err, ErrNotFound) {
		t.Fatalf("replay while busy: %v", err)
	}
	if _, err := r.x.Execute(ctx, g); !errors.Is(err, ErrBusy) || time.Since(start) > 100*time.Millisecond {
		t.Fatalf("with the queue full: %v after %v", err, time.Since(start))
	}
	release()
	if err := <-queued; err != nil && !errors.Is(err, ErrBusy) {
		t.Fatal(err)
	}
	if _, err := r.x.Execute(ctx, g); err != nil {
		t.Fatalf("after the slot came free: %v", err)
	}
}

// Weights panels are stored as recipes over the series the grid shares:
// one returns panel, one volatility panel per risk window, one signal
// panel per signal window (none for VOL_TGT's constant signal). Each reads
// back to the bytes its digest names; a broken input makes the weights it
// feeds corrupt, never served, and Verify says so.
func TestWeightsStoredAsRecipes(t *testing.T) {
	ctx := context.Background()
	var r *rig
	for _, c := range []struct {
		req   map[string]any
		nodes int // returns + vols + signals stored for the recipes
	}{
		{request("MOM_WZS", "SRP", "ffn-test-data.csv", map[string]any{"window": []any{5, 10, 20}, "risk_window": []any{20, 60}}), 1 + 2 + 3},
		{request("VOL_TGT", "SRP", "ffn-test-data.csv", map[string]any{"risk_window": []any{20, 30, 60}}), 1 + 3},
	} {
		r = newRig(t, realData, Options{}) // a fresh file: nothing shared with the previous case
		_, before := r.counts(t)
		fp := r.execute(t, c.req)
		_, after := r.counts(t)
		if want := 1 + 2*len(fp.Morphisms) + c.nodes; after-before != want {
			t.Errorf("%v: %d blobs stored, want %d", c.req["family"], after-before, want)
		}
		for _, m := range fp.Morphisms {
			w := m.Artifacts[1]
			v := rawValue(t, r, w.Digest)
			if len(v) < 5 || v[4] != 3 || len(v) > 1024 {
				t.Errorf("morphism %d: weights stored as %d bytes, codec %d", m.Index, len(v), v[4])
			}
			got, err := r.arts.Get(ctx, w.Digest)
			if err != nil || hashing.SumBLAKE3(got) != w.Digest || len(got) != w.Bytes {
				t.Fatalf("morphism %d: weights read back: %v", m.Index, err)
			}
		}
	}
	fp := r.execute(t, request("MOM_WZS", "SRP", "ffn-test-data.csv", map[string]any{"window": []any{5, 10, 20}, "risk_window": []any{20, 60}}))
	w := fp.Morphisms[0].Artifacts[1].Digest
	var recipe weightsRecipe
	if err := hashing.DecodeStrict(rawValue(t, r, w)[5:], &recipe); err != nil {
		t.Fatal(err)
	}
	good := rawValue(t, r, recipe.Vols)
	setRaw(t, r, recipe.Vols, append(bytes.Clone(good[:len(good)-1]), good[len(good)-1]^1))
	if _, err := r.arts.Get(ctx, w); !errors.Is(err, artifacts.ErrCorrupt) {
		t.Fatalf("weights over a corrupt input: %v", err)
	}
	if _, problems, err := r.arts.Verify(ctx); !errors.Is(err, artifacts.ErrCorrupt) || !strings.Contains(strings.Join(problems, "\n"), w.String()) {
		t.Fatalf("Verify: %v %v", problems, err)
	}
	setRaw(t, r, recipe.Vols, good)
	if rep, err := r.x.Replay(ctx, fp.Hash); err != nil || !rep.Match {
		t.Fatal(rep, err)
	}
}

func rawValue(t *testing.T, r *rig, d hashing.Digest) []byte {
	t.Helper()
	var v []byte
	r.store.DB().View(func(tx *bolt.Tx) error { v = bytes.Clone(tx.Bucket(artifacts.Bucket).Get(d.Key())); return nil })
	return v
}

func setRaw(t *testing.T, r *rig, d hashing.Digest, v []byte) {
	t.Helper()
	if err := r.store.DB().Update(func(tx *bolt.Tx) error { return tx.Bucket(artifacts.Bucket).Put(d.Key(), v) }); err != nil {
		t.Fatal(err)
	}
}
