package relevance

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/groundgate/groundgate/internal/testio"
)

// toolBench reads the StableToolBench APIs as documents and the requests'
// prompts (testio.SharedData: skipped in a clone without shared/,
// failed under CI).
func toolBench(b *testing.B) ([]Document, []string) {
	dir := testio.SharedData(b, "tool-discovery")
	raw, err := os.ReadFile(filepath.Join(dir, "stabletoolbench-tools.json"))
	if err != nil {
		b.Fatal(err)
	}
	var apis []struct {
		Name, Tool, API, Description string
		Parameters                   struct {
			Properties map[string]struct{ Description string }
		}
	}
	if err := json.Unmarshal(raw, &apis); err != nil {
		b.Fatal(err)
	}
	docs := make([]Document, len(apis))
	for i, a := range apis {
		var ps []Param
		for n, p := range a.Parameters.Properties {
			ps = append(ps, Param{n, p.Description})
		}
		slices.SortFunc(ps, func(x, y Param) int { return cmpString(x.Name, y.Name) })
		docs[i] = Document{Name: a.Name, Title: a.Tool + ": " + a.API, Description: a.Description, Params: ps, Group: a.Tool}
	}
	f, err := os.Open(filepath.Join(dir, "stabletoolbench-queries.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var prompts []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var q struct{ Prompt string }
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			b.Fatal(err)
		}
		prompts = append(prompts, q.Prompt)
	}
	return docs, prompts
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// synthetic is n documents: the StableToolBench APIs repeated, copy k
// named NAME_vK with "vK" in its title and group, so names, titles and
// groups vary.
func synthetic(docs []Document, n int) []Document {
	out := make([]Document, n)
	for i := range n {
		d := docs[i%len(docs)]
		if k := i / len(docs); k > 0 {
			d.Name = fmt.Sprintf("%s_v%d", d.Name, k)
			d.Title = fmt.Sprintf("%s v%d", d.Title, k)
			d.Group = fmt.Sprintf("%s v%d", d.Group, k)
		}
		out[i] = d
	}
	return out
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// BenchmarkQuery: one query (Query, decision rule included) at 2,500,
// 10,000 and 100,000 documents, over the 765 StableToolBench prompts in
// turn; reports p50 and p99 latency (ms), the index's heap (MB) and its
// build time (s).
//
//	go test ./discover/relevance -run '^$' -bench Query -benchtime 2000x
func BenchmarkQuery(b *testing.B) {
	docs, prompts := toolBench(b)
	v := testVectors(b)
	for _, n := range []int{2500, 10_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			syn := synthetic(docs, n)
			before := heapInUse()
			start := time.Now()
			x, err := New(v, DefaultConfig())
			if err != nil {
				b.Fatal(err)
			}
			for _, d := range syn {
				if err := x.Add(d); err != nil {
					b.Fatal(err)
				}
			}
			build := time.Since(start)
			mem := heapInUse() - before
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				t := time.Now()
				x.Query(prompts[i%len(prompts)])
				lat = append(lat, time.Since(t))
			}
			b.StopTimer()
			slices.Sort(lat)
			q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / 1e6 }
			b.ReportMetric(q(0.5), "p50-ms")
			b.ReportMetric(q(0.99), "p99-ms")
			b.ReportMetric(float64(mem)/1e6, "index-MB")
			b.ReportMetric(build.Seconds(), "build-s")
			runtime.KeepAlive(x)
		})
	}
}

// BenchmarkAdd: replacing one document of a 10,000-document index.
func BenchmarkAdd(b *testing.B) {
	docs, _ := toolBench(b)
	x, err := New(testVectors(b), DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	syn := synthetic(docs, 10_000)
	for _, d := range syn {
		_ = x.Add(d)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		d := syn[i%len(syn)]
		d.Description += fmt.Sprint(" ", i)
		_ = x.Add(d)
	}
}
