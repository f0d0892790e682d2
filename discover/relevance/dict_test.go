package relevance

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestDict checks the term dictionary against a map through many puts and
// deletions in random order: every deletion's backward shift, table
// growth and chunk repacking (keys long enough to fill chunks).
func TestDict(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	d := newDict()
	want := map[string]uint32{}
	var free []uint32
	next := uint32(0)
	check := func() {
		t.Helper()
		if d.n != len(want) {
			t.Fatalf("n = %d, want %d", d.n, len(want))
		}
		for k, id := range want {
			if got, ok := d.get(k); !ok || got != id {
				t.Fatalf("get(%q) = %d, %v; want %d", k, got, ok, id)
			}
			if d.key(id) != k {
				t.Fatalf("key(%d) = %q, want %q", id, d.key(id), k)
			}
		}
	}
	for step := range 60_000 {
		// Few distinct keys, so that puts and deletions meet often.
		k := fmt.Sprintf("w%d %0*d", rng.IntN(3000), 1+rng.IntN(200), step%7)
		if id, ok := want[k]; ok {
			d.del(id)
			delete(want, k)
			free = append(free, id)
		} else {
			id := next
			if n := len(free); n > 0 {
				id, free = free[n-1], free[:n-1]
			} else {
				next++
			}
			if _, ok := d.get(k); ok {
				t.Fatalf("step %d: %q held before its put", step, k)
			}
			d.put(k, id)
			want[k] = id
		}
		if step%5000 == 0 {
			check()
		}
	}
	check()
	// Removing most keys repacks the chunks.
	i := 0
	for k, id := range want {
		if i++; i%10 != 0 {
			d.del(id)
			delete(want, k)
		}
	}
	check()
	if d.total != d.dead+func() (n int) {
		for k := range want {
			n += len(k)
		}
		return n
	}() || 2*d.dead > d.total {
		t.Fatalf("chunks hold %d bytes, %d dead, after repacking", d.total, d.dead)
	}
	if _, ok := d.get("absent"); ok {
		t.Fatal("an absent key found")
	}
}
