package fuzz

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/groundgate/groundgate/hashing"
)

// frameData is one data source a runtime case runs on: a hostile frame
// the fuzzer generates, or a file of the data root's base (bundled).
type frameData struct {
	name    string   // "constant", …, or the base file's path
	path    string   // where the executor reads it in the DataRoot
	header  string   // the header line
	lines   []string // the data lines, in order
	bundled bool
}

func (f *frameData) cols() []string {
	h := strings.Split(f.header, ",")
	return h[1:]
}

func (f *frameData) csv() []byte {
	var b bytes.Buffer
	b.WriteString(f.header)
	b.WriteByte('\n')
	for _, l := range f.lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// describe names the frame and its shape for a finding.
func (f *frameData) describe() string {
	return fmt.Sprintf("%s (%d rows × %d columns)", f.name, len(f.lines), len(f.cols()))
}

// subset is the frame restricted to some rows and columns (indices into
// lines and cols, in order), written under HostileDir by its content.
func (f *frameData) subset(rows, cols []int) *frameData {
	keep := func(cells []string) string {
		out := []string{cells[0]}
		for _, c := range cols {
			if c+1 < len(cells) {
				out = append(out, cells[c+1])
			} else {
				out = append(out, "")
			}
		}
		return strings.Join(out, ",")
	}
	g := &frameData{name: f.name, header: keep(strings.Split(f.header, ","))}
	for _, r := range rows {
		g.lines = append(g.lines, keep(strings.Split(f.lines[r], ",")))
	}
	sum := hashing.SumBLAKE3(g.csv()).String()
	g.path = fmt.Sprintf("%s/min/%s.csv", HostileDir, sum[len(sum)-16:])
	return g
}

// Hostile frames: small (at most 260 rows), so a case costs milliseconds,
// and each breaks one assumption a capability may make about its data.
// Columns are C1, C2, C3 (CARRY's default front and next contracts). They
// are fixed, not seeded: the same registry gives the same findings
// whatever the seed.
func hostileFrames() []*frameData {
	const n = 260
	walk := randomWalk(n, 3, 1)
	days := weekdays(time.Date(2015, 1, 2, 0, 0, 0, 0, time.UTC), n)
	cols3 := []string{"C1", "C2", "C3"}
	mk := func(name string, dates []time.Time, cols []string, cell func(r, c int) string) *frameData {
		f := &frameData{name: name, path: HostileDir + "/" + name + ".csv", header: "Date," + strings.Join(cols, ",")}
		for r, d := range dates {
			cells := []string{d.Format(time.DateOnly)}
			for c := range cols {
				cells = append(cells, cell(r, c))
			}
			f.lines = append(f.lines, strings.Join(cells, ","))
		}
		return f
	}
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	fromWalk := func(r, c int) string { return num(round4(walk[c][r])) }
	// gaps: runs of 10 weekdays, then a jump of four months.
	var gapDays []time.Time
	d := time.Date(2015, 1, 2, 0, 0, 0, 0, time.UTC)
	for len(gapDays) < 80 {
		if len(gapDays) > 0 && len(gapDays)%10 == 0 {
			d = d.AddDate(0, 4, 0)
		}
		for d.Weekday() == time.Saturday || d.Weekday() == time.Sunday {
			d = d.AddDate(0, 0, 1)
		}
		gapDays = append(gapDays, d)
		d = d.AddDate(0, 0, 1)
	}
	sparse := rand.New(rand.NewPCG(7, 7))
	holes := make([][]bool, 3)
	for c := range holes {
		holes[c] = make([]bool, n)
		for r := range holes[c] {
			holes[c][r] = sparse.IntN(2) == 0
		}
	}
	return []*frameData{
		mk("walk", days, cols3, fromWalk),
		mk("constant", days, cols3, func(r, c int) string { return "100" }),
		mk("all_na_column", days, cols3, func(r, c int) string {
			if c == 2 {
				return ""
			}
			return fromWalk(r, c)
		}),
		mk("one_row", days[:1], cols3, fromWalk),
		mk("short", days[:30], cols3, fromWalk),
		mk("gaps", gapDays, cols3, fromWalk),
		mk("non_positive", days, cols3, func(r, c int) string {
			// C1 wanders across zero, C2 is zero for a stretch then
			// negative, C3 stays positive.
			switch c {
			case 0:
				return num(round4(walk[0][r] - walk[0][0]))
			case 1:
				switch {
				case r >= n/2 && r < n/2+20:
					return "0"
				case r >= n/2+20:
					return num(-round4(walk[1][r]))
				}
			}
			return fromWalk(r, c)
		}),
		mk("single_asset", days, []string{"C1"}, fromWalk),
		mk("near_zero", days, cols3, func(r, c int) string {
			if c == 0 && r == n/2 {
				return "5e-324" // a bad print: the smallest subnormal
			}
			return fromWalk(r, c)
		}),
		mk("huge", days, cols3, func(r, c int) string { return num(walk[c][r] * 1e300) }),
		// Malformed files: the executor must refuse them by name (bad data).
		mk("duplicate_dates", append(slices.Clone(days[:20]), days[19:40]...), cols3, fromWalk),
		mk("text_cell", days[:40], cols3, func(r, c int) string {
			if r == 20 && c == 1 {
				return "n/a?"
			}
			return fromWalk(r, c)
		}),
		// Dates at the ends of the calendar, years apart.
		mk("extreme_dates", []time.Time{time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1, 1, 2, 0, 0, 0, 0, time.UTC),
			time.Date(1900, 2, 28, 0, 0, 0, 0, time.UTC), time.Date(2000, 2, 29, 0, 0, 0, 0, time.UTC),
			time.Date(9999, 12, 30, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)}, cols3, fromWalk),
		// Nothing but NA for the first 200 rows, then a short history.
		mk("leading_na", days, cols3, func(r, c int) string {
			if r < 200 {
				return ""
			}
			return fromWalk(r, c)
		}),
		mk("sparse", days, cols3, func(r, c int) string {
			if holes[c][r] {
				return ""
			}
			return fromWalk(r, c)
		}),
	}
}

func round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }

// randomWalk is cols geometric random walks of n prices from 100, from a
// fixed seed.
func randomWalk(n, cols int, seed uint64) [][]float64 {
	r := rand.New(rand.NewPCG(seed, seed))
	out := make([][]float64, cols)
	for c := range out {
		p := 100.0
		out[c] = make([]float64, n)
		for t := range out[c] {
			p *= math.Exp(0.01 * r.NormFloat64())
			out[c][t] = p
		}
	}
	return out
}

func weekdays(from time.Time, n int) []time.Time {
	var out []time.Time
	for d := from; len(out) < n; d = d.AddDate(0, 0, 1) {
		if d.Weekday() != time.Saturday && d.Weekday() != time.Sunday {
			out = append(out, d)
		}
	}
	return out
}

// maxBundledBytes bounds a base file the runtime tests read: larger ones
// are left out (they test the budget, not the capabilities).
const maxBundledBytes = 8 << 20

// bundledFrames lists the CSV files of the base (.csv, .csv.gz), sorted by
// path, outside HostileDir.
func bundledFrames(base fs.FS) ([]*frameData, error) {
	var paths []string
	err := fs.WalkDir(base, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable corner of the root is not ours to test
		}
		if d.IsDir() {
			if p == HostileDir || (p != "." && strings.HasPrefix(d.Name(), ".")) {
				return fs.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".csv") || strings.HasSuffix(p, ".csv.gz") {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("fuzz: list the data root: %w", err)
	}
	sort.Strings(paths)
	var out []*frameData
	for _, p := range paths {
		f, err := readBundled(base, p)
		if err != nil || f == nil {
			continue // unreadable or empty: the executor's own tests cover bad files
		}
		out = append(out, f)
	}
	return out, nil
}

func readBundled(base fs.FS, p string) (*frameData, error) {
	fh, err := base.Open(p)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	var r io.Reader = io.LimitReader(fh, maxBundledBytes+1)
	if path.Ext(p) == ".gz" {
		z, err := gzip.NewReader(r)
		if err != nil {
			return nil, err
		}
		defer z.Close()
		r = io.LimitReader(z, maxBundledBytes+1)
	}
	raw, err := io.ReadAll(r)
	if err != nil || len(raw) > maxBundledBytes {
		return nil, fmt.Errorf("%s: unreadable or too large", p)
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	f := &frameData{name: p, path: p, bundled: true}
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if f.header == "" {
			f.header = line
			continue
		}
		if line != "" {
			f.lines = append(f.lines, line)
		}
	}
	if sc.Err() != nil || f.header == "" || len(f.lines) == 0 {
		return nil, nil
	}
	return f, nil
}

// HostileFrames are the generated frames the runtime tests run every
// capability on, by name, as CSV (for seeding other fuzzers and docs).
func HostileFrames() map[string][]byte {
	out := map[string][]byte{}
	for _, f := range hostileFrames() {
		out[f.name] = f.csv()
	}
	return out
}
