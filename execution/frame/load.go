package frame

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// Limits on what Load accepts.
const (
	// MaxLineBytes is the longest line, in bytes, line ending excluded.
	MaxLineBytes = 1 << 20
	// MaxColumns is the largest number of data columns (the date column
	// not counted).
	MaxColumns = 4096
	// MaxColumnName bounds a column name in bytes: a request names columns
	// in strings of at most this length, and contract clauses are priced
	// assuming it (contract.stringHint).
	MaxColumnName = 256
)

// maxDetail caps how much of an offending cell an error message quotes.
const maxDetail = 64

// LoadFile reads a CSV file with Load. A path ending in ".gz" is gunzipped
// on the fly. Errors name the file by path.
func LoadFile(path string) (*Frame, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("frame: %w", err)
	}
	defer fh.Close()
	var r io.Reader = fh
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(fh)
		if err != nil {
			return nil, fmt.Errorf("frame: %s: gzip: %w", path, err)
		}
		defer zr.Close()
		r = zr
	}
	return Load(r, path)
}

// Load reads a CSV frame (see the package documentation for the format).
// name is used only in error messages. Parse failures are a *ParseError;
// read failures are returned wrapped, naming the file.
func Load(r io.Reader, name string) (*Frame, error) {
	l := loader{file: name, sc: bufio.NewScanner(r)}
	l.sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes+2) // +2: room for "\r\n"
	return l.load()
}

type loader struct {
	file   string
	sc     *bufio.Scanner
	lineNo int // physical line number of the current line
	header []string
	delim  byte
}

func (l *loader) errAt(line, col int, err error, detail string) *ParseError {
	pe := &ParseError{File: l.file, Line: line, Column: col, Err: err, Detail: detail}
	if col > 0 && col <= len(l.header) {
		pe.Name = l.header[col-1]
	}
	return pe
}

// next returns the next non-blank line, or ok=false at the end of input.
func (l *loader) next() (line string, ok bool, err error) {
	for l.sc.Scan() {
		l.lineNo++
		b := l.sc.Bytes()
		if len(b) > MaxLineBytes {
			return "", false, l.errAt(l.lineNo, 0, ErrLineTooLong, fmt.Sprintf("more than %d bytes", MaxLineBytes))
		}
		if l.lineNo == 1 {
			b = trimBOM(b)
		}
		if isBlank(b) {
			continue
		}
		return string(b), true, nil
	}
	if err := l.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return "", false, l.errAt(l.lineNo+1, 0, ErrLineTooLong, fmt.Sprintf("more than %d bytes", MaxLineBytes))
		}
		return "", false, fmt.Errorf("frame: read %s: %w", l.file, err)
	}
	return "", false, nil
}

func (l *loader) load() (*Frame, error) {
	head, ok, err := l.next()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, l.errAt(0, 0, ErrEmpty, "")
	}
	headLine := l.lineNo
	if l.delim, err = detectDelimiter(head); err != nil {
		return nil, l.errAt(headLine, 0, err, "")
	}
	fields, bad, err := splitLine(head, l.delim, nil)
	if err != nil {
		return nil, l.errAt(headLine, bad, err, "")
	}
	if len(fields) < 2 {
		return nil, l.errAt(headLine, 0, ErrNoColumns, "")
	}
	if len(fields)-1 > MaxColumns {
		return nil, l.errAt(headLine, 0, ErrTooManyColumns, fmt.Sprintf("%d data columns, at most %d", len(fields)-1, MaxColumns))
	}
	l.header = append([]string(nil), fields...)
	names := append([]string(nil), fields[1:]...)
	seen := make(map[string]int, len(names))
	for j, n := range names {
		if n == "" {
			return nil, l.errAt(headLine, j+2, ErrColumnName, "")
		}
		if len(n) > MaxColumnName {
			return nil, l.errAt(headLine, j+2, ErrColumnName, fmt.Sprintf("%d bytes, at most %d", len(n), MaxColumnName))
		}
		if k, dup := seen[n]; dup {
			return nil, l.errAt(headLine, j+2, ErrDuplicateColumn, fmt.Sprintf("also column %d", k+2))
		}
		seen[n] = j
	}

	var dates []Date
	cols := make([][]float64, len(names))
	prevLine := 0
	for {
		line, ok, err := l.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		fields, bad, err = splitLine(line, l.delim, fields[:0])
		if err != nil {
			return nil, l.errAt(l.lineNo, bad, err, "")
		}
		if len(fields) != len(l.header) {
			return nil, l.errAt(l.lineNo, 0, ErrRagged, fmt.Sprintf("%d fields, the header has %d", len(fields), len(l.header)))
		}
		d, err := ParseDate(fields[0])
		if err != nil {
			return nil, l.errAt(l.lineNo, 1, ErrDate, err.Error())
		}
		if n := len(dates); n > 0 {
			switch prev := dates[n-1]; {
			case d == prev:
				return nil, l.errAt(l.lineNo, 1, ErrDuplicateDate, fmt.Sprintf("%s repeats line %d", d, prevLine))
			case d < prev:
				return nil, l.errAt(l.lineNo, 1, ErrUnsorted, fmt.Sprintf("%s comes after %s on line %d", d, prev, prevLine))
			}
		}
		for j, cell := range fields[1:] {
			v, ok := parseCell(cell)
			if !ok {
				return nil, l.errAt(l.lineNo, j+2, ErrNumber, strconv.Quote(clip(cell)))
			}
			cols[j] = append(cols[j], v)
		}
		dates = append(dates, d)
		prevLine = l.lineNo
	}
	if len(dates) == 0 {
		return nil, l.errAt(headLine, 0, ErrNoRows, "")
	}
	return New(dates, names, cols)
}

func trimBOM(b []byte) []byte {
	if len(b) >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF {
		return b[3:]
	}
	return b
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' {
			return false
		}
	}
	return true
}

// detectDelimiter returns ',' or ';', whichever occurs in the header
// outside quotes; ',' when neither does (the header then has one field).
func detectDelimiter(head string) (byte, error) {
	var commas, semis int
	inQuote := false
	for i := 0; i < len(head); i++ {
		switch head[i] {
		case '"':
			inQuote = !inQuote
		case ',':
			if !inQuote {
				commas++
			}
		case ';':
			if !inQuote {
				semis++
			}
		}
	}
	switch {
	case commas > 0 && semis > 0:
		return 0, ErrDelimiter
	case semis > 0:
		return ';', nil
	}
	return ',', nil
}

// splitLine splits one line into trimmed, unquoted fields, appending to
// fields. On error it returns the 1-based number of the faulty field.
func splitLine(s string, delim byte, fields []string) ([]string, int, error) {
	pos, n := 0, len(s)
	for {
		i := pos
		for i < n && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i < n && s[i] == '"' {
			start := i + 1
			j := start
			escaped := false
			for {
				k := strings.IndexByte(s[j:], '"')
				if k < 0 {
					return fields, len(fields) + 1, ErrQuote
				}
				j += k
				if j+1 < n && s[j+1] == '"' {
					escaped = true
					j += 2
					continue
				}
				break
			}
			val := s[start:j]
			if escaped {
				val = strings.ReplaceAll(val, `""`, `"`)
			}
			j++ // the closing quote
			for j < n && (s[j] == ' ' || s[j] == '\t') {
				j++
			}
			fields = append(fields, val)
			if j == n {
				return fields, 0, nil
			}
			if s[j] != delim {
				return fields, len(fields), ErrQuote
			}
			pos = j + 1
			continue
		}
		end := n
		if k := strings.IndexByte(s[pos:], delim); k >= 0 {
			end = pos + k
		}
		f := strings.Trim(s[pos:end], " \t")
		if strings.IndexByte(f, '"') >= 0 {
			return fields, len(fields) + 1, ErrQuote
		}
		fields = append(fields, f)
		if end == n {
			return fields, 0, nil
		}
		pos = end + 1
	}
}

// parseCell returns the value of a data cell: NaN for an NA token, else a
// finite decimal number.
func parseCell(s string) (float64, bool) {
	switch s {
	case "", "NA", "NaN", "N/A", ".":
		return math.NaN(), true
	}
	if !isDecimal(s) {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// isDecimal reports whether s is [+-]digits[.digits][(e|E)[+-]digits] with
// at least one mantissa digit (".5" and "5." included).
func isDecimal(s string) bool {
	i, n := 0, len(s)
	if i < n && (s[i] == '+' || s[i] == '-') {
		i++
	}
	mant := 0
	for i < n && s[i] >= '0' && s[i] <= '9' {
		i++
		mant++
	}
	if i < n && s[i] == '.' {
		i++
		for i < n && s[i] >= '0' && s[i] <= '9' {
			i++
			mant++
		}
	}
	if mant == 0 {
		return false
	}
	if i < n && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < n && (s[i] == '+' || s[i] == '-') {
			i++
		}
		exp := 0
		for i < n && s[i] >= '0' && s[i] <= '9' {
			i++
			exp++
		}
		if exp == 0 {
			return false
		}
	}
	return i == n
}

func clip(s string) string {
	if len(s) > maxDetail {
		return s[:maxDetail] + "…"
	}
	return s
}
