package fuzz

import (
	_ "embed"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/groundgate/groundgate/hashing"
)

//go:embed grammar.json
var grammarJSON []byte

// Grammar rewrites a capability's own phrases the way researchers rephrase
// them: ToolFuzz asks an LLM for synonymous prompts; the built-in grammar
// writes the common ones out (an LLM can add more: Paraphraser). Groups
// say nothing about which capability a word belongs to — that comes from
// the capability's own vocabulary the grammar is applied to.
type Grammar struct {
	// Depth bounds the substitutions made in one phrase.
	Depth int `json:"depth"`
	// Words are groups interchangeable inside a phrase (whole words).
	Words [][]string `json:"words"`
	// Phrases are groups interchangeable as a whole phrase.
	Phrases [][]string `json:"phrases"`
	// Suffixes are [from, to] word endings (backwardation → backwardated).
	Suffixes [][2]string `json:"suffixes"`
}

// BuiltinGrammar is the grammar shipped in grammar.json.
func BuiltinGrammar() (*Grammar, error) {
	var doc struct {
		Comment string `json:"comment"` // for the file's readers only
		Grammar
	}
	if err := hashing.DecodeStrict(grammarJSON, &doc); err != nil {
		return nil, fmt.Errorf("fuzz: built-in grammar: %w", err)
	}
	return &doc.Grammar, nil
}

// maxExpansions bounds the rephrasings of one phrase, so a rich phrase
// cannot blow a run's probe count up.
const maxExpansions = 512

// Expand returns the rephrasings of phrase (lower-cased, without phrase
// itself), fewest substitutions first, then alphabetically.
func (g *Grammar) Expand(phrase string) []string {
	start := normPhrase(phrase)
	seen := map[string]bool{start: true}
	level := []string{start}
	known := g.wordSet() // once per phrase, not once per rewrite
	var out []string
	for d := 0; d < g.Depth && len(level) > 0; d++ {
		var next []string
		for _, p := range level {
			for _, q := range g.rewrites(p, d == 0, known) {
				if !seen[q] {
					seen[q] = true
					next = append(next, q)
				}
			}
		}
		slices.Sort(next)
		out = append(out, next...)
		if len(out) >= maxExpansions {
			return out[:maxExpansions]
		}
		level = next
	}
	return out
}

// rewrites are the phrases one substitution away from p; own says p is
// the capability's own phrase (suffixes inflect only its own words); known
// is g.wordSet().
func (g *Grammar) rewrites(p string, own bool, known map[string]bool) []string {
	var out []string
	for _, grp := range g.Phrases {
		if slices.Contains(grp, p) {
			for _, m := range grp {
				if m != p {
					out = append(out, m)
				}
			}
		}
	}
	words := splitWords(p, known)
	for _, grp := range g.Words {
		for _, hit := range occurrences(words, grp) {
			for _, r := range grp {
				if r != hit.member {
					out = append(out, join(words, hit.i, hit.j, r))
				}
			}
		}
	}
	if !own {
		return out
	}
	for i, w := range words {
		for _, s := range g.Suffixes {
			if strings.HasSuffix(w.text, s[0]) && len(w.text) > len(s[0])+3 {
				out = append(out, join(words, i, i+1, strings.TrimSuffix(w.text, s[0])+s[1]))
			}
		}
	}
	return out
}

// occurrence is a group member found at words[i:j].
type occurrence struct {
	i, j   int
	member string
}

// occurrences finds grp's members in words, keeping only the longest at
// each place: in "go long", "long" is part of the member "go long", not a
// member of its own to rewrite into "go go long".
func occurrences(words []word, grp []string) []occurrence {
	var all []occurrence
	for _, m := range grp {
		mw := strings.Fields(m)
		for i := 0; i+len(mw) <= len(words); i++ {
			if slices.Equal(tokens(words[i:i+len(mw)]), mw) {
				all = append(all, occurrence{i, i + len(mw), m})
			}
		}
	}
	var out []occurrence
	for _, a := range all {
		inside := false
		for _, b := range all {
			inside = inside || (b.j-b.i > a.j-a.i && b.i <= a.i && a.j <= b.j)
		}
		if !inside {
			out = append(out, a)
		}
	}
	return out
}

// wordSet is every single word the word groups know.
func (g *Grammar) wordSet() map[string]bool {
	set := map[string]bool{}
	for _, grp := range g.Words {
		for _, m := range grp {
			for _, w := range strings.Fields(m) {
				set[w] = true
			}
		}
	}
	return set
}

// word is one word of a phrase and what joins it to the next ("" at the
// end, " " or "-").
type word struct{ text, sep string }

// splitWords splits p at spaces; a hyphenated compound is split into its
// parts only when every part is a grammar word ("volatility-targeted"),
// so "short-term" or "long-only" are never half rewritten.
func splitWords(p string, known map[string]bool) []word {
	var out []word
	fs := strings.Fields(p)
	for i, f := range fs {
		parts := strings.Split(f, "-")
		whole := len(parts) > 1
		for _, x := range parts {
			whole = whole && known[x]
		}
		if !whole {
			parts = []string{f}
		}
		for j, x := range parts {
			sep := "-"
			if j == len(parts)-1 {
				sep = " "
				if i == len(fs)-1 {
					sep = ""
				}
			}
			out = append(out, word{x, sep})
		}
	}
	return out
}

func tokens(ws []word) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.text
	}
	return out
}

// join writes words back with [i, j) replaced by r.
func join(ws []word, i, j int, r string) string {
	var b strings.Builder
	for k := 0; k < len(ws); k++ {
		if k == i {
			b.WriteString(r)
			b.WriteString(ws[j-1].sep)
			k = j - 1
			continue
		}
		b.WriteString(ws[k].text)
		b.WriteString(ws[k].sep)
	}
	return b.String()
}

// normPhrase lower-cases p and folds its spacing.
func normPhrase(p string) string {
	return strings.Join(strings.Fields(strings.ToLower(p)), " ")
}

// determiners open the noun phrases descriptionChunks takes.
var determiners = map[string]bool{"the": true, "a": true, "an": true, "its": true, "their": true, "each": true, "every": true}

// descriptionChunks are the noun phrases of a description, roughly: the
// two or three content words right after a determiner ("held in the front
// column" → "front column"), within one clause. content says whether a
// word carries meaning (not a stop or filler word).
func descriptionChunks(desc string, content func(string) bool) []string {
	var out []string
	var run []string
	open := false
	flush := func() {
		for n := 2; n <= min(3, len(run)); n++ {
			if c := strings.Join(run[:n], " "); !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
		run, open = run[:0], false
	}
	for _, f := range strings.FieldsFunc(strings.ToLower(desc), unicode.IsSpace) {
		w := strings.TrimRight(f, ",.;:)]`\"'")
		clauseEnds := w != f
		w = strings.TrimLeft(w, "([`\"'")
		switch {
		case open && isWord(w) && content(w):
			run = append(run, w)
		case determiners[w]:
			flush()
			open = true
		default:
			flush()
		}
		if clauseEnds {
			flush()
		}
	}
	flush()
	return out
}

// isWord: letters and inner hyphens only (no formulas, numbers or code).
func isWord(s string) bool {
	if s == "" || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, r := range s {
		if r != '-' && !unicode.IsLetter(r) {
			return false
		}
	}
	return true
}
