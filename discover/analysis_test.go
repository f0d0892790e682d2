package discover

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/blevesearch/bleve/v2/analysis"
)

// plainFold must fold exactly as the analysis chain does, wherever it
// claims the text: checked on random texts over its alphabet (and a few
// characters just outside it) and by FuzzPlainFold.
func TestPlainFoldAgreesWithChain(t *testing.T) {
	an := newTextAnalyzer()
	alphabet := []byte("aZz09 \t\n\rMq7xY'-._:,s")
	rng := rand.New(rand.NewPCG(3, 4))
	claimed := 0
	for range 20000 {
		b := make([]byte, rng.IntN(24))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		if checkPlainFold(t, an, string(b)) {
			claimed++
		}
	}
	for _, s := range []string{"", " ", "Sharpe Ratio", "momentum  strategy\t12m", "ABC123def", "z\r\nscore"} {
		if !checkPlainFold(t, an, s) {
			t.Errorf("plainFold does not claim %q", s)
		}
	}
	for _, s := range []string{"Sharpe's ratio", "vol-targeted", "e.g", "a_b", "café", "x\x00y", "\v"} {
		if _, ok := plainFold(s); ok {
			t.Errorf("plainFold claims %q", s)
		}
	}
	if claimed < 1000 {
		t.Fatalf("only %d random texts were plain: the test checks too little", claimed)
	}
}

func checkPlainFold(t testing.TB, an *textAnalyzer, s string) bool {
	t.Helper()
	got, ok := plainFold(s)
	if !ok {
		return false
	}
	if want := an.slowFoldTokens(s); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Errorf("plainFold(%q) = %q, the analysis chain gives %q", s, got, want)
	}
	return true
}

func FuzzPlainFold(f *testing.F) {
	for _, s := range []string{"Sharpe Ratio", "momentum  strategy\t12m", "ABC123def", "it's", ""} {
		f.Add(s)
	}
	an := newTextAnalyzer()
	f.Fuzz(func(t *testing.T, s string) { checkPlainFold(t, an, s) })
}

// stemWord's shortcut for plain words must give what the plural stemmer
// gives.
func TestStemWordShortcut(t *testing.T) {
	an := newTextAnalyzer()
	rng := rand.New(rand.NewPCG(5, 6))
	letters := "aeioustxhyc09"
	for range 20000 {
		b := make([]byte, 1+rng.IntN(8))
		for i := range b {
			b[i] = letters[rng.IntN(len(letters))]
		}
		w := string(b)
		ts := an.stem.Filter(analysis.TokenStream{&analysis.Token{Term: []byte(w)}})
		if got, want := an.stemWord(w), string(ts[0].Term); got != want {
			t.Fatalf("stemWord(%q) = %q, the stemmer gives %q", w, got, want)
		}
	}
}
