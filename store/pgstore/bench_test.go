package pgstore_test

import (
	"context"
	"encoding/binary"
	"sync/atomic"
	"testing"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/store"
)

var benchSpace = store.Space{Name: "bench.records"}

// benchRecord is a 512-byte record made from i, and its key.
func benchRecord(i uint64) (hashing.Digest, []byte) {
	v := make([]byte, 512)
	binary.BigEndian.PutUint64(v, i)
	return hashing.SumSHA256(v), v
}

// BenchmarkPutRecord: one 512-byte record per Batch (one commit each),
// from 4×GOMAXPROCS writers at once, as a server's concurrent requests.
func BenchmarkPutRecord(b *testing.B) {
	ctx := context.Background()
	s := newPlace(b).open(b)
	defer s.Close()
	var next atomic.Uint64
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			k, v := benchRecord(next.Add(1))
			if err := s.Batch(ctx, func(tx store.Tx) error { return tx.PutRecord(benchSpace, k, v) }); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkRecord: one checked read per View, from 4×GOMAXPROCS readers.
func BenchmarkRecord(b *testing.B) {
	ctx := context.Background()
	s := newPlace(b).open(b)
	defer s.Close()
	const stored = 1000
	if err := s.Update(ctx, func(tx store.Tx) error {
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
	var next atomic.Uint64
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			k, _ := benchRecord(next.Add(1) % stored)
			if err := s.View(ctx, func(tx store.Tx) error { _, err := tx.Record(benchSpace, k); return err }); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkPutBlob: one 1 MiB blob per Update into the object store,
// from 4×GOMAXPROCS writers at once (b.SetBytes: MB/s is the bandwidth).
func BenchmarkPutBlob(b *testing.B) {
	ctx := context.Background()
	s := newPlace(b).open(b)
	defer s.Close()
	sp := store.Space{Name: "bench.blobs"}
	var next atomic.Uint64
	b.SetBytes(1 << 20)
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		v := make([]byte, 1<<20)
		for pb.Next() {
			binary.BigEndian.PutUint64(v, next.Add(1))
			k := hashing.SumBLAKE3(v)
			if err := s.Update(ctx, func(tx store.Tx) error { return tx.PutBlob(sp, k, v) }); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
