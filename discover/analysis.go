package discover

import (
	"strings"
	gounicode "unicode"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/token/shingle"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/mapping"
	"golang.org/x/text/unicode/norm"
)

// The analysis chain, shared by the index and by every tier of the cascade:
//
//	NFKC → bleve "unicode" tokenizer (UAX #29 words: hyphens, spaces and
//	punctuation separate words) → "possessive_en" (Sharpe's → Sharpe) →
//	"to_lower" → "stemmer_en_plural" (ratios → ratio, volatilities →
//	volatility)
//
// The first four steps are the fold: they turn text into the words a term
// is reported as. The plural stemmer turns folded words into keys, which is
// what the tiers compare: "Sharpe's", "sharpe-ratio" and "Sharpe ratios"
// all fold to words whose key is "sharpe" / "sharpe ratio".
//
// The plural stemmer is deliberately light (an s-stemmer): a full stemmer
// would make "momentum" and "moment", or "return" and "returning", one key.
const (
	analyzerName   = "groundgate"
	bigramName     = "groundgate_bigrams"
	shingleName    = "groundgate_shingle2"
	tokenizerName  = unicode.Name
	possessiveName = en.PossessiveName
	lowerName      = lowercase.Name
	pluralName     = en.PluralStemmerName
)

// maxFoldRounds bounds the re-analysis that makes folding idempotent.
const maxFoldRounds = 4

// textAnalyzer folds and keys text. It is immutable and safe for
// concurrent use.
type textAnalyzer struct {
	fold analysis.Analyzer    // tokenizer, possessive, lower case
	stem analysis.TokenFilter // plural stemmer
	stop analysis.TokenMap    // English stop words (extraction only)
}

func newTextAnalyzer() *textAnalyzer {
	stop := analysis.NewTokenMap()
	// The embedded list is well-formed; LoadBytes cannot fail on it.
	_ = stop.LoadBytes(en.EnglishStopWords)
	return &textAnalyzer{
		fold: &analysis.DefaultAnalyzer{
			Tokenizer:    unicode.NewUnicodeTokenizer(),
			TokenFilters: []analysis.TokenFilter{en.NewPossessiveFilter(), lowercase.NewLowerCaseFilter()},
		},
		stem: en.NewEnglishPluralStemmerFilter(),
		stop: stop,
	}
}

// indexMapping is the bleve mapping of the discovery index: one document
// per entry, three text fields analysed with the chain above followed by a
// shingle filter that indexes each pair of adjacent keys as one term
// ("sharpe ratio"). The keyword tier only looks up terms of two or more
// words inside texts, so a two-word term is one term query and a longer
// one a phrase query over its pairs: short posting lists even when every
// word is common. Term vectors are kept for the phrase queries.
func indexMapping() (*mapping.IndexMappingImpl, error) {
	im := mapping.NewIndexMapping()
	err := im.AddCustomAnalyzer(analyzerName, map[string]any{
		"type":          custom.Name,
		"tokenizer":     tokenizerName,
		"token_filters": []any{possessiveName, lowerName, pluralName},
	})
	if err != nil {
		return nil, err
	}
	err = im.AddCustomTokenFilter(shingleName, map[string]any{
		"type": shingle.Name, "min": 2.0, "max": 2.0, "output_original": false, "separator": " ",
	})
	if err != nil {
		return nil, err
	}
	err = im.AddCustomAnalyzer(bigramName, map[string]any{
		"type":          custom.Name,
		"tokenizer":     tokenizerName,
		"token_filters": []any{possessiveName, lowerName, pluralName, shingleName},
	})
	if err != nil {
		return nil, err
	}
	doc := mapping.NewDocumentStaticMapping()
	for _, f := range []string{fieldName, fieldHead, fieldDesc} {
		fm := mapping.NewTextFieldMapping()
		fm.Analyzer = bigramName
		fm.Store = false
		fm.IncludeInAll = false
		fm.DocValues = false
		fm.IncludeTermVectors = true
		doc.AddFieldMappingsAt(f, fm)
	}
	im.DefaultMapping = doc
	im.DefaultAnalyzer = analyzerName
	im.StoreDynamic = false
	im.IndexDynamic = false
	im.DocValuesDynamic = false
	return im, nil
}

// pass runs the fold analyzer once over s.
func (a *textAnalyzer) pass(s string) []string {
	ts := a.fold.Analyze([]byte(s))
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		if len(t.Term) > 0 {
			out = append(out, string(t.Term))
		}
	}
	return out
}

// foldTokens returns the folded words of s: NFKC, then the fold analyzer,
// then each word re-analysed until it is its own fold, so that folding the
// words again gives the same words. Words that do not settle within
// maxFoldRounds rounds are dropped.
func (a *textAnalyzer) foldTokens(s string) []string {
	if words, ok := plainFold(s); ok {
		return words
	}
	return a.slowFoldTokens(s)
}

// plainFold folds text made only of ASCII letters, digits and white
// space, most names, aliases and tags, without the analysis chain: NFKC
// leaves it alone, UAX #29 breaks it exactly at the white space (letters
// and digits run together into one word), no word can carry a possessive,
// and lower case is the last step. ok is false for any other text.
func plainFold(s string) (words []string, ok bool) {
	lower := true
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == ' ', c == '\t', c == '\n', c == '\r':
		case 'A' <= c && c <= 'Z':
			lower = false
		default:
			return nil, false
		}
	}
	if !lower {
		s = strings.ToLower(s)
	}
	return strings.Fields(s), true
}

// slowFoldTokens is foldTokens through the analysis chain.
func (a *textAnalyzer) slowFoldTokens(s string) []string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	first := a.pass(norm.NFKC.String(s))
	out := first[:0:0]
	for _, t := range first {
		out = a.settle(out, t, 0)
	}
	return out
}

func (a *textAnalyzer) settle(out []string, t string, round int) []string {
	if plainWord(t) {
		return append(out, t)
	}
	if round >= maxFoldRounds {
		return out
	}
	again := a.pass(norm.NFKC.String(t))
	if len(again) == 1 && again[0] == t {
		return append(out, t)
	}
	for _, u := range again {
		out = a.settle(out, u, round+1)
	}
	return out
}

// plainWord reports whether t is lower-case ASCII letters and digits,
// which every step of the fold leaves alone.
func plainWord(t string) bool {
	if t == "" {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// stemWord returns the key of one folded word.
func (a *textAnalyzer) stemWord(w string) string {
	// The plural stemmer only lower-cases a word that does not end in
	// "s" (or has fewer than three letters): a plain word is its own key.
	if plainWord(w) && (len(w) < 3 || w[len(w)-1] != 's') {
		return w
	}
	ts := a.stem.Filter(analysis.TokenStream{&analysis.Token{Term: []byte(w)}})
	return string(ts[0].Term)
}

// keys returns the key of every folded word.
func (a *textAnalyzer) keys(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = a.stemWord(w)
	}
	return out
}

// folded is a term or phrase in both of its forms.
type folded struct {
	text string   // folded words joined by single spaces: what is reported
	keys []string // one key per word: what is compared
}

// key joins the keys: the string the tiers look up.
func (f folded) key() string { return strings.Join(f.keys, " ") }

// foldTerm folds a term or a registry phrase (name, alias, tag). Text with
// no words keeps its symbols (Unicode category S: "+", "×", "≥") as its
// only word, so that it can still equal an alias spelled the same way;
// punctuation alone folds to nothing.
func (a *textAnalyzer) foldTerm(s string) folded {
	words := a.foldTokens(s)
	if len(words) > 0 {
		return folded{text: strings.Join(words, " "), keys: a.keys(words)}
	}
	sym := strings.Map(func(r rune) rune {
		if gounicode.IsSymbol(r) {
			return gounicode.ToLower(r)
		}
		return ' '
	}, norm.NFKC.String(strings.ToValidUTF8(s, "\uFFFD")))
	sym = strings.Join(strings.Fields(sym), " ")
	if sym == "" {
		return folded{}
	}
	return folded{text: sym, keys: []string{sym}}
}

// foldText folds free text (a name or description) for the index: the
// folded words joined by single spaces, which the index analyzer turns into
// exactly the keys of those words.
func (a *textAnalyzer) foldText(s string) string {
	return strings.Join(a.foldTokens(s), " ")
}

// appendKey appends the key of s — foldTerm(s).key(), of its first
// maxWords words — to dst; with underscores, each '_' of s is read as a
// space first (a name read as words). Plain text is keyed here without
// the analysis chain and without allocating (but for words the plural
// stemmer changes), which is what indexing 100,000 entries spends most of
// its time and garbage on; other text goes through foldTerm. Plain is
// ASCII letters, digits and white space, and underscores: read as spaces,
// or, joining letters and digits on both sides, inside a word ("MOM_WZS"
// is one word to UAX #29).
func (a *textAnalyzer) appendKey(dst []byte, s string, underscores bool, maxWords int) []byte {
	if !plainKeyText(s, underscores) {
		if underscores {
			s = strings.ReplaceAll(s, "_", " ")
		}
		f := a.foldTerm(s)
		return append(dst, strings.Join(firstN(f.keys, maxWords), " ")...)
	}
	sep := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || underscores && c == '_' }
	for i, words := 0, 0; words < maxWords; words++ {
		for i < len(s) && sep(s[i]) {
			i++
		}
		if i == len(s) {
			break
		}
		if words > 0 {
			dst = append(dst, ' ')
		}
		start := len(dst)
		for ; i < len(s) && !sep(s[i]); i++ {
			c := s[i]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
		}
		// The plural stemmer changes only words ending in "s" (stemWord).
		if w := dst[start:]; len(w) >= 3 && w[len(w)-1] == 's' {
			dst = append(dst[:start], a.stemWord(string(w))...)
		}
	}
	return dst
}

// plainKeyText reports whether appendKey keys s itself (see there).
func plainKeyText(s string, underscores bool) bool {
	alnum := func(i int) bool {
		c := s[i]
		return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case alnum(i), c == ' ', c == '\t', c == '\n', c == '\r':
		case c == '_' && (underscores || i > 0 && i+1 < len(s) && alnum(i-1) && alnum(i+1)):
		default:
			return false
		}
	}
	return true
}
