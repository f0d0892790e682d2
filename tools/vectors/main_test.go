package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFixed(t *testing.T) {
	for s, want := range map[string]int64{
		"0": 0, "1": 1e15, "-1": -1e15, "0.72812": 728120000000000, "-3.0243": -3024300000000000,
		"-7.0514e-7": -705140000, "0.000026336": 26336000000, "4.1274E-7": 412740000, "1.5e1": 15e15,
		"69.999999999999999": 69999999999999999,
	} {
		if got, err := fixed(s); err != nil || got != want {
			t.Errorf("fixed(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "-", ".", "1..2", "1e", "1e-99", "1e-16", "0.0000000000000001", "70", "-70", "1.2.3", "1x", "1234567890123456789"} {
		if got, err := fixed(s); err == nil {
			t.Errorf("fixed(%q) = %d, want an error", s, got)
		}
	}
}

func TestQuantise(t *testing.T) {
	nums := []json.Number{"-1.27", "0.635", "0.00499", "0.005", "-0.005", "0"}
	q := make([]int8, len(nums))
	s, err := quantise(nums, q)
	if err != nil {
		t.Fatal(err)
	}
	// 127·x/1.27 = 100·x: −127, 63.5 → 64, 0.499 → 0, 0.5 → 1, −0.5 → −1 (halves away from zero), 0.
	want := []int8{-127, 64, 0, 1, -1, 0}
	for i := range want {
		if q[i] != want[i] {
			t.Errorf("q = %v, want %v", q, want)
			break
		}
	}
	if s != 1270000 {
		t.Errorf("scale %d, want 1270000", s)
	}
	if _, err := quantise([]json.Number{"0", "0"}, make([]int8, 2)); err == nil {
		t.Error("a zero vector was quantised")
	}
}

func TestKeep(t *testing.T) {
	for w, want := range map[string]bool{"the": true, "ab": true, "a": false, "The": false, "don't": false, "e-mail": false, "mp3": false, "café": false, "": false} {
		if keep(w) != want {
			t.Errorf("keep(%q) = %v", w, !want)
		}
	}
}

func TestRefusesAnotherTarball(t *testing.T) {
	dir := t.TempDir()
	tgz := filepath.Join(dir, "other.tgz")
	if err := os.WriteFile(tgz, []byte("not the package"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "table.bin")
	err := run(tgz, out)
	if err == nil || !strings.Contains(err.Error(), "is not the tarball of") {
		t.Fatalf("run = %v, want a refusal", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a table was written: %v", err)
	}
}

func TestConvertSmall(t *testing.T) {
	js := `{"precision":8,"dimensions":100,"size":3,"words":["the",",","of"],"vectors":{"the":[` +
		strings.Repeat("0.5,", 99) + `-1,9.9,0],",":[` + strings.Repeat("1,", 100) + `1,1],"of":[` +
		strings.Repeat("0.25,", 100) + `2.5,2]},"unkVector":[0]}`
	_, _, _, err := convert(strings.NewReader(js))
	if err == nil || !strings.Contains(err.Error(), "only 2 words to keep") {
		t.Fatalf("convert = %v, want too few words", err)
	}
}
