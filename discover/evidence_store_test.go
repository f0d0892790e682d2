package discover

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/groundgate/groundgate/registry"
)

// Discoveries made at the same time store their evidence in shared
// commits (store Batch): after the file is closed and opened
// again, each one's evidence is there and looks up as the result that was
// returned.
func TestConcurrentEvidenceDurable(t *testing.T) {
	ctx := context.Background()
	s, path := mustOpenStore(t)
	d, err := New(ctx, s, s.Engine(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 40
	results := make([]Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r, err := d.Discover(ctx, Query{Terms: []string{"momentum", "sharpe", fmt.Sprintf("term%d", i)}})
			if err != nil {
				t.Errorf("discovery %d: %v", i, err)
			}
			results[i] = r
		})
	}
	wg.Wait()
	d.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2, err := registry.Open(ctx, path, registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	d2 := mustNew(t, s2)
	for i, want := range results {
		got, err := d2.Lookup(ctx, want.ID)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("discovery %d after reopening: %v\n%+v\nwant %+v", i, err, got, want)
		}
	}
	checkEvidence(t, s2)
}
