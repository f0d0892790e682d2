package ground

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/hashing"
)

// The evidence cache answers exactly what a verified lookup answers, and
// stays bounded.
func TestEvidenceCache(t *testing.T) {
	r := newRig(t)
	c := newEvidenceCache()
	c.ring = c.ring[:2] // tiny, to exercise eviction
	var ids []hashing.Digest
	for _, terms := range [][]string{{"momentum"}, {"carry"}, {"sharpe"}} {
		ids = append(ids, r.discover(t, terms...).ID)
	}
	for round := 0; round < 2; round++ {
		for _, id := range ids {
			got, err := c.lookup(context.Background(), r.disc, id)
			want, _ := r.disc.Lookup(context.Background(), id)
			if err != nil || got.ID != id || !slices.Equal(got.Matches, want.Matches) {
				t.Fatalf("cache lookup %s: %v", id, err)
			}
			if len(c.byID) > 2 {
				t.Fatalf("cache holds %d entries, bound 2", len(c.byID))
			}
		}
	}
	if _, err := c.lookup(context.Background(), r.disc, hashing.SumSHA256([]byte("x"))); !errors.Is(err, discover.ErrNotFound) {
		t.Fatalf("miss: %v", err)
	}
}
