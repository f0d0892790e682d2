package ground_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/groundgate/groundgate/ground"
)

// BenchmarkGroundNew is Γ on proposals it has not seen, from one agent
// and from four at once: each decision is a new record, stored durably (a
// bbolt commit and its fsync) before Ground returns. ns/op is wall time
// per grounding.
//
//	go test ./ground -run '^$' -bench GroundNew -benchtime 2000x
func BenchmarkGroundNew(b *testing.B) {
	for _, writers := range []int{1, 4} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			r := newContractRig(b, true)
			ctx := context.Background()
			var n atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for range writers {
				wg.Go(func() {
					for {
						i := n.Add(1)
						if i > int64(b.N) {
							return
						}
						req := fmt.Sprintf(`{"family":"MOM_WZS","metric":"SRP","params":{"window":[%d,%d,%d]},"data":"oil-spot/wti-daily.csv"}`, 10+i, 10000+i, 20000+i)
						out, err := r.gate.Ground(ctx, ground.Proposal{Request: []byte(req), DiscoveryID: r.evidence.ID})
						if err != nil {
							b.Error(err)
							return
						}
						if !out.Record.Decision.Admitted || out.ID.IsZero() {
							b.Errorf("not admitted and stored: %+v", out.Record.Decision.Failures)
							return
						}
					}
				})
			}
			wg.Wait()
		})
	}
}
