package relevance

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	bleveunicode "github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"golang.org/x/text/unicode/norm"
)

// The analysis of a text into keys: discover's chain (docs/discovery.md,
// "Keys: the analysis chain") with the tool-name splitting in front and a
// stop list and an identifier filter behind:
//
//	identifier split (below) → NFKC → bleve "unicode" tokenizer (UAX #29)
//	→ "possessive_en" → "to_lower" → drop stop words, single characters
//	and identifiers → "stemmer_en_plural"
//
// The identifier split puts a space at every '_', at a '.' between two
// letters (UAX #29 keeps "ChaDri.change_drink" one word) and at case
// changes inside a word: a lower-case letter followed by an upper-case
// letter ("getUser" → "get User"), and an upper-case letter followed by
// an upper-case then a lower-case letter ("HTTPServer" → "HTTP Server")
// unless that lower-case letter is an s that ends the word: the plural of
// an abbreviation ("GUIDs", "URLs" stay one word each).
// So get_reservation_details, ChaDri.change_drink and
// Tide_Tables__Next_High_Tide are read as words, and so is a camelCase
// parameter name.
//
// A word is dropped when it is a stop word (stopWords), a single
// character, all digits, or holds four or more digits: numbers, dates,
// ids and codes ("CA107308006SI", "3668") name values, not what a tool
// does.

// analyzer is immutable and safe for concurrent use.
type analyzer struct {
	fold analysis.Analyzer
	stem analysis.TokenFilter
	stop map[string]bool
}

func newAnalyzer() *analyzer {
	stop := make(map[string]bool, 256)
	tm := analysis.NewTokenMap()
	_ = tm.LoadBytes(en.EnglishStopWords) // well-formed: cannot fail
	for w := range tm {
		stop[w] = true
	}
	for _, w := range requestStopWords {
		stop[w] = true
	}
	return &analyzer{
		fold: &analysis.DefaultAnalyzer{
			Tokenizer:    bleveunicode.NewUnicodeTokenizer(),
			TokenFilters: []analysis.TokenFilter{en.NewPossessiveFilter(), lowercase.NewLowerCaseFilter()},
		},
		stem: en.NewEnglishPluralStemmerFilter(),
		stop: stop,
	}
}

// requestStopWords are added to bleve's English stop list (the Snowball
// list discover's term extraction uses): the words of asking rather than
// of what is asked for — politeness, modal verbs and the verbs of a
// request ("Can you help me find…", "I would like to know…",
// "Additionally, please provide…"). The list is general English, written
// before any measurement and not taken from any data set's frequencies.
var requestStopWords = []string{
	"please", "kindly", "thanks", "thank", "hi", "hello", "hey",
	"can", "could", "would", "will", "shall", "may", "might", "must", "should",
	"also", "additionally", "furthermore", "moreover", "besides",
	"want", "wants", "wanted", "like", "need", "needs", "needed", "wish",
	"help", "provide", "tell", "give", "let", "know",
	"im", "ive", "id", "ill", "youre", "dont", "cant",
	"sure", "able", "interested", "appreciate", "great",
}

// word is one analysed word.
type word struct {
	fold string // folded: lower case, as written otherwise (the vector look-up)
	key  string // the plural-stemmed key (what BM25F compares)
}

// words analyses s into its content words, in order.
func (a *analyzer) words(s string) []word {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	s = norm.NFKC.String(splitIdent(s))
	ts := a.fold.Analyze([]byte(s))
	out := make([]word, 0, len(ts))
	for _, t := range ts {
		w := string(t.Term)
		if a.drop(w) {
			continue
		}
		out = append(out, word{fold: w, key: a.key(w)})
	}
	return out
}

func (a *analyzer) drop(w string) bool {
	if utf8.RuneCountInString(w) < 2 || a.stop[w] {
		return true
	}
	digits, other := 0, 0
	for _, r := range w {
		if '0' <= r && r <= '9' {
			digits++
		} else {
			other++
		}
	}
	return other == 0 || digits >= 4
}

// key is the plural-stemmed key of a folded word.
func (a *analyzer) key(w string) string {
	if len(w) < 3 || w[len(w)-1] != 's' {
		return w
	}
	ts := a.stem.Filter(analysis.TokenStream{&analysis.Token{Term: []byte(w)}})
	if len(ts) == 0 || len(ts[0].Term) == 0 {
		return w
	}
	return string(ts[0].Term)
}

// splitIdent inserts spaces where an identifier joins words (see above).
func splitIdent(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 8)
	rs := []rune(s)
	for i, r := range rs {
		switch {
		case r == '_':
			b.WriteByte(' ')
			continue
		case r == '.' && i > 0 && i+1 < len(rs) && unicode.IsLetter(rs[i-1]) && unicode.IsLetter(rs[i+1]):
			b.WriteByte(' ')
			continue
		case unicode.IsUpper(r) && i > 0:
			p := rs[i-1]
			if unicode.IsLower(p) ||
				unicode.IsUpper(p) && i+1 < len(rs) && unicode.IsLower(rs[i+1]) && !pluralS(rs, i+1) {
				b.WriteByte(' ')
			}
		}
		b.WriteRune(r)
	}
	return b.String()
}

// pluralS reports whether rs[i] is an 's' that ends a word: the plural of
// an upper-case abbreviation ("GUIDs", "APIs", "URLs"), not a word of its own.
func pluralS(rs []rune, i int) bool {
	return rs[i] == 's' && (i+1 == len(rs) || !unicode.IsLetter(rs[i+1]))
}
