package discover

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestExtractTerms(t *testing.T) {
	v := NewVocabulary("sharpe ratio", "max drawdown", "mean reversion", "time-series momentum", "momentum", "MOM_WZS", "z-score", "log returns", "carry")
	for _, tc := range []struct {
		prompt string
		want   []string
	}{
		// Phrases before words, longest first.
		{"Time-series momentum with the Sharpe ratio", []string{"time series momentum", "sharpe ratio"}},
		{"momentum, then max drawdown", []string{"momentum", "max drawdown"}},
		// Case, hyphens, possessives, plurals and punctuation fold.
		{"SHARPE-RATIO!!! and Sharpe's ratios?", []string{"sharpe ratio"}},
		{"Mean-Reversion; mean reversion; MEAN REVERSION", []string{"mean reversion"}},
		{"z-scores of log-returns", []string{"z scores", "log returns"}},
		{"“Sharpe’s ratio” (annualised)", []string{"sharpe ratio", "annualised"}},
		// Stop words, filler, numbers and single letters drop.
		{"I would like to backtest a strategy with a 50-day window of 2.5 x", []string{"window"}},
		{"the and of", []string{}},
		// An inversion cue is a phrase of every vocabulary.
		{"momentum but the other way round", []string{"momentum", "other way round"}},
		{"bet against carry", []string{"bet against", "carry"}},
		// Names fold too.
		{"mom_wzs vs MOM_WZS", []string{"mom_wzs"}},
		// Full-width and compatibility characters normalise.
		{"ＳＨＡＲＰＥ ＲＡＴＩＯ", []string{"sharpe ratio"}},
		{"Momentum — évaluée par le ratio de Sharpe", []string{"momentum", "évaluée", "par", "le", "ratio", "de", "sharpe"}},
	} {
		got, err := ExtractTerms(tc.prompt, v)
		if err != nil {
			t.Errorf("%q: %v", tc.prompt, err)
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("ExtractTerms(%q) = %q, want %q", tc.prompt, got, tc.want)
		}
	}
}

func TestExtractTermsLimits(t *testing.T) {
	v := NewVocabulary()
	for name, p := range map[string]string{
		"too long": strings.Repeat("a", DefaultMaxPromptBytes+1),
		"blank":    "   ",
		"invalid":  "abc\xffdef",
	} {
		if _, err := ExtractTerms(p, v); !errors.Is(err, ErrBadQuery) {
			t.Errorf("%s: %v", name, err)
		}
	}
	var b strings.Builder
	for i := 0; b.Len() < DefaultMaxPromptBytes-16; i++ {
		b.WriteString(wordN(i))
		b.WriteByte(' ')
	}
	if _, err := ExtractTerms(b.String(), v); !errors.Is(err, ErrBadQuery) {
		t.Errorf("prompt with thousands of distinct words: %v", err)
	}
	// At the limit, with many repeated words, extraction is fast.
	p := strings.Repeat("momentum sharpe ratio ", DefaultMaxPromptBytes/len("momentum sharpe ratio "))
	start := time.Now()
	got, err := ExtractTerms(p, NewVocabulary("sharpe ratio"))
	if err != nil || !slices.Equal(got, []string{"momentum", "sharpe ratio"}) {
		t.Errorf("repeated prompt: %q %v", got, err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("16 KiB prompt took %v", d)
	}
}

// wordN is a distinct made-up word for each n.
func wordN(n int) string {
	const letters = "bcdfghjklmnpqrstvwz"
	var b []byte
	for {
		b = append(b, letters[n%len(letters)], "aeiou"[n%5])
		n /= len(letters)
		if n == 0 {
			break
		}
	}
	return string(b) + "x"
}

// TestFoldIdempotent: folding a term again gives the same term, which is
// what lets Rederive re-derive a result from its own terms.
func TestFoldIdempotent(t *testing.T) {
	an := newTextAnalyzer()
	for _, s := range []string{"Sharpe's", "x's's", "½ ratio", "ﬁnance", "İstanbul", "e.g. x_t", "MOM_WZS", "+", " ＋ ", "café’s", "ǅemal", "a\u0301b", "١٢٣"} {
		f := an.foldTerm(s)
		if g := an.foldTerm(f.text); g.text != f.text || g.key() != f.key() {
			t.Errorf("fold(%q) = %q, fold again = %q", s, f.text, g.text)
		}
	}
}

// TestIndexAnalyzerAgrees: the bleve index analyzer turns folded text into
// exactly the keys the equality tiers use.
func TestIndexAnalyzerAgrees(t *testing.T) {
	im, err := indexMapping()
	if err != nil {
		t.Fatal(err)
	}
	a := im.AnalyzerNamed(analyzerName)
	bi := im.AnalyzerNamed(bigramName)
	an := newTextAnalyzer()
	s, _ := mustOpenStore(t)
	var texts []string
	for _, c := range s.Current().Capabilities() {
		texts = append(texts, c.Name, c.Disc.Description)
		texts = append(texts, c.Disc.Aliases...)
		texts = append(texts, c.Disc.Tags...)
	}
	texts = append(texts, "Sharpe’s ratios", "İstanbul ½ ﬁnance x's's")
	for _, text := range texts {
		words := an.foldTokens(text)
		want := an.keys(words)
		var got []string
		for _, tok := range a.Analyze([]byte(strings.Join(words, " "))) {
			got = append(got, string(tok.Term))
		}
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("%q: index analyzer %q, keys %q", text, got, want)
		}
		// The indexed fields hold each pair of adjacent keys, at
		// consecutive positions, so phrase queries over pairs work.
		var pairs []string
		for i, tok := range bi.Analyze([]byte(strings.Join(words, " "))) {
			pairs = append(pairs, string(tok.Term))
			if tok.Position != i+1 {
				t.Errorf("%q: pair %d at position %d", text, i, tok.Position)
			}
		}
		for i := range pairs {
			if want := want[i] + " " + want[i+1]; pairs[i] != want {
				t.Errorf("%q: pair %d is %q, want %q", text, i, pairs[i], want)
			}
		}
		if len(want) > 1 && len(pairs) != len(want)-1 {
			t.Errorf("%q: %d pairs for %d keys", text, len(pairs), len(want))
		}
	}
}

func FuzzExtractTerms(f *testing.F) {
	for _, s := range []string{
		"Backtest time-series momentum on crude oil and report the Sharpe ratio.",
		"momentum but the other way round",
		"Sharpe's ratios; MAX-DRAWDOWN!",
		"x's's ½ ﬁ İ \u0301a",
		"\x00\xff",
		strings.Repeat("mean reversion ", 100),
		strings.Repeat("Sharpe's x-y ", DefaultMaxPromptBytes/len("Sharpe's x-y ")),
		strings.Repeat("Sharpe's x-y ", DefaultMaxPromptBytes/len("Sharpe's x-y ")+1),
	} {
		f.Add(s)
	}
	v := NewVocabulary("sharpe ratio", "max drawdown", "mean reversion", "time-series momentum", "momentum", "MOM_WZS", "z-score")
	f.Fuzz(func(t *testing.T, prompt string) {
		start := time.Now()
		terms, err := ExtractTerms(prompt, v)
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("%d-byte prompt took %v", len(prompt), d)
		}
		if err != nil {
			if !errors.Is(err, ErrBadQuery) {
				t.Fatalf("error %v does not wrap ErrBadQuery", err)
			}
			return
		}
		if len(terms) > DefaultMaxTerms {
			t.Fatalf("%d terms", len(terms))
		}
		seen := map[string]bool{}
		for _, term := range terms {
			if term == "" || !utf8.ValidString(term) {
				t.Fatalf("bad term %q", term)
			}
			again := v.an.foldTerm(term)
			if again.text != term {
				t.Fatalf("term %q folds to %q", term, again.text)
			}
			if seen[again.key()] {
				t.Fatalf("key %q twice in %q", again.key(), terms)
			}
			seen[again.key()] = true
		}
	})
}

// FuzzFoldTerm: folding never panics, is idempotent, and a folded term's
// key is stable.
func FuzzFoldTerm(f *testing.F) {
	for _, s := range []string{"Sharpe's", "x's's", "½", "ﬁ", "İ", "+", "a\u0301", "\xff", "'s", "’’s"} {
		f.Add(s)
	}
	an := newTextAnalyzer()
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > MaxTermBytes*4 {
			return
		}
		start := time.Now()
		a := an.foldTerm(s)
		b := an.foldTerm(a.text)
		if d := time.Since(start); d > time.Second {
			t.Fatalf("folding %d bytes took %v", len(s), d)
		}
		if a.text != b.text || a.key() != b.key() {
			t.Fatalf("fold(%q) = %q/%q, again %q/%q", s, a.text, a.key(), b.text, b.key())
		}
	})
}

// FuzzDiscover: any prompt either is refused with ErrBadQuery or gives a
// result that re-derives to the same bytes from its own terms.
func FuzzDiscover(f *testing.F) {
	for _, p := range []string{
		"Momentum on crude oil, but the other way round; judge it by Sharpe's ratio.",
		"log returns z-score trend carry mean-reversion",
		"pairs trading with a 60-day window",
		"\xff",
	} {
		f.Add(p)
	}
	s, _ := mustOpenStore(f)
	d := mustNew(f, s)
	ctx := context.Background()
	version := s.Current().Version()
	f.Fuzz(func(t *testing.T, prompt string) {
		d.mu.RLock()
		vocab := d.cur.vocab
		terms, err := ExtractTerms(prompt, vocab)
		d.mu.RUnlock()
		if err != nil {
			if !errors.Is(err, ErrBadQuery) {
				t.Fatal(err)
			}
			return
		}
		if len(terms) == 0 {
			return
		}
		a, err := d.Rederive(ctx, terms, version)
		if err != nil {
			t.Fatalf("Rederive(%q): %v", terms, err)
		}
		b, err := d.Rederive(ctx, a.Terms, version)
		if err != nil {
			t.Fatalf("Rederive(%q): %v", a.Terms, err)
		}
		if a.ID != b.ID || !slices.Equal(a.Terms, terms) {
			t.Fatalf("%q: results differ on re-derivation", prompt)
		}
		// Every term is matched, unresolved, read by a relevance tier
		// that matched, or named a family an inversion cue moved away.
		accounted := map[string]bool{}
		for _, u := range a.Unresolved {
			accounted[u] = true
		}
		for _, m := range a.Matches {
			accounted[m.Term] = true
			if m.Mode == ModeRelevance {
				for _, rt := range a.Relevance.Terms {
					accounted[rt] = true
				}
			}
		}
		inverted := 0
		for _, m := range a.Matches {
			if m.Mode == ModeInversion {
				inverted++
			}
		}
		for _, term := range a.Terms {
			if !accounted[term] && inverted == 0 {
				t.Fatalf("%q: term %q is neither matched nor unresolved", prompt, term)
			}
		}
	})
}

// A vocabulary counts phrases by key, the cues included, and leaves out
// phrases extraction never looks for (empty, or over MaxPhraseWords words).
func TestVocabularyLen(t *testing.T) {
	cues := NewVocabulary().Len()
	if cues == 0 || cues > len(inversionCues) {
		t.Fatalf("%d cue phrases for %d cues", cues, len(inversionCues))
	}
	v := NewVocabulary("Sharpe ratio", "sharpe-ratios", "opposite", "", "...", "a b c d e f g h", "a b c d e f g h i")
	if got, want := v.Len(), cues+2; got != want {
		t.Errorf("Len() = %d, want %d", got, want)
	}
	if !v.terms.has("a b c d e f g h") || v.terms.has("a b c d e f g h i") || v.terms.maxLen != MaxPhraseWords {
		t.Errorf("8 words are a phrase, 9 are not; maxLen %d", v.terms.maxLen)
	}
}
