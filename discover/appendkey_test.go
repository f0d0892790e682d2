package discover

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// appendKey is foldTerm's key, plain text or not, with and without
// underscores read as spaces, cut at any number of words.
func TestAppendKeyIsFoldTermKey(t *testing.T) {
	an := newTextAnalyzer()
	check := func(s string, underscores bool, maxWords int) {
		t.Helper()
		in := s
		if underscores {
			in = strings.ReplaceAll(s, "_", " ")
		}
		want := strings.Join(firstN(an.foldTerm(in).keys, maxWords), " ")
		if got := string(an.appendKey([]byte("x"), s, underscores, maxWords)); got != "x"+want {
			t.Errorf("appendKey(%q, %v, %d) = %q, want %q", s, underscores, maxWords, got[1:], want)
		}
	}
	for _, s := range []string{
		"", " ", "_", "__", "MOM_WZS", "SYN_000001", "mom_", "_mom", "a__b", "a_ b", "Sharpe ratios",
		"Returns", "ss", "sss", "bus", "buses", "CLASS_ES", "x_s", "A_B_C", "a\tb\nc\rd", "  lead  trail  ",
		"kiss", "its", "1s", "12s", "abc_123s", "Sharpe's ratio", "α_β", "vol-targeted positions", "+", "≥ x",
	} {
		for _, u := range []bool{false, true} {
			for _, n := range []int{1, 2, 8, 100} {
				check(s, u, n)
			}
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []rune("aAbBsSzZ09_ _\t-'é’")
	for range 20000 {
		r := make([]rune, rng.IntN(12))
		for i := range r {
			r[i] = alphabet[rng.IntN(len(alphabet))]
		}
		check(string(r), rng.IntN(2) == 0, 1+rng.IntN(4))
	}
}

// Plain text, what most names, aliases and tags are, is keyed without
// allocating: indexing 100,000 entries makes no garbage of it.
func TestAppendKeyPlainAllocates(t *testing.T) {
	an := newTextAnalyzer()
	buf := make([]byte, 0, 256)
	for _, s := range []string{"Cusiwix lerivex", "SYN_000001", "vapenax cunizox veqaqix"} {
		if n := testing.AllocsPerRun(100, func() { buf = an.appendKey(buf[:0], s, true, 8) }); n != 0 {
			t.Errorf("appendKey(%q) allocates %v times", s, n)
		}
	}
}
