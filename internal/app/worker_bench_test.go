package app

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/groundgate/groundgate/ground"
)

// BenchmarkWorkers runs K distinct 100-morphism grids (K from
// GROUNDGATE_BENCH_JOBS, default 8), all asked for at once, through the
// queue to 1 and to 2 worker processes (--concurrency 1 each: an
// execution already uses every core), and, for reference, one after
// another on one bbolt server without a queue. It reports jobs/s (K over
// the wall time until the last answer) and the median and longest
// latency of one execution, from the moment all K were asked to its
// answer. tools/bench/workers.sh runs it.
func BenchmarkWorkers(b *testing.B) {
	k := 8
	if v, err := strconv.Atoi(os.Getenv("GROUNDGATE_BENCH_JOBS")); err == nil && v > 0 {
		k = v
	}
	const rows, cols = 6000, 20
	data := panelDir(b, rows, cols)
	b.Logf("%d jobs of 100 morphisms on a %d × %d panel, %d CPUs", k, rows, cols, runtimeCPUs())
	b.Run("bbolt", func(b *testing.B) {
		e, err := OpenEngines(context.Background(), b.TempDir()+"/g.db", data)
		if err != nil {
			b.Fatal(err)
		}
		defer e.Close()
		round := 0
		for b.Loop() {
			gs := make([]*ground.Grounded, k)
			for i := range gs {
				gs[i] = groundOn(b, e.Disc, e.Gate, grid100(float64(round*k+i+1)))
			}
			round++
			lat := make([]time.Duration, k)
			began := time.Now()
			for i, g := range gs {
				if _, err := e.Exec.Execute(context.Background(), g); err != nil {
					b.Fatal(err)
				}
				lat[i] = time.Since(began) // asked at once, run in turn
			}
			report(b, k, time.Since(began), lat)
		}
	})
	for _, n := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			c := newCluster(b, data)
			for range n {
				c.child(b, childConfig{Concurrency: 1, JobTimeout: 5 * time.Minute})
			}
			q := c.queue(b)
			round := 0
			for b.Loop() {
				gs := make([]*ground.Grounded, k)
				for i := range gs {
					gs[i] = c.ground(b, grid100(float64(round*k+i+1)))
				}
				round++
				lat := make([]time.Duration, k)
				began := time.Now()
				var wg sync.WaitGroup
				for i, g := range gs {
					wg.Go(func() {
						t0 := time.Now()
						if _, err := q.Execute(context.Background(), g); err != nil {
							b.Error(err)
						}
						lat[i] = time.Since(t0)
					})
				}
				wg.Wait()
				report(b, k, time.Since(began), lat)
			}
		})
	}
}

// report adds jobs/s and the median latency of one round.
func report(b *testing.B, k int, wall time.Duration, lat []time.Duration) {
	slices.Sort(lat)
	b.ReportMetric(float64(k)/wall.Seconds(), "jobs/s")
	b.ReportMetric(lat[len(lat)/2].Seconds(), "p50-s")
	b.ReportMetric(lat[len(lat)-1].Seconds(), "max-s")
}

func runtimeCPUs() int { return runtime.NumCPU() }
