package ui_test

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/ui"
)

// sources are the inputs of a build besides src/**, as scripts/build.mjs
// lists them.
var sources = []string{"index.html", "package.json", "package-lock.json", "tsconfig.json", "vite.config.ts", "scripts/build.mjs"}

// sourcesDigest is scripts/build.mjs's digest: SHA-256 over one line per
// source file, sorted by path, "path sha256-hex\n".
func sourcesDigest(t *testing.T) string {
	files := slices.Clone(sources)
	err := filepath.WalkDir("src", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, filepath.ToSlash(p))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	var b strings.Builder
	for _, f := range files {
		raw, err := os.ReadFile(filepath.FromSlash(f))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %x\n", f, sha256.Sum256(raw))
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}

// The committed build was made from the committed sources: editing a
// source without `npm run build` (in ui/) fails here, without Node.
func TestBuildMatchesSources(t *testing.T) {
	recorded, err := fs.ReadFile(ui.Dist, "sources.sha256")
	if err != nil {
		t.Fatalf("the embedded build has no sources.sha256: run npm run build in ui/: %v", err)
	}
	if got, want := sourcesDigest(t), strings.TrimSpace(string(recorded)); got != want {
		t.Fatalf("ui/dist was built from other sources (recorded %s, the sources now %s): run npm ci && npm run build in ui/ and commit dist/", want, got)
	}
}

// SPEC §18's budget: every asset, gzipped, 500 KB at most.
func TestAssetsGzippedUnder500KB(t *testing.T) {
	total := 0
	err := fs.WalkDir(ui.Dist, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := fs.ReadFile(ui.Dist, p)
		if err != nil {
			return err
		}
		var b bytes.Buffer
		w, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		_, _ = w.Write(raw)
		_ = w.Close()
		total += b.Len()
		t.Logf("%s: %d bytes, %d gzipped", p, len(raw), b.Len())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("total gzipped: %d bytes", total)
	if total > 500_000 {
		t.Fatalf("the UI's assets are %d bytes gzipped; the budget is 500000", total)
	}
	if _, err := fs.Stat(ui.Dist, "index.html"); err != nil {
		t.Fatal("no index.html in the build")
	}
}
