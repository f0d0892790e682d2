package discover

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// Limits on input. Prompts and term lists over them are refused with
// ErrBadQuery rather than truncated.
const (
	// DefaultMaxPromptBytes is Options.MaxPromptBytes when left zero.
	DefaultMaxPromptBytes = 16 << 10
	// DefaultMaxTerms is Options.MaxTerms when left zero.
	DefaultMaxTerms = 256
	// MaxTermBytes bounds one given term.
	MaxTermBytes = 256
	// MaxPhraseWords bounds the phrases extraction looks for: longer
	// aliases and tags are still matched when given as terms.
	MaxPhraseWords = 8
)

// inversionCues are the phrases that ask for the opposite of a family
// ("momentum, but the other way round"). They are part of every
// vocabulary, so extraction keeps them as terms, and they are matched by
// their keys, so "opposite", "Opposite!" and "opposites" are one cue.
var inversionCues = []string{
	"opposite", "opposite direction", "opposite bet", "opposite side",
	"other way round", "other way around", "other direction", "other side",
	"reverse", "reversed", "in reverse", "inverse", "inverted", "invert",
	"flip", "flipped", "flip side", "flip the sign", "sign flipped",
	"upside down", "mirror image", "negate", "negated", "negative of",
	"bet against", "betting against", "trade against", "trading against",
	"go against", "going against", "contrary", "contrary to",
	"fade", "fading", "faded", "fade out",
	"instead of following", "rather than following",
}

// fillerWords are words a researcher's prompt is full of that name no
// capability: what one wants to do with a capability (test, evaluate,
// compare), what kind of thing it is (strategy, metric, signal), and
// conversational filler. They are dropped from prompts as single words
// (with the English stop words); phrases that contain them are kept, and
// given terms are never filtered.
var fillerWords = strings.Fields(`
	want wants wanted would like need needs please could can help let lets
	use uses using used try tries trying tried run runs running ran
	test tests testing tested backtest backtests backtesting backtested
	evaluate evaluates evaluating evaluated evaluation assess assessing
	measure measures measuring measured judge judged judging rank ranked
	compare compares comparing compared comparison check checking show
	see look looking find finding get give make build implement apply
	applied compute computed calculate calculated estimate estimated
	optimise optimize optimised optimized tune tuned pick choose select
	score scored scoring report plot something anything everything thing
	things way ways kind kinds type types sort version idea ideas
	strategy strategies approach approaches method methods methodology
	model models system systems rule rules pipeline pipelines setup
	metric metrics family families operation operations signal signals
	recipe recipes capability capabilities performance result results
	data dataset datasets analysis study research experiment experiments
	parameter parameters param params setting settings value values
	also just maybe really actually basically simply etc e.g i.e eg ie vs
	versus per via based basis instead rather well good better best bad
	worse worst new old one two three first second last next day days
	week weeks month months year years time times period periods
`)

// Vocabulary is the set of phrases term extraction looks for: the folded
// names, aliases and tags of a registry version, plus the inversion cues.
// A Vocabulary is safe for concurrent use. NewVocabulary's is immutable;
// an index's changes with the index, under the index's lock.
type Vocabulary struct {
	an *textAnalyzer
	// terms holds the phrases: pinned, the cues and NewVocabulary's; for
	// the vocabulary of an index, also every key a tier lists an entry
	// under, changing with the index under the index's lock.
	terms  *phraseTable
	cues   map[string]bool // keys of inversion cues
	filler map[string]bool // keys of filler words
}

// NewVocabulary builds a vocabulary of the given phrases (names, aliases,
// tags); the inversion cues are always part of it.
func NewVocabulary(phrases ...string) *Vocabulary {
	an := newTextAnalyzer()
	return newVocabulary(an, newPhraseTable(0, 0, pinnedKeys(an, phrases)))
}

func newVocabulary(an *textAnalyzer, terms *phraseTable) *Vocabulary {
	return &Vocabulary{an: an, terms: terms, cues: cueKeys(an), filler: fillerKeys(an)}
}

// pinnedKeys are the keys of phrases and of the inversion cues, those of
// at most MaxPhraseWords words: extraction never looks for longer ones.
func pinnedKeys(an *textAnalyzer, phrases []string) [][]byte {
	var out [][]byte
	for _, p := range slices.Concat(phrases, inversionCues) {
		if key := an.foldTerm(p).key(); key != "" && strings.Count(key, " ") < MaxPhraseWords {
			out = append(out, []byte(key))
		}
	}
	return out
}

func cueKeys(an *textAnalyzer) map[string]bool {
	m := make(map[string]bool, len(inversionCues))
	for _, c := range inversionCues {
		m[an.foldTerm(c).key()] = true
	}
	return m
}

func fillerKeys(an *textAnalyzer) map[string]bool {
	m := make(map[string]bool, len(fillerWords))
	for _, w := range fillerWords {
		for _, k := range an.keys(an.foldTokens(w)) {
			m[k] = true
		}
	}
	return m
}

// Key is what discovery compares a phrase by (its folded, stemmed words):
// phrases with one key are one alias to discovery ("vol-targeted
// positions" is "vol targeted position").
func (v *Vocabulary) Key(p string) string { return v.an.foldTerm(p).key() }

// Len returns the number of distinct phrases, inversion cues included.
func (v *Vocabulary) Len() int {
	n := 0
	for p := range uint32(v.terms.phrases()) {
		key := v.terms.key(p)
		if len(key) > 0 && bytes.Count(key, []byte(" ")) < MaxPhraseWords && (p < v.terms.pinned || len(v.terms.postings(p)) > 0) {
			n++
		}
	}
	return n
}

// isCue reports whether a term is an inversion cue: a cue, possibly with
// stop words around it ("the other way round" is the cue "other way
// round").
func (v *Vocabulary) isCue(t folded) bool {
	if v.cues[t.key()] {
		return true
	}
	words := strings.Split(t.text, " ")
	if len(words) != len(t.keys) {
		return false
	}
	for lo := 0; lo < len(words) && v.an.stop[words[lo]]; lo++ {
		for hi := len(words); hi > lo+1; hi-- {
			if v.cues[strings.Join(t.keys[lo+1:hi], " ")] && allStop(v.an, words[hi:]) {
				return true
			}
		}
	}
	for hi := len(words); hi > 1 && v.an.stop[words[hi-1]]; hi-- {
		if v.cues[strings.Join(t.keys[:hi-1], " ")] {
			return true
		}
	}
	return false
}

func allStop(an *textAnalyzer, words []string) bool {
	for _, w := range words {
		if !an.stop[w] {
			return false
		}
	}
	return true
}

// ExtractTerms turns a researcher's prompt into terms, using the default
// limits (DefaultMaxPromptBytes, DefaultMaxTerms). See extractTerms.
func ExtractTerms(prompt string, vocab *Vocabulary) ([]string, error) {
	return extractTerms(prompt, vocab, DefaultMaxPromptBytes, DefaultMaxTerms)
}

// extractTerms turns a prompt into terms:
//
//  1. The prompt must be valid UTF-8, not blank, and at most maxBytes long.
//  2. It is folded into words (NFKC, UAX #29 words, possessives stripped,
//     lower case; punctuation, hyphens and spacing fold away).
//  3. Phrases of the vocabulary are found longest first: every span of up
//     to vocab.terms.maxLen words whose key is a phrase is a candidate; longer
//     candidates are taken before shorter ones, earlier before later, and
//     a candidate overlapping one already taken is skipped. A one-word
//     phrase that is a stop word or filler word is not taken.
//  4. Every word not covered by a phrase becomes a one-word term unless it
//     is an English stop word, a filler word, a number, or one character.
//  5. Terms are listed in prompt order, each key once (first spelling wins).
//     More than maxTerms terms is an error, not a truncation.
//
// A term is reported as its folded words joined by single spaces, so
// folding a term again gives the same term.
func extractTerms(prompt string, vocab *Vocabulary, maxBytes, maxTerms int) ([]string, error) {
	if len(prompt) > maxBytes {
		return nil, fmt.Errorf("%w: prompt is %d bytes, the limit is %d", ErrBadQuery, len(prompt), maxBytes)
	}
	if !utf8.ValidString(prompt) {
		return nil, fmt.Errorf("%w: prompt is not valid UTF-8", ErrBadQuery)
	}
	if strings.TrimSpace(prompt) == "" {
		return nil, fmt.Errorf("%w: prompt is blank", ErrBadQuery)
	}
	if vocab == nil {
		vocab = NewVocabulary()
	}
	an := vocab.an
	words := an.foldTokens(prompt)
	keys := an.keys(words)

	type span struct{ start, n int }
	var cands []span
	maxLen := vocab.terms.maxLen
	for i := range keys {
		var b strings.Builder
		for n := 1; n <= maxLen && i+n <= len(keys); n++ {
			if n > 1 {
				b.WriteByte(' ')
			}
			b.WriteString(keys[i+n-1])
			if !vocab.terms.has(b.String()) {
				continue
			}
			if n == 1 && vocab.dropWord(words[i], keys[i]) {
				continue
			}
			cands = append(cands, span{i, n})
		}
	}
	sort.SliceStable(cands, func(a, b int) bool {
		if cands[a].n != cands[b].n {
			return cands[a].n > cands[b].n
		}
		return cands[a].start < cands[b].start
	})
	covered := make([]int, len(words)) // 0: free; else 1 + index of the span that starts here, -1 inside a span
	for _, c := range cands {
		free := true
		for j := c.start; j < c.start+c.n; j++ {
			if covered[j] != 0 {
				free = false
				break
			}
		}
		if !free {
			continue
		}
		covered[c.start] = c.n
		for j := c.start + 1; j < c.start+c.n; j++ {
			covered[j] = -1
		}
	}

	terms := make([]string, 0, 16)
	seen := make(map[string]bool, 16)
	emit := func(text, key string) error {
		if seen[key] {
			return nil
		}
		seen[key] = true
		if len(terms) == maxTerms {
			return fmt.Errorf("%w: prompt yields more than %d terms", ErrBadQuery, maxTerms)
		}
		terms = append(terms, text)
		return nil
	}
	for i := 0; i < len(words); i++ {
		switch n := covered[i]; {
		case n > 0:
			if err := emit(strings.Join(words[i:i+n], " "), strings.Join(keys[i:i+n], " ")); err != nil {
				return nil, err
			}
			i += n - 1
		case n == 0 && !vocab.dropWord(words[i], keys[i]):
			if err := emit(words[i], keys[i]); err != nil {
				return nil, err
			}
		}
	}
	return terms, nil
}

// dropWord reports whether a single word is not worth a term: a stop
// word, a filler word, a number or a single character.
func (v *Vocabulary) dropWord(word, key string) bool {
	if v.an.stop[word] || v.an.stop[key] || v.filler[key] {
		return true
	}
	if utf8.RuneCountInString(word) < 2 {
		return true
	}
	return isNumber(word)
}

func isNumber(w string) bool {
	digits := 0
	for _, r := range w {
		switch {
		case '0' <= r && r <= '9':
			digits++
		case r == '.' || r == ',' || r == '_':
		default:
			return false
		}
	}
	return digits > 0
}
