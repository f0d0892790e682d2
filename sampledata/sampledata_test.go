package sampledata

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/execution/frame"
)

// Every bundled file is byte-identical to the shared data set (SHA256SUMS)
// and loads as a frame.
func TestBundledFiles(t *testing.T) {
	sums, err := os.Open("SHA256SUMS")
	if err != nil {
		t.Fatal(err)
	}
	defer sums.Close()
	want := map[string]string{}
	sc := bufio.NewScanner(sums)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		want[f[1]] = f[0]
	}
	seen := 0
	err = fs.WalkDir(FS(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		seen++
		b, err := fs.ReadFile(FS(), path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != want[path] {
			t.Errorf("%s: sha256 %s, SHA256SUMS says %q", path, got, want[path])
		}
		var r io.Reader = strings.NewReader(string(b))
		if strings.HasSuffix(path, ".gz") {
			if r, err = gzip.NewReader(r); err != nil {
				return err
			}
		}
		fr, err := frame.Load(r, path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return nil
		}
		if fr.Len() < 1000 || fr.Width() < 1 {
			t.Errorf("%s: %d rows × %d columns", path, fr.Len(), fr.Width())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen != len(want) {
		t.Fatalf("%d files bundled, SHA256SUMS lists %d", seen, len(want))
	}
}
