package smt

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// solvers are the real solvers under test; a missing one fails the test
// with the install hint (bash scripts/test.sh installs both).
func solvers(t testing.TB) []Solver {
	t.Helper()
	all := []Solver{Z3(), CVC5()}
	for _, s := range all {
		if err := s.Available(); err != nil {
			t.Fatal(err)
		}
	}
	return all
}

// children lists the pids of this test binary's child processes.
func children(t testing.TB) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	me := os.Getpid()
	var pids []int
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the process exited meanwhile
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(s[i+1:]) // state ppid …
		if len(fields) < 2 || fields[1] != strconv.Itoa(me) {
			continue
		}
		pid, _ := strconv.Atoi(strings.Fields(s)[0])
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	return pids
}

// newPool opens a pool that is closed at the end of the test, and then
// checks that no solver process outlived it.
func newPool(t *testing.T, s Solver, size int) *Pool {
	t.Helper()
	p := NewPool(s, size)
	t.Cleanup(func() {
		p.Close()
		if c := children(t); len(c) != 0 {
			t.Errorf("solver processes left after Close: %v", c)
		}
	})
	return p
}

func check(t *testing.T, p *Pool, q Query) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := p.Check(ctx, q)
	if err != nil {
		t.Fatalf("Check(%q): %v", q.Commands, err)
	}
	return r
}

// pigeonhole: n pigeons in n-1 holes, unsatisfiable and exponentially hard
// for resolution-based solvers.
func pigeonhole(n int) string {
	var b strings.Builder
	for i := range n {
		for j := range n - 1 {
			fmt.Fprintf(&b, "(declare-const p%d_%d Bool)\n", i, j)
		}
	}
	for i := range n {
		b.WriteString("(assert (or")
		for j := range n - 1 {
			fmt.Fprintf(&b, " p%d_%d", i, j)
		}
		b.WriteString("))\n")
	}
	for j := range n - 1 {
		for a := range n {
			for c := a + 1; c < n; c++ {
				fmt.Fprintf(&b, "(assert (or (not p%d_%d) (not p%d_%d)))\n", a, j, c, j)
			}
		}
	}
	return b.String()
}

func TestSatModel(t *testing.T) {
	for _, s := range solvers(t) {
		t.Run(string(s.Kind), func(t *testing.T) {
			p := newPool(t, s, 1)
			r := check(t, p, Query{Commands: `
				(declare-const n Int) (declare-const m Int) (declare-const b Bool) (declare-const s String)
				(declare-fun |k| () Int) (declare-fun f (Int) Int)
				(assert (= n 25)) (assert (= m (- 3))) (assert b) (assert (= s "a""bc"))
				(assert (! (= k (+ n m)) :named kdef)) (assert (= (f 1) 7))`})
			want := map[string]string{"n": "25", "m": "(- 3)", "b": "true", "s": `"a""bc"`, "k": "22"}
			if r.Status != Sat || fmt.Sprint(r.Model) != fmt.Sprint(want) || r.Core != nil {
				t.Fatalf("got %+v, want sat with model %v", r, want)
			}
			// Values narrows the model; Goal is asserted.
			r = check(t, p, Query{Commands: "(declare-const x Int) (declare-const y Int) (assert (> x y))",
				Goal: "(= y 4)", Values: []string{"|y|"}})
			if r.Status != Sat || fmt.Sprint(r.Model) != "map[y:4]" {
				t.Fatalf("got %+v, want sat with model y=4 only", r)
			}
		})
	}
}

func TestUnsatCore(t *testing.T) {
	for _, s := range solvers(t) {
		t.Run(string(s.Kind), func(t *testing.T) {
			p := newPool(t, s, 1)
			r := check(t, p, Query{Commands: `
				(declare-const lev Real) (declare-const grid Int)
				(assert (! (<= grid 100) :named grid_cap))
				(assert (! (<= lev 2.0) :named cap))
				(assert (! (= grid 10) :named grid_req))
				(assert (! (= lev 3.0) :named req))`})
			if r.Status != Unsat || strings.Join(r.Core, " ") != "cap req" || r.Model != nil {
				t.Fatalf("got %+v, want unsat with core [cap req]", r)
			}
			// The goal participates: entailment check of allow.
			r = check(t, p, Query{Commands: `
				(declare-const lev Real) (declare-const allow Bool)
				(assert (! (= allow (<= lev 2.0)) :named allow_def))
				(assert (! (= lev 1.5) :named bind_lev))`, Goal: "(not allow)"})
			if r.Status != Unsat || strings.Join(r.Core, " ") != "allow_def bind_lev" {
				t.Fatalf("got %+v, want unsat with core [allow_def bind_lev]", r)
			}
		})
	}
}

// Consecutive queries on one process must not see each other's
// declarations or assertions, and must not restart it.
func TestPushPopIsolation(t *testing.T) {
	for _, s := range solvers(t) {
		t.Run(string(s.Kind), func(t *testing.T) {
			p := newPool(t, s, 1)
			check(t, p, Query{Commands: "(declare-const x Int) (assert (= x 1))"})
			first := children(t)
			r := check(t, p, Query{Commands: "(declare-const x Int) (assert (= x 2))"})
			if r.Status != Sat || r.Model["x"] != "2" {
				t.Fatalf("redeclared x: %+v, want sat x=2 (previous query leaked)", r)
			}
			r = check(t, p, Query{Commands: "(declare-const y Int) (assert (! (> y 0) :named pos))"})
			if r.Status != Sat || len(r.Model) != 1 {
				t.Fatalf("got %+v, want sat with only y", r)
			}
			r = check(t, p, Query{Commands: "(declare-const x Int) (assert (= x 3))", Values: []string{"x"}})
			if r.Status != Sat || r.Model["x"] != "3" {
				t.Fatalf("got %+v, want x=3", r)
			}
			if len(first) != 1 || !slices.Equal(first, children(t)) {
				t.Fatalf("process changed between queries: %v then %v", first, children(t))
			}
		})
	}
}

// A process is replaced once it has read renewAfter bytes of queries,
// after it answers the last of them: the old one is reaped, its successor
// is running before the next query comes, and the answers are right on
// either side.
func TestRecycle(t *testing.T) {
	query := func(i int) Query {
		return Query{Commands: fmt.Sprintf("(declare-const x Int) (assert (! (> x %d) :named a))", i)}
	}
	pq, err := prepare(query(0))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range solvers(t) {
		t.Run(string(s.Kind), func(t *testing.T) {
			p := newPool(t, s, 1)
			if p.renewAfter != RenewAfter {
				t.Fatalf("a new pool replaces its processes after %d bytes, want RenewAfter (%d)", p.renewAfter, RenewAfter)
			}
			// Three queries' worth (each query below is as long as query(0)).
			p.renewAfter = 3 * len(pq.text)
			// next waits for the pool's one slot (a replacement in progress
			// holds it) and returns the process waiting there for the next
			// query.
			next := func() int {
				sl := <-p.slots
				defer func() { p.slots <- sl }()
				if sl.proc == nil {
					return 0
				}
				return sl.proc.cmd.Process.Pid
			}
			var procs []int
			for i := range 7 {
				r := check(t, p, query(i))
				if r.Status != Sat {
					t.Fatalf("query %d: %+v, want sat", i, r)
				}
				pid := next()
				if c := children(t); pid == 0 || !slices.Equal(c, []int{pid}) {
					t.Fatalf("after query %d: solver processes %v, want only the one waiting for the next query (%d)", i, c, pid)
				}
				procs = append(procs, pid)
			}
			// Queries 0–2 on the first process, 3–5 on a second, 6 on a
			// third: a new one waits after queries 2 and 5.
			want := []int{0, 0, 1, 1, 1, 2, 2}
			for i := 1; i < len(procs); i++ {
				if same := procs[i] == procs[i-1]; same != (want[i] == want[i-1]) {
					t.Fatalf("process waiting after each query %v, want a new one after queries 2 and 5", procs)
				}
			}
			// Closing while a replacement starts leaves no process behind.
			p.renewAfter = 1
			check(t, p, query(7))
			p.Close()
			if c := children(t); len(c) != 0 {
				t.Fatalf("after Close during a replacement: %v", c)
			}
		})
	}
}

// The slots of a pool renew at different points, so that under an even
// load they do not all start a successor at once.
func TestRenewStaggered(t *testing.T) {
	p := NewPool(Z3(), 4)
	defer p.Close()
	var limits []int
	for range 4 {
		s := <-p.slots
		defer func() { p.slots <- s }()
		limits = append(limits, p.limit(s))
	}
	slices.Sort(limits)
	if want := []int{RenewAfter, RenewAfter * 5 / 4, RenewAfter * 6 / 4, RenewAfter * 7 / 4}; !slices.Equal(limits, want) {
		t.Fatalf("renewal points %v, want %v", limits, want)
	}
}

func TestTimeout(t *testing.T) {
	hard := pigeonhole(13)
	for _, s := range solvers(t) {
		t.Run(string(s.Kind)+"/solver-side", func(t *testing.T) {
			p := newPool(t, s, 1)
			check(t, p, Query{Commands: "(declare-const x Int)"})
			before := children(t)
			start := time.Now()
			r, err := p.Check(context.Background(), Query{Commands: hard, Timeout: 200 * time.Millisecond})
			took := time.Since(start)
			if !errors.Is(err, ErrTimeout) {
				t.Fatalf("got %+v, %v; want ErrTimeout", r, err)
			}
			if took > 1700*time.Millisecond { // 200 ms + the 1.1 s kill grace + slack
				t.Fatalf("timeout took %s", took)
			}
			t.Logf("200 ms limit answered in %s: %v", took, err)
			r = check(t, p, Query{Commands: "(declare-const x Int) (assert (= x 5))"})
			if r.Status != Sat || r.Model["x"] != "5" {
				t.Fatalf("after timeout: %+v", r)
			}
			if !slices.Equal(before, children(t)) {
				t.Logf("process restarted after a solver-side timeout: %v → %v", before, children(t))
			}
		})
		t.Run(string(s.Kind)+"/killed", func(t *testing.T) {
			p := newPool(t, s, 1)
			check(t, p, Query{Commands: "(declare-const x Int)"})
			before := children(t)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := p.Check(ctx, Query{Commands: hard, Timeout: time.Minute})
			if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("got %v; want ErrTimeout wrapping DeadlineExceeded", err)
			}
			if took := time.Since(start); took > time.Second {
				t.Fatalf("kill took %s", took)
			}
			if after := children(t); len(after) != 0 {
				t.Fatalf("killed solver not reaped: %v (was %v)", after, before)
			}
			r := check(t, p, Query{Commands: "(declare-const x Int) (assert (= x 6))"})
			if r.Status != Sat || r.Model["x"] != "6" {
				t.Fatalf("after kill: %+v", r)
			}
			if after := children(t); len(after) != 1 || after[0] == before[0] {
				t.Fatalf("want one new process, got %v (was %v)", after, before)
			}
		})
	}
	t.Run("caller-cancel", func(t *testing.T) {
		p := newPool(t, Z3(), 1)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(200*time.Millisecond, cancel)
		_, err := p.Check(ctx, Query{Commands: hard, Timeout: time.Minute})
		if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
			t.Fatalf("got %v; want context.Canceled, not ErrTimeout", err)
		}
	})
}

// Killing the solver mid-query gives ErrSolver and the next query gets a
// fresh process.
func TestSolverCrash(t *testing.T) {
	hard := pigeonhole(13)
	for _, s := range solvers(t) {
		t.Run(string(s.Kind), func(t *testing.T) {
			p := newPool(t, s, 1)
			check(t, p, Query{Commands: "(declare-const x Int)"})
			pids := children(t)
			if len(pids) != 1 {
				t.Fatalf("want one solver process, got %v", pids)
			}
			time.AfterFunc(300*time.Millisecond, func() { _ = syscall.Kill(pids[0], syscall.SIGKILL) })
			start := time.Now()
			_, err := p.Check(context.Background(), Query{Commands: hard, Timeout: time.Minute})
			if !errors.Is(err, ErrSolver) || errors.Is(err, ErrTimeout) {
				t.Fatalf("got %v; want ErrSolver", err)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Fatalf("crash noticed after %s", took)
			}
			if c := children(t); len(c) != 0 {
				t.Fatalf("crashed solver not reaped: %v", c)
			}
			r := check(t, p, Query{Commands: "(declare-const x Int) (assert (= x 7))"})
			if r.Status != Sat || r.Model["x"] != "7" {
				t.Fatalf("after crash: %+v", r)
			}
		})
	}
}

// Fault injection with a real process that is not a solver: garbage,
// an endless answer, an early exit. Each is ErrSolver, promptly, no leak.
func TestGarbageAnswers(t *testing.T) {
	scripts := map[string]string{
		"garbage":  `read line; echo ')) nonsense'; cat >/dev/null`,
		"endless":  `head -c 3000000 /dev/zero | tr '\0' '('; cat >/dev/null`,
		"exits":    `exit 3`,
		"unquoted": `echo '"never closed'`,
	}
	for name, script := range scripts {
		t.Run(name, func(t *testing.T) {
			p := newPool(t, Solver{Kind: KindZ3, Command: "/bin/sh", Args: []string{"-c", script}}, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			_, err := p.Check(ctx, Query{Commands: "(declare-const x Int)"})
			if !errors.Is(err, ErrSolver) {
				t.Fatalf("got %v; want ErrSolver", err)
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Fatalf("took %s", took)
			}
		})
	}
}

// A solver that starts an answer and never finishes it is killed at the
// Go-side deadline.
func TestHalfAnswerHangs(t *testing.T) {
	p := newPool(t, Solver{Kind: KindZ3, Command: "/bin/sh", Args: []string{"-c", `echo '"never closed'; exec sleep 60`}}, 1)
	start := time.Now()
	_, err := p.Check(context.Background(), Query{Commands: "(declare-const x Int)", Timeout: 200 * time.Millisecond})
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("got %v; want ErrTimeout", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("took %s", took)
	}
}

func TestConcurrent(t *testing.T) {
	for _, s := range solvers(t) {
		t.Run(string(s.Kind), func(t *testing.T) {
			p := newPool(t, s, 2)
			var wg sync.WaitGroup
			errs := make(chan error, 8*10)
			for g := range 8 {
				wg.Go(func() {
					for i := range 10 {
						v := g*100 + i + 1 // ≥ 1: SMT-LIB has no negative literals
						q := Query{Commands: fmt.Sprintf("(declare-const x Int) (assert (! (= x %d) :named a)) (assert (! (> x %d) :named b))", v, v-1+(i%2)*2)}
						r, err := p.Check(context.Background(), q)
						switch {
						case err != nil:
							errs <- err
						case i%2 == 0 && (r.Status != Sat || r.Model["x"] != strconv.Itoa(v)):
							errs <- fmt.Errorf("query %d: %+v, want sat x=%d", v, r, v)
						case i%2 == 1 && (r.Status != Unsat || strings.Join(r.Core, " ") != "a b"):
							errs <- fmt.Errorf("query %d: %+v, want unsat [a b]", v, r)
						}
						if n := len(children(t)); n > 2 {
							errs <- fmt.Errorf("%d solver processes for a pool of 2", n)
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

// The same queries through z3 and cvc5 give the same verdicts and cores.
func TestSolversAgree(t *testing.T) {
	queries := []struct {
		cmds, goal string
		status     Status
		core       string
	}{
		{"(declare-const lev Real) (assert (! (<= lev 2.0) :named cap)) (assert (! (= lev 3.0) :named req))", "", Unsat, "cap req"},
		{"(declare-const lev Real) (assert (! (<= lev 2.0) :named cap)) (assert (! (= lev 1.5) :named req))", "", Sat, ""},
		{"(declare-const w Int) (declare-const rw Int) (assert (! (>= rw (* 2 w)) :named lookback)) (assert (! (= w 20) :named bw)) (assert (! (= rw 30) :named brw))", "", Unsat, "brw bw lookback"},
		{"(declare-const d String) (define-fun allow () Bool (not (= d \"vendor_x\"))) (assert (! (= d \"vendor_x\") :named bd))", "(not allow)", Sat, ""},
		{"(declare-const d String) (declare-const allow Bool) (assert (! (= allow (not (= d \"vendor_x\"))) :named lic)) (assert (! (= d \"ours\") :named bd))", "(not allow)", Unsat, "bd lic"},
		{"(declare-const g Int) (assert (! (or (= g 10) (= g 50) (= g 200)) :named grid)) (assert (! (> g 100) :named over))", "", Sat, ""},
		{"(declare-const a Bool) (declare-const b Bool) (assert (! (and a b) :named ab)) (assert (! (not (or a b)) :named nab))", "", Unsat, "ab nab"},
		{"(define-sort Day () Int) (declare-const t Day) (assert (! (< t 20240101) :named embargo)) (assert (! (= t 20250301) :named bt))", "", Unsat, "bt embargo"},
		{"(declare-fun f (Int) Int) (assert (! (= (f 1) 2) :named f1)) (assert (! (= (f 1) 3) :named f2))", "", Unsat, "f1 f2"},
	}
	all := solvers(t)
	pools := []*Pool{NewPool(all[0], 1), NewPool(all[1], 1)}
	t.Cleanup(func() {
		pools[0].Close()
		pools[1].Close()
		if c := children(t); len(c) != 0 {
			t.Errorf("solver processes left after Close: %v", c)
		}
	})
	for i, q := range queries {
		var got []string
		for j, p := range pools {
			r := check(t, p, Query{Commands: q.cmds, Goal: q.goal})
			if r.Status != q.status || strings.Join(r.Core, " ") != q.core {
				t.Errorf("query %d on %s: %s %v, want %s [%s]", i, all[j].Kind, r.Status, r.Core, q.status, q.core)
			}
			got = append(got, fmt.Sprint(r.Status, r.Core))
		}
		if got[0] != got[1] {
			t.Errorf("query %d: z3 %s, cvc5 %s", i, got[0], got[1])
		}
	}
}

// A refused query never reaches a solver: no process is even started.
// A query the solver itself rejects is ErrBadQuery, and the pool recovers.
func TestBadQuery(t *testing.T) {
	for _, s := range solvers(t) {
		t.Run(string(s.Kind), func(t *testing.T) {
			p := newPool(t, s, 1)
			for _, cmds := range []string{"(push 1)", "(declare-const x Int) (exit)", "(assert (> x 1)", "(set-option :timeout 0)", "(get-model)"} {
				if _, err := p.Check(context.Background(), Query{Commands: cmds}); !errors.Is(err, ErrBadQuery) {
					t.Fatalf("%q: %v, want ErrBadQuery", cmds, err)
				}
			}
			if c := children(t); len(c) != 0 {
				t.Fatalf("a refused query started a solver: %v", c)
			}
			for _, cmds := range []string{"(assert (> undeclared 1))", "(declare-const x Int) (assert (and x true))"} {
				_, err := p.Check(context.Background(), Query{Commands: cmds})
				if !errors.Is(err, ErrBadQuery) || !strings.Contains(err.Error(), "solver rejected") {
					t.Fatalf("%q: %v, want ErrBadQuery from the solver", cmds, err)
				}
				r := check(t, p, Query{Commands: "(declare-const x Int) (assert (= x 8))"})
				if r.Status != Sat || r.Model["x"] != "8" {
					t.Fatalf("after a rejected query: %+v", r)
				}
			}
		})
	}
}

func TestNotInstalled(t *testing.T) {
	for _, cmd := range []string{"gg-no-such-solver", "/nonexistent/z3"} {
		s := Solver{Kind: KindZ3, Command: cmd, Package: "z3"}
		err := s.Available()
		if !errors.Is(err, ErrNotInstalled) || !errors.Is(err, exec.ErrNotFound) || !strings.Contains(err.Error(), "apt-get install z3") {
			t.Fatalf("Available: %v", err)
		}
		p := newPool(t, s, 1)
		_, err = p.Check(context.Background(), Query{Commands: "(declare-const x Int)"})
		if !errors.Is(err, ErrNotInstalled) || !errors.Is(err, exec.ErrNotFound) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("Check: %v", err)
		}
	}
}

func TestClosed(t *testing.T) {
	p := newPool(t, Z3(), 2)
	check(t, p, Query{Commands: "(declare-const x Int)"})
	p.Close()
	if c := children(t); len(c) != 0 {
		t.Fatalf("after Close: %v", c)
	}
	if _, err := p.Check(context.Background(), Query{Commands: "(declare-const x Int)"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v, want ErrClosed", err)
	}
}

// BenchmarkCheck: a policy-sized entailment check on a warm pool versus a
// fresh solver process per check, with p50/p99 latencies.
func BenchmarkCheck(b *testing.B) {
	q := Query{Commands: `
		(declare-const lev Real) (declare-const grid Int) (declare-const allow Bool)
		(assert (! (= allow (and (<= lev 2.0) (<= grid 500))) :named allow_def))
		(assert (! (= lev 1.5) :named bind_lev)) (assert (! (= grid 120) :named bind_grid))`,
		Goal: "(not allow)"}
	for _, s := range solvers(b) {
		run := func(b *testing.B, check func() error) {
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				if err := check(); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		}
		b.Run(string(s.Kind)+"/warm", func(b *testing.B) {
			p := NewPool(s, 2)
			defer p.Close()
			if _, err := p.Check(b.Context(), q); err != nil {
				b.Fatal(err)
			}
			run(b, func() error {
				r, err := p.Check(b.Context(), q)
				if err == nil && r.Status != Unsat {
					err = fmt.Errorf("got %s", r.Status)
				}
				return err
			})
		})
		// An admission: unsat without names, so nothing is read after the
		// verdict and the pop rides the next query (one exchange).
		admit := Query{Commands: "(declare-const lev Real) (declare-const allow Bool) (assert (= allow (<= lev 2.0))) (assert (= lev 1.5))", Goal: "(not allow)"}
		b.Run(string(s.Kind)+"/warm-admit", func(b *testing.B) {
			p := NewPool(s, 2)
			defer p.Close()
			p.Warm()
			run(b, func() error {
				r, err := p.Check(b.Context(), admit)
				if err == nil && r.Status != Unsat {
					err = fmt.Errorf("got %s", r.Status)
				}
				return err
			})
		})
		b.Run(string(s.Kind)+"/fresh", func(b *testing.B) {
			run(b, func() error {
				p := NewPool(s, 1)
				defer p.Close()
				_, err := p.Check(b.Context(), q)
				return err
			})
		})
	}
}

// TestShrink: deletion in order in one session keeps what as many Checks
// keep — the last of two independent violations, both of two that only
// conflict together, none of the satisfiable ones — and the process stays
// usable (the session is popped); a query may not use the reserved prefix.
func TestShrink(t *testing.T) {
	for _, s := range solvers(t) {
		t.Run(string(s.Kind), func(t *testing.T) {
			p := newPool(t, s, 1)
			base := Query{Commands: "(declare-const x Int) (declare-const y Int) (declare-const allow Bool) (assert (= x 5)) (assert (= y 7))", Goal: "allow"}
			parts := []Part{
				{"x_small", "(=> allow (< x 3))"}, // broken
				{"y_odd", "(=> allow (= (mod y 2) 1))"},
				{"y_small", "(=> allow (< y 3))"}, // broken
				{"x_le_y", "(=> allow (<= x y))"},
			}
			for _, tc := range []struct {
				parts []Part
				want  string
			}{
				{parts, "y_small"}, // deletion in order drops x_small: y_small alone still refuses
				{parts[:2], "x_small"},
				{[]Part{{"a", "(=> allow (> x 6))"}, {"b", "(=> allow (< x 6))"}}, "a"},
				{[]Part{{"lo", "(> y 8)"}, {"hi", "(< y 6)"}}, "hi"}, // each alone contradicts y = 7: the last kept
			} {
				got, err := p.Shrink(context.Background(), base, tc.parts)
				if err != nil || strings.Join(got, " ") != tc.want {
					t.Errorf("Shrink(%v) = %v, %v; want %s", tc.parts, got, err, tc.want)
				}
				// The same by one Check per step, as the checker did before.
				if names := deleteByChecks(t, p, base, tc.parts); strings.Join(names, " ") != tc.want {
					t.Errorf("by Checks: %v, want %s", names, tc.want)
				}
			}
			// The process answers the next query as if no session had been.
			if r := check(t, p, Query{Commands: "(declare-const x Int) (assert (> x 1))"}); r.Status != Sat {
				t.Fatalf("after Shrink: %+v", r)
			}
			if _, err := p.Shrink(context.Background(), Query{Commands: "(declare-const |gg shrink 0| Bool)"}, nil); !errors.Is(err, ErrBadQuery) {
				t.Errorf("the reserved prefix: %v", err)
			}
		})
	}
}

// A check with nothing to read after its verdict (unsat, no names) leaves
// its pop to ride the next query on the same process, which answers as if
// it had been popped at once; a process whose deferred pop answers
// something it should not is replaced before the next query, which does
// not fail for it.
func TestPopRidesNextQuery(t *testing.T) {
	for _, s := range solvers(t) {
		t.Run(string(s.Kind), func(t *testing.T) {
			p := newPool(t, s, 1)
			if r := check(t, p, Query{Commands: "(declare-const x Int) (assert (= x 1))", Goal: "(> x 2)"}); r.Status != Unsat || r.Core == nil {
				t.Fatalf("got %+v; want unsat with an empty core", r)
			}
			slotProc := func() *proc {
				sl := <-p.slots
				defer func() { p.slots <- sl }()
				return sl.proc
			}
			pr := slotProc()
			if pr == nil || !pr.pending {
				t.Fatalf("after an unsat check without names the pop is not pending: %+v", pr)
			}
			// Nothing of the popped query is left: x is declared afresh.
			r := check(t, p, Query{Commands: "(declare-const x Int) (assert (= x 9))"})
			if r.Status != Sat || r.Model["x"] != "9" {
				t.Fatalf("the query after a deferred pop: %+v", r)
			}
			if slotProc() != pr {
				t.Fatal("the process was replaced after a deferred pop that answered nothing")
			}
			// A deferred command that answers: the process is replaced and
			// the next query still answers.
			sl := <-p.slots
			if err := sl.proc.send(`(echo "unexpected")` + "\n"); err != nil {
				t.Fatal(err)
			}
			p.slots <- sl
			r = check(t, p, Query{Commands: "(declare-const y Int) (assert (= y 4))"})
			if r.Status != Sat || r.Model["y"] != "4" {
				t.Fatalf("after a deferred pop that answered: %+v", r)
			}
			if now := slotProc(); now == pr || now == nil {
				t.Fatal("a process whose deferred pop answered was reused")
			}
		})
	}
}

// Core answers what a Check of the query with every part asserted and
// then a Shrink answer, in one session: unsat with Shrink's names, or sat
// with none; the process stays usable.
func TestCore(t *testing.T) {
	base := Query{Commands: "(declare-const x Int) (declare-const y Int) (declare-const allow Bool) (assert (= x 5)) (assert (= y 7))", Goal: "allow"}
	for _, s := range solvers(t) {
		t.Run(string(s.Kind), func(t *testing.T) {
			p := newPool(t, s, 1)
			for _, tc := range []struct {
				parts  []Part
				status Status
			}{
				{[]Part{{"x_small", "(=> allow (< x 3))"}, {"y_odd", "(=> allow (= (mod y 2) 1))"}, {"y_small", "(=> allow (< y 3))"}}, Unsat},
				{[]Part{{"a", "(=> allow (> x 6))"}, {"b", "(=> allow (< x 6))"}}, Unsat},
				{[]Part{{"y_odd", "(=> allow (= (mod y 2) 1))"}, {"x_le_y", "(=> allow (<= x y))"}}, Sat},
				{nil, Sat},
			} {
				whole := base.Commands
				for _, pt := range tc.parts {
					whole += "(assert " + pt.Term + ")"
				}
				if r := check(t, p, Query{Commands: whole, Goal: base.Goal}); r.Status != tc.status {
					t.Fatalf("Check(%v) = %s; the case wants %s", tc.parts, r.Status, tc.status)
				}
				status, got, err := p.Core(context.Background(), base, tc.parts)
				if err != nil || status != tc.status {
					t.Fatalf("Core(%v) = %s, %v, %v; want %s", tc.parts, status, got, err, tc.status)
				}
				if status == Sat {
					if got != nil {
						t.Errorf("Core(%v) = sat with names %v", tc.parts, got)
					}
					continue
				}
				want, err := p.Shrink(context.Background(), base, tc.parts)
				if err != nil || !slices.Equal(got, want) {
					t.Errorf("Core(%v) kept %v; Shrink keeps %v (%v)", tc.parts, got, want, err)
				}
			}
			if r := check(t, p, Query{Commands: "(declare-const x Int) (assert (> x 1))"}); r.Status != Sat {
				t.Fatalf("after Core: %+v", r)
			}
		})
	}
}

// Warm starts a warmed process in every idle slot; a process started on
// a query's path (a cold pool) warms the other slots meanwhile.
func TestWarm(t *testing.T) {
	p := newPool(t, Z3(), 2)
	p.Warm()
	if c := children(t); len(c) != 2 {
		t.Fatalf("after Warm: solver processes %v, want 2", c)
	}
	before := children(t)
	check(t, p, Query{Commands: "(declare-const x Int) (assert (> x 1))"})
	if c := children(t); !slices.Equal(c, before) {
		t.Fatalf("a query on a warm pool started processes: %v, was %v", c, before)
	}
	p.Close()

	cold := newPool(t, Z3(), 2)
	check(t, cold, Query{Commands: "(declare-const x Int) (assert (> x 1))"})
	deadline := time.Now().Add(10 * time.Second)
	for len(children(t)) != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the first query on a cold pool did not warm its other slot: %v", children(t))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// BenchmarkExplain: a refusal's explanation as a Check with the rules
// named followed by a Shrink of its core, against Core (one session),
// alternated in one loop so that both see the same machine; p50 and p99
// of each in µs.
func BenchmarkExplain(b *testing.B) {
	base := Query{Commands: "(declare-const x Int) (declare-const y Int) (declare-const allow Bool) (assert (= x 5)) (assert (= y 7))", Goal: "allow"}
	parts := []Part{{"x_small", "(=> allow (< x 3))"}, {"y_odd", "(=> allow (= (mod y 2) 1))"}, {"y_small", "(=> allow (< y 3))"}, {"x_le_y", "(=> allow (<= x y))"}}
	named := base
	for _, pt := range parts {
		named.Commands += fmt.Sprintf("(assert (! %s :named %s))", pt.Term, pt.Name)
	}
	for _, s := range solvers(b) {
		b.Run(string(s.Kind), func(b *testing.B) {
			p := NewPool(s, 1)
			defer p.Close()
			p.Warm()
			var two, one []time.Duration
			for b.Loop() {
				start := time.Now()
				if r, err := p.Check(b.Context(), named); err != nil || r.Status != Unsat {
					b.Fatal(r, err)
				}
				if _, err := p.Shrink(b.Context(), base, parts); err != nil {
					b.Fatal(err)
				}
				two = append(two, time.Since(start))
				start = time.Now()
				if st, _, err := p.Core(b.Context(), base, parts); err != nil || st != Unsat {
					b.Fatal(st, err)
				}
				one = append(one, time.Since(start))
			}
			for _, m := range []struct {
				name string
				lat  []time.Duration
			}{{"check+shrink", two}, {"core", one}} {
				slices.Sort(m.lat)
				b.ReportMetric(float64(m.lat[len(m.lat)/2].Microseconds()), m.name+"-p50-µs")
				b.ReportMetric(float64(m.lat[len(m.lat)*99/100].Microseconds()), m.name+"-p99-µs")
			}
		})
	}
}

// deleteByChecks is deletion in order over parts by one Check per step:
// what Shrink answers in one session.
func deleteByChecks(t *testing.T, p *Pool, base Query, parts []Part) []string {
	t.Helper()
	keep := slices.Clone(parts)
	for j := 0; j < len(keep); {
		var b strings.Builder
		b.WriteString(base.Commands)
		for k, pt := range keep {
			if k != j {
				b.WriteString("(assert " + pt.Term + ")")
			}
		}
		if check(t, p, Query{Commands: b.String(), Goal: base.Goal}).Status == Unsat {
			keep = append(keep[:j], keep[j+1:]...)
		} else {
			j++
		}
	}
	names := []string{}
	for _, pt := range keep {
		names = append(names, pt.Name)
	}
	return names
}

// TestShrinkExchanges: Shrink and Core decide up to speculateDepth steps
// of the deletion per exchange with the solver, and keep what deletion by
// one Check per step keeps, on random sets of parts (some refusing, some
// not, some needed only together).
func TestShrinkExchanges(t *testing.T) {
	base := Query{Commands: "(declare-const x Int) (declare-const y Int) (declare-const allow Bool) (assert (= x 5)) (assert (= y 7))", Goal: "allow"}
	terms := []string{"(=> allow (< x 3))", "(=> allow (> x 6))", "(=> allow (< y 3))", "(=> allow (= (mod y 2) 1))",
		"(=> allow (<= x y))", "(=> allow (> (+ x y) 20))", "(> y 8)", "(< y 6)", "(=> allow (> x 4))", "(or (not allow) (< x 0) (> y 100))"}
	rng := rand.New(rand.NewPCG(28, 3))
	for _, s := range solvers(t) {
		t.Run(string(s.Kind), func(t *testing.T) {
			p := newPool(t, s, 1)
			check(t, p, base) // the process started: its start's exchanges are not counted
			for c := range 40 {
				var parts []Part
				for i := range rng.IntN(9) {
					parts = append(parts, Part{Name: fmt.Sprintf("p%d", i), Term: terms[rng.IntN(len(terms))]})
				}
				want := deleteByChecks(t, p, base, parts)
				before := p.exchanges(t)
				got, err := p.Shrink(context.Background(), base, parts)
				if err != nil || strings.Join(got, " ") != strings.Join(want, " ") {
					t.Fatalf("case %d: Shrink(%v) = %v, %v; by Checks %v", c, parts, got, err, want)
				}
				n := len(parts)
				if used, most := p.exchanges(t)-before, 1+(n+speculateDepth-1)/speculateDepth; used > most {
					t.Errorf("case %d: Shrink of %d parts took %d exchanges, want at most %d", c, n, used, most)
				}
				whole := base.Commands
				for _, pt := range parts {
					whole += "(assert " + pt.Term + ")"
				}
				r := check(t, p, Query{Commands: whole, Goal: base.Goal})
				before = p.exchanges(t)
				status, core, err := p.Core(context.Background(), base, parts)
				if err != nil {
					t.Fatalf("case %d: Core: %v", c, err)
				}
				// The query, the first check and speculateDepth steps in one
				// exchange; the rest speculateDepth steps at a time.
				rest := max(n-speculateDepth, 0)
				if used, most := p.exchanges(t)-before, 1+(rest+speculateDepth-1)/speculateDepth; used > most {
					t.Errorf("case %d: Core of %d parts took %d exchanges, want at most %d", c, n, used, most)
				}
				if r.Status != status {
					t.Fatalf("case %d: Core = %s, Check = %s", c, status, r.Status)
				}
				if status == Unsat && strings.Join(core, " ") != strings.Join(want, " ") {
					t.Fatalf("case %d: Core(%v) = %v; by Checks %v", c, parts, core, want)
				}
			}
		})
	}
}

// exchanges counts the one process's exchanges so far (a renewed process
// counts from 0 again).
func (p *Pool) exchanges(t *testing.T) int {
	t.Helper()
	s := <-p.slots
	defer func() { p.slots <- s }()
	if s.proc == nil {
		return 0
	}
	return s.proc.exchanges
}
