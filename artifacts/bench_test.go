package artifacts

import (
	"context"
	"crypto/rand"
	"testing"

	"github.com/groundgate/groundgate/hashing"
)

// BenchmarkBLAKE3 reports BLAKE3 hashing throughput (MB/s) over blobs of
// the sizes the executor stores: a small P&L artifact, a data file, a
// large weights artifact.
func BenchmarkBLAKE3(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"64KiB", 64 << 10}, {"1MiB", 1 << 20}, {"16MiB", 16 << 20}} {
		b.Run(size.name, func(b *testing.B) {
			data := make([]byte, size.n)
			rand.Read(data)
			b.SetBytes(int64(size.n))
			for b.Loop() {
				hashing.SumBLAKE3(data)
			}
		})
	}
}

// BenchmarkSHA256 is the same for SHA-256, for comparison.
func BenchmarkSHA256(b *testing.B) {
	data := make([]byte, 1<<20)
	rand.Read(data)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		hashing.SumSHA256(data)
	}
}

// BenchmarkPutGet stores and reads back distinct 1 MiB blobs (fsync
// included) and reads them back verified.
func BenchmarkPutGet(b *testing.B) {
	s, _, _ := mustOpen(b)
	ctx := context.Background()
	data := make([]byte, 1<<20)
	rand.Read(data)
	b.SetBytes(int64(len(data)))
	i := 0
	for b.Loop() {
		data[0], data[1], data[2] = byte(i), byte(i>>8), byte(i>>16)
		i++
		d, err := s.Put(ctx, data)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Get(ctx, d); err != nil {
			b.Fatal(err)
		}
	}
}
