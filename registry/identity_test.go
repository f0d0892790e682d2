package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/internal/testio"
)

var update = flag.Bool("update", false, "rewrite golden files")

// richEntry has a non-zero value in every field, so that every mutation
// below starts from a meaningful value.
func richEntry() Entry {
	lo, hi := 1.0, 500.0
	return Entry{
		Name: "RICH", Kind: KindFamily,
		Sem: Semantic{Pure: true, Deterministic: true, Commutative: true, Associative: true, Idempotent: true, Orientation: OrientPositive, Stateful: true,
			Contract: &contract.Contract{Pre: []contract.Clause{{Name: "covers", Expr: "data.rows > params.window", Message: "m"}},
				Post: []contract.Clause{{Name: "finite", Expr: "result.finite_share == 1.0", Message: "m"}}}},
		Alg: Algebraic{Inputs: []string{"frame", "series"}, Outputs: []string{"pnl"}, Arity: 2, Reversible: true,
			Params: []Param{{Name: "window", Type: ParamInt, Default: 20.0, Min: &lo, Max: &hi, Doc: "look-back"},
				{Name: "front", Type: ParamColumn, Default: "C1", Doc: "front contract"}}},
		Impl: Implementation{Engine: "groundgate/v1", IR: IRStrategy, Fusable: true, Expr: "(volsize (const 1) (dlog x) 60 0.1 1 1)"},
		Disc: Discovery{Aliases: []string{"rich"}, Description: "d", Tags: []string{"t"}, Examples: []string{"e"}, Deprecated: true},
	}
}

func cloneEntry(t testing.TB, e Entry) Entry {
	t.Helper()
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var c Entry
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// leaves calls visit for every leaf of v (a pointer to a struct), with a
// path and a function that mutates that leaf in place. Slices get an extra
// "append" mutation; nil pointers and interfaces get set.
func leaves(v reflect.Value, path string, visit func(path string, mutate func())) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.Type().Elem().Kind() == reflect.Struct {
			if v.IsNil() {
				visit(path, func() { v.Set(reflect.New(v.Type().Elem())) })
				return
			}
			leaves(v.Elem(), path, visit)
			return
		}
		visit(path, func() {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
				v.Elem().SetFloat(7.5)
				return
			}
			v.Elem().SetFloat(v.Elem().Float() + 1)
		})
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			tag := strings.Split(v.Type().Field(i).Tag.Get("json"), ",")[0]
			if tag == "-" {
				continue // Entry.Tool: a tool entry's layers (TestToolIdentity)
			}
			leaves(v.Field(i), path+"."+tag, visit)
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			leaves(v.Index(i), fmt.Sprintf("%s[%d]", path, i), visit)
		}
		visit(path+"+append", func() {
			v.Set(reflect.Append(v, reflect.Zero(v.Type().Elem())))
		})
	case reflect.Bool:
		visit(path, func() { v.SetBool(!v.Bool()) })
	case reflect.Int:
		visit(path, func() { v.SetInt(v.Int() + 1) })
	case reflect.Float64:
		visit(path, func() { v.SetFloat(v.Float() + 1) })
	case reflect.String:
		visit(path, func() { v.SetString(v.String() + "~") })
	case reflect.Interface:
		visit(path, func() {
			switch x := v.Interface().(type) {
			case float64:
				v.Set(reflect.ValueOf(x + 1))
			case string:
				v.Set(reflect.ValueOf(x + "~"))
			default:
				v.Set(reflect.ValueOf(3.0))
			}
		})
	default:
		panic("leaves: unhandled kind " + v.Kind().String() + " at " + path)
	}
}

// Changing any field of sem, alg or impl changes the identity; changing any
// field of disc, the name, the kind, or nothing, changes neither the
// identity nor the registry hash.
func TestIdentityCoversExactlyTheBehaviouralLayers(t *testing.T) {
	base := richEntry()
	baseID, err := base.Identity()
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	leaves(reflect.ValueOf(&base), "", func(p string, _ func()) { paths = append(paths, p) })
	if len(paths) < 30 {
		t.Fatalf("only %d leaves found", len(paths))
	}
	counted := map[string]int{}
	for i, p := range paths {
		e := cloneEntry(t, base)
		j := 0
		leaves(reflect.ValueOf(&e), "", func(_ string, mutate func()) {
			if j == i {
				mutate()
			}
			j++
		})
		id, err := e.Identity()
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		layer := strings.SplitN(strings.TrimPrefix(p, "."), ".", 2)[0]
		layer = strings.SplitN(layer, "+", 2)[0]
		counted[layer]++
		switch layer {
		case "sem", "alg", "impl":
			if id == baseID {
				t.Errorf("changing %s left the identity unchanged", p)
			}
		case "disc", "name", "kind":
			if id != baseID {
				t.Errorf("changing %s changed the identity", p)
			}
			if hashing.RegistryHash([]hashing.Digest{id}) != hashing.RegistryHash([]hashing.Digest{baseID}) {
				t.Errorf("changing %s changed the registry hash", p)
			}
		default:
			t.Errorf("leaf %s in no known layer", p)
		}
	}
	t.Logf("%d leaves mutated: %v", len(paths), counted)
	for _, l := range []string{"sem", "alg", "impl", "disc", "name", "kind"} {
		if counted[l] == 0 {
			t.Errorf("no leaf mutated in %s", l)
		}
	}
	// No change at all: identical identity.
	if id, _ := cloneEntry(t, base).Identity(); id != baseID {
		t.Error("a copy has another identity")
	}
}

// The golden vectors pin identities and the registry hash of the fixture
// entries; the same numbers must come out of the independent Python
// implementation in testdata/jcs_identity.py.
func TestGoldenIdentities(t *testing.T) {
	es := fixtureEntries(t)
	var b strings.Builder
	var ids []hashing.Digest
	for _, e := range es {
		id, err := e.Identity()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		fmt.Fprintf(&b, "%s %s\n", e.Name, id)
	}
	fmt.Fprintf(&b, "registry %s\n", hashing.RegistryHash(ids))
	got := b.String()
	const golden = "testdata/identities.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run TestGoldenIdentities -update)", err)
	}
	if got != string(want) {
		t.Fatalf("identities differ from %s:\n got\n%s\nwant\n%s", golden, got, want)
	}

	// The independent implementation reads the published export shape.
	s, _ := mustOpenStore(t)
	mustSeed(t, s, es)
	export, err := json.Marshal(s.Current().Export())
	if err != nil {
		t.Fatal(err)
	}
	py := testio.Python(t)
	cmd := exec.Command(py, "testdata/jcs_identity.py")
	cmd.Stdin = bytes.NewReader(export)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	// The export is sorted by name; the golden file is in fixture order.
	if sortLines(string(out)) != sortLines(got) {
		t.Fatalf("independent recomputation differs:\npython\n%s\ngo\n%s", out, got)
	}
	if !strings.Contains(string(out), "registry "+s.Current().Registry().String()) {
		t.Fatalf("python registry hash differs from the store's %s", s.Current().Registry())
	}
	_ = context.Background
}

func sortLines(s string) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	for i := range l {
		for j := i + 1; j < len(l); j++ {
			if l[j] < l[i] {
				l[i], l[j] = l[j], l[i]
			}
		}
	}
	return strings.Join(l, "\n")
}

func FuzzDecodeEntry(f *testing.F) {
	for _, r := range entryRecords(f) {
		f.Add([]byte(r))
	}
	f.Add([]byte(`{"name":"x","kind":"metric"}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		e, err := DecodeEntry(in, "#fuzz")
		if err != nil {
			return
		}
		// Decoded entries are valid, and decode ∘ encode round-trips to the
		// same canonical record and identity.
		if err := e.Validate(); err != nil {
			t.Fatalf("decoded entry fails validation: %v", err)
		}
		rec, err := e.recordBytes()
		if err != nil {
			t.Fatal(err)
		}
		e2, err := DecodeEntry(rec, "#re")
		if err != nil {
			t.Fatalf("canonical record does not decode: %v\n%s", err, rec)
		}
		rec2, _ := e2.recordBytes()
		if !bytes.Equal(rec, rec2) {
			t.Fatalf("round trip changed the record:\n%s\n%s", rec, rec2)
		}
		id1, _ := e.Identity()
		id2, _ := e2.Identity()
		if id1 != id2 {
			t.Fatal("round trip changed the identity")
		}
	})
}
