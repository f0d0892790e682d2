// Package series is the binary encoding of the executor's output
// artifacts: a table of float64 columns over a date index (a P&L series,
// a weights panel). It has two forms with one job each:
//
//   - the canonical form (Encode, Decode): fixed-width, trivially read by
//     any language, and the bytes an artifact's BLAKE3 digest is taken
//     over. It is a pure function of the values, so the digest is too.
//   - the packed form (Pack, Unpack): the same table, losslessly and
//     compactly coded for storage at rest. It is never hashed, so a better
//     packer (or a new zstd release) can never change a digest.
//
// # Canonical form, version 1
//
// All integers are little-endian; offsets follow one another with no
// padding.
//
//	magic    4 bytes   "GGTS"
//	version  1 byte    0x01
//	rows     uint32    number of dates
//	cols     uint32    number of columns
//	names    cols × { uint16 length, that many bytes of UTF-8 }
//	dates    rows × int32: days since 1970-01-01 (proleptic Gregorian), strictly increasing
//	values   cols × rows × float64 (IEEE 754 binary64), column-major:
//	         column 0's rows, then column 1's, …
//
// NA is NaN, always written as the bit pattern 0x7FF8000000000001 (any
// NaN the executor produces is normalised to it), so equal tables encode
// to equal bytes. Other values, including -0 and the infinities, are
// written bit for bit. numpy reads the values with
// np.frombuffer(b, "<f8", offset=o).reshape(cols, rows).
package series

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf8"
)

// Magic and Version open every canonical encoding.
const (
	Magic   = "GGTS"
	Version = 1
)

// NABits is the one NaN bit pattern written for NA.
const NABits uint64 = 0x7FF8000000000001

// Limits a decoder enforces before allocating: a table larger than this
// is refused as malformed rather than trusted.
const (
	MaxRows    = 1 << 24
	MaxCols    = 1 << 16
	MaxNameLen = 1<<16 - 1
	headerLen  = len(Magic) + 1 + 4 + 4
)

// Table is a date index and float64 columns of equal length.
type Table struct {
	Dates []int32     // days since 1970-01-01, strictly increasing
	Names []string    // one per column
	Cols  [][]float64 // Cols[j][t]; NaN is NA
}

// validate checks the shape rules Encode relies on.
func (t *Table) validate() error {
	if len(t.Names) != len(t.Cols) {
		return fmt.Errorf("series: %d names for %d columns", len(t.Names), len(t.Cols))
	}
	if len(t.Dates) > MaxRows || len(t.Cols) > MaxCols {
		return fmt.Errorf("series: %d rows × %d columns exceeds the %d × %d limit", len(t.Dates), len(t.Cols), MaxRows, MaxCols)
	}
	for i := 1; i < len(t.Dates); i++ {
		if t.Dates[i] <= t.Dates[i-1] {
			return fmt.Errorf("series: dates not strictly increasing at row %d", i)
		}
	}
	for j, c := range t.Cols {
		if len(c) != len(t.Dates) {
			return fmt.Errorf("series: column %d has %d rows, the index %d", j, len(c), len(t.Dates))
		}
		if len(t.Names[j]) > MaxNameLen || !utf8.ValidString(t.Names[j]) {
			return fmt.Errorf("series: column %d: the name is not UTF-8 of at most %d bytes", j, MaxNameLen)
		}
	}
	return nil
}

// EncodedLen is the length of t's canonical encoding.
func EncodedLen(t *Table) int {
	n := headerLen + 4*len(t.Dates) + 8*len(t.Dates)*len(t.Cols)
	for _, s := range t.Names {
		n += 2 + len(s)
	}
	return n
}

// Encode appends t's canonical encoding to dst.
func Encode(dst []byte, t *Table) ([]byte, error) {
	if err := t.validate(); err != nil {
		return dst, err
	}
	dst = appendHeader(dst, t)
	for _, c := range t.Cols {
		for _, v := range c {
			dst = binary.LittleEndian.AppendUint64(dst, bits(v))
		}
	}
	return dst, nil
}

// appendHeader appends everything before the values: magic, version,
// shape, names and dates.
func appendHeader(dst []byte, t *Table) []byte {
	if need := EncodedLen(t); cap(dst)-len(dst) < need {
		dst = append(make([]byte, 0, len(dst)+need), dst...)
	}
	dst = append(dst, Magic...)
	dst = append(dst, Version)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(t.Dates)))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(t.Cols)))
	for _, s := range t.Names {
		dst = binary.LittleEndian.AppendUint16(dst, uint16(len(s)))
		dst = append(dst, s...)
	}
	for _, d := range t.Dates {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(d))
	}
	return dst
}

// bits is v's stored bit pattern: NaN normalised to NABits.
func bits(v float64) uint64 {
	if v != v {
		return NABits
	}
	return math.Float64bits(v)
}

// IsEncoded reports whether b starts like a canonical encoding.
func IsEncoded(b []byte) bool {
	return len(b) >= headerLen && string(b[:len(Magic)]) == Magic && b[len(Magic)] == Version
}

// Decode parses a canonical encoding. It refuses trailing bytes, a
// non-canonical NaN, unsorted dates and names that are not UTF-8: bytes
// Decode accepts are exactly the bytes Encode writes for the result.
func Decode(b []byte) (*Table, error) {
	t, off, err := decodeHeader(b)
	if err != nil {
		return nil, err
	}
	rows := len(t.Dates)
	for j := range t.Cols {
		c := make([]float64, rows)
		for i := range c {
			u := binary.LittleEndian.Uint64(b[off:])
			off += 8
			v := math.Float64frombits(u)
			if v != v && u != NABits {
				return nil, fmt.Errorf("%w: column %d row %d: NaN is not written as %#x", ErrMalformed, j, i, NABits)
			}
			c[i] = v
		}
		t.Cols[j] = c
	}
	return t, nil
}

// parseShape parses magic, version, shape and names, returning the row
// count, the names and the offset just past them.
func parseShape(b []byte) (rows int, names []string, off int, err error) {
	if !IsEncoded(b) {
		return 0, nil, 0, fmt.Errorf("%w: no %q version %d header", ErrMalformed, Magic, Version)
	}
	off = len(Magic) + 1
	r := binary.LittleEndian.Uint32(b[off:])
	cols := binary.LittleEndian.Uint32(b[off+4:])
	off += 8
	if r > MaxRows || cols > MaxCols {
		return 0, nil, 0, fmt.Errorf("%w: %d rows × %d columns exceeds the limit", ErrMalformed, r, cols)
	}
	names = make([]string, 0, min(cols, uint32(len(b)-off)/2))
	for j := range cols {
		if len(b)-off < 2 {
			return 0, nil, 0, fmt.Errorf("%w: truncated in the names", ErrMalformed)
		}
		n := int(binary.LittleEndian.Uint16(b[off:]))
		off += 2
		if len(b)-off < n {
			return 0, nil, 0, fmt.Errorf("%w: truncated in the names", ErrMalformed)
		}
		s := string(b[off : off+n])
		if !utf8.ValidString(s) {
			return 0, nil, 0, fmt.Errorf("%w: column %d: the name is not UTF-8", ErrMalformed, j)
		}
		names = append(names, s)
		off += n
	}
	return int(r), names, off, nil
}

// decodeHeader parses magic, version, shape, names and dates, checks that
// exactly the values the shape calls for follow, and returns the table
// (columns allocated but empty) and the offset of the values.
func decodeHeader(b []byte) (*Table, int, error) {
	rows, names, off, err := parseShape(b)
	if err != nil {
		return nil, 0, err
	}
	t := &Table{Names: names, Cols: make([][]float64, len(names))}
	if uint64(len(b)-off) < uint64(rows)*4 {
		return nil, 0, fmt.Errorf("%w: truncated in the dates", ErrMalformed)
	}
	t.Dates = make([]int32, rows)
	for i := range t.Dates {
		t.Dates[i] = int32(binary.LittleEndian.Uint32(b[off:]))
		off += 4
		if i > 0 && t.Dates[i] <= t.Dates[i-1] {
			return nil, 0, fmt.Errorf("%w: dates not strictly increasing at row %d", ErrMalformed, i)
		}
	}
	if want := uint64(rows) * uint64(len(names)) * 8; uint64(len(b)-off) != want {
		return nil, 0, fmt.Errorf("%w: %d value bytes, want %d", ErrMalformed, len(b)-off, want)
	}
	return t, off, nil
}
