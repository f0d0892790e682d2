package series

import (
	"encoding/binary"
	"fmt"

	"github.com/klauspost/compress/zstd"
)

// PackMagic opens every packed table.
const PackMagic = "GGTP"

// Packed form, version 1: PackMagic, a version byte, then one zstd frame
// holding
//
//	the canonical header up to and including the names, verbatim
//	dates    the first as int32, then rows-1 uvarint gaps
//	codes    one byte per cell, column-major: 0 NA, 1 literal,
//	         2+k the k-th most recent distinct value of the column (k < cacheSize)
//	literals uvarint count n, then 8 planes of n bytes: plane p holds
//	         byte p (most significant first) of each literal XOR the
//	         column's previous literal
//
// Why this shape: a weights panel is mostly NA runs, values clipped to
// the same bound and slowly varying positions. Codes turn the first two
// into a byte stream zstd shrinks to almost nothing; XOR with the
// previous literal zeroes the shared sign, exponent and leading mantissa
// bits, and the planes put those zeros next to each other. On the fx
// panel this stores a weights artifact in about a fifth of its canonical
// size (docs/execution.md has the measured figures).
const (
	packVersion = 1
	cacheSize   = 4
	// maxUnpacked bounds what a (possibly corrupt) packed blob or zstd
	// frame may decompress to before it is trusted: above any blob the
	// executor writes (its data limit is 256 MiB), low enough that a
	// corrupt value cannot exhaust memory.
	maxUnpacked = 1 << 30
)

// Packer packs and unpacks tables. It holds a zstd encoder and decoder,
// which are expensive to build and safe for concurrent use, so make one
// and share it.
type Packer struct {
	enc *zstd.Encoder
	dec *zstd.Decoder
}

// NewPacker returns a Packer.
func NewPacker() (*Packer, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, fmt.Errorf("series: zstd encoder: %w", err)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxUnpacked))
	if err != nil {
		return nil, fmt.Errorf("series: zstd decoder: %w", err)
	}
	return &Packer{enc: enc, dec: dec}, nil
}

// Compress appends one zstd frame of src to dst: the packer's compressor,
// shared with callers that store other bytes than tables.
func (p *Packer) Compress(dst, src []byte) []byte { return p.enc.EncodeAll(src, dst) }

// Decompress returns what one zstd frame holds, refusing (ErrMalformed)
// a frame that is corrupt or decompresses to more than 1 GiB.
func (p *Packer) Decompress(src []byte) ([]byte, error) {
	out, err := p.dec.DecodeAll(src, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: zstd: %v", ErrMalformed, err)
	}
	return out, nil
}

// IsPacked reports whether b starts like a packed table.
func IsPacked(b []byte) bool {
	return len(b) > len(PackMagic) && string(b[:len(PackMagic)]) == PackMagic && b[len(PackMagic)] == packVersion
}

// Pack codes a canonical encoding compactly. canon must be a valid
// canonical encoding (Decode accepts it); the result unpacks to exactly
// canon.
func (p *Packer) Pack(dst, canon []byte) ([]byte, error) {
	t, off, err := decodeHeader(canon)
	if err != nil {
		return dst, err
	}
	rows, cols := len(t.Dates), len(t.Cols)
	namesEnd := off - 4*rows
	body := make([]byte, 0, namesEnd+2*rows+cols*rows+9*rows*cols/2)
	body = append(body, canon[:namesEnd]...)
	body = appendDates(body, t.Dates)

	codesAt := len(body)
	body = append(body, make([]byte, rows*cols)...)
	codes := body[codesAt:]
	var lits []uint64
	vals := canon[off:]
	for j := range cols {
		var cache [cacheSize]uint64
		held, prev := 0, uint64(0)
		for i := range rows {
			u := binary.LittleEndian.Uint64(vals[8*(j*rows+i):])
			c := &codes[j*rows+i]
			if u == NABits {
				*c = 0
				continue
			}
			if k := find(cache[:held], u); k >= 0 {
				*c = byte(2 + k)
				copy(cache[1:k+1], cache[:k])
				cache[0] = u
				continue
			}
			*c = 1
			lits = append(lits, u^prev)
			prev = u
			held = min(held+1, cacheSize)
			copy(cache[1:held], cache[:held-1])
			cache[0] = u
		}
	}
	body = binary.AppendUvarint(body, uint64(len(lits)))
	for plane := range 8 {
		shift := 56 - 8*plane
		for _, l := range lits {
			body = append(body, byte(l>>shift))
		}
	}
	dst = append(dst, PackMagic...)
	dst = append(dst, packVersion)
	return p.enc.EncodeAll(body, dst), nil
}

func find(cache []uint64, u uint64) int {
	for k, v := range cache {
		if v == u {
			return k
		}
	}
	return -1
}

func appendDates(b []byte, dates []int32) []byte {
	if len(dates) == 0 {
		return b
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(dates[0]))
	for i := 1; i < len(dates); i++ {
		b = binary.AppendUvarint(b, uint64(int64(dates[i])-int64(dates[i-1])))
	}
	return b
}

// Unpack returns the canonical encoding a packed table holds. Corrupt or
// hostile input is an error wrapping ErrMalformed, never a panic or an
// allocation beyond the declared shape's size.
func (p *Packer) Unpack(dst, packed []byte) ([]byte, error) {
	if !IsPacked(packed) {
		return dst, fmt.Errorf("%w: no %q version %d header", ErrMalformed, PackMagic, packVersion)
	}
	body, err := p.dec.DecodeAll(packed[len(PackMagic)+1:], nil)
	if err != nil {
		return dst, fmt.Errorf("%w: zstd: %v", ErrMalformed, err)
	}
	return unpackBody(dst, body)
}

func unpackBody(dst, body []byte) ([]byte, error) {
	// The body opens with the canonical header up to the names.
	rows, names, namesEnd, err := parseShape(body)
	if err != nil {
		return dst, err
	}
	cols := len(names)
	cells := rows * cols
	if cells > maxUnpacked/8 {
		return dst, fmt.Errorf("%w: %d cells exceeds the limit", ErrMalformed, cells)
	}
	off := namesEnd
	if need := namesEnd + 4*rows + 8*cells; cap(dst)-len(dst) < need {
		dst = append(make([]byte, 0, len(dst)+need), dst...)
	}
	out := append(dst, body[:namesEnd]...)
	var date int64
	for i := range rows {
		if i == 0 {
			if len(body)-off < 4 {
				return dst, fmt.Errorf("%w: truncated in the dates", ErrMalformed)
			}
			date = int64(int32(binary.LittleEndian.Uint32(body[off:])))
			off += 4
		} else {
			gap, n := binary.Uvarint(body[off:])
			if n <= 0 || gap == 0 || gap > 1<<31 {
				return dst, fmt.Errorf("%w: bad date gap at row %d", ErrMalformed, i)
			}
			off += n
			date += int64(gap)
		}
		if date != int64(int32(date)) {
			return dst, fmt.Errorf("%w: date out of range at row %d", ErrMalformed, i)
		}
		out = binary.LittleEndian.AppendUint32(out, uint32(int32(date)))
	}
	if len(body)-off < cells {
		return dst, fmt.Errorf("%w: truncated in the codes", ErrMalformed)
	}
	codes := body[off : off+cells]
	off += cells
	n, w := binary.Uvarint(body[off:])
	if w <= 0 || n > uint64(cells) {
		return dst, fmt.Errorf("%w: bad literal count", ErrMalformed)
	}
	off += w
	if uint64(len(body)-off) != 8*n {
		return dst, fmt.Errorf("%w: %d literal bytes, want %d", ErrMalformed, len(body)-off, 8*n)
	}
	planes := body[off:]
	lit := func(i int) uint64 {
		var u uint64
		for p := range 8 {
			u = u<<8 | uint64(planes[p*int(n)+i])
		}
		return u
	}
	next := 0
	for j := range cols {
		var cache [cacheSize]uint64
		held, prev := 0, uint64(0)
		for i := range rows {
			var u uint64
			switch c := int(codes[j*rows+i]); {
			case c == 0:
				u = NABits
			case c == 1:
				if next >= int(n) {
					return dst, fmt.Errorf("%w: more literal codes than literals", ErrMalformed)
				}
				u = lit(next) ^ prev
				next++
				if isNaN(u) || find(cache[:held], u) >= 0 {
					// The packer writes NA and cached values as codes:
					// a literal equal to one is not our encoding.
					return dst, fmt.Errorf("%w: column %d row %d: literal not in canonical form", ErrMalformed, j, i)
				}
				prev = u
				held = min(held+1, cacheSize)
				copy(cache[1:held], cache[:held-1])
				cache[0] = u
			case c-2 < held:
				k := c - 2
				u = cache[k]
				copy(cache[1:k+1], cache[:k])
				cache[0] = u
			default:
				return dst, fmt.Errorf("%w: column %d row %d: code %d", ErrMalformed, j, i, c)
			}
			out = binary.LittleEndian.AppendUint64(out, u)
		}
	}
	if next != int(n) {
		return dst, fmt.Errorf("%w: %d literals left over", ErrMalformed, int(n)-next)
	}
	return out, nil
}

func isNaN(u uint64) bool {
	return u&0x7FF0000000000000 == 0x7FF0000000000000 && u&(1<<52-1) != 0
}
