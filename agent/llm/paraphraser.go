package llm

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/groundgate/groundgate/hashing"
)

// Paraphraser asks the endpoint how researchers would phrase a request
// for a capability — ToolFuzz's LLM-generated synonymous prompts, beyond
// the fuzzer's grammar (fuzz.Paraphraser, behind groundgate fuzz
// --paraphrase-llm). Its phrases are only questions asked of discovery:
// what they find is measured, and a phrase becomes a suggestion only when
// the fuzzer's own checks accept it.
type Paraphraser struct{ c *Client }

// NewParaphraser checks the configuration.
func NewParaphraser(cfg Config) (*Paraphraser, error) {
	c, err := NewClient(cfg)
	if err != nil {
		return nil, err
	}
	return &Paraphraser{c: c}, nil
}

// Name says which model writes the phrases.
func (p *Paraphraser) Name() string { return p.c.Name() }

// Bounds on an answer: phrases are short noun or verb phrases.
const (
	maxParaphrases     = 16
	maxParaphraseBytes = 80
)

const paraphraseSystem = `You help test a tool registry for quantitative research.
Given a capability's name, kind, description and the phrases it is known by, write up to 16 short phrases (2 to 6 words) a researcher might use for the SAME idea without using those known phrases: plain-language descriptions of what it does, jargon from other desks, informal wording.
Never name a different strategy or measure. Answer with one JSON object {"phrases": ["...", ...]} and nothing else.`

// Paraphrase returns the endpoint's phrases for one capability (at most
// 16, each at most 80 bytes, lower-cased, known phrases dropped).
func (p *Paraphraser) Paraphrase(ctx context.Context, name, kind, description string, known []string) ([]string, error) {
	user := fmt.Sprintf("Name: %s\nKind: %s\nDescription: %s\nKnown phrases: %s", name, kind, description, strings.Join(known, "; "))
	content, err := p.c.Complete(ctx, []Message{{Role: "system", Content: paraphraseSystem}, {Role: "user", Content: user}})
	if err != nil {
		return nil, err
	}
	var ans struct {
		Phrases []string `json:"phrases"`
	}
	obj, ok := jsonObject(content, maxAdvice)
	if !ok || hashing.DecodeFields(obj, &ans) != nil {
		return nil, fmt.Errorf("%w: the answer holds no {\"phrases\": [...]} object", ErrFailed)
	}
	var out []string
	for _, ph := range ans.Phrases {
		ph = strings.Join(strings.Fields(strings.ToLower(ph)), " ")
		if ph == "" || len(ph) > maxParaphraseBytes || !utf8.ValidString(ph) || containsFold(known, ph) || containsFold(out, ph) {
			continue
		}
		out = append(out, ph)
		if len(out) == maxParaphrases {
			break
		}
	}
	return out, nil
}

func containsFold(xs []string, s string) bool {
	for _, x := range xs {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
