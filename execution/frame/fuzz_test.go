package frame

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad checks that Load never panics, that every failure is a
// *ParseError wrapping a sentinel, and that every success is a valid frame:
// strictly increasing dates, rectangular columns, unique non-empty names,
// no infinite value.
// It is seeded from the small files in testdata/.
func FuzzLoad(f *testing.F) {
	seeds, err := filepath.Glob(filepath.Join("testdata", "*.csv"))
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no seeds in testdata: %v", err)
	}
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("Date,A\n\"2020-01-02\",\"1\"\"\"\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := Load(bytes.NewReader(data), "fuzz.csv")
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Err == nil {
				t.Fatalf("error %v is not a *ParseError with a sentinel", err)
			}
			if fr != nil {
				t.Fatal("frame returned with an error")
			}
			_ = err.Error()
			return
		}
		if fr.Len() == 0 || fr.Width() == 0 {
			t.Fatalf("empty frame %d×%d loaded without error", fr.Len(), fr.Width())
		}
		dates := fr.Dates()
		for i := 1; i < len(dates); i++ {
			if dates[i] <= dates[i-1] {
				t.Fatalf("dates not strictly increasing at row %d: %s, %s", i, dates[i-1], dates[i])
			}
		}
		seen := map[string]bool{}
		for j, name := range fr.Names() {
			if name == "" || seen[name] {
				t.Fatalf("column %d has an empty or repeated name %q", j, name)
			}
			seen[name] = true
			if len(fr.Column(j)) != len(dates) {
				t.Fatalf("column %q has %d rows, index %d", name, len(fr.Column(j)), len(dates))
			}
			for i, v := range fr.Column(j) {
				if math.IsInf(v, 0) {
					t.Fatalf("column %q row %d is %v", name, i, v)
				}
			}
		}
		// Every date round-trips through its ISO form.
		for _, d := range dates {
			if back, err := ParseDate(d.String()); err != nil || back != d {
				t.Fatalf("date %s does not round-trip: %v", d, err)
			}
		}
	})
}
