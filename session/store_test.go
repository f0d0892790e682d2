package session_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/session"
	"github.com/groundgate/groundgate/store/boltstore"
)

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func digest(s string) hashing.Digest { return hashing.SumSHA256([]byte(s)) }

// clock is a fixed clock that a test moves.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second + 120*time.Millisecond + 7) // nanoseconds, and trailing zeros, round-trip
	return c.t
}

// testDB is a bbolt file that a test can close and reopen (a restart).
type testDB struct {
	t    testing.TB
	path string
	db   *bolt.DB
	st   *session.Store
	opts session.Options
}

// mustOpenStore opens a store on a new file; at cleanup it re-verifies
// every session (VerifyDB) and closes the file.
func mustOpenStore(t testing.TB, opts session.Options) *testDB {
	t.Helper()
	if opts.Now == nil {
		c := &clock{t: time.Date(2024, 5, 15, 15, 0, 0, 0, time.UTC)}
		opts.Now = c.now
	}
	d := &testDB{t: t, path: filepath.Join(t.TempDir(), "gg.db"), opts: opts}
	d.reopen()
	t.Cleanup(func() {
		if d.db == nil {
			return
		}
		if _, problems, err := session.Verify(context.Background(), boltstore.Wrap(d.db)); err != nil {
			t.Errorf("VerifyDB at cleanup: %v %v", err, problems)
		}
		_ = d.db.Close()
	})
	return d
}

func (d *testDB) reopen() {
	d.t.Helper()
	if d.db != nil {
		if err := d.db.Close(); err != nil {
			d.t.Fatal(err)
		}
	}
	db, err := bolt.Open(d.path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		d.t.Fatal(err)
	}
	st, err := session.Open(boltstore.Wrap(db), d.opts)
	if err != nil {
		d.t.Fatal(err)
	}
	d.db, d.st = db, st
}

func mustCreate(t testing.TB, st *session.Store, prompt string) session.Created {
	t.Helper()
	c, err := st.Create(context.Background(), session.NewTurn{Prompt: prompt, Evidence: digest("evidence:" + prompt)}, false)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// readCall is an admitted read of a reservation whose result files in the
// state, as the wiring will make it.
func readCall(t testing.TB, hash, rid, result string) session.Call {
	t.Helper()
	o, ok, err := session.Observe(getRes, json.RawMessage(`{"reservation_id": "`+rid+`"}`), textResult(result))
	if err != nil || !ok {
		t.Fatalf("Observe: %v %v", ok, err)
	}
	return session.Call{Request: digest("request:" + hash), Hash: digest(hash), Tool: getRes, Decision: session.Admitted, Outcome: session.OutcomeOK,
		Observe: []session.Observation{o}}
}

func TestSessionLifecycle(t *testing.T) {
	ctx := context.Background()
	d := mustOpenStore(t, session.Options{})
	c := mustCreate(t, d.st, "cancel my reservation ZFA04Y")
	s := c.Session
	if !strings.HasPrefix(c.Token, session.TokenPrefix) || len(c.Token) != len(session.TokenPrefix)+43 {
		t.Fatalf("token %q", c.Token)
	}
	if s.ID.Algorithm() != hashing.SHA256 || len(s.Turns) != 1 || len(s.Calls) != 0 || s.Closed || s.State != (&session.State{}).Digest() {
		t.Fatalf("new session: %+v", s)
	}
	if s.Turns[0].By != session.ByHost || s.Turns[0].Evidence != digest("evidence:cancel my reservation ZFA04Y") {
		t.Fatalf("first turn: %+v", s.Turns[0])
	}
	if _, err := d.st.AddTurn(ctx, s.ID, session.NewTurn{Prompt: "and check my bags", Evidence: digest("e2")}); err != nil {
		t.Fatal(err)
	}
	rec, err := d.st.AppendCall(ctx, s.ID, readCall(t, "call0", "ZFA04Y", reservation))
	if err != nil {
		t.Fatal(err)
	}
	st, err := d.st.State(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Seq != 0 || rec.State != st.Digest() || len(rec.Filed) != 1 || rec.Filed[0].Key != "reservation_id=ZFA04Y" {
		t.Fatalf("call record: %+v", rec)
	}
	got, err := d.st.Get(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Turns) != 2 || len(got.Calls) != 1 || got.State != st.Digest() || got.Results != 1 {
		t.Fatalf("session: %+v", got)
	}
	if ev := got.Evidence(); len(ev) != 2 || ev[1] != digest("e2") {
		t.Fatalf("evidence %v", ev)
	}
	closed, err := d.st.Close(ctx, s.ID)
	if err != nil || !closed.Closed || closed.ClosedAt == nil {
		t.Fatalf("Close: %+v %v", closed, err)
	}
	if again, err := d.st.Close(ctx, s.ID); err != nil || !again.ClosedAt.Equal(*closed.ClosedAt) {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := d.st.AppendCall(ctx, s.ID, readCall(t, "call1", "ZFA04Y", reservation)); !errors.Is(err, session.ErrClosed) {
		t.Fatalf("call on a closed session: %v", err)
	}
	if _, err := d.st.AddTurn(ctx, s.ID, session.NewTurn{Prompt: "more", Evidence: digest("e3")}); !errors.Is(err, session.ErrClosed) {
		t.Fatalf("turn on a closed session: %v", err)
	}
	if after, _ := d.st.Get(ctx, s.ID); len(after.Calls) != 1 || len(after.Turns) != 2 {
		t.Fatalf("a closed session changed: %+v", after)
	}
	if err := d.st.Authorize(ctx, s.ID, c.Token); err != nil {
		t.Fatalf("a closed session's record and token stay: %v", err)
	}
}

func TestRestartKeepsSessionsAndState(t *testing.T) {
	ctx := context.Background()
	d := mustOpenStore(t, session.Options{})
	a := mustCreate(t, d.st, "change flights of ZFA04Y")
	b := mustCreate(t, d.st, "book a flight")
	if _, err := d.st.AppendCall(ctx, a.Session.ID, readCall(t, "c0", "ZFA04Y", reservation)); err != nil {
		t.Fatal(err)
	}
	if _, err := d.st.AppendCall(ctx, a.Session.ID, session.Call{Request: digest("r1"), Tool: "airline.cancel_reservation", Decision: session.Refused}); err != nil {
		t.Fatal(err)
	}
	before, _ := d.st.Get(ctx, a.Session.ID)
	stBefore, _ := d.st.State(ctx, a.Session.ID)
	d.reopen()
	after, err := d.st.Get(ctx, a.Session.ID)
	if err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(before)
	jb, _ := json.Marshal(after)
	if !bytes.Equal(ja, jb) {
		t.Fatalf("restart changed the session:\n%s\n%s", ja, jb)
	}
	stAfter, err := d.st.State(ctx, a.Session.ID)
	if err != nil || !bytes.Equal(stAfter.Canonical(), stBefore.Canonical()) {
		t.Fatalf("restart changed the state: %v", err)
	}
	if err := d.st.Authorize(ctx, b.Session.ID, b.Token); err != nil {
		t.Fatalf("token after restart: %v", err)
	}
	// The session goes on: the next call files on top of the same state.
	rec, err := d.st.AppendCall(ctx, a.Session.ID, readCall(t, "c2", "XYZ123", `{"cabin": "economy"}`))
	if err != nil || rec.Seq != 2 {
		t.Fatalf("call after restart: %+v %v", rec, err)
	}
	rebuilt, err := d.st.Rebuild(ctx, a.Session.ID)
	if err != nil || rebuilt.Len() != 2 || rebuilt.Digest() != rec.State {
		t.Fatalf("Rebuild: %v", err)
	}
}

// TestOnlyTrustedResultsChangeTheState: a refused call, a tool error, a
// result refused by its postconditions (F10) and an upstream failure are
// recorded and never change the state, whatever they carry.
func TestOnlyTrustedResultsChangeTheState(t *testing.T) {
	ctx := context.Background()
	d := mustOpenStore(t, session.Options{})
	s := mustCreate(t, d.st, "cancel ZFA04Y").Session
	if _, err := d.st.AppendCall(ctx, s.ID, readCall(t, "first", "ZFA04Y", reservation)); err != nil {
		t.Fatal(err)
	}
	want, _ := d.st.State(ctx, s.ID)
	forged := readCall(t, "x", "ZFA04Y", `{"cabin": "business"}`).Observe
	for i, tc := range []struct {
		name     string
		decision session.Decision
		outcome  string
	}{
		{"refused by the gate", session.Refused, ""},
		{"tool error", session.Admitted, "tool-error"},
		{"postcondition failed", session.Admitted, "refused-result"},
		{"upstream failed", session.Admitted, "upstream-error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := session.Call{Request: digest("r:" + tc.name), Hash: digest(tc.name), Tool: getRes, Decision: tc.decision,
				Outcome: tc.outcome, Read: want.Digest(), Observe: forged}
			if tc.decision == session.Refused {
				c.Hash = hashing.Digest{} // no footprint
				c.Failures = []ground.Failure{{Field: "tool", Code: ground.F11, Codes: []ground.Code{ground.F11}, Detail: "refused", Policy: "airline.cancel", Core: []string{"rule"}}}
			}
			rec, err := d.st.AppendCall(ctx, s.ID, c)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Seq != i+1 || len(rec.Filed) != 0 || rec.State != want.Digest() || rec.Read == nil || *rec.Read != want.Digest() ||
				(rec.Hash == nil) != (tc.decision == session.Refused) || (len(rec.Failures) == 1) != (tc.decision == session.Refused) {
				t.Fatalf("record: %+v", rec)
			}
			if tc.decision == session.Refused {
				got, err := d.st.Get(ctx, s.ID)
				if err != nil || len(got.Calls) <= rec.Seq || !reflect.DeepEqual(got.Calls[rec.Seq].Failures, c.Failures) {
					t.Fatalf("the failures did not read back: %v %+v", err, got)
				}
			}
			got, _ := d.st.State(ctx, s.ID)
			if !bytes.Equal(got.Canonical(), want.Canonical()) {
				t.Fatalf("the state changed:\n%s", got.Canonical())
			}
		})
	}
	// A tool error's result files nothing.
	if _, ok, err := session.Observe(getRes, nil, json.RawMessage(`{"content": [], "isError": true}`)); ok || err != nil {
		t.Fatalf("Observe of a tool error: %v %v", ok, err)
	}
	// An admitted call with outcome ok and nothing to file changes nothing
	// either.
	if rec, err := d.st.AppendCall(ctx, s.ID, session.Call{Request: digest("r"), Hash: digest("nothing"), Tool: getRes, Decision: session.Admitted, Outcome: session.OutcomeOK}); err != nil || rec.State != want.Digest() {
		t.Fatalf("nothing filed: %+v %v", rec, err)
	}
}

func TestTokensIsolateSessions(t *testing.T) {
	ctx := context.Background()
	d := mustOpenStore(t, session.Options{})
	a := mustCreate(t, d.st, "one")
	b := mustCreate(t, d.st, "two")
	if a.Session.ID == b.Session.ID || a.Token == b.Token {
		t.Fatal("two sessions share an id or a token")
	}
	for _, tc := range []struct {
		name  string
		id    hashing.Digest
		token string
		ok    bool
	}{
		{"own token a", a.Session.ID, a.Token, true},
		{"own token b", b.Session.ID, b.Token, true},
		{"a's token on b", b.Session.ID, a.Token, false},
		{"b's token on a", a.Session.ID, b.Token, false},
		{"empty", a.Session.ID, "", false},
		{"the token's digest", a.Session.ID, digest(a.Token).String(), false},
		{"a prefix", a.Session.ID, a.Token[:len(a.Token)-1], false},
		{"no such session", digest("nobody"), a.Token, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := d.st.Authorize(ctx, tc.id, tc.token)
			if tc.ok != (err == nil) || (!tc.ok && !errors.Is(err, session.ErrUnauthorized)) {
				t.Fatalf("Authorize: %v", err)
			}
		})
	}
	// The token is not stored: no bucket holds it.
	_ = d.db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, bk *bolt.Bucket) error {
			return bk.ForEach(func(k, v []byte) error {
				if bytes.Contains(v, []byte(a.Token)) || bytes.Contains(k, []byte(a.Token)) {
					t.Errorf("bucket %s holds the token", name)
				}
				return nil
			})
		})
	})
}

func TestAppendCallSizeBounds(t *testing.T) {
	ctx := context.Background()
	d := mustOpenStore(t, session.Options{Limits: session.Limits{MaxResults: 2}})
	s := mustCreate(t, d.st, "read three reservations").Session
	for i, rid := range []string{"A", "B"} {
		if _, err := d.st.AppendCall(ctx, s.ID, readCall(t, rid, rid, `{"n": 1}`)); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	full, _ := d.st.State(ctx, s.ID)
	rec, err := d.st.AppendCall(ctx, s.ID, readCall(t, "C", "C", `{"n": 1}`))
	if !errors.Is(err, session.ErrTooLarge) {
		t.Fatalf("third result: %v, want ErrTooLarge", err)
	}
	if rec.Seq != 2 || rec.Unfiled == "" || len(rec.Filed) != 0 || rec.State != full.Digest() {
		t.Fatalf("record of an unfiled call: %+v", rec)
	}
	got, _ := d.st.Get(ctx, s.ID)
	if len(got.Calls) != 3 || got.State != full.Digest() || got.Results != 2 {
		t.Fatalf("the call was not recorded, or the state grew: %+v", got)
	}
	// A result for a key already held replaces it: no growth.
	if _, err := d.st.AppendCall(ctx, s.ID, readCall(t, "A2", "A", `{"n": 2}`)); err != nil {
		t.Fatalf("replace: %v", err)
	}
	// Bytes: a state bound smaller than one result.
	d2 := mustOpenStore(t, session.Options{Limits: session.Limits{MaxBytes: 100}})
	s2 := mustCreate(t, d2.st, "big").Session
	if _, err := d2.st.AppendCall(ctx, s2.ID, readCall(t, "big", "A", `"`+strings.Repeat("x", 200)+`"`)); !errors.Is(err, session.ErrTooLarge) {
		t.Fatalf("bytes bound: %v", err)
	}
	if st, _ := d2.st.State(ctx, s2.ID); st.Len() != 0 {
		t.Fatal("the state grew past its bytes bound")
	}
	// Prompts.
	d3 := mustOpenStore(t, session.Options{Limits: session.Limits{MaxPromptBytes: 10}})
	if _, err := d3.st.Create(ctx, session.NewTurn{Prompt: strings.Repeat("w", 11), Evidence: digest("e")}, false); !errors.Is(err, session.ErrTooLarge) {
		t.Fatalf("long prompt: %v", err)
	}
}

func TestInvalidInput(t *testing.T) {
	ctx := context.Background()
	d := mustOpenStore(t, session.Options{})
	s := mustCreate(t, d.st, "hello").Session
	for _, tc := range []struct {
		name string
		turn session.NewTurn
		err  error
	}{
		{"empty prompt", session.NewTurn{Prompt: "  ", Evidence: digest("e")}, session.ErrInvalid},
		{"not UTF-8", session.NewTurn{Prompt: "\xff", Evidence: digest("e")}, session.ErrInvalid},
		{"no evidence", session.NewTurn{Prompt: "hi"}, session.ErrInvalid},
		{"unknown speaker", session.NewTurn{Prompt: "hi", Evidence: digest("e"), By: "user"}, session.ErrInvalid},
		{"agent's words without agent_discovery", session.NewTurn{Prompt: "hi", Evidence: digest("e"), By: session.ByAgent}, session.ErrInvalid},
	} {
		t.Run("turn/"+tc.name, func(t *testing.T) {
			if _, err := d.st.AddTurn(ctx, s.ID, tc.turn); !errors.Is(err, tc.err) {
				t.Fatalf("AddTurn: %v, want %v", err, tc.err)
			}
		})
	}
	for _, tc := range []struct {
		name string
		call session.Call
		err  error
	}{
		{"no request", session.Call{Tool: getRes, Decision: session.Refused}, session.ErrInvalid},
		{"admitted without a footprint", session.Call{Request: digest("r"), Tool: getRes, Decision: session.Admitted, Outcome: session.OutcomeOK}, session.ErrInvalid},
		{"no tool", session.Call{Request: digest("r"), Decision: session.Refused}, session.ErrInvalid},
		{"unknown decision", session.Call{Request: digest("r"), Hash: digest("h"), Tool: getRes, Decision: "maybe"}, session.ErrInvalid},
		{"refused with an outcome", session.Call{Request: digest("r"), Tool: getRes, Decision: session.Refused, Outcome: session.OutcomeOK}, session.ErrInvalid},
		{"admitted with failures", session.Call{Request: digest("r"), Hash: digest("h"), Tool: getRes, Decision: session.Admitted, Outcome: session.OutcomeOK,
			Failures: []ground.Failure{{Field: "tool", Code: ground.F3, Codes: []ground.Code{ground.F3}, Detail: "not discovered"}}}, session.ErrInvalid},
		{"no such session", session.Call{Request: digest("r"), Tool: getRes, Decision: session.Refused}, session.ErrNotFound},
	} {
		t.Run("call/"+tc.name, func(t *testing.T) {
			id := s.ID
			if tc.err == session.ErrNotFound {
				id = digest("nobody")
			}
			if _, err := d.st.AppendCall(ctx, id, tc.call); !errors.Is(err, tc.err) {
				t.Fatalf("AppendCall: %v, want %v", err, tc.err)
			}
		})
	}
	if got, _ := d.st.Get(ctx, s.ID); len(got.Turns) != 1 || len(got.Calls) != 0 {
		t.Fatalf("refused input was recorded: %+v", got)
	}
	// A call that ran is recorded even when what it would file is not
	// well formed; the state does not change.
	rec, err := d.st.AppendCall(ctx, s.ID, session.Call{Request: digest("r"), Hash: digest("h"), Tool: getRes, Decision: session.Admitted,
		Outcome: session.OutcomeOK, Observe: []session.Observation{obs(t, getRes, `[]`, `1`)}})
	if !errors.Is(err, session.ErrInvalid) || rec.Unfiled == "" || rec.State != (&session.State{}).Digest() {
		t.Fatalf("bad observation: %+v %v", rec, err)
	}
	for name, f := range map[string]func() error{
		"Get":   func() error { _, err := d.st.Get(ctx, digest("nobody")); return err },
		"State": func() error { _, err := d.st.State(ctx, digest("nobody")); return err },
		"Close": func() error { _, err := d.st.Close(ctx, digest("nobody")); return err },
		"AddTurn": func() error {
			_, err := d.st.AddTurn(ctx, digest("nobody"), session.NewTurn{Prompt: "x", Evidence: digest("e")})
			return err
		},
	} {
		if err := f(); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("%s of no session: %v", name, err)
		}
	}
}

func TestAgentDiscoveryTurns(t *testing.T) {
	ctx := context.Background()
	d := mustOpenStore(t, session.Options{})
	c, err := d.st.Create(ctx, session.NewTurn{Prompt: "find flights", Evidence: digest("e"), By: session.ByAgent}, true)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Session.AgentDiscovery || c.Session.Turns[0].By != session.ByAgent {
		t.Fatalf("%+v", c.Session)
	}
	s, err := d.st.AddTurn(ctx, c.Session.ID, session.NewTurn{Prompt: "the user says yes", Evidence: digest("e2")})
	if err != nil || s.Turns[1].By != session.ByHost {
		t.Fatalf("host turn: %v", err)
	}
}

// TestCorruptionIsDetected alters stored bytes behind the store's back:
// every read that covers them fails with ErrCorrupt.
func TestCorruptionIsDetected(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		bucket []byte
		key    func(id hashing.Digest) []byte
		alter  func([]byte) []byte
	}{
		{"state bytes", session.BucketStates, func(id hashing.Digest) []byte { return id.Key() },
			func(b []byte) []byte { return bytes.Replace(b, []byte("basic_economy"), []byte("business"), 1) }},
		{"header token", session.BucketRecords, func(id hashing.Digest) []byte { return id.Key() },
			func(b []byte) []byte {
				return bytes.Replace(b, []byte(`"nonce":"`), []byte(`"nonce":"0`), 1)
			}},
		{"header not canonical", session.BucketRecords, func(id hashing.Digest) []byte { return id.Key() },
			func(b []byte) []byte { return append([]byte(" "), b...) }},
		{"header state digest", session.BucketRecords, func(id hashing.Digest) []byte { return id.Key() },
			func(b []byte) []byte {
				i := bytes.Index(b, []byte(`"state":"sha256:`)) + len(`"state":"sha256:`)
				b[i] ^= 1
				return b
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := mustOpenStore(t, session.Options{})
			s := mustCreate(t, d.st, "x").Session
			if _, err := d.st.AppendCall(ctx, s.ID, readCall(t, "c", "ZFA04Y", reservation)); err != nil {
				t.Fatal(err)
			}
			if err := d.db.Update(func(tx *bolt.Tx) error {
				b := tx.Bucket(tc.bucket)
				k := tc.key(s.ID)
				return b.Put(k, tc.alter(bytes.Clone(b.Get(k))))
			}); err != nil {
				t.Fatal(err)
			}
			_, errGet := d.st.Get(ctx, s.ID)
			_, errState := d.st.State(ctx, s.ID)
			if !errors.Is(errState, session.ErrCorrupt) || (bytes.Equal(tc.bucket, session.BucketRecords) && !errors.Is(errGet, session.ErrCorrupt)) {
				t.Fatalf("Get: %v; State: %v", errGet, errState)
			}
			if _, problems, err := session.Verify(ctx, boltstore.Wrap(d.db)); !errors.Is(err, session.ErrCorrupt) || len(problems) != 1 {
				t.Fatalf("VerifyDB: %v %v", err, problems)
			}
			_ = d.db.Close()
			d.db = nil // the cleanup's VerifyDB would fail, as it should
		})
	}
	// A value altered in session.values: the rebuild notices.
	d := mustOpenStore(t, session.Options{})
	s := mustCreate(t, d.st, "x").Session
	rec, err := d.st.AppendCall(ctx, s.ID, readCall(t, "c", "ZFA04Y", reservation))
	if err != nil {
		t.Fatal(err)
	}
	_ = d.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(session.BucketValues).Put(rec.Filed[0].Value.Key(), []byte(`{"cabin":"business"}`))
	})
	if _, err := d.st.Rebuild(ctx, s.ID); !errors.Is(err, session.ErrCorrupt) {
		t.Fatalf("Rebuild: %v", err)
	}
	_ = d.db.Close()
	d.db = nil
}

func TestConcurrentCallsAreOrdered(t *testing.T) {
	ctx := context.Background()
	d := mustOpenStore(t, session.Options{})
	s := mustCreate(t, d.st, "many").Session
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rid := string(rune('A' + i))
			if _, err := d.st.AppendCall(ctx, s.ID, readCall(t, rid, rid, `{"i": 1}`)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got, err := d.st.Get(ctx, s.ID)
	if err != nil || len(got.Calls) != 16 || got.Results != 16 {
		t.Fatalf("%v %+v", err, got)
	}
	for i, c := range got.Calls {
		if c.Seq != i {
			t.Fatalf("call %d has seq %d", i, c.Seq)
		}
	}
}

// TestIDsAndTokensFromTheRandomSource: with a fixed random source, the id
// is the digest of the genesis and the token the source's next 32 bytes,
// in every run; the clock enters neither.
func TestIDsAndTokensFromTheRandomSource(t *testing.T) {
	for _, clockStart := range []time.Time{time.Unix(0, 0), time.Date(2030, 1, 1, 0, 0, 0, 5, time.UTC)} {
		c := &clock{t: clockStart}
		d := mustOpenStore(t, session.Options{Rand: bytes.NewReader(make([]byte, 64)), Now: c.now})
		got := mustCreate(t, d.st, "x")
		genesis := `{"agent_discovery":false,"nonce":"` + strings.Repeat("0", 64) + `","version":"groundgate.session/v1"}`
		if want := "sha256:" + sha256Hex(genesis); got.Session.ID.String() != want {
			t.Fatalf("id %s, want %s", got.Session.ID, want)
		}
		if want := session.TokenPrefix + strings.Repeat("A", 43); got.Token != want {
			t.Fatalf("token %q, want %q", got.Token, want)
		}
	}
	// A random source that fails is an error, not a weak id.
	d := mustOpenStore(t, session.Options{Rand: bytes.NewReader(make([]byte, 10))})
	if _, err := d.st.Create(context.Background(), session.NewTurn{Prompt: "x", Evidence: digest("e")}, false); err == nil {
		t.Fatal("Create with a short random source succeeded")
	}
}
