package discover

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/groundgate/groundgate/discover/relevance"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/wordvec"
)

// The fifth tier, relevance (SPEC §16): the terms the four named tiers
// left unresolved are read together as a request and matched to entries
// by what their words say (package relevance: BM25F over names, titles,
// descriptions, parameters, aliases, tags and examples, with word-vector
// similarity). It reads only terms, so Rederive reproduces it from a
// result's terms and version like the other tiers.
const (
	// relevanceMinTerms is the fewest unresolved terms the tier reads: a
	// lone word ("trend") is what the named tiers are for, and one word
	// shared with a description is no evidence of intent.
	relevanceMinTerms = 2
)

// Relevance is what a result records of the relevance tier when it ran:
// the digests of everything it read, so an auditor can tell which rule,
// constants, word vectors and documents scored the matches.
type Relevance struct {
	// Terms are the terms the tier read: the unresolved terms of the
	// named tiers, in term order, not inversion cues.
	Terms []string `json:"terms"`
	// Scoring is the digest of the scoring rule, its constants and the
	// word-vector table (relevance.Config.Digest).
	Scoring string `json:"scoring"`
	// Vectors is the word-vector table's own digest (wordvec.Digest).
	Vectors string `json:"vectors"`
	// Index is the digest of the documents scored (relevance.Index.Digest):
	// one a registry entry that is not deprecated.
	Index string `json:"index"`
}

// defaultVectors is the embedded word-vector table, parsed once: it is
// immutable data, like a Unicode table, shared by every Discoverer of the
// process that is not given its own.
var defaultVectors = sync.OnceValues(func() (*relevance.Vectors, error) {
	t, err := wordvec.Load()
	if err != nil {
		return nil, err
	}
	return relevance.NewVectors(t), nil
})

// relevanceDocument is what the relevance tier reads of an entry: its
// name, title, description, aliases, tags and examples, and for a tool the
// names and descriptions of the parameters its input schema declares and
// its upstream, whose tools are siblings (relevance.Document.Group).
func relevanceDocument(c *registry.Capability) relevance.Document {
	d := relevance.Document{
		Name:        c.Name,
		Title:       c.Disc.Title,
		Description: c.Disc.Description,
		Aliases:     c.Disc.Aliases,
		Tags:        c.Disc.Tags,
		Examples:    c.Disc.Examples,
	}
	if c.Tool != nil {
		d.Params = SchemaParams(c.Tool.Alg.InputSchema)
		d.Group = c.Tool.Impl.Upstream
	}
	return d
}

// SchemaParams lists what the relevance tier reads of a tool's input
// schema: the properties it declares, with their descriptions and string
// enum values (schemaParams).
func SchemaParams(schema []byte) []relevance.Param { return schemaParams(schema, 0, nil) }

// schemaParams lists the properties a JSON Schema declares, sorted by
// name, with their descriptions and string enum values, and those of
// nested objects and arrays' items to a depth of 3. Parts that do not
// read as expected are skipped: words for ranking, not validation (the
// schema was compiled when the tool was synced).
func schemaParams(raw []byte, depth int, out []relevance.Param) []relevance.Param {
	if len(raw) == 0 || depth > 2 {
		return out
	}
	var s struct {
		Description string                    `json:"description"`
		Enum        []jsontext.Value          `json:"enum"`
		Properties  map[string]jsontext.Value `json:"properties"`
		Items       jsontext.Value            `json:"items"`
	}
	if hashing.DecodePartFields(raw, &s) != nil {
		return out
	}
	names := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		var p struct {
			Description string           `json:"description"`
			Enum        []jsontext.Value `json:"enum"`
		}
		_ = hashing.DecodePartFields(s.Properties[k], &p) // a boolean schema has no words
		words := []string{p.Description}
		for _, e := range p.Enum {
			var v string
			if hashing.DecodePartFields(e, &v) == nil {
				words = append(words, v)
			}
		}
		out = append(out, relevance.Param{Name: k, Description: strings.TrimSpace(strings.Join(words, " "))})
		out = schemaParams(s.Properties[k], depth+1, out)
	}
	if len(s.Items) > 0 && s.Items.Kind() == '{' {
		out = schemaParams(s.Items, depth+1, out)
	}
	return out
}

// buildRelevance makes the relevance index of every entry of caps that is
// not deprecated, analysing documents on every core: an index holds the
// same documents however they were added (relevance.Index.Digest).
func buildRelevance(ctx context.Context, vec *relevance.Vectors, caps []registry.Capability) (*relevance.Index, error) {
	rx, err := relevance.New(vec, relevance.DefaultConfig())
	if err != nil {
		return nil, fmt.Errorf("discover: relevance index: %w", err)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, runtime.GOMAXPROCS(0))
	for w := range errs {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(caps) || ctx.Err() != nil {
					return
				}
				if caps[i].Disc.Deprecated {
					continue
				}
				if err := rx.Add(relevanceDocument(&caps[i])); err != nil {
					errs[w] = fmt.Errorf("discover: relevance index %q: %w", caps[i].Name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	rx.Compact()
	return rx, nil
}

// relevant runs the relevance tier on the terms the named tiers left
// unresolved (read, in term order). It returns nil, nil when the tier does
// not run (fewer than relevanceMinTerms terms).
func (x *index) relevant(ctx context.Context, read []string) (*Relevance, []Match, error) {
	if len(read) < relevanceMinTerms {
		return nil, nil, nil
	}
	rx, err := x.text.relevance(ctx)
	if err != nil {
		return nil, nil, err
	}
	q := strings.Join(read, " ")
	r := rx.Query(q)
	rel := &Relevance{Terms: read, Scoring: r.Scoring, Vectors: r.Vectors, Index: rx.Digest()}
	ms := make([]Match, 0, len(r.Matches))
	for _, rm := range r.Matches {
		p, ok := x.position(rm.Name)
		if !ok {
			return nil, nil, fmt.Errorf("discover: the relevance index lists %q, which registry version %d does not hold", rm.Name, x.version())
		}
		m, err := x.newMatch(q, uint32(p), ModeRelevance)
		if err != nil {
			return nil, nil, err
		}
		m.Confidence = float64(rm.ConfidenceMilli) / 1000
		ms = append(ms, m)
	}
	return rel, ms, nil
}

// relevanceAdds keeps the relevance matches that add to what the named
// tiers found. A family (a bet the gate admits) is never matched by
// relevance: words alone cannot tell a bet from its reverse ("buy the
// losers, sell the winners" and "buy the winners, sell the losers" hold
// the same words), and on the prompt sets relevance's family matches were
// mostly wrong, undiscoverable prompts included (docs/discovery.md), so a
// family takes a name, an alias, a tag, a keyword or an inversion cue. An
// entry of a kind the request named (by name, alias or tag, or by an
// inversion cue) is not second-guessed by the words around it either, and
// the matches kept are of one kind, the best's.
func (x *index) relevanceAdds(tms []termMatch, inverted [][]Match, ms []Match) []Match {
	if len(ms) == 0 {
		return ms
	}
	named := map[registry.Kind]bool{registry.KindFamily: true}
	for i, tm := range tms {
		if !tm.cue && tm.mode.tier() <= ModeTag.tier() {
			for _, e := range tm.ents {
				named[x.caps[e&entryMask].Kind] = true
			}
		}
		for _, m := range inverted[i] {
			named[m.Kind] = true
		}
	}
	out := ms[:0:0]
	for _, m := range ms {
		// A request asks for one kind of thing: the best match that is
		// kept says which (a tool, not the trading operations whose words
		// happen to be near).
		if !named[m.Kind] && (len(out) == 0 || m.Kind == out[0].Kind) {
			out = append(out, m)
		}
	}
	return out
}
