package hashing

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"hash"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// The outside RFC 8785 vectors (testdata/rfc8785/README.md): both the raw
// canonicaliser and the one-pass encoder must reproduce them.

func TestRFC8785Vectors(t *testing.T) {
	inputs, err := filepath.Glob("testdata/rfc8785/input/*.json")
	if err != nil || len(inputs) != 6 {
		t.Fatalf("vectors: %v %v", inputs, err)
	}
	for _, in := range inputs {
		name := filepath.Base(in)
		t.Run(name, func(t *testing.T) {
			src := readFile(t, in)
			want := readFile(t, filepath.Join("testdata/rfc8785/output", name))
			// The copy is intact: output/ and outhex/ agree byte for byte.
			hexText := readFile(t, filepath.Join("testdata/rfc8785/outhex", strings.TrimSuffix(name, ".json")+".txt"))
			if h, err := hex.DecodeString(strings.Join(strings.Fields(string(hexText)), "")); err != nil || !bytes.Equal(h, want) {
				t.Fatalf("output and outhex differ: %v", err)
			}

			if got, err := CanonicalizeJSON(src); err != nil || !bytes.Equal(got, want) {
				t.Errorf("CanonicalizeJSON:\n got %s, %v\nwant %s", got, err, want)
			}
			// RFC 8785 accepts keys that differ only in case
			// (structures.json sorts "f" and "F"); DecodeStrict does not.
			var probe any
			err := DecodeStrict(src, &probe)
			if name == "structures.json" {
				if err == nil || !strings.Contains(err.Error(), "only in case") {
					t.Errorf("DecodeStrict = %v, want the case-variant keys refused", err)
				}
			} else if err != nil {
				t.Errorf("DecodeStrict: %v", err)
			}
			// The one-pass encoder, from the document decoded with
			// float64 numbers and with json.Number ones.
			for _, useNumber := range []bool{false, true} {
				dec := json.NewDecoder(bytes.NewReader(src))
				if useNumber {
					dec.UseNumber()
				}
				var v any
				if err := dec.Decode(&v); err != nil {
					t.Fatal(err)
				}
				if got, err := appendCanonical(nil, v); err != nil || !bytes.Equal(got, want) {
					t.Errorf("one-pass (UseNumber %v):\n got %s, %v\nwant %s", useNumber, got, err, want)
				}
			}
		})
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// es6Inputs regenerates the input sequence of cyberphone's
// es6testfile100m.txt (testdata/rfc8785/README.md): the static values,
// 2,000 consecutive ones from 0x0010000000000000, then the finite non-zero
// doubles of an iterated SHA-256 chain, eight little-endian bytes each.
func es6Inputs(t *testing.T) func() float64 {
	t.Helper()
	f, err := os.Open("testdata/rfc8785/es6-static.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var static []uint64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		u, err := strconv.ParseUint(strings.TrimPrefix(sc.Text(), "0x"), 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		static = append(static, u)
	}
	if len(static) != 168 {
		t.Fatalf("%d static values, want 168", len(static))
	}
	var (
		idx   int
		block [sha256.Size]byte
		data  []byte
	)
	return func() float64 {
		defer func() { idx++ }()
		switch {
		case idx < len(static):
			return math.Float64frombits(static[idx])
		case idx < len(static)+2000:
			return math.Float64frombits(0x0010000000000000 + uint64(idx-len(static)))
		}
		for {
			if len(data) == 0 {
				block = sha256.Sum256(block[:])
				data = block[:]
			}
			f := math.Float64frombits(binary.LittleEndian.Uint64(data))
			data = data[8:]
			if f != 0 && !math.IsNaN(f) && !math.IsInf(f, 0) {
				return f
			}
		}
	}
}

// TestRFC8785Numbers checks 1,000,000 lines of the ES6 number test against
// the published checksums, three ways: the one-pass encoder on a float64,
// and rawJCS (CanonicalizeJSON's parser) on the number spelled with 17
// significant digits ("1.0000000000000000e+00") and in Go's shortest
// exponent form ("1E+00").
func TestRFC8785Numbers(t *testing.T) {
	published := map[int]string{
		1000:    "be18b62b6f69cdab33a7e0dae0d9cfa869fda80ddc712221570f9f40a5878687",
		10000:   "b9f7a8e75ef22a835685a52ccba7f7d6bdc99e34b010992cbc5864cd12be6892",
		100000:  "22776e6d4b49fa294a0d0f349268e5c28808fe7e0cb2bcbe28f63894e494d4c7",
		1000000: "49415fee2c56c77864931bd3624faad425c3c577d6d74e89a83bc725506dad16",
	}
	const lines = 1000000
	paths := []string{"one-pass float64", "raw 17 digits", "raw shortest E"}
	hashes := make([]hash.Hash, len(paths))
	for i := range hashes {
		hashes[i] = sha256.New()
	}
	next := es6Inputs(t)
	var (
		e     encState
		p     rawJCS
		line  []byte
		spell []byte
	)
	plan := planFor(reflect.TypeFor[float64]())
	for n := 1; n <= lines; n++ {
		f := next()
		prefix := strconv.AppendUint(line[:0], math.Float64bits(f), 16)
		prefix = append(prefix, ',')
		k := len(prefix)

		// One-pass: the float64 encoder the plans use.
		out, err := plan(&e, prefix, reflect.ValueOf(f))
		if err != nil {
			t.Fatalf("line %d: %x: %v", n, math.Float64bits(f), err)
		}
		hashes[0].Write(append(out, '\n'))

		for i, digits := range []int{16, -1} {
			spell = strconv.AppendFloat(spell[:0], f, "eE"[i], digits, 64)
			out, err = p.canonical(out[:k], spell, 0)
			if err != nil {
				t.Fatalf("line %d: %s: %v", n, spell, err)
			}
			hashes[i+1].Write(append(out, '\n'))
		}
		line = out[:0]

		if want, ok := published[n]; ok {
			for i, h := range hashes {
				if got := hex.EncodeToString(h.Sum(nil)); got != want {
					t.Errorf("%s: SHA-256 of the first %d lines = %s, published %s", paths[i], n, got, want)
				}
			}
		}
	}
}
