package agent

import (
	_ "embed"
	"fmt"
	"slices"

	"github.com/groundgate/groundgate/hashing"
)

//go:embed testdata/prompts30.json
var prompts30 []byte

// Prompts30 returns the bytes of the bundled prompt set (testdata/
// prompts30.json): 30 prompts written for groundgate in the paper's five
// categories.
func Prompts30() []byte { return slices.Clone(prompts30) }

// Categories are the paper's five prompt categories, in table order.
var Categories = []string{"straightforward", "confusable", "adversarial", "undiscoverable", "multi-family"}

// Prompt is one annotated research prompt.
type Prompt struct {
	ID       string `json:"id"`
	Category string `json:"category"`
	Prompt   string `json:"prompt"`
	// Data is the data file the researcher attached, relative to the
	// server's data root.
	Data string `json:"data"`
	// ExpectedFamily is the family the researcher means; nil when no
	// registered family fits (undiscoverable prompts).
	ExpectedFamily *string `json:"expected_family"`
	// AlsoAcceptable lists further families that are just as warranted
	// (multi-family prompts name two).
	AlsoAcceptable []string `json:"also_acceptable,omitempty"`
	ExpectedMetric string   `json:"expected_metric"`
	// Probe is the confusion the prompt is written to probe.
	Probe string `json:"probe"`
}

// Acceptable returns the families that carry out the researcher's intent.
func (p Prompt) Acceptable() []string {
	if p.ExpectedFamily == nil {
		return nil
	}
	return append([]string{*p.ExpectedFamily}, p.AlsoAcceptable...)
}

// PromptSet is a prompt file.
type PromptSet struct {
	Name    string   `json:"name"`
	About   string   `json:"about,omitempty"`
	Prompts []Prompt `json:"prompts"`
}

// ParsePrompts decodes and checks a prompt file: unknown fields are
// refused, ids are unique, every prompt has a known category, text, data
// and expected metric, and only undiscoverable prompts lack an expected
// family.
func ParsePrompts(b []byte) (*PromptSet, error) {
	var ps PromptSet
	if err := hashing.DecodeStrict(b, &ps); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPrompts, err)
	}
	if len(ps.Prompts) == 0 {
		return nil, fmt.Errorf("%w: no prompts", ErrPrompts)
	}
	ids := map[string]bool{}
	for i, p := range ps.Prompts {
		where := fmt.Sprintf("prompt %d (%q)", i, p.ID)
		switch {
		case p.ID == "":
			return nil, fmt.Errorf("%w: %s: id is missing", ErrPrompts, where)
		case ids[p.ID]:
			return nil, fmt.Errorf("%w: %s: duplicate id", ErrPrompts, where)
		case !slices.Contains(Categories, p.Category):
			return nil, fmt.Errorf("%w: %s: category %q is not one of %v", ErrPrompts, where, p.Category, Categories)
		case p.Prompt == "":
			return nil, fmt.Errorf("%w: %s: prompt text is missing", ErrPrompts, where)
		case p.Data == "":
			return nil, fmt.Errorf("%w: %s: data is missing", ErrPrompts, where)
		case p.ExpectedMetric == "":
			return nil, fmt.Errorf("%w: %s: expected_metric is missing", ErrPrompts, where)
		case (p.ExpectedFamily == nil) != (p.Category == "undiscoverable"):
			return nil, fmt.Errorf("%w: %s: expected_family must be null exactly for undiscoverable prompts", ErrPrompts, where)
		case p.ExpectedFamily == nil && len(p.AlsoAcceptable) > 0:
			return nil, fmt.Errorf("%w: %s: also_acceptable without expected_family", ErrPrompts, where)
		}
		ids[p.ID] = true
	}
	return &ps, nil
}
