package fuzz

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
)

// Suggestion ops.
const (
	OpAddAlias    = "add_alias"
	OpRemoveAlias = "remove_alias"
)

// Suggestion is one change to a capability's discovery layer that a run
// proposes (ToolFuzz's AutoFix, for the one layer outside every identity:
// applying it invalidates no evidence and changes no registry hash).
type Suggestion struct {
	Capability string         `json:"capability"`
	Identity   hashing.Digest `json:"identity"`
	Op         string         `json:"op"`
	Phrase     string         `json:"phrase"`
	// Because names the findings it answers (their ids).
	Because []hashing.Digest `json:"because"`
	Detail  string           `json:"detail"`
}

// Recall counts prompts that discovered the capability they were built
// for: Found of Asked.
type Recall struct {
	Found int `json:"found"`
	Asked int `json:"asked"`
}

// AutoFix says how a run's suggestions were made and what they do: they
// come from the train side of the generated phrasings only and are
// measured on the test side, before and after (both with the real
// discovery, the "after" on a scratch copy of the registry with the
// suggestions applied).
type AutoFix struct {
	TrainPhrases int    `json:"train_phrases"`
	TestPhrases  int    `json:"test_phrases"`
	Before       Recall `json:"test_before"`
	After        Recall `json:"test_after"`
	// Suggestions counts the train side's suggestions measured; Dropped
	// those discarded because, applied, they made some prompt discover a
	// capability it was not built for (or lose one it found).
	Suggestions int `json:"suggestions"`
	Dropped     int `json:"dropped"`
}

// maxSuggestions bounds the aliases proposed for one capability.
const maxSuggestions = 96

// rephrasedFindings reads the answers to generated phrasings, capability
// by capability (name order):
//   - discoverability, paraphrase_missed: phrasings of its own words that
//     do not discover it;
//   - discoverability, paraphrase_confused: phrasings that discover
//     another capability of its kind instead — the trap of a real tool
//     found for the wrong words.
func (d *discoverability) rephrasedFindings() []findingBody {
	type tally struct {
		asked   int
		missed  []string
		instead map[string][]string
	}
	caps := map[string]*tally{}
	kinds := map[string]registry.Kind{}
	for i, p := range d.probes {
		a, ok := d.answers[i]
		if !ok || !p.rephrased || a.err != nil {
			continue
		}
		t := caps[p.capability]
		if t == nil {
			t = &tally{instead: map[string][]string{}}
			caps[p.capability], kinds[p.capability] = t, p.kind
		}
		t.asked++
		if slices.Contains(a.found, p.capability) {
			continue
		}
		t.missed = append(t.missed, p.prompt)
		for _, o := range a.found {
			t.instead[o] = append(t.instead[o], p.prompt)
		}
	}
	var out []findingBody
	for _, n := range slices.Sorted(maps.Keys(caps)) {
		t := caps[n]
		if len(t.missed) > 0 {
			slices.Sort(t.missed)
			out = append(out, findingBody{Kind: KindDiscoverability, Capability: n, Rule: "paraphrase_missed",
				Detail:   fmt.Sprintf("%d of %d prompts built from rephrasings of its own words do not discover it", len(t.missed), t.asked),
				Examples: firstN(t.missed, 3)})
		}
		for _, o := range slices.Sorted(maps.Keys(t.instead)) {
			ps := t.instead[o]
			slices.Sort(ps)
			out = append(out, findingBody{Kind: KindDiscoverability, Capability: n, Rule: "paraphrase_confused", Other: o,
				Detail:   fmt.Sprintf("%d prompt(s) built from rephrasings of its own words discover %s %s and not it", len(ps), kinds[n], o),
				Examples: firstN(ps, 3)})
		}
	}
	return out
}

// fixer turns findings into suggestions.
type fixer struct {
	d        *discoverability
	snap     *registry.Snapshot
	findings []Finding
	content  func(string) bool
	// vocab is every capability's own phrases (normalised): a suggestion
	// never repeats one.
	vocab map[string]bool
	// universe is, per capability, its own phrases and (families and
	// metrics) every phrasing the grammar makes of them: a suggestion for
	// one must occur in no other's.
	universe map[string][]string
	// key is discovery's own comparison of phrases (folded, stemmed).
	key func(string) string
	// grammarWords are the words of the grammar's word groups: one alone
	// says nothing of which capability is meant ("rallied", "stable").
	grammarWords map[string]bool
}

func newFixer(d *discoverability, snap *registry.Snapshot, findings []Finding) *fixer {
	f := &fixer{d: d, snap: snap, findings: findings, content: contentWords(), vocab: map[string]bool{},
		universe: map[string][]string{}, grammarWords: d.grammar.wordSet(), key: discover.NewVocabulary().Key}
	for _, c := range snap.Capabilities() {
		for _, p := range ownPhrases(c) {
			f.vocab[f.key(p)] = true
			f.universe[c.Name] = append(f.universe[c.Name], f.key(p))
		}
		for _, p := range d.reph[c.Name].all {
			f.universe[c.Name] = append(f.universe[c.Name], f.key(p))
		}
	}
	return f
}

// because returns the ids of the findings of capability name with one of
// the rules.
func (f *fixer) because(name string, rules ...string) []hashing.Digest {
	var out []hashing.Digest
	for _, x := range f.findings {
		if x.Capability == name && slices.Contains(rules, x.Rule) {
			out = append(out, x.ID)
		}
	}
	return out
}

// propose makes the candidate suggestions:
//   - add_alias, for each generated phrasing that missed its capability
//     (train side only unless all): a word the grammar made of its own
//     words or a hyphenated compound ("backwardated",
//     "volatility-managed"), else the whole phrasing — either only when it
//     is nobody's phrase yet and occurs in no phrasing of another
//     capability (one alias covers every phrasing holding it);
//   - add_alias, for an unreachable capability: noun phrases of its
//     description that no other description holds;
//   - remove_alias, for an alias two capabilities of a kind share: from
//     the one whose description does not use those words.
func (f *fixer) propose(all bool) []Suggestion {
	var out []Suggestion
	missed := map[string][]probe{}
	for i, p := range f.d.probes {
		a, ok := f.d.answers[i]
		if ok && p.rephrased && (all || !p.test) && a.err == nil && !slices.Contains(a.found, p.capability) &&
			!slices.ContainsFunc(missed[p.capability], func(q probe) bool { return q.phrase == p.phrase }) {
			missed[p.capability] = append(missed[p.capability], p)
		}
	}
	for _, c := range sortedCaps(f.snap) {
		ps := roundRobin(missed[c.Name])
		var added []string
		for _, p := range ps {
			if len(added) == maxSuggestions || slices.ContainsFunc(added, func(a string) bool { return containsWords(f.key(p), a) }) {
				continue
			}
			if alias := f.alias(c, p); alias != "" {
				added = append(added, f.key(alias))
				out = append(out, Suggestion{Capability: c.Name, Identity: c.Identity, Op: OpAddAlias, Phrase: alias,
					Because: f.because(c.Name, "paraphrase_missed"),
					Detail:  fmt.Sprintf("the rephrasing %q does not discover it; %q is in no other capability's phrasings", p, alias)})
			}
		}
		if len(f.because(c.Name, "unreachable")) > 0 {
			for _, chunk := range descriptionChunks(c.Disc.Description, f.content) {
				if len(added) == 3 {
					break
				}
				if !f.vocab[f.key(chunk)] && !f.inOtherDescription(c, chunk) {
					added = append(added, f.key(chunk))
					out = append(out, Suggestion{Capability: c.Name, Identity: c.Identity, Op: OpAddAlias, Phrase: chunk,
						Because: f.because(c.Name, "unreachable"),
						Detail:  fmt.Sprintf("nothing its aliases say discovers it; its description's %q is in no other description", chunk)})
				}
			}
		}
	}
	return append(out, f.sharedAliases()...)
}

// roundRobin orders missed phrasings so that every source phrase of the
// capability has its shortest turn before any has its next (the bound
// on suggestions then spreads over all its words), shortest first within
// a source.
func roundRobin(ps []probe) []string {
	bySource := map[string][]string{}
	for _, p := range ps {
		bySource[p.source] = append(bySource[p.source], p.phrase)
	}
	var out []string
	for turn := 0; len(out) < len(ps); turn++ {
		for _, src := range slices.Sorted(maps.Keys(bySource)) {
			xs := bySource[src]
			if turn == 0 {
				slices.SortFunc(xs, func(a, b string) int {
					return cmp.Or(cmp.Compare(len(strings.Fields(a)), len(strings.Fields(b))), strings.Compare(a, b))
				})
			}
			if turn < len(xs) {
				out = append(out, xs[turn])
			}
		}
	}
	return out
}

// alias returns what to add so that phrasing p discovers c, or "": one
// word when it is a hyphenated compound or an inflection of c's own
// words (alone, any other word is too general), else the whole phrasing.
func (f *fixer) alias(c registry.Capability, p string) string {
	for _, tok := range strings.Fields(p) {
		if (strings.Contains(tok, "-") || f.inflected(c, tok)) && !f.grammarWords[tok] && f.fits(c, tok) {
			return tok
		}
	}
	if f.fits(c, p) {
		return p
	}
	return ""
}

// inflected: tok is one of c's own words with a grammar suffix changed
// (backwardation → backwardated).
func (f *fixer) inflected(c registry.Capability, tok string) bool {
	for _, own := range ownPhrases(c) {
		for _, w := range strings.Fields(own) {
			for _, s := range f.d.grammar.Suffixes {
				if w != tok && strings.HasSuffix(w, s[0]) && strings.TrimSuffix(w, s[0])+s[1] == tok {
					return true
				}
			}
		}
	}
	return false
}

// fits: run is nobody's phrase, means something to discovery, and is in
// no phrasing of another capability — of any kind: a prompt names
// families, metrics and pipeline steps in one breath ("the front
// contract's log returns" must not find CARRY by "front contract").
func (f *fixer) fits(c registry.Capability, run string) bool {
	return !f.vocab[f.key(run)] && f.meaningful(run) && !f.inOther(c, f.key(run))
}

// meaningful: discovery keeps a word of it (not all stop or filler words).
func (f *fixer) meaningful(run string) bool {
	for _, w := range strings.FieldsFunc(run, func(r rune) bool { return r == ' ' || r == '-' }) {
		if len(w) > 2 && f.content(w) {
			return true
		}
	}
	return false
}

func (f *fixer) inOther(c registry.Capability, run string) bool {
	for _, o := range f.snap.Capabilities() {
		if o.Name == c.Name {
			continue
		}
		if slices.ContainsFunc(f.universe[o.Name], func(p string) bool { return containsWords(p, run) }) {
			return true
		}
	}
	return false
}

func (f *fixer) inOtherDescription(c registry.Capability, chunk string) bool {
	for _, o := range f.snap.Capabilities() {
		if o.Name != c.Name && containsWords(descWords(o.Disc.Description), chunk) {
			return true
		}
	}
	return false
}

// sharedAliases proposes removing an alias two capabilities of one kind
// share from those whose description does not use its words, when one
// that keeps it does.
func (f *fixer) sharedAliases() []Suggestion {
	owners := map[string][]registry.Capability{}
	for _, c := range sortedCaps(f.snap) {
		for _, a := range c.Disc.Aliases {
			k := string(c.Kind) + "\x00" + normPhrase(a)
			owners[k] = append(owners[k], c)
		}
	}
	var out []Suggestion
	for _, k := range slices.Sorted(maps.Keys(owners)) {
		cs := owners[k]
		if len(cs) < 2 {
			continue
		}
		phrase := k[strings.IndexByte(k, 0)+1:]
		var keep, drop []registry.Capability
		for _, c := range cs {
			if containsWords(descWords(c.Disc.Description), phrase) {
				keep = append(keep, c)
			} else {
				drop = append(drop, c)
			}
		}
		if len(keep) == 0 {
			continue // nothing says whose phrase it is: left to people
		}
		for _, c := range drop {
			alias := c.Disc.Aliases[slices.IndexFunc(c.Disc.Aliases, func(a string) bool { return normPhrase(a) == phrase })]
			out = append(out, Suggestion{Capability: c.Name, Identity: c.Identity, Op: OpRemoveAlias, Phrase: alias,
				Because: f.because(c.Name, "ambiguous", "confused"),
				Detail:  fmt.Sprintf("%s shares the alias %q with %s, whose description uses it; its own does not", c.Name, alias, keep[0].Name)})
		}
	}
	return out
}

// containsWords reports whether run occurs in p as whole words.
func containsWords(p, run string) bool {
	return strings.Contains(" "+p+" ", " "+run+" ")
}

// Patch is the registry patch of the suggestions (groundgate fuzz
// --patch; applied by groundgate registry put).
func (r *Report) Patch() registry.DiscPatch {
	p := registry.DiscPatch{Patch: registry.PatchDisc, Registry: r.Registry, Version: r.Version, Changes: []registry.DiscChange{}}
	idx := map[string]int{}
	for _, s := range r.Suggestions {
		i, ok := idx[s.Capability]
		if !ok {
			i = len(p.Changes)
			idx[s.Capability] = i
			p.Changes = append(p.Changes, registry.DiscChange{Name: s.Capability, Identity: s.Identity})
		}
		ch := &p.Changes[i]
		switch s.Op {
		case OpAddAlias:
			ch.AddAliases = append(ch.AddAliases, s.Phrase)
		case OpRemoveAlias:
			ch.RemoveAliases = append(ch.RemoveAliases, s.Phrase)
		}
		for _, b := range s.Because {
			if !slices.Contains(ch.Because, b.String()) {
				ch.Because = append(ch.Because, b.String())
			}
		}
	}
	return p
}

// autofix makes the run's suggestions. First the measure: suggestions
// from the train side of the generated phrasings only, checked, and the
// test side asked before and after. Then the suggestions reported: made
// the same way from every phrasing (the measure says how well that
// generalises). Checked means: asked on a scratch copy of the registry
// with them applied, a suggestion that makes any probe discover a
// capability it was not built for (or lose one it found) is dropped.
func (d *discoverability) autofix(ctx context.Context, snap *registry.Snapshot, findings []Finding) ([]Suggestion, *AutoFix, error) {
	f := newFixer(d, snap, findings)
	fix := &AutoFix{}
	var own, train, test []int
	sides := map[bool]map[string]bool{false: {}, true: {}}
	for i, p := range d.probes {
		if _, ok := d.answers[i]; !ok {
			continue
		}
		switch {
		case !p.rephrased:
			own = append(own, i)
		case p.test:
			test = append(test, i)
		default:
			train = append(train, i)
		}
		if p.rephrased {
			sides[p.test][p.capability+"\x00"+p.phrase] = true
		}
	}
	fix.TrainPhrases, fix.TestPhrases = len(sides[false]), len(sides[true])
	for _, i := range test {
		fix.Before.Asked++
		if slices.Contains(d.answers[i].found, d.probes[i].capability) {
			fix.Before.Found++
		}
	}
	measured, dropped, err := d.checked(ctx, snap, f.propose(false), append(slices.Clone(own), train...), func(pr Prober) error {
		var err error
		fix.After, err = d.recall(ctx, pr, test)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	fix.Dropped, fix.Suggestions = dropped, len(measured)
	final, _, err := d.checked(ctx, snap, f.propose(true), append(append(own, train...), test...), nil)
	if err != nil {
		return nil, nil, err
	}
	return final, fix, nil
}

// checked drops the suggestions that mislead the probes idx (up to four
// rounds) and, once none does, calls then with discovery over the
// registry with the survivors applied.
func (d *discoverability) checked(ctx context.Context, snap *registry.Snapshot, sugg []Suggestion, idx []int, then func(Prober) error) ([]Suggestion, int, error) {
	dropped := 0
	for round := 0; ; round++ {
		pr, closeFn, err := patchedProber(ctx, snap, sugg)
		if err != nil {
			return nil, 0, err
		}
		bad, err := d.regressions(ctx, pr, idx, sugg)
		if err == nil && len(bad) == 0 && then != nil {
			err = then(pr)
		}
		closeFn()
		switch {
		case err != nil:
			return nil, 0, err
		case len(bad) == 0:
			return sugg, dropped, nil
		case round == 3:
			return nil, 0, fmt.Errorf("fuzz: suggestions still mislead discovery after %d rounds", round+1)
		}
		dropped += len(bad)
		sugg = slices.DeleteFunc(sugg, func(s Suggestion) bool { return bad[s.Capability+"\x00"+s.Phrase] })
	}
}

// regressions asks the probes idx with the suggestions applied and
// returns the suggestions to drop: an added alias that makes a prompt
// discover its capability though built for another, or a change after
// which a prompt no longer discovers what it was built for.
func (d *discoverability) regressions(ctx context.Context, pr Prober, idx []int, sugg []Suggestion) (map[string]bool, error) {
	bad := map[string]bool{}
	// Every probe is held against every suggestion: normalise each phrase
	// once, not once per pair (and pad it as containsWords does).
	phrases, padded := make([]string, len(sugg)), make([]string, len(sugg))
	for k, s := range sugg {
		phrases[k] = normPhrase(s.Phrase)
		padded[k] = " " + phrases[k] + " "
	}
	for _, i := range idx {
		p, before := d.probes[i], d.answers[i]
		if before.err != nil {
			continue
		}
		after, _, err := d.askOne(ctx, pr, p)
		if err != nil {
			return nil, fmt.Errorf("fuzz: asking %q with the suggestions applied: %w", p.prompt, err)
		}
		// A prompt built from an alias a suggestion removes is meant to
		// lose its capability.
		removed := false
		for k, s := range sugg {
			removed = removed || s.Op == OpRemoveAlias && s.Capability == p.capability && phrases[k] == p.phrase
		}
		lost := !removed && slices.Contains(before.found, p.capability) && !slices.Contains(after.found, p.capability)
		prompt := " " + normPhrase(p.prompt) + " "
		for k, s := range sugg {
			inPrompt := strings.Contains(prompt, padded[k]) // containsWords(normPhrase(p.prompt), phrases[k])
			wrong := s.Op == OpAddAlias && s.Capability != p.capability && inPrompt &&
				slices.Contains(after.found, s.Capability) && !slices.Contains(before.found, s.Capability)
			if wrong || (lost && (inPrompt || s.Capability == p.capability && s.Op == OpRemoveAlias)) {
				bad[s.Capability+"\x00"+s.Phrase] = true
			}
		}
	}
	return bad, ctx.Err()
}

func (d *discoverability) recall(ctx context.Context, pr Prober, idx []int) (Recall, error) {
	var r Recall
	for _, i := range idx {
		a, _, err := d.askOne(ctx, pr, d.probes[i])
		if err != nil {
			return Recall{}, fmt.Errorf("fuzz: asking %q with the suggestions applied: %w", d.probes[i].prompt, err)
		}
		r.Asked++
		if slices.Contains(a.found, d.probes[i].capability) {
			r.Found++
		}
	}
	return r, ctx.Err()
}

// patchedProber is discovery over a scratch copy of snap with the
// suggestions applied (a registry in a temporary bbolt file, removed by
// the returned func): what the patch would do, without writing the real
// registry.
func patchedProber(ctx context.Context, snap *registry.Snapshot, sugg []Suggestion) (Prober, func(), error) {
	rep := &Report{Registry: snap.Registry(), Version: snap.Version(), Suggestions: sugg}
	changed, err := rep.Patch().Apply(snap)
	if err != nil {
		return nil, nil, err
	}
	byName := map[string]registry.Entry{}
	for _, e := range changed {
		byName[e.Name] = e
	}
	entries := make([]registry.Entry, 0, len(snap.Capabilities()))
	for _, c := range snap.Capabilities() {
		if e, ok := byName[c.Name]; ok {
			entries = append(entries, e)
		} else {
			entries = append(entries, c.Entry)
		}
	}
	dir, err := os.MkdirTemp("", "groundgate-fuzz-")
	if err != nil {
		return nil, nil, fmt.Errorf("fuzz: scratch registry: %w", err)
	}
	cleanup := func() { os.RemoveAll(dir) }
	s, err := registry.Open(ctx, filepath.Join(dir, "scratch.db"), registry.Options{})
	if err == nil {
		_, err = s.Seed(ctx, entries)
		if err != nil {
			s.Close()
		}
	}
	if err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("fuzz: scratch registry with the suggestions: %w", err)
	}
	disc, err := discover.New(ctx, s, s.Engine(), discover.Options{})
	if err != nil {
		s.Close()
		cleanup()
		return nil, nil, fmt.Errorf("fuzz: discovery over the scratch registry: %w", err)
	}
	return disc, func() { disc.Close(); s.Close(); cleanup() }, nil
}
