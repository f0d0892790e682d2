package series

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
)

var nan = math.NaN()

func tables() map[string]*Table {
	return map[string]*Table{
		"empty":     {Dates: []int32{}, Names: []string{}, Cols: [][]float64{}},
		"no-cols":   {Dates: []int32{1, 2}, Names: []string{}, Cols: [][]float64{}},
		"no-rows":   {Dates: []int32{}, Names: []string{"a"}, Cols: [][]float64{{}}},
		"pnl":       {Dates: []int32{-1, 0, 3}, Names: []string{"pnl"}, Cols: [][]float64{{nan, 0.5, -0.25}}},
		"specials":  {Dates: []int32{10, 11, 12, 13, 14}, Names: []string{"x", "Hong Kong", "é"}, Cols: [][]float64{{math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0, math.SmallestNonzeroFloat64}, {1, 1, -1, 1, -1}, {nan, nan, nan, nan, nan}}},
		"cache-mix": {Dates: []int32{1, 2, 3, 4, 5, 6, 7, 8}, Names: []string{"w"}, Cols: [][]float64{{1, 0.3, -1, 0.3, 1, 0.7, 0.1, 1}}},
	}
}

func TestRoundTrip(t *testing.T) {
	p := mustPacker(t)
	for name, tb := range tables() {
		t.Run(name, func(t *testing.T) {
			canon, err := Encode(nil, tb)
			if err != nil {
				t.Fatal(err)
			}
			if len(canon) != EncodedLen(tb) {
				t.Fatalf("EncodedLen %d, encoded %d bytes", EncodedLen(tb), len(canon))
			}
			back, err := Decode(canon)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := Encode(nil, back)
			if !bytes.Equal(again, canon) {
				t.Fatal("decode → encode changed the bytes")
			}
			packed, err := p.Pack(nil, canon)
			if err != nil {
				t.Fatal(err)
			}
			un, err := p.Unpack(nil, packed)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(un, canon) {
				t.Fatalf("unpack(pack(x)) != x:\n%x\n%x", un, canon)
			}
		})
	}
}

// Every NaN is written as the one NA pattern, so the digest of a table
// does not depend on which NaN a computation produced.
func TestNaNNormalised(t *testing.T) {
	a, _ := Encode(nil, &Table{Dates: []int32{1}, Names: []string{"x"}, Cols: [][]float64{{math.Float64frombits(0x7FF8000000000002)}}})
	b, _ := Encode(nil, &Table{Dates: []int32{1}, Names: []string{"x"}, Cols: [][]float64{{math.NaN()}}})
	if !bytes.Equal(a, b) {
		t.Fatal("two NaNs encode differently")
	}
}

// The golden file pins the canonical layout byte for byte: a change to it
// changes every artifact digest, and must be deliberate.
func TestGolden(t *testing.T) {
	canon, err := Encode(nil, tables()["specials"])
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "specials.hex")
	if os.Getenv("UPDATE_GOLDEN") != "" {
		os.WriteFile(path, []byte(hex.Dump(canon)), 0o644)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.Dump(canon); got != string(want) {
		t.Fatalf("canonical bytes changed:\n%s\nwant\n%s", got, want)
	}
}

func TestEncodeRefuses(t *testing.T) {
	for name, tb := range map[string]*Table{
		"names":    {Dates: []int32{1}, Names: []string{}, Cols: [][]float64{{1}}},
		"ragged":   {Dates: []int32{1, 2}, Names: []string{"a"}, Cols: [][]float64{{1}}},
		"unsorted": {Dates: []int32{2, 1}, Names: []string{"a"}, Cols: [][]float64{{1, 2}}},
		"utf8":     {Dates: []int32{1}, Names: []string{"\xff"}, Cols: [][]float64{{1}}},
	} {
		if _, err := Encode(nil, tb); err == nil {
			t.Errorf("%s: encoded", name)
		}
	}
}

func TestDecodeRefuses(t *testing.T) {
	good, _ := Encode(nil, tables()["pnl"])
	badNaN := bytes.Clone(good)
	copy(badNaN[len(badNaN)-24:], []byte{2, 0, 0, 0, 0, 0, 0xf8, 0x7f})
	for name, b := range map[string][]byte{
		"empty":     nil,
		"magic":     append([]byte("XXXX"), good[4:]...),
		"truncated": good[:len(good)-1],
		"trailing":  append(bytes.Clone(good), 0),
		"nan":       badNaN,
	} {
		if _, err := Decode(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
}

func mustPacker(tb testing.TB) *Packer {
	p, err := NewPacker()
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func FuzzDecode(f *testing.F) {
	for _, tb := range tables() {
		b, _ := Encode(nil, tb)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tb, err := Decode(b)
		if err != nil {
			return
		}
		again, err := Encode(nil, tb)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("accepted bytes that do not re-encode to themselves (err %v)", err)
		}
	})
}

func FuzzUnpack(f *testing.F) {
	p := mustPacker(f)
	for _, tb := range tables() {
		canon, _ := Encode(nil, tb)
		packed, _ := p.Pack(nil, canon)
		f.Add(packed)
		body, _ := p.dec.DecodeAll(packed[5:], nil)
		f.Add(body) // raw bodies reach unpackBody's checks directly
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, un := range [][]byte{unpackOrNil(p, b), bodyOrNil(b)} {
			if un == nil {
				continue
			}
			if _, err := Decode(un); err != nil {
				t.Fatalf("unpacked to an invalid canonical encoding: %v", err)
			}
			re, err := p.Pack(nil, un)
			if err != nil {
				t.Fatal(err)
			}
			if back, err := p.Unpack(nil, re); err != nil || !bytes.Equal(back, un) {
				t.Fatal("repack does not round-trip")
			}
		}
	})
}

func unpackOrNil(p *Packer, b []byte) []byte {
	out, err := p.Unpack(nil, b)
	if err != nil {
		return nil
	}
	return out
}

func bodyOrNil(b []byte) []byte {
	out, err := unpackBody(nil, b)
	if err != nil {
		return nil
	}
	return out
}
