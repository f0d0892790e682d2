package discover

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// textDirs lists the index directories in dir.
func textDirs(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		if strings.HasPrefix(de.Name(), textPrefix) {
			out = append(out, de.Name())
		}
	}
	return out
}

// readyText waits for d's current text index and returns the directory
// it lives in.
func readyText(t *testing.T, d *Discoverer) string {
	t.Helper()
	if _, err := d.cur.text.wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := d.cur.text.relevance(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := d.Ready(); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	return d.cur.text.dir
}

// TestTextIndexOnDisk: a text index kept in a directory gives the same
// results as one in memory; a restart opens it instead of rebuilding it,
// also after incremental updates; a missing stamp (a crash mid-update), a
// stale one, a foreign format and an unreadable index are rebuilt; old
// directories are removed.
func TestTextIndexOnDisk(t *testing.T) {
	ctx := context.Background()
	s, _ := mustOpenStore(t)
	dir := filepath.Join(t.TempDir(), "text")
	open := func() *Discoverer {
		t.Helper()
		d, err := New(ctx, s, s.Engine(), Options{TextIndexDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	}
	terms := append(probeTerms(s.Current()), "reward per unit", "rolling mean", "log returns", "winners keep on winning")
	prompts := allPrompts(t)
	inMemory := func() map[string][]byte {
		t.Helper()
		m := mustNew(t, s)
		defer m.Close()
		return snapshotResults(t, m, terms, prompts)
	}

	d := open()
	built := readyText(t, d)
	if got := textDirs(t, dir); !slices.Equal(got, []string{built}) {
		t.Fatalf("index directories %v, want [%s]", got, built)
	}
	diffResults(t, "on disk vs in memory", inMemory(), snapshotResults(t, d, terms, prompts))

	// A restart opens the same directory.
	d.Close()
	d = open()
	if got := readyText(t, d); got != built {
		t.Fatalf("restart built %s, want the kept %s opened", got, built)
	}
	diffResults(t, "reopened", inMemory(), snapshotResults(t, d, terms, prompts))

	// An incremental update keeps the directory and restamps it.
	mom, _ := s.Current().Get("MOM_WZS")
	e := mom.Entry
	e.Disc.Aliases = append(slices.Clone(e.Disc.Aliases), "winners keep on winning")
	e.Disc.Description = "Winners keep on winning: " + e.Disc.Description
	if _, err := s.Put(ctx, e); err != nil {
		t.Fatal(err)
	}
	updated := snapshotResults(t, d, terms, prompts)
	if d.cur.text.dir != built || d.cur.updates != 1 {
		t.Fatalf("update: directory %s, %d updates", d.cur.text.dir, d.cur.updates)
	}
	diffResults(t, "updated vs in memory", inMemory(), updated)
	d.Close()
	d = open()
	if got := readyText(t, d); got != built {
		t.Fatalf("restart after an update built %s, want %s opened", got, built)
	}
	diffResults(t, "reopened after update", updated, snapshotResults(t, d, terms, prompts))
	d.Close()

	// Each of these makes the kept index unusable: the next start
	// rebuilds it in a new directory and removes the old one.
	stampPath := filepath.Join(dir, stampFile)
	spoil := []struct {
		name string
		do   func(t *testing.T, kept string)
	}{
		{"no stamp (crash mid-update)", func(t *testing.T, _ string) {
			if err := os.Remove(stampPath); err != nil {
				t.Fatal(err)
			}
		}},
		{"stale version", func(t *testing.T, _ string) { rewriteStamp(t, stampPath, `"version":2`, `"version":1`) }},
		{"other format", func(t *testing.T, _ string) { rewriteStamp(t, stampPath, `"format":1`, `"format":0`) }},
		{"unreadable index", func(t *testing.T, kept string) {
			if err := os.Remove(filepath.Join(dir, kept, "bleve", "index_meta.json")); err != nil {
				t.Fatal(err)
			}
		}},
		{"stamp naming a path outside", func(t *testing.T, kept string) { rewriteStamp(t, stampPath, kept, "../"+kept) }},
	}
	kept := built
	for _, sp := range spoil {
		sp.do(t, kept)
		d := open()
		got := readyText(t, d)
		if got == kept {
			t.Errorf("%s: the kept index was opened", sp.name)
		}
		if dirs := textDirs(t, dir); !slices.Equal(dirs, []string{got}) {
			t.Errorf("%s: directories %v, want only %s", sp.name, dirs, got)
		}
		diffResults(t, sp.name, updated, snapshotResults(t, d, terms, prompts))
		d.Close()
		kept = got
	}
}

func rewriteStamp(t *testing.T, path, old, new string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), old) {
		t.Fatalf("stamp %s has no %s", raw, old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(raw), old, new, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestLazyText: with LazyText, queries the equality tiers settle never
// make the text index; the first keyword look-up inside texts does, and
// gives what an eager index gives.
func TestLazyText(t *testing.T) {
	ctx := context.Background()
	s, _ := mustOpenStore(t)
	d, err := New(ctx, s, s.Engine(), Options{LazyText: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	eager := mustNew(t, s)
	defer eager.Close()

	settled := []Query{
		// One word ("crude") is left for the relevance tier, which reads two
		// or more: nothing here needs the text indexes.
		{Prompt: "Run a momentum strategy on crude and score it by Sharpe ratio"},
		{Terms: []string{"MOM_WZS", "sharpe ratio", "momentum"}},
	}
	for _, q := range settled {
		if got, want := mustJSON(t, mustDiscover(t, d, q)), mustJSON(t, mustDiscover(t, eager, q)); string(got) != string(want) {
			t.Errorf("%+v: lazy %s, eager %s", q, got, want)
		}
	}
	time.Sleep(10 * time.Millisecond) // a build started by mistake would be under way
	select {
	case <-d.cur.text.ready:
		t.Fatal("the text index was made for queries that do not need it")
	case <-d.cur.text.relReady:
		t.Fatal("the relevance index was made for queries that do not need it")
	default:
	}
	// Words for the relevance tier only ("wti crude"): its index is made,
	// not the bleve index.
	rq := Query{Prompt: "Run a momentum strategy on WTI crude and score it by Sharpe ratio"}
	if got, want := mustJSON(t, mustDiscover(t, d, rq)), mustJSON(t, mustDiscover(t, eager, rq)); string(got) != string(want) {
		t.Errorf("relevance look-up: lazy %s, eager %s", got, want)
	}
	time.Sleep(10 * time.Millisecond)
	select {
	case <-d.cur.text.ready:
		t.Fatal("the text index was made for a relevance look-up")
	default:
	}
	q := Query{Terms: []string{"reward per unit", "rolling mean"}}
	if got, want := mustJSON(t, mustDiscover(t, d, q)), mustJSON(t, mustDiscover(t, eager, q)); string(got) != string(want) {
		t.Errorf("keyword look-up: lazy %s, eager %s", got, want)
	}
	select {
	case <-d.cur.text.ready:
	default:
		t.Fatal("a keyword look-up returned before the text index was made")
	}
}

// TestSync: a command that changes the registry leaves the kept index at
// the new version (what `registry put` does), updating it in place for a
// small change and building it afresh for a change of more names than it
// holds (a bulk load); either way a restart opens it, and it answers as
// an index built in memory does.
func TestSync(t *testing.T) {
	ctx := context.Background()
	s, _ := mustOpenStore(t)
	dir := filepath.Join(t.TempDir(), "text")
	open := func(lazy bool) *Discoverer {
		t.Helper()
		d, err := New(ctx, s, s.Engine(), Options{TextIndexDir: dir, LazyText: lazy})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	}
	stamped := func() textStamp {
		t.Helper()
		st, ok := (&textDir{path: dir}).readStamp()
		if !ok {
			t.Fatal("no stamp")
		}
		return st
	}

	// A small change, as `registry put` makes it: the discoverer opened
	// lazily before the change, synced after it.
	d := open(true)
	mom, _ := s.Current().Get("MOM_WZS")
	e := mom.Entry
	e.Disc.Aliases = append(slices.Clone(e.Disc.Aliases), "winners keep on winning")
	if _, err := s.Put(ctx, e); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	small := stamped()
	if small.Version != s.Current().Version() || d.cur.updates != 1 || small.Dir != d.cur.text.dir {
		t.Fatalf("after a small change: stamp %+v, %d updates, index in %s; want version %d updated in place",
			small, d.cur.updates, d.cur.text.dir, s.Current().Version())
	}
	d.Close()

	// A bulk change: more names than the index holds.
	n := max(batchSize, len(s.Current().Capabilities())) + 1
	d = open(true)
	if _, _, err := s.Apply(ctx, syntheticEntries(n)); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	bulk := stamped()
	if bulk.Version != s.Current().Version() || d.cur.updates != 0 || bulk.Dir == small.Dir || bulk.Dir != d.cur.text.dir {
		t.Fatalf("after a bulk change of %d names: stamp %+v, %d updates, index in %s; want version %d built afresh",
			n, bulk, d.cur.updates, d.cur.text.dir, s.Current().Version())
	}
	d.Close()
	// The relevance tier's index of the new version is kept too, so the
	// next start reads it rather than analysing every entry.
	vec, err := defaultVectors()
	if err != nil {
		t.Fatal(err)
	}
	if (&textDir{path: dir, log: slog.New(slog.DiscardHandler)}).loadRelevance(ctx, s.Current(), vec) == nil {
		t.Fatalf("after a bulk change: no relevance index of version %d kept", s.Current().Version())
	}

	d = open(false)
	if got := readyText(t, d); got != bulk.Dir {
		t.Fatalf("restart built %s, want the synced %s opened", got, bulk.Dir)
	}
	terms := append(probeTerms(s.Current()), "winners keep on winning")
	m := mustNew(t, s)
	defer m.Close()
	diffResults(t, "synced vs in memory", snapshotResults(t, m, terms, nil), snapshotResults(t, d, terms, nil))
}
