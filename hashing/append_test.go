package hashing

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// checkAppend: AppendPlainString and AppendPlainFloat write what
// json.Marshal writes, where they write anything; and they take every
// plain string.
func checkAppend(t *testing.T, s string, f float64) {
	t.Helper()
	want, _ := json.Marshal(s)
	got, ok := AppendPlainString([]byte("x"), s)
	plain := true
	for _, c := range []byte(s) {
		plain = plain && c >= 0x20 && c <= 0x7e && !strings.ContainsRune(`"\<>&`, rune(c))
	}
	if ok != plain || ok && string(got) != "x"+string(want) || !ok && string(got) != "x" {
		t.Errorf("AppendPlainString(%q) = %q, %v; json.Marshal %s", s, got, ok, want)
	}
	want, err := json.Marshal(f)
	got, ok = AppendPlainFloat([]byte("x"), f)
	if ok != (err == nil) || ok && string(got) != "x"+string(want) || !ok && string(got) != "x" {
		t.Errorf("AppendPlainFloat(%v) = %q, %v; json.Marshal %s, %v", f, got, ok, want, err)
	}
}

var appendSeeds = []struct {
	s string
	f float64
}{
	{"", 0}, {"MOM_WZS", 1}, {"a<b", 0.9}, {"a>b", -2.5}, {"R&D", 1e-6}, {`"`, 1e-7}, {`\`, 1e20}, {"\t", 1e21},
	{"\x7f", 5e-324}, {"é", 1.5e300}, {"\u2028", math.Inf(1)}, {"\xff", math.NaN()}, {" ~", math.Copysign(0, -1)},
}

func TestAppendPlain(t *testing.T) {
	for _, c := range appendSeeds {
		checkAppend(t, c.s, c.f)
	}
}

func FuzzAppendPlain(f *testing.F) {
	for _, c := range appendSeeds {
		f.Add(c.s, c.f)
	}
	f.Fuzz(checkAppend)
}
