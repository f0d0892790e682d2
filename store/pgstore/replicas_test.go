package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/store"
	"github.com/groundgate/groundgate/store/pgstore"
)

// twoReplicas opens two stores on one new database and bucket: two pools,
// as two servers would have; closed at the test's end.
func twoReplicas(t *testing.T) []*pgstore.Store {
	p := newPlace(t)
	replicas := []*pgstore.Store{p.open(t), p.open(t)}
	for _, s := range replicas {
		t.Cleanup(func() { s.Close() })
	}
	return replicas
}

// TestReplicas: two stores on one database and bucket (two pools, as two
// servers) write versions, records and blobs at the same time. Each
// version number is issued once across both; whatever one acknowledged
// the other reads at once.
func TestReplicas(t *testing.T) {
	ctx := context.Background()
	replicas := twoReplicas(t)
	const name, each = "replicas.versions", 30
	space := store.Space{Name: "replicas.records"}
	blobs := store.Space{Name: "replicas.blobs"}
	won := make([][]uint64, len(replicas))
	var wg sync.WaitGroup
	for i, s := range replicas {
		other := replicas[1-i]
		wg.Go(func() {
			for j := range each {
				var n uint64
				rec := fmt.Appendf(nil, "replica %d record %d", i, j)
				err := s.Update(ctx, func(tx store.Tx) error {
					latest, _, err := tx.LatestVersion(name)
					if err != nil {
						return err
					}
					n = latest + 1
					if err := tx.PutRecord(space, hashing.SumSHA256(rec), rec); err != nil {
						return err
					}
					if err := tx.PutBlob(blobs, hashing.SumBLAKE3(rec), rec); err != nil {
						return err
					}
					return tx.PutVersion(name, n, rec)
				})
				if err != nil {
					t.Errorf("replica %d: %v", i, err)
					return
				}
				won[i] = append(won[i], n)
				// Acknowledged here: the other replica reads it now.
				if err := other.View(ctx, func(tx store.Tx) error {
					for what, get := range map[string]func() ([]byte, error){
						"version": func() ([]byte, error) { return tx.Version(name, n) },
						"record":  func() ([]byte, error) { return tx.Record(space, hashing.SumSHA256(rec)) },
						"blob":    func() ([]byte, error) { return tx.Blob(blobs, hashing.SumBLAKE3(rec)) },
					} {
						if raw, err := get(); err != nil || string(raw) != string(rec) {
							t.Errorf("replica %d's %s %d read by the other: %q, %v", i, what, n, raw, err)
						}
					}
					return nil
				}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	all := slices.Concat(won...)
	slices.Sort(all)
	for k, n := range all {
		if n != uint64(k+1) {
			t.Fatalf("versions issued %v: want 1…%d, each once", all, len(replicas)*each)
		}
	}
	if len(all) != len(replicas)*each {
		t.Fatalf("%d versions issued, want %d", len(all), len(replicas)*each)
	}
	t.Logf("%d versions from %d replicas (%d and %d), each once; %d+%d serialisation failures retried",
		len(all), len(replicas), len(won[0]), len(won[1]), replicas[0].Retries(), replicas[1].Retries())
}

// TestNoLostUpdate: two replicas (four writers each) increment one value by reading it and
// writing it back, as domain code written for bbolt's single writer does.
// SERIALIZABLE updates, run again when PostgreSQL aborts one, lose none.
func TestNoLostUpdate(t *testing.T) {
	ctx := context.Background()
	replicas := twoReplicas(t)
	const name, each, writers = "replicas.counter", 20, 4 // writers per replica
	key := []byte("n")
	var wg sync.WaitGroup
	for i := range len(replicas) * writers {
		s := replicas[i%len(replicas)]
		wg.Go(func() {
			for range each {
				if err := s.Update(ctx, func(tx store.Tx) error {
					raw, err := tx.Value(name, key)
					if err != nil && !errors.Is(err, store.ErrNotFound) {
						return err
					}
					n, _ := strconv.Atoi(string(raw))
					return tx.PutValue(name, key, strconv.AppendInt(nil, int64(n+1), 10))
				}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := replicas[0].View(ctx, func(tx store.Tx) error {
		raw, err := tx.Value(name, key)
		if string(raw) != strconv.Itoa(len(replicas)*writers*each) {
			t.Errorf("counter %q after %d increments (%v)", raw, len(replicas)*writers*each, err)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d increments, %d+%d runs again", len(replicas)*writers*each, replicas[0].Retries(), replicas[1].Retries())
}
