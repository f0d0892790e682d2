package pgstore_test

import (
	"context"
	"encoding/binary"
	"sync/atomic"
	"testing"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/store"
	"github.com/groundgate/groundgate/store/pgstore"
)

var benchSpace = store.Space{Name: "bench.records"}

// benchRecord is a 512-byte record made from i, and its key.
func benchRecord(i uint64) (hashing.Digest, []byte) {
	v := make([]byte, 512)
	binary.BigEndian.PutUint64(v, i)
	return hashing.SumSHA256(v), v
}

// parallel runs op(i) for i = 1, 2, … from 4×GOMAXPROCS goroutines at
// once, as a server's concurrent requests, on a new store.
func parallel(b *testing.B, setup func(*pgstore.Store), op func(s *pgstore.Store, i uint64) error) {
	s := newPlace(b).open(b)
	defer s.Close()
	if setup != nil {
		setup(s)
	}
	var next atomic.Uint64
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := op(s, next.Add(1)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkPutRecord: one 512-byte record per Batch (one commit each).
func BenchmarkPutRecord(b *testing.B) {
	parallel(b, nil, func(s *pgstore.Store, i uint64) error {
		k, v := benchRecord(i)
		return s.Batch(context.Background(), func(tx store.Tx) error { return tx.PutRecord(benchSpace, k, v) })
	})
}

// BenchmarkRecord: one checked read per View, of 1,000 stored records.
func BenchmarkRecord(b *testing.B) {
	const stored = 1000
	setup := func(s *pgstore.Store) {
		if err := s.Update(context.Background(), func(tx store.Tx) error {
			for i := range uint64(stored) {
				k, v := benchRecord(i)
				if err := tx.PutRecord(benchSpace, k, v); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	parallel(b, setup, func(s *pgstore.Store, i uint64) error {
		k, _ := benchRecord(i % stored)
		return s.View(context.Background(), func(tx store.Tx) error { _, err := tx.Record(benchSpace, k); return err })
	})
}

// BenchmarkPutBlob: one 1 MiB blob per Update into the object store
// (b.SetBytes: MB/s is the bandwidth).
func BenchmarkPutBlob(b *testing.B) {
	sp := store.Space{Name: "bench.blobs"}
	b.SetBytes(1 << 20)
	parallel(b, nil, func(s *pgstore.Store, i uint64) error {
		v := make([]byte, 1<<20)
		binary.BigEndian.PutUint64(v, i)
		k := hashing.SumBLAKE3(v)
		return s.Update(context.Background(), func(tx store.Tx) error { return tx.PutBlob(sp, k, v) })
	})
}

// BenchmarkLock: Lock and unlock of a key of its own per operation (two
// round trips: pg_advisory_lock, pg_advisory_unlock), what a session's
// call pays on a shared store for its hold across servers.
func BenchmarkLock(b *testing.B) {
	parallel(b, nil, func(s *pgstore.Store, i uint64) error {
		unlock, err := s.Lock(context.Background(), binary.BigEndian.AppendUint64(nil, i))
		if err != nil {
			return err
		}
		unlock()
		return nil
	})
}

// BenchmarkLockSerial: as BenchmarkLock, one at a time: the latency a
// call's hold adds.
func BenchmarkLockSerial(b *testing.B) {
	s := newPlace(b).open(b)
	defer s.Close()
	key := []byte("session/bench")
	for b.Loop() {
		unlock, err := s.Lock(context.Background(), key)
		if err != nil {
			b.Fatal(err)
		}
		unlock()
	}
}
