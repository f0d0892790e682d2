package registry

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
)

// TestDiscPatchChangesNoIdentity applies a patch to the built-in catalog
// and proves what SPEC §12 promises of suggestions: every identity and the
// registry hash stay as they were; only the named disc layers change.
func TestDiscPatchChangesNoIdentity(t *testing.T) {
	ctx := context.Background()
	s, _ := mustOpenStore(t)
	cat, err := BuiltinCatalog()
	if err != nil {
		t.Fatal(err)
	}
	mustSeed(t, s, cat)
	before := s.Current()
	mom, _ := before.Get("MOM_WZS")
	rev, _ := before.Get("MOM_REV")
	p := DiscPatch{Patch: PatchDisc, Registry: before.Registry(), Version: before.Version(), Changes: []DiscChange{
		{Name: "MOM_WZS", Identity: mom.Identity, AddAliases: []string{"keeps going up", "Momentum"}, AddTags: []string{"trend persistence"}},
		{Name: "MOM_REV", Identity: rev.Identity, RemoveAliases: []string{"fade"}, AddAliases: []string{"snap back"}},
	}}
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !IsDiscPatch(raw) {
		t.Fatal("IsDiscPatch = false for a patch")
	}
	back, err := DecodeDiscPatch(raw, "patch.json")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := back.Apply(before)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Apply(ctx, entries); err != nil {
		t.Fatal(err)
	}
	after := s.Current()
	if after.Version() != before.Version()+1 {
		t.Errorf("version %d → %d; want one new version", before.Version(), after.Version())
	}
	if after.Registry() != before.Registry() {
		t.Errorf("registry hash %s → %s", before.Registry(), after.Registry())
	}
	for _, c := range before.Capabilities() {
		a, ok := after.Get(c.Name)
		if !ok || a.Identity != c.Identity {
			t.Errorf("%s: identity %s → %s", c.Name, c.Identity, a.Identity)
		}
	}
	m, _ := after.Get("MOM_WZS")
	if !slices.Contains(m.Disc.Aliases, "keeps going up") || slices.Contains(m.Disc.Aliases, "Momentum") || !slices.Contains(m.Disc.Tags, "trend persistence") {
		t.Errorf("MOM_WZS disc after the patch: %+v (want the new alias and tag once, \"Momentum\" folded into \"momentum\")", m.Disc)
	}
	r, _ := after.Get("MOM_REV")
	if slices.Contains(r.Disc.Aliases, "fade") || !slices.Contains(r.Disc.Aliases, "snap back") {
		t.Errorf("MOM_REV aliases after the patch: %q", r.Disc.Aliases)
	}
}

func TestDiscPatchRefusesStaleOrUnknown(t *testing.T) {
	s, _ := mustOpenStore(t)
	cat, err := BuiltinCatalog()
	if err != nil {
		t.Fatal(err)
	}
	mustSeed(t, s, cat)
	snap := s.Current()
	rev, _ := snap.Get("MOM_REV")
	stale := DiscPatch{Patch: PatchDisc, Changes: []DiscChange{{Name: "MOM_WZS", Identity: rev.Identity, AddAliases: []string{"x y"}}}}
	if _, err := stale.Apply(snap); !errors.Is(err, ErrStalePatch) {
		t.Errorf("a change pinned to another identity: %v; want ErrStalePatch", err)
	}
	unknown := DiscPatch{Patch: PatchDisc, Changes: []DiscChange{{Name: "NOPE", Identity: rev.Identity}}}
	if _, err := unknown.Apply(snap); !errors.Is(err, ErrNotFound) {
		t.Errorf("a change naming no capability: %v; want ErrNotFound", err)
	}
	for _, doc := range []string{
		`{"patch":"sem","changes":[]}`,
		`{"patch":"disc","changes":[],"extra":1}`,
		`{"patch":"disc","changes":[]} {}`,
		`{"patch":"disc","changes":[{"name":"X","identity":"sha256:00","add_aliases":"one"}]}`,
	} {
		if _, err := DecodeDiscPatch([]byte(doc), "p"); !errors.Is(err, ErrInvalidEntry) {
			t.Errorf("DecodeDiscPatch(%s) = %v; want ErrInvalidEntry", doc, err)
		}
	}
	if IsDiscPatch([]byte(`{"name":"X","kind":"family"}`)) || IsDiscPatch([]byte(`[{"patch":"disc"}]`)) {
		t.Error("IsDiscPatch took an entry or an array for a patch")
	}
}

func FuzzDecodeDiscPatch(f *testing.F) {
	f.Add([]byte(`{"patch":"disc","registry":"sha256:ab","version":3,"changes":[{"name":"MOM_WZS","identity":"sha256:00","add_aliases":["a"]}]}`))
	f.Add([]byte(`{"patch":"disc","changes":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := DecodeDiscPatch(data, "fuzz")
		if err != nil {
			if !errors.Is(err, ErrInvalidEntry) {
				t.Fatalf("error outside the vocabulary: %v", err)
			}
			return
		}
		if !IsDiscPatch(data) || p.Patch != PatchDisc {
			t.Fatalf("decoded %+v from a document IsDiscPatch refuses", p)
		}
	})
}
