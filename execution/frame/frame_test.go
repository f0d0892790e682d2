package frame

import (
	"bytes"
	"compress/gzip"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// realData is ../testdata, shared by the frame and kernel tests.
const realData = "../testdata"

func mustLoad(t testing.TB, src string) *Frame {
	t.Helper()
	f, err := Load(strings.NewReader(src), "test.csv")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return f
}

func d(s string) Date {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return DateOf(t.Year(), t.Month(), t.Day())
}

// same compares float slices with NaN equal to NaN.
func same(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && !(math.IsNaN(a[i]) && math.IsNaN(b[i])) {
			return false
		}
	}
	return true
}

func TestDate(t *testing.T) {
	tests := []struct {
		date    Date
		iso     string
		weekday time.Weekday
	}{
		{0, "1970-01-01", time.Thursday},
		{-1, "1969-12-31", time.Wednesday},
		{1, "1970-01-02", time.Friday},
		{18372, "2020-04-20", time.Monday}, // 50 years of 365 days + 12 leap days + 110 days
		{-719162, "0001-01-01", time.Monday},
		{2932896, "9999-12-31", time.Friday},
	}
	for _, tt := range tests {
		if got := tt.date.String(); got != tt.iso {
			t.Errorf("Date(%d).String() = %s, want %s", tt.date, got, tt.iso)
		}
		if got := tt.date.Weekday(); got != tt.weekday {
			t.Errorf("Date(%d).Weekday() = %s, want %s", tt.date, got, tt.weekday)
		}
		if got := tt.date.Weekday(); got != tt.date.Time().Weekday() {
			t.Errorf("Date(%d).Weekday() = %s, time says %s", tt.date, got, tt.date.Time().Weekday())
		}
		if got, err := ParseDate(tt.iso); err != nil || got != tt.date {
			t.Errorf("ParseDate(%s) = %d, %v, want %d", tt.iso, got, err, tt.date)
		}
	}
}

func TestParseDate(t *testing.T) {
	good := []struct {
		in   string
		want string
	}{
		{"2006-01-02", "2006-01-02"},
		{"1/2/2006", "2006-01-02"},
		{"01/02/2006", "2006-01-02"},
		{"12/31/1999", "1999-12-31"},
		{"3/10/2004", "2004-03-10"},
		{"2000-02-29", "2000-02-29"}, // divisible by 400: leap
		{"2/29/2024", "2024-02-29"},
	}
	for _, tt := range good {
		got, err := ParseDate(tt.in)
		if err != nil || got.String() != tt.want {
			t.Errorf("ParseDate(%q) = %s, %v, want %s", tt.in, got, err, tt.want)
		}
	}
	bad := []string{
		"", "2006-1-02", "2006-01-2", "06-01-02", "2006/01/02", "2006-13-01", "2006-00-10",
		"2006-01-00", "2006-02-29", "1900-02-29", "2/30/2020", "13/1/2020", "1/2/06",
		"001/2/2006", "1/2/20066", "1/2", "1//2006", "a/2/2006", "0000-01-01", "2006-01-02T00:00",
		" 2006-01-02", "+1/2/2006", "2006-01-0x",
	}
	for _, in := range bad {
		if got, err := ParseDate(in); err == nil {
			t.Errorf("ParseDate(%q) = %s, want an error", in, got)
		}
	}
}

func TestLoad(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name  string
		src   string
		dates []string
		names []string
		cols  [][]float64
	}{
		{
			name:  "iso comma LF",
			src:   "Date,A,B\n2020-01-02,1.5,2\n2020-01-03,,-3e2\n",
			dates: []string{"2020-01-02", "2020-01-03"},
			names: []string{"A", "B"},
			cols:  [][]float64{{1.5, nan}, {2, -300}},
		},
		{
			name:  "us semicolon CRLF, NA tokens, blank line, no final newline",
			src:   "Date;Close;Volume\r\n1/2/2020;NA;100\r\n\r\n1/3/2020;N/A;.\r\n12/31/2020;NaN;+.5",
			dates: []string{"2020-01-02", "2020-01-03", "2020-12-31"},
			names: []string{"Close", "Volume"},
			cols:  [][]float64{{nan, nan, nan}, {100, nan, 0.5}},
		},
		{
			name:  "BOM, quotes, spaces, empty date header, escaped quote",
			src:   "\uFEFF,\"Adj Close\",\"x,y\", \"say \"\"hi\"\"\" \n\"2006-01-02\", \"1.0\" ,2,3.\n2006-01-03,-0,\"4\",-1E-2\n",
			dates: []string{"2006-01-02", "2006-01-03"},
			names: []string{"Adj Close", "x,y", `say "hi"`},
			cols:  [][]float64{{1, math.Copysign(0, -1)}, {2, 4}, {3, -0.01}},
		},
		{
			name:  "mixed date formats, negative price",
			src:   "Date,Price\n2020-04-17,18.27\n4/20/2020,-36.98\n2020-04-21,8.91\n",
			dates: []string{"2020-04-17", "2020-04-20", "2020-04-21"},
			names: []string{"Price"},
			cols:  [][]float64{{18.27, -36.98, 8.91}},
		},
		{
			name:  "leading blank lines, tabs around fields",
			src:   "\n \t\nDate,A\n\t2020-01-02\t, 7 \n",
			dates: []string{"2020-01-02"},
			names: []string{"A"},
			cols:  [][]float64{{7}},
		},
		{
			name:  "all-NA column",
			src:   "Date,A,B\n2020-01-02,,1\n2020-01-03,,2\n",
			dates: []string{"2020-01-02", "2020-01-03"},
			names: []string{"A", "B"},
			cols:  [][]float64{{nan, nan}, {1, 2}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mustLoad(t, tt.src)
			if f.Len() != len(tt.dates) || f.Width() != len(tt.names) {
				t.Fatalf("shape %d×%d, want %d×%d", f.Len(), f.Width(), len(tt.dates), len(tt.names))
			}
			for i, s := range tt.dates {
				if f.Dates()[i] != d(s) {
					t.Errorf("date %d = %s, want %s", i, f.Dates()[i], s)
				}
			}
			for j, n := range tt.names {
				if f.Names()[j] != n {
					t.Errorf("name %d = %q, want %q", j, f.Names()[j], n)
				}
				if !same(f.Column(j), tt.cols[j]) {
					t.Errorf("column %q = %v, want %v", n, f.Column(j), tt.cols[j])
				}
				// Signed zero is kept as written.
				for i := range tt.cols[j] {
					if math.Signbit(f.Column(j)[i]) != math.Signbit(tt.cols[j][i]) {
						t.Errorf("column %q row %d: sign bit differs", n, i)
					}
				}
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	long := "Date,A\n2020-01-02," + strings.Repeat("1", MaxLineBytes) + "\n"
	wide := "Date" + strings.Repeat(",c", MaxColumns+1) + "\n"
	tests := []struct {
		name   string
		src    string
		err    error
		line   int
		column int
		col    string // header name of the column
	}{
		{"empty", "", ErrEmpty, 0, 0, ""},
		{"blank lines only", "\n\r\n  \n", ErrEmpty, 0, 0, ""},
		{"header only", "Date,A\n", ErrNoRows, 1, 0, ""},
		{"no data column", "Date\n2020-01-02\n", ErrNoColumns, 1, 0, ""},
		{"both delimiters", "Date,A;B\n", ErrDelimiter, 1, 0, ""},
		{"empty column name", "Date,A,,B\n", ErrColumnName, 1, 3, ""},
		{"duplicate column", "Date,A,B,A\n", ErrDuplicateColumn, 1, 4, "A"},
		{"too many columns", wide, ErrTooManyColumns, 1, 0, ""},
		{"line too long", long, ErrLineTooLong, 2, 0, ""},
		{"unterminated quote", "Date,A\n2020-01-02,\"1\n", ErrQuote, 2, 2, "A"},
		{"bare quote", "Date,A\n2020-01-02,1\"2\n", ErrQuote, 2, 2, "A"},
		{"text after quote", "Date,A,B\n2020-01-02,\"1\"x,2\n", ErrQuote, 2, 2, "A"},
		{"ragged short", "Date,A,B\n2020-01-02,1,2\n2020-01-03,1\n", ErrRagged, 3, 0, ""},
		{"ragged long", "Date,A\n2020-01-02,1,2\n", ErrRagged, 2, 0, ""},
		{"trailing delimiter", "Date,A\n2020-01-02,1,\n", ErrRagged, 2, 0, ""},
		{"bad date", "Date,A\n2020-01-02,1\n2020-02-30,2\n", ErrDate, 3, 1, "Date"},
		{"empty date", "Date,A\n,1\n", ErrDate, 2, 1, "Date"},
		{"duplicate date", "Date,A\n2020-01-02,1\n\n1/2/2020,2\n", ErrDuplicateDate, 4, 1, "Date"},
		{"unsorted", "Date;A\r\n2020-01-03;1\r\n2020-01-02;2\r\n", ErrUnsorted, 3, 1, "Date"},
		{"word", "Date,A,B\n2020-01-02,1,abc\n", ErrNumber, 2, 3, "B"},
		{"nan lower case", "Date,A\n2020-01-02,nan\n", ErrNumber, 2, 2, "A"},
		{"inf", "Date,A\n2020-01-02,Inf\n", ErrNumber, 2, 2, "A"},
		{"overflow", "Date,A\n2020-01-02,1e999\n", ErrNumber, 2, 2, "A"},
		{"hex", "Date,A\n2020-01-02,0x10\n", ErrNumber, 2, 2, "A"},
		{"decimal comma", "Date;A\n2020-01-02;1,5\n", ErrNumber, 2, 2, "A"},
		{"digit separator", "Date,A\n2020-01-02,1_000\n", ErrNumber, 2, 2, "A"},
		{"lone sign", "Date,A\n2020-01-02,-\n", ErrNumber, 2, 2, "A"},
		{"bare exponent", "Date,A\n2020-01-02,1e\n", ErrNumber, 2, 2, "A"},
		{"lone dot with sign", "Date,A\n2020-01-02,-.\n", ErrNumber, 2, 2, "A"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Load(strings.NewReader(tt.src), "in.csv")
			if !errors.Is(err, tt.err) {
				t.Fatalf("Load = %v, %v; want %v", f, err, tt.err)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *ParseError", err)
			}
			if pe.File != "in.csv" || pe.Line != tt.line || pe.Column != tt.column || pe.Name != tt.col {
				t.Errorf("ParseError at %s:%d column %d %q, want in.csv:%d column %d %q (%v)",
					pe.File, pe.Line, pe.Column, pe.Name, tt.line, tt.column, tt.col, err)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "in.csv") || len(msg) > 400 {
				t.Errorf("message %q does not start with the file name or is too long", msg)
			}
		})
	}
}

func TestParseErrorMessage(t *testing.T) {
	_, err := Load(strings.NewReader("Date,Price\n2020-01-02,1\n2020-01-03,oops\n"), "wti.csv")
	want := `wti.csv: line 3, column 2 "Price": non-numeric cell: "oops"`
	if err == nil || err.Error() != want {
		t.Errorf("error = %v\nwant    %s", err, want)
	}
	_, err = Load(strings.NewReader("Date,Price\n2020-01-03,1\n2020-01-02,2\n"), "wti.csv")
	want = `wti.csv: line 3, column 1 "Date": dates not sorted: 2020-01-02 comes after 2020-01-03 on line 2`
	if err == nil || err.Error() != want {
		t.Errorf("error = %v\nwant    %s", err, want)
	}
}

// A read error mid-stream is returned wrapped, not as a ParseError.
func TestLoadReadError(t *testing.T) {
	boom := errors.New("boom")
	r := &failingReader{data: []byte("Date,A\n2020-01-02,1\n"), err: boom}
	if _, err := Load(r, "x.csv"); !errors.Is(err, boom) || !strings.Contains(err.Error(), "x.csv") {
		t.Errorf("Load = %v, want wrapped boom naming x.csv", err)
	}
}

type failingReader struct {
	data []byte
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestLoadFileGzip(t *testing.T) {
	dir := t.TempDir()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte("Date,A\n2020-01-02,1\n2020-01-03,2\n"))
	zw.Close()
	gz := filepath.Join(dir, "a.csv.gz")
	if err := os.WriteFile(gz, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := LoadFile(gz)
	if err != nil || f.Len() != 2 || !same(f.Column(0), []float64{1, 2}) {
		t.Fatalf("LoadFile(gz) = %v, %v", f, err)
	}
	// A .gz that is not gzip names the file.
	bad := filepath.Join(dir, "b.csv.gz")
	os.WriteFile(bad, []byte("Date,A\n"), 0o644)
	if _, err := LoadFile(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("LoadFile(not gzip) = %v", err)
	}
	// A truncated gzip stream is a read error naming the file.
	trunc := filepath.Join(dir, "c.csv.gz")
	os.WriteFile(trunc, buf.Bytes()[:buf.Len()-6], 0o644)
	if _, err := LoadFile(trunc); err == nil || !strings.Contains(err.Error(), trunc) {
		t.Errorf("LoadFile(truncated gzip) = %v", err)
	}
	if _, err := LoadFile(filepath.Join(dir, "missing.csv")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadFile(missing) = %v", err)
	}
}

func TestNewAndSelect(t *testing.T) {
	dates := []Date{1, 2, 3}
	cols := [][]float64{{1, 2, 3}, {4, 5, 6}}
	f, err := New(dates, []string{"a", "b"}, cols)
	if err != nil {
		t.Fatal(err)
	}
	if f.Index("b") != 1 || f.Index("z") != -1 {
		t.Error("Index")
	}
	if c, ok := f.Lookup("a"); !ok || !same(c, cols[0]) {
		t.Error("Lookup")
	}
	g, err := f.Select("b", "a")
	if err != nil || g.Width() != 2 || g.Names()[0] != "b" || !same(g.Column(1), cols[0]) {
		t.Errorf("Select = %v, %v", g, err)
	}
	if _, err := f.Select("a", "z"); !errors.Is(err, ErrNoColumn) {
		t.Errorf("Select(missing) = %v", err)
	}
	if _, err := f.Select("a", "a"); !errors.Is(err, ErrDuplicateColumn) {
		t.Errorf("Select(dup) = %v", err)
	}
	for _, tt := range []struct {
		dates []Date
		names []string
		cols  [][]float64
		err   error
	}{
		{[]Date{1, 1}, []string{"a"}, [][]float64{{1, 2}}, ErrDuplicateDate},
		{[]Date{2, 1}, []string{"a"}, [][]float64{{1, 2}}, ErrUnsorted},
		{[]Date{1, 2}, []string{"a"}, [][]float64{{1}}, ErrShape},
		{[]Date{1, 2}, []string{"a", "b"}, [][]float64{{1, 2}}, ErrShape},
		{[]Date{1, 2}, []string{""}, [][]float64{{1, 2}}, ErrColumnName},
		{[]Date{1, 2}, []string{"a", "a"}, [][]float64{{1, 2}, {1, 2}}, ErrDuplicateColumn},
	} {
		if _, err := New(tt.dates, tt.names, tt.cols); !errors.Is(err, tt.err) {
			t.Errorf("New(%v, %v) = %v, want %v", tt.dates, tt.names, err, tt.err)
		}
	}
	var zero Frame
	if zero.Len() != 0 || zero.Width() != 0 {
		t.Error("zero frame is not empty")
	}
}

// TestRealData loads the real files with the row counts, ranges and quirks
// stated in ../testdata/README.md.
func TestRealData(t *testing.T) {
	tests := []struct {
		file        string
		rows        int
		names       []string
		first, last string
		na          []int // NA count per column
	}{
		{"wti-daily.csv", 10226, []string{"Price"}, "1986-01-02", "2026-08-18", []int{0}},
		{"ffn-test-data.csv", 2517, []string{"AAPL", "MSFT", "C"}, "2004-03-10", "2014-03-10", []int{0, 0, 0}},
		{"crude-oil-wti-cushing.csv", 9766, []string{"C1", "C2", "C3", "C4"}, "1983-03-30", "2022-02-15", []int{5, 442, 1, 442}},
		{"vix-daily.csv", 9235, []string{"OPEN", "HIGH", "LOW", "CLOSE"}, "1990-01-02", "2026-07-23", []int{0, 0, 0, 0}},
		{"natural-gas-daily.csv", 7437, []string{"Price"}, "1997-01-07", "2026-08-18", []int{1}},
		{"sp500.csv.gz", 5031, []string{"Open", "High", "Low", "Close", "Adj Close", "Volume"}, "1999-01-04", "2018-12-31", []int{0, 0, 0, 0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f, err := LoadFile(filepath.Join(realData, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if f.Len() != tt.rows {
				t.Errorf("rows = %d, want %d", f.Len(), tt.rows)
			}
			if strings.Join(f.Names(), "|") != strings.Join(tt.names, "|") {
				t.Errorf("names = %q, want %q", f.Names(), tt.names)
			}
			if got := f.Dates()[0].String(); got != tt.first {
				t.Errorf("first date = %s, want %s", got, tt.first)
			}
			if got := f.Dates()[f.Len()-1].String(); got != tt.last {
				t.Errorf("last date = %s, want %s", got, tt.last)
			}
			for j := range f.Width() {
				n := 0
				for _, v := range f.Column(j) {
					if math.IsNaN(v) {
						n++
					}
				}
				if n != tt.na[j] {
					t.Errorf("column %s: %d NA, want %d", f.Names()[j], n, tt.na[j])
				}
			}
		})
	}

	wti, err := LoadFile(filepath.Join(realData, "wti-daily.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if i := indexOf(wti.Dates(), d("2020-04-20")); i < 0 || wti.Column(0)[i] != -36.98 {
		t.Errorf("WTI 2020-04-20 not loaded as -36.98")
	}
	gas, err := LoadFile(filepath.Join(realData, "natural-gas-daily.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if i := indexOf(gas.Dates(), d("2018-01-05")); i < 0 || !math.IsNaN(gas.Column(0)[i]) {
		t.Errorf("natural gas 2018-01-05 is not NA")
	}
	fut, err := LoadFile(filepath.Join(realData, "crude-oil-wti-cushing.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if i := indexOf(fut.Dates(), d("2020-04-20")); i < 0 || fut.Column(0)[i] != -37.63 {
		t.Errorf("crude C1 2020-04-20 not loaded as -37.63")
	}
}

func indexOf(dates []Date, x Date) int {
	for i, v := range dates {
		if v == x {
			return i
		}
	}
	return -1
}

func BenchmarkLoadVIX(b *testing.B) {
	src, err := os.ReadFile(filepath.Join(realData, "vix-daily.csv"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := Load(bytes.NewReader(src), "vix"); err != nil {
			b.Fatal(err)
		}
	}
}

// A column name longer than MaxColumnName is refused, naming the column.
func TestOverlongColumnName(t *testing.T) {
	long := strings.Repeat("x", MaxColumnName+1)
	_, err := Load(strings.NewReader("date,A,"+long+"\n2020-01-01,1,2\n"), "f.csv")
	if !errors.Is(err, ErrColumnName) || !strings.Contains(err.Error(), "at most 256") {
		t.Fatalf("err %v", err)
	}
	if _, err := Load(strings.NewReader("date,A,"+long[1:]+"\n2020-01-01,1,2\n"), "f.csv"); err != nil {
		t.Fatalf("a name of exactly %d bytes: %v", MaxColumnName, err)
	}
}
