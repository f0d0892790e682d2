package relevance

import (
	"slices"
	"testing"
)

func TestSentences(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"one", []string{"one"}},
		{"Book a flight. Then cancel it!", []string{"Book a flight.", " Then cancel it!"}},
		{"see https://www.example.com. ok? yes; no", []string{"see https://www.example.com.", " ok?", " yes;", " no"}},
		{"pi is 3.14 and e 2.71", []string{"pi is 3.14 and e 2.71"}},
		{"a\nb.", []string{"a\n", "b."}},
	} {
		if got := sentences(c.in); !slices.Equal(got, c.want) {
			t.Errorf("sentences(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// Candidates are Rank's candidates, in its order, with features that agree
// with the score and the decision rule.
func TestCandidates(t *testing.T) {
	x := newIndex(t, fixture)
	for _, p := range fixturePrompts {
		cs := x.Candidates(p)
		rk := x.Rank(p, x.cfg.Candidates)
		if len(cs) != len(rk) {
			t.Fatalf("%q: %d candidates, Rank has %d", p, len(cs), len(rk))
		}
		q := x.Query(p)
		for i, c := range cs {
			if c.Name != rk[i].Name {
				t.Errorf("%q: candidate %d is %s, Rank's %s", p, i, c.Name, rk[i].Name)
			}
			f := c.Features
			if f[FeatRank] != 1_000_000/int64(i+1) {
				t.Errorf("%q: %s: rank feature %d at place %d", p, c.Name, f[FeatRank], i)
			}
			// The parts: the lexical part is at most the full score, the
			// fields' parts each at most the lexical part, and the soft
			// part what the full adds over the lexical (each rounded
			// down once per word).
			if f[FeatLexical] > f[FeatFull] || f[FeatFull]-f[FeatLexical]-f[FeatSoft] > int64(len(q.Words))+2 || f[FeatFull]-f[FeatLexical]-f[FeatSoft] < -2 {
				t.Errorf("%q: %s: full %d ≠ lexical %d + soft %d", p, c.Name, f[FeatFull], f[FeatLexical], f[FeatSoft])
			}
			for _, k := range []int{FeatName, FeatTitle, FeatLabels, FeatDesc, FeatParam} {
				if f[k] < 0 || f[k] > f[FeatLexical]+f[FeatFull] {
					t.Errorf("%q: %s: %s %d out of range", p, c.Name, FeatureNames[k], f[k])
				}
			}
			for _, k := range []int{FeatCover, FeatNameCover, FeatRatio, FeatSentence, FeatSentenceLead, FeatSentenceRank, FeatGroupBest, FeatGroupShare} {
				if f[k] < 0 || f[k] > 1_000_000 {
					t.Errorf("%q: %s: %s %d not a share", p, c.Name, FeatureNames[k], f[k])
				}
			}
			if i == 0 && f[FeatRatio] != 1_000_000 && f[FeatFull] == maxFull(cs) {
				t.Errorf("%q: best %s has ratio %d", p, c.Name, f[FeatRatio])
			}
		}
		// Query's matches carry the full score (capped at 10⁶).
		for _, m := range q.Matches {
			i := slices.IndexFunc(cs, func(c Candidate) bool { return c.Name == m.Name })
			if i < 0 || min(cs[i].Features[FeatFull], 1_000_000) != m.Score {
				t.Errorf("%q: match %s score %d, candidate %d", p, m.Name, m.Score, i)
			}
		}
	}
	if cs := x.Candidates("the of and to"); cs != nil {
		t.Errorf("a prompt of stop words has candidates %v", cs)
	}
}

func maxFull(cs []Candidate) int64 {
	var m int64
	for _, c := range cs {
		m = max(m, c.Features[FeatFull])
	}
	return m
}

// The sentence features: a document that answers one sentence of a
// two-sentence request whole leads on that sentence, however little of
// the other it holds; the name features read the name's words.
func TestSentenceFeatures(t *testing.T) {
	x := newIndex(t, fixture)
	cs := x.Candidates("Convert 100 dollars to euros. Also, make a QR code for my website.")
	got := map[string][NumFeatures]int64{}
	for _, c := range cs {
		got[c.Name] = c.Features
	}
	for _, n := range []string{"currency_converter__convert", "QR_Code_Generator__Generate"} {
		f, ok := got[n]
		if !ok {
			t.Fatalf("%s not a candidate: %v", n, cs)
		}
		if f[FeatSentenceLead] != 1_000_000 || f[FeatSentenceRank] != 1_000_000 {
			t.Errorf("%s: sentence lead %d, rank %d; want both 10⁶", n, f[FeatSentenceLead], f[FeatSentenceRank])
		}
		if f[FeatSentence] <= f[FeatFull] {
			t.Errorf("%s: its sentence's score %d not above its whole-prompt score %d", n, f[FeatSentence], f[FeatFull])
		}
	}
	// Its name's words: qr, code, generator, generate; the prompt holds two.
	if f := got["QR_Code_Generator__Generate"]; f[FeatNameCover] != 500_000 || f[FeatName] == 0 {
		t.Errorf("QR_Code_Generator__Generate: name cover %d, name part %d", f[FeatNameCover], f[FeatName])
	}
	// A name without a title: book_reservation's words are book and
	// reservation; the prompt holds one.
	for _, c := range x.Candidates("I want to book a flight to Boston") {
		if c.Name == "book_reservation" && (c.Features[FeatNameCover] != 500_000 || c.Features[FeatTitle] != 0) {
			t.Errorf("book_reservation: name cover %d, title part %d", c.Features[FeatNameCover], c.Features[FeatTitle])
		}
	}
}
