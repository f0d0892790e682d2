package relevance

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// Version names the scoring rule; it is part of Config.Digest, so a result
// scored by another rule cites another digest.
const Version = "groundgate/relevance/v5"

// The fields of a document, in the order Config's per-field arrays use.
const (
	FieldName    = iota // the name, split into words
	FieldTitle          // the title
	FieldAlias          // the aliases
	FieldTag            // the tags
	FieldDesc           // the description
	FieldParam          // parameter names and descriptions
	FieldExample        // examples
	NumFields
)

// Config holds every constant of the scorer. All are integers with their
// unit in the name: Milli is 1/1000, Micro 1/1,000,000. The defaults
// (DefaultConfig) were calibrated on the development halves of the data
// sets (docs/discovery.md, "The relevance tier"); a Config's digest is what
// a result cites.
type Config struct {
	// BM25F: K1 saturates a term's weighted frequency; B[f] is field f's
	// length normalisation; Weight[f] multiplies field f's term frequency.
	K1Milli     int64            `json:"k1_milli"`
	BMilli      [NumFields]int64 `json:"b_milli"`
	WeightMilli [NumFields]int64 `json:"weight_milli"`
	// MaxFieldWords bounds the words indexed per field of a document
	// (the first ones are kept).
	MaxFieldWords int `json:"max_field_words"`

	// Prompt words: at most MaxQueryWords distinct keys are read. A word's
	// weight is its IDF times its general-English rarity: the log of its
	// rank in the word-vector table (most frequent first) over the log of
	// the table's size, at least RarityFloorMicro (words not in the table:
	// 1). RarityFloorMicro = 1,000,000 turns the rarity factor off.
	MaxQueryWords    int   `json:"max_query_words"`
	RarityFloorMicro int64 `json:"rarity_floor_micro"`

	// Word vectors: the Candidates documents with the best lexical score
	// are rescored; a prompt word's soft match to a document is
	// SoftGain·(c − Floor)/(1 − Floor) for c the best cosine of the word to
	// another word of the document (0 below Floor); a word's credit is
	// the larger of its BM25F saturation and its soft match. At most
	// MaxVecWords distinct words of a document (fields in order) are kept
	// for this.
	Candidates    int   `json:"candidates"`
	SoftGainMilli int64 `json:"soft_gain_milli"`
	CosFloorMicro int64 `json:"cos_floor_micro"`
	MaxVecWords   int   `json:"max_vec_words"`

	// The decision rule: nothing matches unless the best score (its
	// weighted credit over the CoverWords denominator, below) is at least
	// ThresholdMicro, the absolute relevance a request nothing serves
	// rarely reaches; then a document matches when its score is at least
	// FloorMicro (≤ ThresholdMicro), at least MarginMilli/1000 of the best
	// score, and among the MaxMatches best.
	ThresholdMicro int64 `json:"threshold_micro"`
	FloorMicro     int64 `json:"floor_micro"`
	MarginMilli    int64 `json:"margin_milli"`
	MaxMatches     int   `json:"max_matches"`
	// The matches a prompt may have grow with what it says: at most
	// ⌈n/WordsPerMatch⌉ for n its distinct content words (pairs not
	// counted), at least MinMatches and at most MaxMatches
	// (WordsPerMatch 0: MaxMatches always). A request of one short
	// sentence asks for one thing; a paragraph may ask for several.
	WordsPerMatch int `json:"words_per_match"`
	MinMatches    int `json:"min_matches"`

	// Coverage (the decision rule, see the package documentation):
	// CoverWords bounds the prompt words the score is a share of (the
	// heaviest ones; 0: all); GainMicro is the least
	// share a second or later match must add; GateRank and GateMilli: the
	// best candidate's weighted credit must be at least GateMilli/1000 of
	// the one ranked GateRank (0: no gate).
	CoverWords int   `json:"cover_words"`
	GainMicro  int64 `json:"gain_micro"`
	GateRank   int   `json:"gate_rank"`
	GateMilli  int64 `json:"gate_milli"`

	// Siblings (documents of one Document.Group): a document's credit for
	// a prompt word is at least GroupMilli/1000 of the best BM25F
	// saturation of that word among its group (0: off).
	GroupMilli int64 `json:"group_milli"`

	// DiverseMilli (μ) orders the candidates by (1 − μ)·credit + μ·what
	// the candidate adds to the ones before it (0: by credit alone).
	DiverseMilli int64 `json:"diverse_milli"`

	// Word pairs: two adjacent words of a name, title, alias or tag (one
	// text) are also indexed as one key, "a b", and so are the adjacent
	// content words of a prompt, each pair weighing PairMilli/1000 of its
	// IDF (0: off). "page speed", "phone number", "gift card".
	PairMilli int64 `json:"pair_milli"`
}

// DefaultConfig returns the calibrated constants.
func DefaultConfig() Config {
	return Config{
		K1Milli:          1200,
		BMilli:           [NumFields]int64{500, 500, 500, 500, 750, 750, 750},
		WeightMilli:      [NumFields]int64{3000, 2000, 3000, 2000, 1000, 500, 1000},
		MaxFieldWords:    256,
		MaxQueryWords:    64,
		RarityFloorMicro: 250_000,
		Candidates:       64,
		SoftGainMilli:    100,
		CosFloorMicro:    600_000,
		MaxVecWords:      48,
		ThresholdMicro:   145_000,
		FloorMicro:       100_000,
		MarginMilli:      400,
		MaxMatches:       5,
		WordsPerMatch:    5,
		MinMatches:       3,
		CoverWords:       4,
		GainMicro:        0,
		GateRank:         30,
		GateMilli:        2100,
		GroupMilli:       300,
		DiverseMilli:     200,
		PairMilli:        300,
	}
}

// Check reports whether c is usable.
func (c Config) Check() error {
	switch {
	case c.K1Milli <= 0:
		return fmt.Errorf("relevance: k1 %d ≤ 0", c.K1Milli)
	case c.MaxFieldWords < 1 || c.MaxFieldWords > 1<<15:
		return fmt.Errorf("relevance: max field words %d out of range", c.MaxFieldWords)
	case c.MaxQueryWords < 1 || c.MaxQueryWords > 1024:
		return fmt.Errorf("relevance: max query words %d out of range", c.MaxQueryWords)
	case c.RarityFloorMicro < 0 || c.RarityFloorMicro > 1_000_000:
		return fmt.Errorf("relevance: rarity floor %d out of range", c.RarityFloorMicro)
	case c.Candidates < 1 || c.Candidates > 4096:
		return fmt.Errorf("relevance: candidates %d out of range", c.Candidates)
	case c.CosFloorMicro < 0 || c.CosFloorMicro >= 1_000_000:
		return fmt.Errorf("relevance: cosine floor %d out of range", c.CosFloorMicro)
	case c.MaxVecWords < 0 || c.MaxVecWords > 1024:
		return fmt.Errorf("relevance: max vector words %d out of range", c.MaxVecWords)
	case c.ThresholdMicro < 1 || c.ThresholdMicro > 1_000_000:
		return fmt.Errorf("relevance: threshold %d out of range", c.ThresholdMicro)
	case c.FloorMicro < 1 || c.FloorMicro > c.ThresholdMicro:
		return fmt.Errorf("relevance: floor %d not in 1…threshold", c.FloorMicro)
	case c.MaxMatches < 1 || c.MaxMatches > 5:
		return fmt.Errorf("relevance: max matches %d not in 1…5", c.MaxMatches)
	case c.WordsPerMatch < 0 || c.WordsPerMatch > 1024 || c.MinMatches < 1 || c.MinMatches > c.MaxMatches:
		return fmt.Errorf("relevance: words per match %d, min matches %d out of range", c.WordsPerMatch, c.MinMatches)
	case c.CoverWords < 0 || c.CoverWords > c.MaxQueryWords:
		return fmt.Errorf("relevance: cover words %d out of range", c.CoverWords)
	case c.GainMicro < 0 || c.GainMicro > 1_000_000:
		return fmt.Errorf("relevance: gain %d out of range", c.GainMicro)
	case c.GateRank < 0 || c.GateRank >= c.Candidates || c.GateMilli < 0 || c.GateMilli > 100_000:
		return fmt.Errorf("relevance: gate %d, %d out of range", c.GateRank, c.GateMilli)
	}
	// The shares, each in 0…1000 thousandths.
	for _, m := range []struct {
		name string
		v    int64
	}{{"soft gain", c.SoftGainMilli}, {"margin", c.MarginMilli}, {"diversity", c.DiverseMilli}, {"pair weight", c.PairMilli}, {"group", c.GroupMilli}} {
		if m.v < 0 || m.v > 1000 {
			return fmt.Errorf("relevance: %s %d out of range", m.name, m.v)
		}
	}
	for f := range NumFields {
		if c.BMilli[f] < 0 || c.BMilli[f] > 1000 || c.WeightMilli[f] < 0 || c.WeightMilli[f] > 100_000 {
			return fmt.Errorf("relevance: field %d: b %d or weight %d out of range", f, c.BMilli[f], c.WeightMilli[f])
		}
	}
	return nil
}

// Digest is the SHA-256 of the rule's version, the constants (as JSON, in
// field order) and the word-vector table's digest: what a result that
// this configuration scored cites.
func (c Config) Digest(vectors string) string {
	b, _ := json.Marshal(c) // integers and arrays only: cannot fail
	h := sha256.New()
	h.Write([]byte(Version))
	h.Write([]byte{'\n'})
	h.Write(b)
	h.Write([]byte{'\n'})
	h.Write([]byte(vectors))
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
