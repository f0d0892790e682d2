package smt

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// syncMark is echoed after each batch of commands: everything the solver
// prints before it belongs to that batch (z3 echoes it bare, cvc5 quoted).
const syncMark = "gg-smt-sync"

// Pool runs queries on a fixed number of long-lived solver processes. Each
// process serves one query at a time; processes start on first use and are
// replaced after a timeout kill, a crash or an unreadable answer, and once
// they have read RenewAfter bytes of queries.
type Pool struct {
	solver     Solver
	size       int
	renewAfter int        // query bytes slot 0's processes read before replacement
	slots      chan *slot // idle slots; a slot's proc is nil until started
	done       chan struct{}
	once       sync.Once
}

// RenewAfter is how many bytes of query text one solver process reads
// before the pool replaces it with a fresh one. z3 4.8 and cvc5 1.0 slow
// down as a process answers more push/pop queries, though pop leaves
// nothing asserted: over the policy corpus (5,450 queries, 8.9 MB) z3
// spends 300 s of CPU in one process, its memory past 250 MB, and 16 s in
// processes replaced every 256 KiB; cvc5 84 s and 35 s. Bytes, not
// queries, measure what a process has been made to build: a step of a
// minimal core (a few hundred bytes) brings the replacement nearer by as
// little as it adds, a grid query (several KB) by more. A new process costs
// about 20 ms of CPU (z3); it is started once the old one has answered its
// last query, not while the next query waits.
const RenewAfter = 256 << 10

// slot holds one process. Slot k replaces its processes after
// renewAfter·(1 + k/size) bytes, so that under an even load the slots do
// not all start a successor at once while a query waits.
type slot struct {
	index int
	proc  *proc
}

func (p *Pool) limit(s *slot) int { return p.renewAfter + s.index*p.renewAfter/p.size }

// NewPool makes a pool of size processes (size ≤ 0 means 2) of solver s.
// No process starts until the first Check. Close it to stop them.
func NewPool(s Solver, size int) *Pool {
	if size <= 0 {
		size = 2
	}
	p := &Pool{solver: s, size: size, renewAfter: RenewAfter, slots: make(chan *slot, size), done: make(chan struct{})}
	for k := range size {
		p.slots <- &slot{index: k}
	}
	return p
}

// Close stops every process, waiting for queries in flight (each bounded by
// its timeout). Checks after Close return ErrClosed.
func (p *Pool) Close() error {
	p.once.Do(func() {
		close(p.done)
		for range p.size {
			s := <-p.slots
			if s.proc != nil {
				s.proc.stop()
				s.proc = nil
			}
		}
	})
	return nil
}

// Check runs q on an idle process: (push 1), the query, (check-sat), then
// the unsat core or the constants' values, then (pop 1). The query text is
// checked first (ErrBadQuery) and never reaches a solver if refused. The
// process is killed if ctx ends or q's timeout passes well beyond the
// solver-side limit; then the error is ErrTimeout (deadline) or ctx's error.
func (p *Pool) Check(ctx context.Context, q Query) (Result, error) {
	pq, err := prepare(q)
	if err != nil {
		return Result{}, err
	}
	timeout := q.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	var res Result
	err = p.with(ctx, timeout, len(pq.text), func(qctx context.Context, pr *proc) error {
		var err error
		res, err = pr.check(qctx, p.solver, pq, timeout)
		return err
	})
	return res, err
}

// with runs f on a slot's process (started when the slot has none),
// bounded by timeout and its grace, and renews the process as Check
// does: after a failure that leaves it unusable, or once it has read its
// share of query bytes (n more now).
func (p *Pool) with(ctx context.Context, timeout time.Duration, n int, f func(context.Context, *proc) error) error {
	var s *slot
	select {
	case <-p.done:
		return ErrClosed
	case <-ctx.Done():
		return ctxErr(ctx)
	case s = <-p.slots:
	}
	release := func() { p.slots <- s }
	defer func() { release() }()
	select {
	case <-p.done:
		return ErrClosed
	default:
	}
	// The solver stops itself at timeout; the Go-side deadline is the backstop
	// for a solver that ignores its limit (z3 may take a few hundred ms to
	// notice), so it allows a grace period before killing.
	qctx, cancel := context.WithTimeout(ctx, timeout+timeout/2+time.Second)
	defer cancel()
	if s.proc != nil && (s.proc.dead() || s.proc.drain(qctx) != nil) {
		// Gone, or its last query's pop did not answer as it should: the
		// query runs on a fresh process instead.
		s.proc.stop()
		s.proc = nil
	}
	if s.proc == nil {
		pr, err := startProc(qctx, p.solver)
		if err != nil {
			return err
		}
		s.proc = pr
		// A process started on a query's path is a cold pool: start the
		// others now, so the next queries do not each pay a cold start.
		go p.Warm()
	}
	s.proc.read += n
	err := f(qctx, s.proc)
	switch {
	case s.proc.broken:
		s.proc.stop()
		s.proc = nil
	case s.proc.read >= p.limit(s):
		// Replaced after answering, off this caller's path: the slot comes
		// back once the fresh process is up.
		old := s.proc
		s.proc = nil
		release = func() { go p.renew(s, old) }
	}
	return err
}

// Part is an assertion Shrink may leave out, by its name.
type Part struct {
	Name string
	Term string // one term
}

// Shrink is deletion in order over parts, in one solver session: with
// q's commands and goal asserted, it starts from every part and drops
// each in turn when what remains is still unsat, and returns the names
// kept. It answers what as many Checks (one per part, each asserting the
// parts still kept) would, at the cost of one query and a short
// check-sat-assuming per part. A part or a step the solver cannot decide
// is ErrTimeout, or the solver's error.
func (p *Pool) Shrink(ctx context.Context, q Query, parts []Part) ([]string, error) {
	_, kept, err := p.shrink(ctx, q, parts, false)
	return kept, err
}

// Core asks whether q's commands and goal with every part asserted are
// unsat and, when they are, shrinks as Shrink does, all in one solver
// session: Unsat with the names kept, or Sat (no names). It answers
// what a Check of q with the parts asserted followed by a Shrink would,
// without sending the query twice. A solver that answers unknown at the
// first step is Unknown, or ErrTimeout when it gave up for time, as
// Check words it.
func (p *Pool) Core(ctx context.Context, q Query, parts []Part) (Status, []string, error) {
	return p.shrink(ctx, q, parts, true)
}

// shrink is Shrink, and Core when first is set: the whole set is
// checked before any part is dropped.
func (p *Pool) shrink(ctx context.Context, q Query, parts []Part, first bool) (Status, []string, error) {
	pq, err := prepare(q)
	if err != nil {
		return "", nil, err
	}
	if strings.Contains(pq.text, shrinkPrefix) {
		return "", nil, fmt.Errorf("%w: the query uses the reserved symbol prefix %q", ErrBadQuery, shrinkPrefix)
	}
	var b strings.Builder
	b.WriteString(pq.text)
	for i, part := range parts {
		t, err := Parse(part.Term)
		if err != nil || len(t) != 1 {
			return "", nil, fmt.Errorf("%w: part %s is not one term", ErrBadQuery, part.Name)
		}
		fmt.Fprintf(&b, "(declare-const %s%d| Bool)\n(assert (=> %s%d| %s))\n", shrinkPrefix, i, shrinkPrefix, i, t[0].String())
	}
	timeout := q.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	keep := make([]int, len(parts))
	for i := range parts {
		keep[i] = i
	}
	status := Unsat
	err = p.with(ctx, timeout, b.Len(), func(qctx context.Context, pr *proc) error {
		// The query, the first check and the first steps of the deletion
		// go in one write: each exchange is two wake-ups (the solver's,
		// then ours), which on a busy machine cost more than the checks.
		cmds := p.solver.timeoutOption(timeout) + "(push 1)\n" + b.String()
		if first {
			cmds += assumingCmd(keep, -1)
		}
		steps := speculate(keep, 0)
		resps, err := pr.roundtrip(qctx, cmds+steps.commands())
		if err != nil {
			return err
		}
		if bad := slices.IndexFunc(resps, func(r Sexp) bool { return r.IsList }); bad >= 0 {
			pr.broken = true // as Check: an error leaves the solver's state its own
			return fmt.Errorf("%w: solver rejected it: %s", ErrBadQuery, oneLine(resps[bad].String()))
		}
		if first {
			if len(resps) == 0 {
				return pr.garbage("check-sat-assuming", resps)
			}
			switch status, err = pr.firstStatus(qctx, resps[0], timeout); {
			case err != nil:
				return err
			case status == Sat:
				return pr.send("(pop 1)\n")
			case status != Unsat:
				return nil // unknown: the process is not reused
			}
			resps = resps[1:]
		}
		for len(steps.nodes) > 0 {
			j := 0
			if keep, j, err = steps.follow(pr, resps); err != nil {
				return err
			}
			if steps = speculate(keep, j); len(steps.nodes) == 0 {
				break
			}
			if resps, err = pr.roundtrip(qctx, steps.commands()); err != nil {
				return err
			}
		}
		return pr.send("(pop 1)\n") // read by the next query's drain
	})
	if err != nil {
		return "", nil, err
	}
	if status != Unsat {
		return status, nil, nil
	}
	out := make([]string, len(keep))
	for k, i := range keep {
		out[k] = parts[i].Name
	}
	return Unsat, out, nil
}

// assumingCmd checks the session's assertions with the indicators of the
// parts in keep, but the one at index skip (-1: none), assumed true.
func assumingCmd(keep []int, skip int) string {
	var lits strings.Builder
	for k, i := range keep {
		if k != skip {
			fmt.Fprintf(&lits, " %s%d|", shrinkPrefix, i)
		}
	}
	if lits.Len() == 0 {
		return "(check-sat)\n" // cvc5 refuses an empty assumption list
	}
	return "(check-sat-assuming (" + lits.String() + "))\n"
}

// firstStatus reads the answer to the first check (every part assumed).
// An unknown answer is worded as Check words it: ErrTimeout when the
// solver gave up for time.
func (pr *proc) firstStatus(ctx context.Context, resp Sexp, timeout time.Duration) (Status, error) {
	switch st := Status(resp.Atom); st {
	case Sat, Unsat:
		return st, nil
	case Unknown:
		pr.broken = true // a solver that gave up mid-session is not reused
		resps, err := pr.roundtrip(ctx, "(get-info :reason-unknown)\n")
		if err != nil {
			return "", err
		}
		if len(resps) != 1 || resps[0].head() != ":reason-unknown" || len(resps[0].List) != 2 {
			return "", pr.garbage("get-info", resps)
		}
		if err := unknownReason(resps[0].List[1].String(), timeout); err != nil {
			return "", err
		}
		return Unknown, nil
	}
	return "", pr.garbage("check-sat-assuming", []Sexp{resp})
}

// speculateDepth is how many steps of the deletion one exchange decides:
// the checks of every way the next steps can go (2^depth - 1 of them,
// each a few microseconds of the solver's) are sent at once, and the
// answers followed along the way the deletion goes. Every check's answer
// is the formula's, whichever others the solver answered before it, so
// the parts kept are those of one exchange per step.
const speculateDepth = 3

// stepTree is the deletion's next steps, each way they can go: node n is
// the check of keep without keep[j] (its state), its children the state
// after an unsat answer (keep[j] dropped) and after a sat one (kept).
type stepTree struct {
	nodes []stepNode
}

type stepNode struct {
	keep       []int
	j          int
	unsat, sat int // the children's indexes; -1: the state is past the tree
}

// speculate is the tree of the deletion's next speculateDepth steps from
// keep and step j.
func speculate(keep []int, j int) stepTree {
	var t stepTree
	var add func(keep []int, j, depth int) int
	add = func(keep []int, j, depth int) int {
		if depth == 0 || j >= len(keep) {
			return -1
		}
		n := len(t.nodes)
		t.nodes = append(t.nodes, stepNode{keep: keep, j: j})
		dropped := append(slices.Clone(keep[:j]), keep[j+1:]...)
		u := add(dropped, j, depth-1)
		s := add(keep, j+1, depth-1)
		t.nodes[n].unsat, t.nodes[n].sat = u, s
		return n
	}
	add(keep, j, speculateDepth)
	return t
}

// commands are the tree's checks, in node order.
func (t stepTree) commands() string {
	var b strings.Builder
	for _, n := range t.nodes {
		b.WriteString(assumingCmd(n.keep, n.j))
	}
	return b.String()
}

// follow walks the tree by the solver's answers (one per node, in node
// order) and returns the state it reaches. An answer other than sat or
// unsat on the way is ErrTimeout; one off the way is not read.
func (t stepTree) follow(pr *proc, resps []Sexp) ([]int, int, error) {
	if len(resps) != len(t.nodes) {
		return nil, 0, pr.garbage("check-sat-assuming", resps)
	}
	for _, r := range resps {
		if r.IsList {
			return nil, 0, pr.garbage("check-sat-assuming", resps)
		}
	}
	n := 0
	for {
		node := t.nodes[n]
		next := -1
		keep, j := node.keep, node.j
		switch Status(resps[n].Atom) {
		case Unsat:
			keep = append(slices.Clone(keep[:j]), keep[j+1:]...) // not needed
			next = node.unsat
		case Sat:
			j++ // needed
			next = node.sat
		case Unknown:
			pr.broken = true // a solver that gave up mid-session is not reused
			return nil, 0, fmt.Errorf("%w: the solver could not decide a step of the shrink", ErrTimeout)
		default:
			return nil, 0, pr.garbage("check-sat-assuming", resps)
		}
		if next < 0 {
			return keep, j, nil
		}
		n = next
	}
}

// shrinkPrefix starts the indicator symbols Shrink declares (quoted
// symbols: "|gg shrink N|"); a query may not use it.
const shrinkPrefix = "|gg shrink "

// renew stops a process that has read its share of queries, starts its
// successor in slot s (unless the pool is closing) and gives the slot
// back. A successor that fails to start leaves the slot empty: the next
// query starts one and reports why.
func (p *Pool) renew(s *slot, old *proc) {
	defer func() { p.slots <- s }()
	old.stop()
	select {
	case <-p.done:
		return
	default:
	}
	s.proc = p.warmProc()
}

// warmProc starts a process and has it answer warmUp, or returns nil. A
// new process answers its first query tens of times slower than the next
// ones (z3 4.8: 45–90 ms, then under 1 ms: the solver's own start-up);
// this pays that off every caller's path.
func (p *Pool) warmProc() *proc {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultTimeout)
	defer cancel()
	pr, err := startProc(ctx, p.solver)
	if err != nil {
		return nil
	}
	if _, err := pr.check(ctx, p.solver, warmUp, DefaultTimeout); err != nil || pr.broken {
		pr.stop()
		return nil
	}
	return pr
}

// Warm starts, in the calling goroutine, a warmed process in every idle
// slot that has none, so that the first queries find their solvers
// ready. A slot busy with a query is left alone, and so is one whose
// process fails to start (the next query there starts one and reports
// why). Checks may run meanwhile: a slot being warmed is busy.
func (p *Pool) Warm() {
	for range p.size {
		var s *slot
		select {
		case <-p.done:
			return
		case s = <-p.slots:
		default:
			return // every other slot is busy, and so warm or warming
		}
		if s.proc != nil {
			p.slots <- s
			// Each idle slot is looked at once: a warm one goes back to the
			// end of the queue, so the loop ends after size turns.
			continue
		}
		select {
		case <-p.done:
		default:
			s.proc = p.warmProc()
		}
		p.slots <- s
	}
}

// warmUp is the query a renewed process answers before it serves.
var warmUp = prepared{text: "(declare-const warm Int)\n(assert (> warm 0))\n"}

// ctxErr words a finished context: a deadline is a timeout.
func ctxErr(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", ErrTimeout, ctx.Err())
	}
	return fmt.Errorf("smt: %w", ctx.Err())
}

// proc is one running solver process.
type proc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Reader
	stderr *tail
	read   int           // bytes of queries sent to it
	broken bool          // killed or in an unknown state: must not be reused
	exited chan struct{} // closed once the process has exited and been reaped
	// pending: commands were sent whose answers (none expected) and sync
	// mark are not read yet; drain reads them before the next query.
	pending bool
	// exchanges counts the waits for an answer: what a query costs on a
	// busy machine (TestShrinkExchanges).
	exchanges int
}

func startProc(ctx context.Context, s Solver) (*proc, error) {
	// Not CommandContext: the process outlives this query's context.
	cmd := exec.Command(s.Command, s.Args...)
	// Its own process group, so a kill also reaches anything it spawned;
	// WaitDelay stops Wait from hanging on a pipe some descendant holds.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSolver, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSolver, err)
	}
	// Solvers warn on stderr; drain it into a bounded buffer so a chatty
	// solver cannot block on a full pipe.
	st := &tail{}
	cmd.Stderr = st
	if err := cmd.Start(); err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			return nil, s.notInstalled(err)
		}
		return nil, fmt.Errorf("%w: start %s: %w", ErrSolver, s.Command, err)
	}
	pr := &proc{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout), stderr: st, exited: make(chan struct{})}
	// Reap the process whenever it exits, so a solver that dies while idle
	// (OOM killer, an operator's kill) is noticed before the next query is
	// sent to it, instead of failing that query.
	go func() {
		_ = cmd.Wait()
		close(pr.exited)
	}()
	resps, err := pr.roundtrip(ctx, s.initCommands())
	if err == nil && len(resps) > 0 {
		err = pr.garbage("start", resps)
	}
	if err != nil {
		pr.stop()
		return nil, err
	}
	return pr, nil
}

// kill ends the process group (the solver and anything it started).
func (pr *proc) kill() {
	_ = syscall.Kill(-pr.cmd.Process.Pid, syscall.SIGKILL)
	_ = pr.cmd.Process.Kill()
}

// stop kills the process and waits until it is reaped, so no zombie or
// pipe outlives it.
func (pr *proc) stop() {
	pr.broken = true
	pr.kill()
	<-pr.exited
}

// dead reports whether the process has exited on its own.
func (pr *proc) dead() bool {
	select {
	case <-pr.exited:
		return true
	default:
		return false
	}
}

func (pr *proc) check(ctx context.Context, s Solver, q prepared, timeout time.Duration) (Result, error) {
	resps, rerr := pr.roundtrip(ctx, s.timeoutOption(timeout)+"(push 1)\n"+q.text+"(check-sat)\n")
	var status Status
	var solverErrs []string
	for _, r := range resps {
		switch {
		case r.head() == "error" && len(r.List) == 2:
			solverErrs = append(solverErrs, r.List[1].Atom)
		case !r.IsList && (r.Atom == "sat" || r.Atom == "unsat" || r.Atom == "unknown") && status == "":
			status = Status(r.Atom)
		case rerr == nil:
			return Result{}, pr.garbage("check-sat", resps)
		}
	}
	if len(solverErrs) > 0 && !errors.Is(rerr, ErrTimeout) {
		// The solver's state after an error is its own business (cvc5 exits
		// on some): start afresh rather than trust it.
		pr.broken = true
		return Result{}, fmt.Errorf("%w: solver rejected it: %s", ErrBadQuery, oneLine(strings.Join(solverErrs, "; ")))
	}
	if rerr != nil {
		return Result{}, rerr
	}
	if status == "" {
		return Result{}, pr.garbage("check-sat", resps)
	}
	res := Result{Status: status}
	var follow string
	switch status {
	case Unsat:
		if q.named {
			follow = "(get-unsat-core)\n"
		}
	case Sat:
		if len(q.values) > 0 {
			follow = "(get-value (" + strings.Join(q.values, " ") + "))\n"
		}
	case Unknown:
		follow = "(get-info :reason-unknown)\n"
	}
	if follow == "" {
		// Nothing to read before the pop: it rides the next query
		// (pop answers nothing; drain checks that before the process
		// serves again), so this check costs one exchange, not two.
		if status == Unsat {
			res.Core = []string{}
		} else {
			res.Model = map[string]string{}
		}
		return res, pr.send("(pop 1)\n")
	}
	resps, err := pr.roundtrip(ctx, follow+"(pop 1)\n")
	if err != nil {
		return Result{}, err
	}
	want := 1
	if len(resps) != want || want == 1 && !resps[0].IsList {
		return Result{}, pr.garbage(string(status)+" follow-up", resps)
	}
	switch {
	case status == Unsat:
		res.Core = []string{}
		for _, n := range resps[0].List {
			if !isSymbol(n) {
				return Result{}, pr.garbage("get-unsat-core", resps)
			}
			res.Core = append(res.Core, normSymbol(n.Atom))
		}
		slices.Sort(res.Core)
	case status == Sat:
		res.Model = make(map[string]string, len(q.values))
		if want == 1 {
			for _, kv := range resps[0].List {
				if !kv.IsList || len(kv.List) != 2 || !isSymbol(kv.List[0]) {
					return Result{}, pr.garbage("get-value", resps)
				}
				res.Model[normSymbol(kv.List[0].Atom)] = kv.List[1].String()
			}
		}
	case status == Unknown:
		r := resps[0]
		if r.head() != ":reason-unknown" || len(r.List) != 2 {
			return Result{}, pr.garbage("get-info", resps)
		}
		if err := unknownReason(r.List[1].String(), timeout); err != nil {
			return res, err
		}
	}
	return res, nil
}

// unknownReason is ErrTimeout when a solver's reason for unknown says it
// gave up for time; nil otherwise.
func unknownReason(reason string, timeout time.Duration) error {
	// z3 says "canceled" or "timeout", cvc5 timeout or resourceout.
	for _, w := range []string{"timeout", "canceled", "resourceout"} {
		if strings.Contains(reason, w) {
			return fmt.Errorf("%w: solver gave up after %s (%s)", ErrTimeout, timeout, reason)
		}
	}
	return nil
}

// send writes cmds that answer nothing (a pop) followed by the sync mark,
// and returns without waiting: drain reads the mark before the process
// serves again. A failed write marks the process unusable.
func (pr *proc) send(cmds string) error {
	if _, err := io.WriteString(pr.stdin, cmds+"(echo \""+syncMark+"\")\n"); err != nil {
		pr.broken = true
		return fmt.Errorf("%w: write: %w%s", ErrSolver, err, pr.stderrNote())
	}
	pr.pending = true
	return nil
}

// drain reads what send's commands answered, up to the sync mark: nothing
// is expected, so any answer marks the process unusable.
func (pr *proc) drain(ctx context.Context) error {
	if !pr.pending {
		return nil
	}
	if pr.broken {
		return fmt.Errorf("%w: process unusable", ErrSolver)
	}
	stop := context.AfterFunc(ctx, pr.kill)
	defer stop()
	resps, err := pr.readAnswers()
	if err == nil && len(resps) > 0 {
		err = pr.garbage("pop", resps)
	}
	if err != nil {
		pr.broken = true
		return err
	}
	pr.pending = false
	return nil
}

// roundtrip sends cmds followed by the sync mark and returns what the
// solver printed before the mark. If ctx ends the process is killed, which
// unblocks the pipe I/O. On a read error it still returns what was read:
// cvc5 prints an (error …) and exits on some bad input.
func (pr *proc) roundtrip(ctx context.Context, cmds string) ([]Sexp, error) {
	if pr.broken {
		return nil, fmt.Errorf("%w: process unusable", ErrSolver)
	}
	if err := pr.drain(ctx); err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, pr.kill)
	defer stop()
	resps, err := pr.exchange(cmds)
	if err != nil {
		pr.broken = true
		if ctx.Err() != nil {
			return resps, ctxErr(ctx)
		}
	}
	return resps, err
}

func (pr *proc) exchange(cmds string) ([]Sexp, error) {
	pr.exchanges++
	if _, err := io.WriteString(pr.stdin, cmds+"(echo \""+syncMark+"\")\n"); err != nil {
		return nil, fmt.Errorf("%w: write: %w%s", ErrSolver, err, pr.stderrNote())
	}
	return pr.readAnswers()
}

// readAnswers reads answers up to the sync mark.
func (pr *proc) readAnswers() ([]Sexp, error) {
	var resps []Sexp
	for {
		raw, err := readSexp(pr.out, MaxAnswerBytes)
		if err != nil {
			return resps, fmt.Errorf("%w: read: %w%s", ErrSolver, err, pr.stderrNote())
		}
		if raw == syncMark || raw == `"`+syncMark+`"` {
			return resps, nil
		}
		parsed, err := Parse(raw)
		if err != nil || len(parsed) != 1 {
			return nil, fmt.Errorf("%w: unreadable answer %q%s", ErrSolver, clip(raw), pr.stderrNote())
		}
		resps = append(resps, parsed[0])
		if len(resps) > 16 {
			return nil, fmt.Errorf("%w: too many answers", ErrSolver)
		}
	}
}

// garbage marks the process unusable and words an unexpected answer.
func (pr *proc) garbage(what string, resps []Sexp) error {
	pr.broken = true
	parts := make([]string, len(resps))
	for i, r := range resps {
		parts[i] = r.String()
	}
	return fmt.Errorf("%w: unexpected answer to %s: %q", ErrSolver, what, clip(strings.Join(parts, " ")))
}

func (pr *proc) stderrNote() string {
	if s := pr.stderr.String(); s != "" {
		return " (stderr: " + oneLine(s) + ")"
	}
	return ""
}

// readSexp reads one s-expression's text (an atom or a balanced list) from
// r, at most limit bytes. Leading whitespace is skipped.
func readSexp(r *bufio.Reader, limit int) (string, error) {
	var b []byte
	depth := 0
	var quote byte // '"' or '|' while inside one
	for {
		c, err := r.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return "", err
		}
		if len(b) >= limit {
			return "", fmt.Errorf("answer longer than %d bytes", limit)
		}
		if quote != 0 {
			b = append(b, c)
			if c == quote {
				if quote == '"' {
					if n, err := r.Peek(1); err == nil && n[0] == '"' {
						_, _ = r.ReadByte()
						b = append(b, '"')
						continue
					}
				}
				quote = 0
				if depth == 0 {
					return string(b), nil
				}
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			if len(b) == 0 {
				continue
			}
			if depth == 0 {
				return string(b), nil
			}
			b = append(b, c)
		case '(':
			if depth == 0 && len(b) > 0 {
				_ = r.UnreadByte()
				return string(b), nil
			}
			depth++
			b = append(b, c)
		case ')':
			if depth == 0 {
				if len(b) > 0 {
					_ = r.UnreadByte()
					return string(b), nil
				}
				return "", errors.New("unbalanced ')'")
			}
			depth--
			b = append(b, c)
			if depth == 0 {
				return string(b), nil
			}
		case '"', '|':
			if depth == 0 && len(b) > 0 {
				_ = r.UnreadByte()
				return string(b), nil
			}
			quote = c
			b = append(b, c)
		default:
			b = append(b, c)
		}
	}
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

func oneLine(s string) string { return clip(strings.Join(strings.Fields(s), " ")) }

// tail keeps the last 4 KiB written to it (a solver's stderr).
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if n := len(t.buf) - 4096; n > 0 {
		t.buf = append(t.buf[:0], t.buf[n:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
