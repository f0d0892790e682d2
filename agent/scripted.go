package agent

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// ScriptedLabel is the proposer label of ScriptedProposer. It appears in
// every proposal, trial, result file and table the scripted proposer
// produced, so that nobody mistakes its numbers for an LLM's.
const ScriptedLabel = "scripted (deterministic, not an LLM)"

// DefaultWindows is the window sweep the scripted proposer asks for when
// the prompt gives none (the paper's 3-morphism sweep).
var DefaultWindows = []int{25, 50, 100}

// ScriptedProposer is a deterministic stand-in for an LLM, so that the
// harness runs in CI without a model. Its rules (documented in the package
// comment) are fixed; it reads the options' names, aliases, tags and
// descriptions, never the prompt set's annotations. Same input, same
// proposal, byte for byte.
type ScriptedProposer struct{}

var _ Proposer = ScriptedProposer{}

// Name returns ScriptedLabel.
func (ScriptedProposer) Name() string { return ScriptedLabel }

// Propose applies the rules.
func (ScriptedProposer) Propose(_ context.Context, in Input) (Proposal, error) {
	p := Proposal{Proposer: ScriptedLabel}
	switch {
	case len(in.Families) == 0:
		p.Abstain, p.Rationale = true, "rule 4: no family was offered, so there is nothing to propose"
		return p, nil
	case len(in.Metrics) == 0:
		p.Abstain, p.Rationale = true, "rule 4: no metric was offered, so there is nothing to propose"
		return p, nil
	}
	toks := words(in.Prompt)
	fam, whyF := pick(in.Families, toks)
	met, whyM := pick(in.Metrics, toks)
	params, whyP := scriptedParams(fam, in.Prompt, toks)
	p.Family, p.Metric, p.Params, p.Data = fam.Name, met.Name, params, in.Data
	p.Rationale = "family " + fam.Name + ": " + whyF + "; metric " + met.Name + ": " + whyM + "; params: " + whyP
	return p, nil
}

// cueScore is how one option's cues hit the prompt.
type cueScore struct {
	opt     Option
	lastEnd int    // index of the last prompt word of the latest hit, -1 if none
	cueLen  int    // words in the longest cue ending at lastEnd
	cue     string // that cue
	hits    int    // distinct cues hit
	overlap int    // description words shared with the prompt (rule 3)
}

// pick chooses one option by rules 1–3 (see the package comment).
func pick(opts []Option, toks []string) (Option, string) {
	scores := make([]cueScore, len(opts))
	hit := false
	for i, o := range opts {
		s := cueScore{opt: o, lastEnd: -1}
		for _, cue := range cues(o) {
			end := lastOccurrence(toks, words(cue))
			if end < 0 {
				continue
			}
			s.hits++
			n := len(words(cue))
			if end > s.lastEnd || (end == s.lastEnd && n > s.cueLen) {
				s.lastEnd, s.cueLen, s.cue = end, n, cue
			}
		}
		hit = hit || s.hits > 0
		scores[i] = s
	}
	if hit {
		best := slices.MinFunc(scores, func(a, b cueScore) int {
			switch {
			case a.lastEnd != b.lastEnd:
				return b.lastEnd - a.lastEnd
			case a.cueLen != b.cueLen:
				return b.cueLen - a.cueLen
			case a.hits != b.hits:
				return b.hits - a.hits
			}
			return strings.Compare(a.opt.Name, b.opt.Name)
		})
		return best.opt, fmt.Sprintf("rule 2: cue %q ends at word %d, the latest of any cue offered", best.cue, best.lastEnd+1)
	}
	pw := contentWords(toks)
	for i := range scores {
		dw := map[string]bool{}
		for _, w := range words(scores[i].opt.Description) {
			dw[w] = true
		}
		for _, w := range pw {
			if dw[w] {
				scores[i].overlap++
			}
		}
	}
	best := slices.MinFunc(scores, func(a, b cueScore) int {
		if a.overlap != b.overlap {
			return b.overlap - a.overlap
		}
		return strings.Compare(a.opt.Name, b.opt.Name)
	})
	if best.overlap == 0 {
		return best.opt, "rule 3: no cue and no description word matches, so the first name offered"
	}
	return best.opt, fmt.Sprintf("rule 3: no cue matches; %d description words shared with the prompt, the most", best.overlap)
}

// cues are the phrases an option answers to: its name (underscores read
// as spaces), aliases and tags.
func cues(o Option) []string {
	out := []string{strings.ReplaceAll(o.Name, "_", " ")}
	out = append(out, o.Aliases...)
	return append(out, o.Tags...)
}

// lastOccurrence returns the index of the last word of the last place cue
// occurs in toks as a contiguous run, or -1.
func lastOccurrence(toks, cue []string) int {
	if len(cue) == 0 {
		return -1
	}
	for i := len(toks) - len(cue); i >= 0; i-- {
		if slices.Equal(toks[i:i+len(cue)], cue) {
			return i + len(cue) - 1
		}
	}
	return -1
}

// words folds text to its words: lower case, split at anything that is
// not a letter or digit, and a final "s" dropped from words longer than
// three letters that do not end in "ss" ("reversals" → "reversal").
func words(s string) []string {
	f := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	for i, w := range f {
		if len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
			f[i] = w[:len(w)-1]
		}
	}
	return f
}

// stopWords are left out of rule 3's description overlap.
var stopWords = map[string]bool{
	"with": true, "that": true, "this": true, "from": true, "have": true, "what": true, "which": true,
	"their": true, "there": true, "they": true, "them": true, "then": true, "than": true, "into": true,
	"over": true, "just": true, "also": true, "only": true, "each": true, "when": true, "been": true,
	"were": true, "will": true, "would": true, "should": true, "could": true, "about": true,
	"please": true, "give": true, "show": true, "tell": true, "want": true, "like": true, "some": true,
	"more": true, "most": true, "very": true, "does": true, "your": true,
}

// contentWords are the distinct prompt words of four letters or more that
// are not stop words, in prompt order.
func contentWords(toks []string) []string {
	var out []string
	for _, w := range toks {
		if len(w) >= 4 && !stopWords[w] && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

var percentRE = regexp.MustCompile(`(\d+(?:\.\d+)?)\s*%`)

// scriptedParams applies rule 5: windows from "N day" phrases, target_vol
// from a percentage, every other parameter left to its default.
func scriptedParams(fam Option, prompt string, toks []string) (map[string]any, string) {
	has := func(name string) bool {
		return slices.ContainsFunc(fam.Params, func(p Param) bool { return p.Name == name })
	}
	params := map[string]any{}
	var why []string
	days := dayNumbers(toks)
	switch {
	case has("window") && len(days) > 0:
		params["window"] = intsValue(days)
		why = append(why, fmt.Sprintf("window %v from the prompt", days))
	case has("window"):
		params["window"] = intsValue(DefaultWindows)
		why = append(why, fmt.Sprintf("window %v (default sweep)", DefaultWindows))
	case has("risk_window") && len(days) > 0:
		params["risk_window"] = intsValue(days)
		why = append(why, fmt.Sprintf("risk_window %v from the prompt", days))
	}
	if m := percentRE.FindStringSubmatch(prompt); m != nil && has("target_vol") {
		v, err := strconv.ParseFloat(m[1], 64)
		if err == nil {
			params["target_vol"] = v / 100
			why = append(why, fmt.Sprintf("target_vol %s%% from the prompt", m[1]))
		}
	}
	if len(why) == 0 {
		why = append(why, "defaults")
	}
	return params, strings.Join(why, ", ")
}

// dayNumbers finds integers that count days: "60-day", "50 days", and the
// lists before them ("25, 50 and 100 day"). Order of appearance, distinct.
func dayNumbers(toks []string) []int {
	num := func(w string) (int, bool) {
		n, err := strconv.Atoi(w)
		return n, err == nil && n > 0
	}
	var out []int
	add := func(n int) {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	for i := 0; i+1 < len(toks); i++ {
		n, ok := num(toks[i])
		if !ok || toks[i+1] != "day" {
			continue
		}
		var run []int
		for j := i - 1; j >= 0; j-- {
			if m, ok := num(toks[j]); ok {
				run = append([]int{m}, run...)
			} else if toks[j] != "and" && toks[j] != "or" {
				break
			}
		}
		for _, m := range run {
			add(m)
		}
		add(n)
	}
	return out
}

// intsValue is a scalar for one value, a list for more.
func intsValue(xs []int) any {
	if len(xs) == 1 {
		return xs[0]
	}
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}
