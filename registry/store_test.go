package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/hashing"
)

func exportJSON(t testing.TB, s *Snapshot) []byte {
	t.Helper()
	b, err := json.Marshal(s.Export())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSeedPutReopenEveryVersionIntact(t *testing.T) {
	ctx := context.Background()
	s, path := mustOpenStore(t)
	if s.Current().Version() != 0 || s.Current().Registry() != hashing.RegistryHash(nil) {
		t.Fatalf("new store: version %d registry %s", s.Current().Version(), s.Current().Registry())
	}
	es := fixtureEntries(t)
	mustSeed(t, s, es)
	if again, err := s.Seed(ctx, es); again || err != nil {
		t.Fatalf("second seed = %v, %v; want a no-op", again, err)
	}

	// v2: a disc-only change; v3: a behavioural change; v4: a new entry.
	e := es[0]
	e.Disc.Aliases = append(e.Disc.Aliases, "continuously compounded return")
	mustPut(t, s, e)
	e.Sem.Idempotent = !e.Sem.Idempotent
	mustPut(t, s, e)
	n := es[1]
	n.Name, n.Impl.Expr = "neg2", "(neg (neg (neg x)))"
	mustPut(t, s, n)

	want := map[uint64][]byte{}
	for v := uint64(0); v <= 4; v++ {
		snap, err := s.Version(ctx, v)
		if err != nil {
			t.Fatalf("version %d: %v", v, err)
		}
		want[v] = exportJSON(t, snap)
	}
	hist, err := s.History(ctx)
	if err != nil || len(hist) != 4 || hist[0].Version != 4 || hist[3].Change.Op != "seed" {
		t.Fatalf("history = %+v, %v", hist, err)
	}
	s.Close()

	s2 := mustOpen(t, path)
	defer s2.Close()
	if s2.Current().Version() != 4 {
		t.Fatalf("reopened at version %d, want 4", s2.Current().Version())
	}
	for v := uint64(0); v <= 4; v++ {
		snap, err := s2.Version(ctx, v)
		if err != nil {
			t.Fatalf("reopened version %d: %v", v, err)
		}
		if got := exportJSON(t, snap); !bytes.Equal(got, want[v]) {
			t.Errorf("version %d changed across reopen:\n got %s\nwant %s", v, got, want[v])
		}
	}
	if _, err := s2.Version(ctx, 5); !errors.Is(err, ErrNotFound) {
		t.Errorf("version 5: %v, want ErrNotFound", err)
	}
}

func mustPut(t testing.TB, s *Store, e Entry) PutResult {
	t.Helper()
	r, err := s.Put(context.Background(), e)
	if err != nil {
		t.Fatalf("put %q: %v", e.Name, err)
	}
	return r
}

func TestDiscOnlyChangeKeepsRegistryHash(t *testing.T) {
	s, _ := mustOpenStore(t)
	es := fixtureEntries(t)
	mustSeed(t, s, es)
	before := s.Current()

	e := es[4] // MOM_WZS
	e.Disc.Aliases = append(e.Disc.Aliases, "tsmom")
	e.Disc.Tags = append(e.Disc.Tags, "z-score")
	e.Disc.Description = "rewritten"
	e.Disc.Examples = nil
	e.Disc.Deprecated = true
	r := mustPut(t, s, e)
	if !r.Changed || r.Version != before.Version()+1 {
		t.Fatalf("disc change: %+v, want a new version", r)
	}
	after := s.Current()
	if after.Registry() != before.Registry() {
		t.Fatalf("registry hash changed on a disc-only edit: %s -> %s", before.Registry(), after.Registry())
	}
	old, _ := before.Get(e.Name)
	if r.Capability.Identity != old.Identity {
		t.Fatal("identity changed on a disc-only edit")
	}

	// Putting the same bytes again is not a mutation.
	r2 := mustPut(t, s, e)
	if r2.Changed || s.Current().Version() != after.Version() {
		t.Fatalf("idempotent put created version %d", s.Current().Version())
	}
}

func TestDuplicateIdentityRefused(t *testing.T) {
	s, _ := mustOpenStore(t)
	es := fixtureEntries(t)
	mustSeed(t, s, es)
	v := s.Current().Version()

	twin := es[5] // MOM_REV under another name and description
	twin.Name = "REVERSAL"
	twin.Disc = Discovery{Description: "same behaviour, new name", Aliases: []string{"fade"}}
	_, err := s.Put(context.Background(), twin)
	var dup *DuplicateError
	if !errors.As(err, &dup) || !errors.Is(err, ErrDuplicateIdentity) {
		t.Fatalf("put twin: %v, want *DuplicateError", err)
	}
	if dup.Existing != "MOM_REV" || dup.Name != "REVERSAL" || !strings.Contains(err.Error(), `"MOM_REV"`) {
		t.Fatalf("duplicate error does not name the existing entry: %v", err)
	}
	if s.Current().Version() != v {
		t.Fatal("refused put created a version")
	}

	// Changing an existing entry into another's twin is refused too.
	neg := es[1]
	neg.Sem, neg.Alg, neg.Impl = es[2].Sem, es[2].Alg, es[2].Impl
	if _, err := s.Put(context.Background(), neg); !errors.Is(err, ErrDuplicateIdentity) {
		t.Fatalf("turning neg into add's twin: %v", err)
	}
	// A seed with two twins is refused whole.
	s2, _ := mustOpenStore(t)
	if _, err := s2.Seed(context.Background(), append(fixtureEntries(t), twin)); !errors.Is(err, ErrDuplicateIdentity) {
		t.Fatalf("seeding twins: %v", err)
	}
	if s2.Current().Version() != 0 {
		t.Fatal("refused seed left a version behind")
	}
}

func TestBadEntriesNameEntryAndField(t *testing.T) {
	good := `{"name":"x1","kind":"operation",
	  "sem":{"pure":true,"deterministic":true,"commutative":false,"associative":false,"idempotent":false,"orientation":"none","stateful":false},
	  "alg":{"inputs":["series"],"outputs":["series"],"arity":1,"reversible":false,"params":[{"name":"w","type":"int","default":3,"min":1}]},
	  "impl":{"engine":"groundgate/v1","ir":"elementwise","fusable":true,"expr":"(abs x)"},
	  "disc":{"description":"d"}}`
	if _, err := DecodeEntry([]byte(good), "#0"); err != nil {
		t.Fatalf("good entry: %v", err)
	}
	for _, tc := range []struct {
		name, from, to, wantField string
	}{
		{"unknown kind", `"kind":"operation"`, `"kind":"gadget"`, "kind"},
		{"empty name", `"name":"x1"`, `"name":""`, "name"},
		{"bad name", `"name":"x1"`, `"name":"has space"`, "name"},
		{"missing sem", `"sem":{"pure":true,"deterministic":true,"commutative":false,"associative":false,"idempotent":false,"orientation":"none","stateful":false},`, ``, "sem"},
		{"missing disc", `,
	  "disc":{"description":"d"}`, ``, "disc"},
		{"null layer", `"disc":{"description":"d"}`, `"disc":null`, "disc"},
		{"unknown field", `"fusable":true`, `"fusable":true,"speed":"fast"`, "impl"},
		{"bad orientation", `"orientation":"none"`, `"orientation":"up"`, "sem.orientation"},
		{"arity mismatch", `"arity":1`, `"arity":2`, "alg.arity"},
		{"unknown type", `"inputs":["series"]`, `"inputs":["tensor"]`, "alg.inputs[0]"},
		{"no outputs", `"outputs":["series"]`, `"outputs":[]`, "alg.outputs"},
		{"param type", `"type":"int"`, `"type":"complex"`, "alg.params[0].type"},
		{"param name", `{"name":"w"`, `{"name":"W!"`, "alg.params[0].name"},
		{"fractional int default", `"default":3`, `"default":3.5`, "alg.params[0].default"},
		{"default below min", `"default":3`, `"default":0`, "alg.params[0].default"},
		{"string default for int", `"default":3`, `"default":"3"`, "alg.params[0].default"},
		{"bad ir", `"ir":"elementwise"`, `"ir":"quantum"`, "impl.ir"},
		{"unbalanced expr", `"expr":"(abs x)"`, `"expr":"(abs x"`, "impl.expr"},
		{"empty engine", `"engine":"groundgate/v1"`, `"engine":" "`, "impl.engine"},
		{"empty description", `"description":"d"`, `"description":""`, "disc.description"},
		{"empty alias", `"description":"d"`, `"description":"d","aliases":["ok",""]`, "disc.aliases[1]"},
		{"duplicate key", `"name":"x1"`, `"name":"x1","name":"x2"`, "Duplicate key"},
		{"metric orientation", `"kind":"operation"`, `"kind":"metric"`, "sem.orientation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(good, tc.from, tc.to, 1)
			if doc == good {
				t.Fatalf("replacement %q did not apply", tc.from)
			}
			_, err := DecodeEntry([]byte(doc), "#7")
			if !errors.Is(err, ErrInvalidEntry) {
				t.Fatalf("err = %v, want ErrInvalidEntry", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.wantField) {
				t.Errorf("error %q does not name %q", msg, tc.wantField)
			}
			if !strings.Contains(msg, `"x1"`) && !strings.Contains(msg, `"x2"`) && !strings.Contains(msg, "#7") && !strings.Contains(msg, `""`) && !strings.Contains(msg, "has space") {
				t.Errorf("error %q does not name the entry", msg)
			}
		})
	}
}

func TestInvalidPutWritesNothing(t *testing.T) {
	s, path := mustOpenStore(t)
	mustSeed(t, s, fixtureEntries(t))
	before := exportJSON(t, s.Current())
	bad := fixtureEntries(t)[0]
	bad.Alg.Arity = 7
	if _, err := s.Put(context.Background(), bad); !errors.Is(err, ErrInvalidEntry) {
		t.Fatalf("put invalid: %v", err)
	}
	if _, err := s.Put(context.Background(), Entry{}); !errors.Is(err, ErrInvalidEntry) {
		t.Fatalf("put empty: %v", err)
	}
	if got := exportJSON(t, s.Current()); !bytes.Equal(got, before) {
		t.Fatal("state changed after refused puts")
	}
	_ = path
}

func TestCatalogErrorsNameFileEntryField(t *testing.T) {
	_, err := DecodeEntries([]byte(`[{"name":"ok"}]`), "bad.json")
	if err == nil || !strings.Contains(err.Error(), "bad.json") || !strings.Contains(err.Error(), `"ok"`) || !strings.Contains(err.Error(), "sem") {
		t.Fatalf("err = %v", err)
	}
	if _, err := DecodeEntries([]byte(`{"not":"an array"}`), "obj.json"); err == nil || !strings.Contains(err.Error(), "obj.json") {
		t.Fatalf("err = %v", err)
	}
}

func TestVerifyDetectsCorruption(t *testing.T) {
	ctx := context.Background()
	s, path := mustOpenStore(t)
	mustSeed(t, s, fixtureEntries(t))
	if _, err := s.Verify(ctx); err != nil {
		t.Fatalf("fresh store: %v", err)
	}
	// Flip a description inside one stored record, keeping valid JSON.
	err := s.DB().Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRecords)
		k, v := b.Cursor().First()
		v = bytes.Replace(v, []byte(`"description":"`), []byte(`"description":"X`), 1)
		return b.Put(append([]byte(nil), k...), v)
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := s.Verify(ctx)
	if !errors.Is(err, ErrCorrupt) || len(rep.Problems) == 0 {
		t.Fatalf("verify after tamper: %v %+v", err, rep)
	}
	s.Close()
	if _, err := VerifyFile(ctx, path); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("VerifyFile after tamper: %v", err)
	}
	// A server must not start on a registry whose current version is corrupt.
	if _, err := Open(ctx, path, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open after tamper: %v, want ErrCorrupt", err)
	}
	// Undo the tamper with raw bbolt so the cleanup check can pass; that it
	// then passes shows the tamper was exactly what was caught.
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRecords)
		return b.ForEach(func(k, v []byte) error {
			fixed := bytes.Replace(v, []byte(`"description":"X`), []byte(`"description":"`), 1)
			if bytes.Equal(fixed, v) {
				return nil
			}
			return b.Put(append([]byte(nil), k...), fixed)
		})
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyFile(ctx, path); err != nil {
		t.Fatalf("after undoing the tamper: %v", err)
	}
}

// Editing an entry obtained from a snapshot must not change the snapshot.
func TestSnapshotEntriesAreCopies(t *testing.T) {
	s, _ := mustOpenStore(t)
	mustSeed(t, s, fixtureEntries(t))
	before := exportJSON(t, s.Current())
	c, _ := s.Current().Get("MOM_WZS")
	c.Alg.Params[1].Default = 99.0
	*c.Alg.Params[0].Min = 77
	c.Disc.Aliases[0] = "changed"
	c.Alg.Inputs[0] = "series"
	if after := exportJSON(t, s.Current()); !bytes.Equal(before, after) {
		t.Fatal("editing a returned entry changed the snapshot")
	}
	r := mustPut(t, s, c.Entry)
	if !r.Changed || r.Capability.Identity == mustGet(t, s, 1, "MOM_WZS").Identity {
		t.Fatalf("the edited entry was not stored as a change: %+v", r)
	}
}

func mustGet(t testing.TB, s *Store, v uint64, name string) Capability {
	t.Helper()
	snap, err := s.Version(context.Background(), v)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := snap.Get(name)
	if !ok {
		t.Fatalf("no %s in version %d", name, v)
	}
	return c
}

func TestParamTypeMismatch(t *testing.T) {
	for _, tc := range []struct {
		t      ParamType
		isStr  bool
		num    float64
		wantOK bool
	}{
		{ParamInt, false, 50, true}, {ParamInt, false, 50.5, false}, {ParamInt, true, 0, false}, {ParamInt, false, 1 << 54, false},
		{ParamFloat, false, 0.1, true}, {ParamFloat, true, 0, false},
		{ParamString, true, 0, true}, {ParamColumn, true, 0, true}, {ParamColumn, false, 1, false},
		{ParamType("complex"), false, 1, false},
	} {
		if got := tc.t.Mismatch(tc.isStr, tc.num); (got == "") != tc.wantOK {
			t.Errorf("%s.Mismatch(%v, %v) = %q, want ok=%v", tc.t, tc.isStr, tc.num, got, tc.wantOK)
		}
	}
}
