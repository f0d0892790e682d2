package testio

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ShortPriceRoot makes a data root holding one 120-row daily price file,
// spot/daily.csv, in the bundled files' shape: small enough that a whole
// fuzz run or execution over it takes seconds.
func ShortPriceRoot(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("Date,Price\n")
	day := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	p := 50.0
	for i := range 120 {
		p += float64(i%7) - 3.1
		b.WriteString(day.AddDate(0, 0, i).Format(time.DateOnly) + "," + strconv.FormatFloat(p, 'f', 2, 64) + "\n")
	}
	if err := os.MkdirAll(filepath.Join(dir, "spot"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "spot", "daily.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
