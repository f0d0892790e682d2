//go:build linux

package registry

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// An open leaves no page of the file mapped into the process: the current
// version's entries live on the heap, what the open read of the file is
// in the page cache anyway, and counting it again as the process's
// resident memory is what made a server of 100,000 entries start 40–60
// MB larger.
func TestOpenReleasesFilePages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "registry.db")
	s := mustOpen(t, path)
	mustSeed(t, s, synthEntries(t, 5000))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, ro := range []bool{false, true} {
		s, err := Open(t.Context(), path, Options{ReadOnly: ro})
		if err != nil {
			t.Fatal(err)
		}
		rss := mappedKB(t, path)
		if got := s.Current().Info.Count; got != 5000 {
			t.Errorf("read-only %v: %d entries, want 5000", ro, got)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		// A page or two: bbolt reads its meta page again at a commit.
		if rss > 8 {
			t.Errorf("read-only %v: %d kB of the file resident after an open", ro, rss)
		}
	}
}

// mappedKB is the resident memory of this process's mappings of the file
// at path, from /proc/self/smaps.
func mappedKB(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kb, in, found := 0, false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) >= 5 && strings.Contains(fields[0], "-"): // a mapping's header
			in = len(fields) == 6 && fields[5] == path
			found = found || in
		case in && fields[0] == "Rss:":
			n, err := strconv.Atoi(fields[1])
			if err != nil {
				t.Fatal(err)
			}
			kb += n
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !found {
		t.Fatalf("%s is not mapped", path)
	}
	return kb
}
