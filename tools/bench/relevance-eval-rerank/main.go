// Command relevance-eval-rerank trains and measures a linear reranker over the
// relevance tier's candidate features offline (issue 27).
//
//	relevance-eval --candidates FILE
//	relevance-eval-rerank [--train SETS] [--l2 X] [--iters N] FILE
//
// FILE is what relevance-eval --candidates writes: for every request under
// every condition, its candidates in the tier's order with their features
// (relevance.FeatureNames). The model is a pairwise logistic ranker
// (RankNet with a linear score): for each training request, every pair of
// a gold candidate and another is a sample, the loss ln(1 + e^(s_other −
// s_gold)) plus L2 on the weights of the standardised features, fitted
// by full-batch gradient descent. It trains on the dev halves of the sets
// named by --train (data/condition, comma-separated; default
// stabletoolbench/served) and prints, for each set and half, recall@k of
// the tier's order and of the reranked one, τ-bench's tasks with every
// gold among the 5 best, and the separation of served from unserved
// requests (AUC of the best score; the offered conditions). Then the
// weights, as floats of the raw features and as integers in thousandths
// (what a scorer would use).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/groundgate/groundgate/discover/relevance"
)

type row struct {
	Data       string                `json:"data"`
	Half       string                `json:"half"`
	Condition  string                `json:"cond"`
	ID         string                `json:"id"`
	Gold       []string              `json:"gold"`
	Candidates []relevance.Candidate `json:"cands"`
}

func (r row) set() string { return r.Data + "/" + r.Condition }

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "relevance-eval-rerank:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("relevance-eval-rerank", flag.ContinueOnError)
	train := fs.String("train", "stabletoolbench/served", "`sets` trained on (their dev halves), comma-separated")
	l2 := fs.Float64("l2", 0.01, "L2 penalty on the standardised weights")
	iters := fs.Int("iters", 400, "gradient steps")
	negTop := fs.Int("neg-top", 0, "pair a gold candidate only with the others among the tier's `k` first (0: all)")
	lambdaK := fs.Int("lambda", 0, "weigh the pairs that straddle the `k`-th place ten times the others (0: all alike)")
	ascent := fs.Bool("ascent", false, "then coordinate ascent on the training rows' recall@5")
	use := fs.String("features", "", "the features used, comma-separated names (default: all)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("want one candidates file")
	}
	rows, err := load(fs.Arg(0))
	if err != nil {
		return err
	}
	mask := make([]bool, relevance.NumFeatures)
	for i := range mask {
		mask[i] = *use == ""
	}
	if *use != "" {
		for _, n := range strings.Split(*use, ",") {
			i := slices.Index(relevance.FeatureNames[:], n)
			if i < 0 {
				return fmt.Errorf("no feature %q", n)
			}
			mask[i] = true
		}
	}
	sets := strings.Split(*train, ",")
	var tr []row
	for _, r := range rows {
		if r.Half == "dev" && slices.Contains(sets, r.set()) && len(r.Gold) > 0 {
			tr = append(tr, r)
		}
	}
	m := fit(tr, mask, *l2, *iters, *negTop, *lambdaK)
	if *ascent {
		m = ascend(tr, mask, m)
	}
	m = m.integer()
	report(out, rows, m)
	return nil
}

func load(path string) ([]row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rows []row
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var r row
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, err
		}
		if r.Condition == "" { // a document line
			continue
		}
		rows = append(rows, r)
	}
	return rows, sc.Err()
}

// model is a linear score over the raw features (weights per millionth).
type model struct {
	w [relevance.NumFeatures]float64
}

// integer rounds m's weights to whole thousandths per unit of a feature
// (what a scorer's integer constants would hold), so the figures
// reported are those of integer arithmetic: Σ milli_i·f_i is exact in
// float64 at these magnitudes.
func (m model) integer() model {
	for i, w := range m.w {
		m.w[i] = math.Round(w*1e9) / 1e9
	}
	return m
}

func (m model) score(f [relevance.NumFeatures]int64) float64 {
	var s float64
	for i, v := range f {
		s += m.w[i] * float64(v)
	}
	return s
}

// fit trains the pairwise logistic ranker on rows' gold/other pairs.
func fit(rows []row, mask []bool, l2 float64, iters, negTop, lambdaK int) model {
	const n = relevance.NumFeatures
	// Standardise: mean and deviation of each feature over the candidates.
	var mean, sd [n]float64
	var cnt float64
	for _, r := range rows {
		for _, c := range r.Candidates {
			cnt++
			for i, v := range c.Features {
				mean[i] += float64(v)
			}
		}
	}
	for i := range mean {
		mean[i] /= cnt
	}
	for _, r := range rows {
		for _, c := range r.Candidates {
			for i, v := range c.Features {
				d := float64(v) - mean[i]
				sd[i] += d * d
			}
		}
	}
	for i := range sd {
		sd[i] = math.Sqrt(sd[i]/cnt) + 1e-9
	}
	// Each request's candidates, standardised, and which are gold.
	type req struct {
		z    [][n]float64
		gold []bool
	}
	var reqs []req
	npairs := 0
	for _, r := range rows {
		var q req
		ng := 0
		for ci, c := range r.Candidates {
			isGold := slices.Contains(r.Gold, c.Name)
			if !isGold && negTop > 0 && ci >= negTop {
				continue
			}
			var z [n]float64
			for i, v := range c.Features {
				if mask[i] {
					z[i] = (float64(v) - mean[i]) / sd[i]
				}
			}
			q.z = append(q.z, z)
			q.gold = append(q.gold, isGold)
			if isGold {
				ng++
			}
		}
		npairs += ng * (len(q.z) - ng)
		reqs = append(reqs, q)
	}
	var w [n]float64
	// Start from the tier's own order: the full score's weight.
	w[relevance.FeatFull] = 1
	lr := 0.5
	for range iters {
		var g [n]float64
		var tot float64
		for _, q := range reqs {
			s := make([]float64, len(q.z))
			for ci, z := range q.z {
				for i := range w {
					s[ci] += w[i] * z[i]
				}
			}
			// With lambdaK, a pair weighs more when it straddles the
			// lambdaK-th place: swapping it changes recall@lambdaK.
			var top []bool
			if lambdaK > 0 {
				top = make([]bool, len(s))
				for ci := range s {
					r := 0
					for cj := range s {
						if s[cj] > s[ci] {
							r++
						}
					}
					top[ci] = r < lambdaK
				}
			}
			for gi := range q.z {
				if !q.gold[gi] {
					continue
				}
				for oi := range q.z {
					if q.gold[oi] {
						continue
					}
					pw := 1.0
					if lambdaK > 0 && top[gi] == top[oi] {
						pw = 0.1
					}
					// d/dw ln(1 + e^(−Δ)) = −σ(−Δ)·(z_g − z_o)
					k := pw / (1 + math.Exp(s[gi]-s[oi]))
					for i := range g {
						g[i] -= k * (q.z[gi][i] - q.z[oi][i])
					}
					tot += pw
				}
			}
		}
		for i := range w {
			g[i] = g[i]/max(tot, 1) + l2*w[i]
			if mask[i] {
				w[i] -= lr * g[i]
			}
		}
	}
	_ = npairs
	var m model
	for i := range w {
		m.w[i] = w[i] / sd[i]
	}
	return m
}

// rerank returns the candidates' names by the model's score (ties: the
// tier's order), and the best score.
func rerank(r row, m model) ([]string, float64) {
	idx := make([]int, len(r.Candidates))
	sc := make([]float64, len(r.Candidates))
	best := math.Inf(-1)
	for i, c := range r.Candidates {
		idx[i] = i
		sc[i] = m.score(c.Features)
		best = max(best, sc[i])
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case sc[a] > sc[b]:
			return -1
		case sc[a] < sc[b]:
			return 1
		}
		return 0
	})
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = r.Candidates[j].Name
	}
	return out, best
}

func tier(r row) ([]string, float64) {
	out := make([]string, len(r.Candidates))
	var best float64
	for i, c := range r.Candidates {
		out[i] = c.Name
		best = max(best, float64(c.Features[relevance.FeatFull]))
	}
	return out, best
}

// recall is the gold found among the k first of each request over all gold.
func recall(rows []row, order func(row) ([]string, float64), k int) (float64, int) {
	var found, total, tasks int
	for _, r := range rows {
		names, _ := order(r)
		names = names[:min(k, len(names))]
		n := 0
		for _, g := range r.Gold {
			if slices.Contains(names, g) {
				n++
			}
		}
		found += n
		total += len(r.Gold)
		if n == len(r.Gold) {
			tasks++
		}
	}
	if total == 0 {
		return 0, 0
	}
	return float64(found) / float64(total), tasks
}

// auc is the probability that a served request's best score exceeds an
// unserved one's (ties half), and the share of unserved requests below
// the threshold that keeps 90 % of the served.
func auc(served, unserved []row, order func(row) ([]string, float64)) (float64, float64) {
	if len(served) == 0 || len(unserved) == 0 {
		return math.NaN(), math.NaN()
	}
	var a, b []float64
	for _, r := range served {
		_, s := order(r)
		a = append(a, s)
	}
	for _, r := range unserved {
		_, s := order(r)
		b = append(b, s)
	}
	var num float64
	for _, x := range a {
		for _, y := range b {
			switch {
			case x > y:
				num++
			case x == y:
				num += 0.5
			}
		}
	}
	slices.Sort(a)
	t := a[len(a)/10]
	below := 0
	for _, y := range b {
		if y < t {
			below++
		}
	}
	return num / float64(len(a)*len(b)), float64(below) / float64(len(b))
}

func report(out io.Writer, rows []row, m model) {
	by := map[string][]row{}
	for _, r := range rows {
		by[r.set()+" "+r.Half] = append(by[r.set()+" "+r.Half], r)
	}
	rr := func(r row) ([]string, float64) { return rerank(r, m) }
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "half\tset\trequests\tv4 r@3\tr@3\tv4 r@5\tr@5\tv4 r@10\tr@10\tv4 all@5\tall@5\t")
	for _, half := range []string{"dev", "test"} {
		for _, set := range []string{"stabletoolbench/served", "stabletoolbench/offered-served", "tau-airline/served"} {
			rs := by[set+" "+half]
			fmt.Fprintf(tw, "%s\t%s\t%d\t", half, set, len(rs))
			for _, k := range []int{3, 5, 10} {
				a, _ := recall(rs, tier, k)
				b, _ := recall(rs, rr, k)
				fmt.Fprintf(tw, "%.3f\t%.3f\t", a, b)
			}
			_, a := recall(rs, tier, 5)
			_, b := recall(rs, rr, 5)
			fmt.Fprintf(tw, "%d\t%d\t\n", a, b)
		}
		sv, us := by["stabletoolbench/offered-served "+half], by["stabletoolbench/offered-unserved "+half]
		a0, b0 := auc(sv, us, tier)
		a1, b1 := auc(sv, us, rr)
		fmt.Fprintf(tw, "%s\toffered served vs unserved: AUC, unserved below 90 %% threshold\t%d/%d\t%.3f\t%.3f\t%.3f\t%.3f\t\n", half, len(sv), len(us), a0, a1, b0, b1)
	}
	tw.Flush()
	for _, half := range []string{"dev", "test"} {
		lo, hi := bootstrap(by["stabletoolbench/served "+half], rr, 5)
		fmt.Fprintf(out, "%s stabletoolbench/served: recall@5 gain, 95 %% bootstrap interval over requests: %+.3f … %+.3f\n", half, lo, hi)
	}
	fmt.Fprintln(out, "weights, thousandths per unit of each feature (features in millionths):")
	for i, n := range relevance.FeatureNames {
		fmt.Fprintf(out, "  %-13s %+6d\n", n, int64(math.Round(m.w[i]*1e9)))
	}
}

// ascend is coordinate ascent on recall@5 of rows from m: each weight in
// turn is scaled by a few factors (and tried at 0), the best kept when it
// gains; rounds until none gains.
func ascend(rows []row, mask []bool, m model) model {
	obj := func(m model) float64 {
		r, _ := recall(rows, func(r row) ([]string, float64) { return rerank(r, m) }, 5)
		return r
	}
	best := obj(m)
	for round := 0; round < 6; round++ {
		gained := false
		for i := range m.w {
			if !mask[i] {
				continue
			}
			w0 := m.w[i]
			scale := math.Abs(w0)
			if scale == 0 {
				scale = math.Abs(m.w[relevance.FeatFull])
			}
			for _, d := range []float64{-2, -1, -0.5, -0.25, 0.25, 0.5, 1, 2} {
				t := m
				t.w[i] = w0 + d*scale
				if v := obj(t); v > best+1e-9 {
					best, m, gained = v, t, true
				}
			}
			if m.w[i] == w0 {
				t := m
				t.w[i] = 0
				if v := obj(t); v >= best {
					best, m = v, t
				}
			}
		}
		if !gained {
			break
		}
	}
	return m
}

// bootstrap is the 95 % interval of the gain of order over the tier's in
// recall@k, resampling the requests (1,000 draws, a fixed seed).
func bootstrap(rows []row, order func(row) ([]string, float64), k int) (float64, float64) {
	if len(rows) == 0 {
		return 0, 0
	}
	// Per request: gold found by each order, and gold.
	type cnt struct{ a, b, g int }
	cs := make([]cnt, len(rows))
	for i, r := range rows {
		x, _ := tier(r)
		y, _ := order(r)
		x, y = x[:min(k, len(x))], y[:min(k, len(y))]
		for _, g := range r.Gold {
			if slices.Contains(x, g) {
				cs[i].a++
			}
			if slices.Contains(y, g) {
				cs[i].b++
			}
		}
		cs[i].g = len(r.Gold)
	}
	rng := rand.New(rand.NewPCG(27, 5))
	ds := make([]float64, 1000)
	for j := range ds {
		var a, b, g int
		for range rows {
			c := cs[rng.IntN(len(cs))]
			a, b, g = a+c.a, b+c.b, g+c.g
		}
		ds[j] = float64(b-a) / float64(max(g, 1))
	}
	slices.Sort(ds)
	return ds[25], ds[974]
}
