// Package frame holds the executor's data frame: a sorted date index plus
// named float64 columns, and the CSV loader that builds one.
//
// # Layout
//
// Dates are a Date, a day count since 1970-01-01 (see Date for why).
// Storage is column-major: one []float64 per column, every column as long
// as the date index, so the kernel's per-column operations walk contiguous
// memory. NA is NaN; ±Inf never comes out of the loader.
//
// A Frame is immutable by convention: accessors return the frame's own
// slices without copying, and callers must not modify them.
//
// # CSV format (Load)
//
//   - The first non-blank line is the header. The first field names the date
//     column (its name may be empty, as pandas writes it); every other field
//     names a data column: non-empty, unique, at most MaxColumns of them.
//     A UTF-8 byte order mark before the header is ignored.
//   - The delimiter is ',' or ';', read from the header: whichever of the
//     two occurs there outside quotes. A header with both is refused
//     (ErrDelimiter); a header with neither has no data column (ErrNoColumns).
//   - Lines end in LF or CRLF. Blank lines (empty or only spaces and tabs)
//     are skipped everywhere. Line numbers in errors are physical, 1-based,
//     blank lines included. A line may be at most MaxLineBytes long.
//   - Fields may be wrapped in double quotes, with "" standing for one quote
//     inside; a quoted field cannot span lines. Spaces and tabs around a
//     field are trimmed.
//   - Dates are ISO (2006-01-02) or US (1/2/2006, M/D/YYYY; the month comes
//     first); a file may mix them. Dates must strictly increase.
//   - A data cell is NA when it is empty or exactly NA, NaN, N/A or "."
//     (case-sensitive). Otherwise it must be a finite decimal number:
//     optional sign, digits with an optional decimal point, optional
//     exponent. Hexadecimal, Inf, digit separators and decimal commas are
//     refused (ErrNumber). Negative values are data (oil prices went below
//     zero in April 2020), never an error.
//   - Every row has exactly as many fields as the header (ErrRagged).
//   - A header without data rows is ErrNoRows; an input without a header is
//     ErrEmpty.
//
// Parse failures are a *ParseError naming the file, the line and, where one
// is at fault, the column by number and header name; it wraps one of the
// sentinels in errors.go.
package frame

import (
	"fmt"
)

// Frame is a sorted date index plus named float64 columns of the same
// length. The zero Frame is an empty frame with no rows and no columns.
type Frame struct {
	dates []Date
	names []string
	cols  [][]float64
}

// New builds a Frame from a date index, column names and columns. It takes
// ownership of the slices (it does not copy them). Dates must strictly
// increase, names must be non-empty and unique, and every column must be as
// long as dates.
func New(dates []Date, names []string, cols [][]float64) (*Frame, error) {
	if len(names) != len(cols) {
		return nil, fmt.Errorf("frame: %d names for %d columns: %w", len(names), len(cols), ErrShape)
	}
	for i := 1; i < len(dates); i++ {
		switch {
		case dates[i] == dates[i-1]:
			return nil, fmt.Errorf("frame: row %d: %s: %w", i+1, dates[i], ErrDuplicateDate)
		case dates[i] < dates[i-1]:
			return nil, fmt.Errorf("frame: row %d: %s after %s: %w", i+1, dates[i], dates[i-1], ErrUnsorted)
		}
	}
	seen := make(map[string]bool, len(names))
	for j, name := range names {
		if name == "" {
			return nil, fmt.Errorf("frame: column %d: %w", j+1, ErrColumnName)
		}
		if seen[name] {
			return nil, fmt.Errorf("frame: column %d %q: %w", j+1, name, ErrDuplicateColumn)
		}
		seen[name] = true
		if len(cols[j]) != len(dates) {
			return nil, fmt.Errorf("frame: column %q has %d rows, the index %d: %w", name, len(cols[j]), len(dates), ErrShape)
		}
	}
	return &Frame{dates: dates, names: names, cols: cols}, nil
}

// Len returns the number of rows.
func (f *Frame) Len() int { return len(f.dates) }

// Width returns the number of data columns (the date index not counted).
func (f *Frame) Width() int { return len(f.cols) }

// Dates returns the date index. Do not modify it.
func (f *Frame) Dates() []Date { return f.dates }

// Names returns the column names, in file order. Do not modify it.
func (f *Frame) Names() []string { return f.names }

// Column returns column j (0-based, in file order). Do not modify it.
func (f *Frame) Column(j int) []float64 { return f.cols[j] }

// Index returns the position of the named column, or -1.
func (f *Frame) Index(name string) int {
	for j, n := range f.names {
		if n == name {
			return j
		}
	}
	return -1
}

// Lookup returns the named column. Do not modify it.
func (f *Frame) Lookup(name string) ([]float64, bool) {
	j := f.Index(name)
	if j < 0 {
		return nil, false
	}
	return f.cols[j], true
}

// Select returns a frame with the named columns, in the order given, sharing
// storage with f. A name f lacks is ErrNoColumn; a repeated name is
// ErrDuplicateColumn.
func (f *Frame) Select(names ...string) (*Frame, error) {
	cols := make([][]float64, len(names))
	for i, name := range names {
		c, ok := f.Lookup(name)
		if !ok {
			return nil, fmt.Errorf("frame: %q: %w", name, ErrNoColumn)
		}
		cols[i] = c
	}
	return New(f.dates, append([]string(nil), names...), cols)
}
