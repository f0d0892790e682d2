package crashtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	envRounds = "GROUNDGATE_CRASH_ROUNDS"
	envSeed   = "GROUNDGATE_CRASH_SEED"

	defaultRounds = 20 // the CI size: well under 90 s on two cores

	// The kill lands at a uniformly random moment of this window after the
	// load starts, so it hits commits, executions and idle gaps alike.
	killMin = 150 * time.Millisecond
	killMax = 1200 * time.Millisecond

	sampleOlder   = 40               // earlier documents re-read after each restart
	sampleVers    = 6                // acknowledged PUTs whose version is re-read per round (and its last)
	sampleVersAll = 30               // and at the end, from all rounds
	replayOlder   = 20               // earlier executions replayed at the end
	roundTimeout  = 90 * time.Second // bounds one round's load and checks
)

// TestCrashUnderLoad kills `groundgate serve` with SIGKILL in the middle of
// concurrent writes, round after round on one database file, and checks
// after each restart that no acknowledged write was lost: registry entries
// at the version they were acknowledged in and in the current registry,
// discoveries, groundings and executions (which must also replay bit for
// bit), and call footprints through the gateway (calls_test.go). Every
// crashed file must pass `registry verify` (a copy of it, verified while
// the next round runs), and so must the file after the final clean
// shutdown.
func TestCrashUnderLoad(t *testing.T) {
	began := time.Now()
	rounds := envInt(t, envRounds, defaultRounds)
	seed := envSeedOrNow(t)
	t.Logf("seed %d (replay with %s=%d), %d rounds", seed, envSeed, seed, rounds)
	rng := rand.New(rand.NewPCG(uint64(seed), 0x67726f756e64))

	bin := buildBinary(t)
	upstream := buildUpstream(t)
	built := time.Since(began)
	dir := t.TempDir()
	db := filepath.Join(dir, "groundgate.db")
	l := newLedger()
	var (
		st       *state
		replayed int
		checked  int
	)
	// The crashed file of each round is verified on a copy while the next
	// round runs: the copy holds the bytes the crash left, which is all the
	// check reads, and the original is the next server's to open.
	var pending *verifyRun
	t.Cleanup(func() { pending.wait() })
	verified := func(v *verifyRun, beside string) {
		t.Helper()
		if v == nil {
			return
		}
		v.wait()
		if v.err != nil {
			t.Fatalf("round %d (seed %d): registry verify on the crashed file: %v\n%s", v.round, seed, v.err, v.out)
		}
		t.Logf("round %2d: registry verify of the crashed file %4dms, beside %s", v.round, v.took.Milliseconds(), beside)
	}
	lostf := func(round int, k *checker) {
		t.Helper()
		if len(k.lost) > 0 {
			t.Fatalf("round %d (seed %d): %d acknowledged write(s) lost or altered:\n%s", round, seed, len(k.lost), strings.Join(k.lost, "\n"))
		}
	}

	for round := 1; round <= rounds; round++ {
		ctx, cancel := context.WithTimeout(t.Context(), roundTimeout)
		t0 := time.Now()
		srv := startServer(t, bin, db, dir)
		startup := time.Since(t0)
		c := newClient(srv.base)
		k := &checker{c: c, l: l, t: t}
		if st == nil {
			var err error
			if st, err = newState(ctx, c, l, rng); err != nil {
				t.Fatal(err)
			}
			if err := setupUpstream(ctx, c, upstream); err != nil {
				t.Fatal(err)
			}
		} else {
			n, r := k.afterRestart(ctx, rng)
			checked, replayed = checked+n, replayed+r
			lostf(round-1, k)
			// The server starts the upstream again by itself; calls
			// wait for its tools.
			if err := waitUpstream(ctx, c, true); err != nil {
				t.Fatalf("round %d: %v; server log tail:\n%s", round, err, srv.logTail())
			}
			checked += k.sessions(ctx)
			lostf(round-1, k)
		}
		tCheck := time.Since(t0) - startup

		delay := killMin + time.Duration(rng.Int64N(int64(killMax-killMin)))
		before := l.counts()
		maybeBefore := l.maybe
		tLoad := time.Now()
		runRound(ctx, t, round, c, l, st, rng, srv, delay)
		load := time.Since(tLoad)
		c.close()
		cancel()
		if t.Failed() {
			t.Fatalf("round %d (seed %d): load failed; server log tail:\n%s", round, seed, srv.logTail())
		}
		after := l.counts()
		// One verify at a time: the previous round's has had this whole
		// round to finish.
		verified(pending, fmt.Sprintf("round %d", round))
		pending = startVerify(t, bin, db, round)
		t.Logf("round %2d: start %4dms, checks %4dms, load %4dms (kill at %4dms): acknowledged +%d registry, +%d discovery, +%d grounding, +%d execution, +%d call; %d in doubt",
			round, startup.Milliseconds(), tCheck.Milliseconds(), load.Milliseconds(), delay.Milliseconds(),
			after[kindRegistry]-before[kindRegistry], after[kindDiscovery]-before[kindDiscovery],
			after[kindGrounding]-before[kindGrounding], after[kindExecution]-before[kindExecution], after[kindCall]-before[kindCall], l.maybe-maybeBefore)
	}

	// The last crash: restart, check that round and then everything, stop
	// cleanly, verify the file.
	tFinal := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 3*roundTimeout)
	defer cancel()
	srv := startServer(t, bin, db, dir)
	c := newClient(srv.base)
	k := &checker{c: c, l: l, t: t}
	n, r := k.afterRestart(ctx, rng)
	checked, replayed = checked+n, replayed+r
	lostf(rounds, k)
	if err := waitUpstream(ctx, c, true); err != nil {
		t.Fatalf("final: %v; server log tail:\n%s", err, srv.logTail())
	}
	checked += k.sessions(ctx)
	lostf(rounds, k)
	vs := sampleRegs(rng, l.regs, sampleVersAll)
	k.versions(ctx, vs)
	checked += len(vs) + len(l.docs)
	k.docs(ctx, l.docs, false)
	replayed += k.docs(ctx, sample(rng, executions(l.docs), replayOlder), true)
	lostf(rounds, k)
	c.close()
	verified(pending, "the final checks")
	if err := srv.stop(30 * time.Second); err != nil {
		t.Fatalf("clean shutdown: %v; log tail:\n%s", err, srv.logTail())
	}
	out, err := verifyFile(t.Context(), bin, db)
	if err != nil {
		t.Fatalf("registry verify after the clean shutdown: %v\n%s", err, out)
	}

	t.Logf("final restart, checks, clean stop and verify: %s", time.Since(tFinal).Round(time.Millisecond))
	cnt := l.counts()
	sessions, sessionCalls := l.sessionCounts()
	t.Logf("0 acknowledged writes lost over %d SIGKILL rounds (seed %d): %d registry PUTs, %d discoveries, %d groundings, %d executions, %d calls, %d sessions with %d calls acknowledged; %d writes in doubt at kills; %d checks of acknowledged writes, %d replays matched; %s",
		rounds, seed, cnt[kindRegistry], cnt[kindDiscovery], cnt[kindGrounding], cnt[kindExecution], cnt[kindCall], sessions, sessionCalls, l.maybe, checked, replayed, out)
	t.Logf("time: %s total (%s building the binary)", time.Since(began).Round(time.Millisecond), built.Round(time.Millisecond))
}

// runRound starts the workers, kills the server after delay, and waits for
// every worker to notice.
func runRound(ctx context.Context, t *testing.T, round int, c *client, l *ledger, st *state, rng *rand.Rand, srv *server, delay time.Duration) {
	lr := &loadRun{t: t, round: round, c: c, l: l, st: st}
	var wg sync.WaitGroup
	for _, w := range st.writers {
		wrng := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
		wg.Go(func() { lr.registryLoop(ctx, w, wrng) })
	}
	for range pipelineWorkers {
		prng := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
		wg.Go(func() { lr.pipelineLoop(ctx, prng) })
	}
	for range callWorkers {
		crng := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
		wg.Go(func() { lr.callLoop(ctx, crng) })
	}
	wg.Go(func() { lr.sessionLoop(ctx) })
	select {
	case <-time.After(delay):
	case <-ctx.Done():
	}
	// Kill first and let the workers see the dead server on their own, so
	// that an answer already on its way is still read and counted.
	srv.kill()
	wg.Wait()
}

// afterRestart checks the current registry, every write acknowledged since
// the last check (the round just killed; executions are replayed), and a
// sample of earlier documents. It returns how many acknowledged writes it
// checked and how many replays matched.
func (k *checker) afterRestart(ctx context.Context, rng *rand.Rand) (checked, replayed int) {
	k.l.mu.Lock()
	regs := k.l.regs[k.l.checkedRegs:]
	docs := k.l.docs[k.l.checkedDocs:]
	older := k.l.docs[:k.l.checkedDocs]
	k.l.checkedRegs, k.l.checkedDocs = len(k.l.regs), len(k.l.docs)
	k.l.mu.Unlock()
	k.currentRegistry(ctx)
	vs := sampleRegs(rng, regs, sampleVers)
	k.versions(ctx, vs)
	replayed = k.docs(ctx, docs, true)
	old := sample(rng, older, sampleOlder)
	k.docs(ctx, old, false)
	return len(vs) + len(docs) + len(old), replayed
}

func executions(docs []docAck) []docAck {
	var out []docAck
	for _, d := range docs {
		if d.kind == kindExecution {
			out = append(out, d)
		}
	}
	return out
}

// sample picks up to n elements without replacement.
func sample(rng *rand.Rand, docs []docAck, n int) []docAck {
	if len(docs) <= n {
		return docs
	}
	out := make([]docAck, 0, n)
	for _, i := range rng.Perm(len(docs))[:n] {
		out = append(out, docs[i])
	}
	return out
}

// sampleRegs picks up to n acknowledged PUTs without replacement, and the
// last one, the write most likely to be caught by the kill. Reading a
// version costs a whole registry export, so not every one is read back.
func sampleRegs(rng *rand.Rand, regs []regAck, n int) []regAck {
	if len(regs) <= n+1 {
		return regs
	}
	out := make([]regAck, 0, n+1)
	for _, i := range rng.Perm(len(regs) - 1)[:n] {
		out = append(out, regs[i])
	}
	return append(out, regs[len(regs)-1])
}

// envSeedOrNow is the seed GROUNDGATE_CRASH_SEED gives, or a new one.
func envSeedOrNow(t *testing.T) int64 {
	t.Helper()
	s := os.Getenv(envSeed)
	if s == "" {
		return time.Now().UnixNano()
	}
	seed, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: want an integer", envSeed, s)
	}
	return seed
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}
