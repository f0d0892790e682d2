package wordvec

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// The table format, version 1. All integers are little-endian.
//
//	offset  size        field
//	0       6           magic "GGWVEC"
//	6       2           version, 1
//	8       2           dims, Dims (100)
//	10      2           flags, 0
//	12      4           count: number of words, 1 ≤ count ≤ MaxWords
//	16      4           wordBytes: size of the words section
//	20      32          source: SHA-256 of the npm tarball the table was made from
//	52      wordBytes   words: count × (uint8 length, that many bytes), in table order
//	…       4·count     scales: count × uint32, a word's Scale
//	…       dims·count  vectors: count × dims int8
//	…       32          SHA-256 of every byte before it
//
// A version 1 table is refused unless every word is 1–255 lower-case ASCII
// letters and appears once, every scale is positive, and every vector's
// largest |component| is exactly 127 (so −128 never occurs): that is what
// the converter (tools/vectors) writes, and anything else is a corrupt or
// foreign table.
const (
	magic      = "GGWVEC"
	version    = 1
	headerSize = 52
	sumSize    = sha256.Size

	// MaxWords bounds a table's word count.
	MaxWords = 1 << 20
)

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// Encode writes a version 1 table: words in table order, each word's Scale,
// and the words' vectors one after the other (len(vecs) = Dims·len(words)).
// source is the SHA-256 of the tarball the vectors were read from. It
// refuses what Parse would refuse, so Parse(Encode(…)) always succeeds and
// gives back the same words, scales and vectors. tools/vectors uses it.
func Encode(source [32]byte, words []string, scales []Scale, vecs []int8) ([]byte, error) {
	n := len(words)
	if n < 1 || n > MaxWords {
		return nil, fmt.Errorf("wordvec: %d words, want 1 to %d", n, MaxWords)
	}
	if len(scales) != n || len(vecs) != n*Dims {
		return nil, fmt.Errorf("wordvec: %d words, %d scales and %d vector components (want %d)", n, len(scales), len(vecs), n*Dims)
	}
	seen := make(map[string]struct{}, n)
	wordBytes := 0
	for i, w := range words {
		if err := checkWord(w); err != nil {
			return nil, fmt.Errorf("wordvec: word %d: %v", i, err)
		}
		if _, dup := seen[w]; dup {
			return nil, fmt.Errorf("wordvec: word %d (%q) appears twice", i, w)
		}
		seen[w] = struct{}{}
		wordBytes += 1 + len(w)
	}
	for i := range n {
		if scales[i] == 0 {
			return nil, fmt.Errorf("wordvec: word %d (%q) has scale 0", i, words[i])
		}
		if err := checkVector(vecs[i*Dims : (i+1)*Dims]); err != nil {
			return nil, fmt.Errorf("wordvec: word %d (%q): %v", i, words[i], err)
		}
	}
	size := headerSize + wordBytes + 4*n + Dims*n + sumSize
	b := make([]byte, 0, size)
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint16(b, version)
	b = binary.LittleEndian.AppendUint16(b, Dims)
	b = binary.LittleEndian.AppendUint16(b, 0)
	b = binary.LittleEndian.AppendUint32(b, uint32(n))
	b = binary.LittleEndian.AppendUint32(b, uint32(wordBytes))
	b = append(b, source[:]...)
	for _, w := range words {
		b = append(b, byte(len(w)))
		b = append(b, w...)
	}
	for _, s := range scales {
		b = binary.LittleEndian.AppendUint32(b, uint32(s))
	}
	for _, v := range vecs {
		b = append(b, byte(v))
	}
	sum := sha256.Sum256(b)
	b = append(b, sum[:]...)
	return b, nil
}

func checkWord(w string) error {
	if len(w) < 1 || len(w) > 255 {
		return fmt.Errorf("length %d, want 1 to 255", len(w))
	}
	for i := 0; i < len(w); i++ {
		if c := w[i]; c < 'a' || c > 'z' {
			return fmt.Errorf("byte %#x at %d is not a lower-case ASCII letter", c, i)
		}
	}
	return nil
}

func checkVector(v []int8) error {
	top := false
	for _, x := range v {
		switch {
		case x == -128:
			return errors.New("component −128")
		case x == 127 || x == -127:
			top = true
		}
	}
	if !top {
		return errors.New("largest |component| is not 127")
	}
	return nil
}

// Parse reads a table from its bytes, checking its trailing SHA-256 and
// every rule of the format. It never panics; an invalid table is an error
// wrapping ErrCorrupt. The Table does not keep b.
func Parse(b []byte) (*Table, error) {
	return parse(b, true)
}

// parse is Parse, with the trailing checksum optionally not checked (so a
// fuzz test reaches the structural checks behind it).
func parse(b []byte, checkSum bool) (*Table, error) {
	if len(b) < headerSize+sumSize {
		return nil, corrupt("%d bytes, shorter than a header", len(b))
	}
	body, sum := b[:len(b)-sumSize], b[len(b)-sumSize:]
	if checkSum {
		if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
			return nil, corrupt("checksum mismatch")
		}
	}
	if string(body[:6]) != magic {
		return nil, corrupt("bad magic %q", body[:6])
	}
	le := binary.LittleEndian
	if v := le.Uint16(body[6:]); v != version {
		return nil, corrupt("version %d, want %d", v, version)
	}
	if d := le.Uint16(body[8:]); d != Dims {
		return nil, corrupt("%d dimensions, want %d", d, Dims)
	}
	if f := le.Uint16(body[10:]); f != 0 {
		return nil, corrupt("flags %#x, want 0", f)
	}
	count := le.Uint32(body[12:])
	wordBytes := le.Uint32(body[16:])
	if count < 1 || count > MaxWords {
		return nil, corrupt("%d words, want 1 to %d", count, MaxWords)
	}
	n := int(count)
	// Every size below is at most 2^20·256 + a little, so nothing overflows.
	if uint64(wordBytes) > uint64(n)*256 || int(wordBytes) < 2*n {
		return nil, corrupt("words section of %d bytes for %d words", wordBytes, n)
	}
	want := headerSize + int(wordBytes) + 4*n + Dims*n
	if len(body) != want {
		return nil, corrupt("%d bytes before the checksum, want %d", len(body), want)
	}
	t := &Table{
		off:    make([]uint32, n+1),
		index:  make(map[string]int32, n),
		scales: make([]Scale, n),
		vecs:   make([]int8, Dims*n),
	}
	copy(t.source[:], body[20:52])
	t.digest = sha256.Sum256(b)

	// Words: kept as one string, each word a substring of it (no per-word
	// allocation; the map's keys share its bytes).
	ws := body[headerSize : headerSize+int(wordBytes)]
	words := make([]byte, 0, int(wordBytes)-n)
	for i := 0; i < n; i++ {
		if len(ws) == 0 {
			return nil, corrupt("words section ends at word %d", i)
		}
		l := int(ws[0])
		if l == 0 || len(ws) < 1+l {
			return nil, corrupt("word %d: length %d, %d bytes left", i, l, len(ws)-1)
		}
		w := ws[1 : 1+l]
		if err := checkWord(string(w)); err != nil {
			return nil, corrupt("word %d: %v", i, err)
		}
		words = append(words, w...)
		t.off[i+1] = uint32(len(words))
		ws = ws[1+l:]
	}
	if len(ws) != 0 {
		return nil, corrupt("%d bytes after the last word", len(ws))
	}
	t.words = string(words)
	for i := 0; i < n; i++ {
		w := t.Word(i)
		if _, dup := t.index[w]; dup {
			return nil, corrupt("word %d (%q) appears twice", i, w)
		}
		t.index[w] = int32(i)
	}

	p := headerSize + int(wordBytes)
	for i := 0; i < n; i++ {
		s := Scale(le.Uint32(body[p+4*i:]))
		if s == 0 {
			return nil, corrupt("word %d (%q) has scale 0", i, t.Word(i))
		}
		t.scales[i] = s
	}
	p += 4 * n
	for i, c := range body[p:] {
		t.vecs[i] = int8(c)
	}
	t.norms = make([]uint32, n)
	for i := 0; i < n; i++ {
		v := t.vec(i)
		if err := checkVector(v); err != nil {
			return nil, corrupt("word %d (%q): %v", i, t.Word(i), err)
		}
		var sq uint32 // at most 100·127², no overflow
		for _, x := range v {
			sq += uint32(int32(x) * int32(x))
		}
		t.norms[i] = sq
	}
	return t, nil
}
