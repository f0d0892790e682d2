package fuzz

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/registry"
)

// Paraphraser writes more phrasings of a capability than the grammar
// knows (an LLM: llm.Paraphraser, agent/llm). Optional and off by default: a
// run with one is no longer reproducible from its seed alone.
type Paraphraser interface {
	Paraphrase(ctx context.Context, name, kind, description string, known []string) ([]string, error)
}

// rephrased is one generated phrasing of a capability's own words.
type rephrased struct {
	phrase string
	// source is the own phrase it rephrases, "description" for a chunk of
	// the description, or "llm".
	source string
	// rank is its place among its source's rephrasings (simplest first).
	rank int
}

// maxRephrased bounds the grammar's phrasings asked per capability (a
// fixed sample: the same registry gives the same phrasings); an LLM adds
// at most its own bound.
const maxRephrased = 192

// rephrasings are a capability's generated phrasings: the sample asked,
// and every phrasing the grammar makes of its words (what a suggestion for
// another capability must not contain).
type rephrasings struct {
	asked []rephrased
	all   []string
}

// rephrasedKinds are the kinds researchers describe in their own words
// (the gate's kinds); operations and signals are asked by their aliases.
var rephrasedKinds = []registry.Kind{registry.KindFamily, registry.KindMetric}

// rephrase generates, for every family and metric of snap, phrasings of
// its own words that are not already its own phrases: the grammar's
// rewrites of its aliases, tags and the noun phrases of its description
// (a description's words alone are not a phrasing: they are what keyword
// discovery already reads), a fixed sample of maxRephrased, plus an LLM's
// when llm is set.
func rephrase(ctx context.Context, snap *registry.Snapshot, g *Grammar, llm Paraphraser) (map[string]rephrasings, error) {
	content := contentWords()
	out := map[string]rephrasings{}
	for _, c := range sortedCaps(snap) {
		if !slices.Contains(rephrasedKinds, c.Kind) {
			continue
		}
		own := ownPhrases(c)
		seen := map[string]bool{}
		for _, p := range own {
			seen[p] = true
		}
		var gen []rephrased
		addGen := func(p, source string, rank int) {
			if p = normPhrase(p); p != "" && !seen[p] {
				seen[p] = true
				gen = append(gen, rephrased{phrase: p, source: source, rank: rank})
			}
		}
		for _, src := range append(slices.Clone(c.Disc.Aliases), c.Disc.Tags...) {
			for i, p := range g.Expand(src) {
				addGen(p, src, i)
			}
		}
		for _, chunk := range descriptionChunks(c.Disc.Description, content) {
			seen[chunk] = true
			if sharedChunk(snap, c, chunk) {
				continue // "trailing volatility": every family's words
			}
			for i, p := range g.Expand(chunk) {
				addGen(p, "description", i)
			}
		}
		// A fixed sample: the simplest rephrasings of every source first
		// (its n-th rephrasing before any source's n+1-th: Expand lists
		// fewest substitutions first), ties in a pseudo-random order fixed
		// by the words.
		slices.SortFunc(gen, func(a, b rephrased) int {
			return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(sampleKey(c.Name, a.phrase), sampleKey(c.Name, b.phrase)))
		})
		gen = gen[:min(len(gen), maxRephrased)]
		if llm != nil {
			known := append(slices.Clone(c.Disc.Aliases), c.Disc.Tags...)
			ps, err := llm.Paraphrase(ctx, c.Name, string(c.Kind), c.Disc.Description, known)
			if err != nil {
				return nil, fmt.Errorf("fuzz: paraphrases of %s: %w", c.Name, err)
			}
			for _, p := range ps {
				addGen(p, "llm", 0)
			}
		}
		out[c.Name] = rephrasings{asked: gen, all: slices.Sorted(maps.Keys(seen))}
	}
	return out, nil
}

// sharedChunk: another capability of c's kind says chunk in its
// description too.
func sharedChunk(snap *registry.Snapshot, c registry.Capability, chunk string) bool {
	for _, o := range snap.Capabilities() {
		if o.Name != c.Name && o.Kind == c.Kind && containsWords(descWords(o.Disc.Description), chunk) {
			return true
		}
	}
	return false
}

// descWords is a description lower-cased with its punctuation and
// possessives dropped, words separated by single spaces.
func descWords(d string) string {
	d = strings.ReplaceAll(strings.ToLower(d), "'s ", " ")
	return strings.Join(strings.FieldsFunc(d, func(r rune) bool {
		return r != '-' && !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}), " ")
}

// ownPhrases are a capability's aliases, tags and name as words,
// normalised.
func ownPhrases(c registry.Capability) []string {
	var out []string
	for _, p := range append(append(slices.Clone(c.Disc.Aliases), c.Disc.Tags...), strings.ReplaceAll(c.Name, "_", " ")) {
		out = append(out, normPhrase(p))
	}
	return out
}

// sampleKey orders phrases pseudo-randomly but fixed by the registry's
// words alone.
func sampleKey(name, phrase string) uint64 {
	h := sha256.Sum256([]byte(name + "\x00" + phrase))
	return binary.BigEndian.Uint64(h[:8])
}

// inTest puts a generated phrasing on the test side of the run's split:
// suggestions are made from the train side only, and measured on the
// test side (SPEC §12's AutoFix; ToolFuzz's train/test split). The side
// depends on the seed, the capability and the phrase — not on the
// template — so a phrase is never on both sides.
func inTest(seed uint64, name, phrase string) bool {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seed)
	h := sha256.Sum256(append(b[:], name+"\x00"+phrase...))
	return h[0]&1 == 1
}

// contentWords says whether a word carries meaning for discovery (it is
// not an English stop word or a filler word, which discovery drops).
func contentWords() func(string) bool {
	empty := discover.NewVocabulary()
	memo := map[string]bool{}
	return func(w string) bool {
		v, ok := memo[w]
		if !ok {
			terms, err := discover.ExtractTerms(w, empty)
			v = err == nil && len(terms) > 0
			memo[w] = v
		}
		return v
	}
}

func sortedCaps(snap *registry.Snapshot) []registry.Capability {
	caps := slices.Clone(snap.Capabilities())
	slices.SortFunc(caps, func(a, b registry.Capability) int { return strings.Compare(a.Name, b.Name) })
	return caps
}
