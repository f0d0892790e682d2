// Package fuzz tests the registry itself (SPEC §12, ToolFuzz): what its
// capabilities do on hostile arguments, whether their own words find them,
// and whether those words try to steer the agent that reads them.
//
// This file is the last of those: discovery text that addresses an agent —
// the MCP tool-poisoning attack on our own registry. The discovery layer is
// outside every identity, so an entry's words can change without a trace in
// any evidence; they are also what an agent reads when it chooses a tool.
package fuzz

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/groundgate/groundgate/registry"
)

// The poisoning rules a flag names.
const (
	// RuleInstruction: text that addresses an agent — telling it to
	// ignore its instructions, to always pick this tool, to avoid others,
	// to hide something from the user, or that poses as a system prompt.
	RuleInstruction = "instruction"
	// RuleHiddenText: invisible or direction-changing characters (zero
	// width, bidi controls, Unicode tag characters, variation selectors,
	// other format and control characters): text a person reviewing the
	// entry does not see and a model does.
	RuleHiddenText = "hidden_text"
	// RuleURL: a link. Discovery text describes behaviour; a URL is an
	// exfiltration or redirection channel, never needed to find a tool.
	RuleURL = "url"
)

// Flag is one piece of discovery text that a poisoning rule matched.
type Flag struct {
	// Field is where: "disc.description", "disc.aliases[2]", "name", …
	Field string `json:"field"`
	Rule  string `json:"rule"`
	// Why says which pattern matched.
	Why string `json:"why"`
	// Excerpt is the matched text in context, hidden characters written
	// as U+XXXX, at most about 100 bytes.
	Excerpt string `json:"excerpt"`
}

// instruction patterns, matched on the text lower-cased with its
// whitespace folded. Each needs an agent-directed object (this tool, other
// tools, the user, instructions): the catalog's own words ("always long",
// "return 0 instead of NA", "counting rows rather than values") are
// descriptions, not orders. Compiled on first use: every command of the
// binary would otherwise pay for them at start (0.3 ms), and only a screen
// needs them.
//
// needs lists words one of which every match of the pattern holds (each
// alternative of the pattern spells one of them): a text holding none is
// not run through the pattern. Screening a tool's result of a few KiB
// through all seven patterns took 0.5 ms of every gated call; the words
// are looked for in microseconds. TestNeedsSound checks each list against
// the pattern.
var instructions = sync.OnceValue(func() []instruction {
	return []instruction{
		{"tells the agent to ignore its instructions",
			regexp.MustCompile(`\b(ignore|disregard|forget|override|bypass)\b[^.]{0,40}\b(instructions?|prompts?|rules|guidelines|polic(y|ies)|constraints|previous|prior|above)\b`),
			[]string{"ignore", "disregard", "forget", "override", "bypass"}},
		{"tells the agent to always choose this tool",
			regexp.MustCompile(`\b(always|only ever|must|should|you (must|should|need to))\b[^.]{0,20}\b(use|call|choose|pick|select|prefer|run|invoke|recommend)\b[^.]{0,20}\b(this|me|it)\b[^.]{0,12}\b(tool|capability|function|one|first|instead|always)?`),
			[]string{"always", "only ever", "must", "should", "need to"}},
		{"tells the agent to avoid other tools",
			regexp.MustCompile(`\b(never|do not|don't|avoid|instead of|rather than)\b[^.]{0,20}\b(use|call|choose|pick|select|using|calling|choosing)?\b[^.]{0,10}\b(any |all )?(other|another|competing|alternative)\b[^.]{0,15}\b(tools?|capabilit(y|ies)|functions?|famil(y|ies)|metrics?|operations?)\b`),
			[]string{"never", "do not", "don't", "avoid", "instead of", "rather than"}},
		{"tells the agent to hide something from the user",
			regexp.MustCompile(`\b(do not|don't|never|without)\b[^.]{0,20}\b(tell|telling|inform|informing|mention|mentioning|reveal|revealing|show|showing|disclose|disclosing)\b[^.]{0,30}\b(user|researcher|human|operator|anyone)\b`),
			[]string{"do not", "don't", "never", "without"}},
		{"addresses an AI agent",
			regexp.MustCompile(`\b(as an? (ai|assistant|agent|llm|language model)|dear (ai|assistant|agent|model)|(attention|note to|hey)[ ,:]+(ai|assistant|agent|llm|model)s?\b|you are an? (ai|assistant|agent|llm|helpful))`),
			[]string{"as a", "dear ", "attention", "note to", "hey", "you are a"}},
		{"poses as a system or developer message",
			regexp.MustCompile(`(system prompt|developer message|<\s*/?\s*(important|system|instructions?|admin)\s*>|\[\s*/?\s*(system|inst|important)\s*\]|\bnew instructions?\s*:)`),
			[]string{"system", "developer message", "important", "inst", "admin"}},
	}
})

type instruction struct {
	why   string
	re    *regexp.Regexp
	needs []string
}

// find is the first match of the pattern in visible, nil when none.
func (in instruction) find(visible string) []int {
	if !holdsAny(visible, in.needs) {
		return nil
	}
	return in.re.FindStringIndex(visible)
}

var urlPattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\b(https?|ftp|file|data|javascript|mailto)\s*:|\bwww\.[a-z0-9-]|\b[a-z0-9-]+\.(com|net|org|io|ai|xyz|ru|cn)\b(/|\s|$)`)
})

// urlNeeds are the words every match of urlPattern holds, in a text that
// fold lower-cased. The pattern ignores case: of the letters it spells,
// only s has a case-fold outside ASCII that fold leaves (ſ, U+017F; the
// Kelvin sign lowers to k), so a text holding ſ is always run through it.
var urlNeeds = []string{"http", "ftp", "file", "data", "javascript", "mailto", "www.",
	".com", ".net", ".org", ".io", ".ai", ".xyz", ".ru", ".cn", "\u017f"}

// findURL is the first link in visible, nil when none.
func findURL(visible string) []int {
	if !holdsAny(visible, urlNeeds) {
		return nil
	}
	return urlPattern().FindStringIndex(visible)
}

func holdsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// Poisoning screens an entry's discovery text — its name, aliases, tags,
// description and examples — and returns what it flags, in field order.
func Poisoning(e registry.Entry) []Flag {
	var flags []Flag
	screen := func(field, text string) {
		flags = append(flags, screenText(field, text)...)
	}
	screen("name", e.Name)
	screen("disc.title", e.Disc.Title)
	screen("disc.description", e.Disc.Description)
	for i, a := range e.Disc.Aliases {
		screen(fmt.Sprintf("disc.aliases[%d]", i), a)
	}
	for i, t := range e.Disc.Tags {
		screen(fmt.Sprintf("disc.tags[%d]", i), t)
	}
	for i, x := range e.Disc.Examples {
		screen(fmt.Sprintf("disc.examples[%d]", i), x)
	}
	return flags
}

// ScreenText applies the screen's rules to one text (a tool's result, say),
// naming it field in what it flags.
func ScreenText(field, text string) []Flag { return screenText(field, text) }

// screenText applies every rule to one field: hidden characters on the
// raw text, then instructions and links on what a reader sees of it.
func screenText(field, text string) []Flag {
	var flags []Flag
	if i := hiddenAt(text); i >= 0 {
		r, size := utf8.DecodeRuneInString(text[i:])
		why := fmt.Sprintf("holds %U, a character a reader does not see", r)
		if r == utf8.RuneError {
			why = "holds bytes that are not UTF-8"
		}
		flags = append(flags, Flag{Field: field, Rule: RuleHiddenText, Why: why, Excerpt: excerpt(text, i, i+size)})
	}
	visible := fold(text)
	for _, in := range instructions() {
		if loc := in.find(visible); loc != nil {
			flags = append(flags, Flag{Field: field, Rule: RuleInstruction, Why: in.why, Excerpt: excerpt(visible, loc[0], loc[1])})
			break // one instruction flag per field says enough
		}
	}
	if loc := findURL(visible); loc != nil {
		flags = append(flags, Flag{Field: field, Rule: RuleURL, Why: "holds a link", Excerpt: excerpt(visible, loc[0], loc[1])})
	}
	return flags
}

// hidden reports a rune a reader does not see: format characters (zero
// width, bidi controls, tag characters, the BOM), variation selectors,
// controls other than tab and newline, and unassigned or private-use code
// points.
func hidden(r rune) bool {
	switch {
	case r == '\t' || r == '\n' || r == '\r':
		return false
	case unicode.Is(unicode.Cf, r), unicode.Is(unicode.Cc, r), unicode.Is(unicode.Co, r):
		return true
	case r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0100 && r <= 0xE01EF: // variation selectors
		return true
	case r == utf8.RuneError:
		return true
	}
	return !unicode.IsGraphic(r) && !unicode.IsSpace(r)
}

// asciiHidden is hidden for a rune below utf8.RuneSelf: the controls
// other than tab, newline and carriage return. fold and hiddenAt read
// ASCII bytes through it: a tool's result is mostly ASCII, and the
// Unicode tables cost most of a screen.
func asciiHidden(c byte) bool {
	return c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f
}

func hiddenAt(s string) int {
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if asciiHidden(c) {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if hidden(r) {
			return i
		}
		i += size
	}
	return -1
}

// fold is the text as a reader sees it: hidden characters dropped (so
// "al\u200bways use this" still reads "always use this"), lower case,
// whitespace runs as one space.
func fold(s string) string {
	var f folder
	f.b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			i += size
			f.rune(r)
			continue
		}
		i++
		switch {
		case asciiHidden(c):
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			f.space = true
		default:
			f.sep()
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			f.b.WriteByte(c)
		}
	}
	return f.b.String()
}

// folder is fold's output: the text so far, and whether whitespace is
// pending.
type folder struct {
	b     strings.Builder
	space bool
}

// rune reads one rune as fold does, through the Unicode tables.
func (f *folder) rune(r rune) {
	switch {
	case hidden(r):
	case unicode.IsSpace(r):
		f.space = true
	default:
		f.sep()
		f.b.WriteRune(unicode.ToLower(r))
	}
}

// sep writes the one space a pending whitespace run folds to, unless
// nothing is written yet.
func (f *folder) sep() {
	if f.space && f.b.Len() > 0 {
		f.b.WriteByte(' ')
	}
	f.space = false
}

// maxExcerpt bounds an excerpt (hidden characters grow six-fold).
const maxExcerpt = 120

// excerpt is s[i:j] with up to 30 bytes either side, hidden characters
// written as U+XXXX, at most maxExcerpt bytes and always valid UTF-8.
func excerpt(s string, i, j int) string {
	lo, hi := max(i-30, 0), min(max(j, i+1)+30, len(s))
	// Step onto rune starts, but never far: invalid bytes are all
	// "continuations", and the window must stay bounded.
	for k := 0; k < utf8.UTFMax && lo > 0 && !utf8.RuneStart(s[lo]); k++ {
		lo--
	}
	var b strings.Builder
	if lo > 0 {
		b.WriteString("…")
	}
	for _, r := range s[lo:hi] {
		if b.Len() >= maxExcerpt {
			break
		}
		if hidden(r) {
			fmt.Fprintf(&b, "%U", r)
			continue
		}
		b.WriteRune(r)
	}
	if hi < len(s) || b.Len() >= maxExcerpt {
		b.WriteString("…")
	}
	return b.String()
}

// Screen is a registry write screen (registry.Options.Screen): it refuses
// an entry any poisoning rule flags, naming each field and why.
func Screen(e registry.Entry) error {
	flags := Poisoning(e)
	if len(flags) == 0 {
		return nil
	}
	parts := make([]string, len(flags))
	for i, f := range flags {
		parts[i] = fmt.Sprintf("%s: %s (%q)", f.Field, f.Why, f.Excerpt)
	}
	return fmt.Errorf("entry %q: %s: %w", e.Name, strings.Join(parts, "; "), ErrPoisoned)
}
