package app

import (
	"context"
	"testing"

	"github.com/groundgate/groundgate/gateway"
	"github.com/groundgate/groundgate/policy"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/store/pgstore/pgstoretest"
)

// BenchmarkRefresh is what a replica over a shared store pays at the
// start of each request when nothing changed: one View reading the
// registry's current version, the policy set's latest and the upstreams'
// configurations (PostgreSQL on loopback). Parallel: concurrent requests
// sharing refreshes.
func BenchmarkRefresh(b *testing.B) {
	ctx := context.Background()
	st := pgstoretest.New(b).Open(b)
	b.Cleanup(func() { st.Close() })
	reg, err := registry.OpenEngine(ctx, st, registry.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if err := SeedBuiltin(ctx, reg); err != nil {
		b.Fatal(err)
	}
	ps, err := policy.OpenStore(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	ups, err := gateway.OpenManager(ctx, st, reg, gateway.Options{Shared: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ups.Close() })
	r := &refresher{st: st, reg: reg, policies: ps, upstreams: ups}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := r.Sync(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := r.Sync(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
