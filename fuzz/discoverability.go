package fuzz

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/registry"
)

// Prober answers discovery questions without storing evidence
// (discover.Discoverer.Probe).
type Prober interface {
	Probe(ctx context.Context, q discover.Query) (discover.Result, error)
}

var _ Prober = (*discover.Discoverer)(nil)

// templates are how researchers phrase a request for a capability of each
// kind; {p} is one of the capability's own phrases. They name no other
// capability, so what else a query finds comes from the phrase itself.
var templates = map[registry.Kind][]string{
	registry.KindFamily:    {"{p}", "run a {p} strategy on crude oil", "backtest {p} on the S&P 500 index", "I want to try {p} on natural gas futures"},
	registry.KindMetric:    {"{p}", "score the results by {p}", "compare the windows on {p}", "which run has the best {p}"},
	registry.KindOperation: {"{p}", "take the {p} of the prices", "apply {p} to each series"},
	registry.KindSignal:    {"{p}", "build a {p} signal from the prices", "use {p} as the signal"},
}

// probe is one generated question: a capability, one of its phrases, in
// one template.
type probe struct {
	capability string
	kind       registry.Kind
	phrase     string
	template   int
	prompt     string
	codeName   bool // the phrase is the capability's name written as words
	// rephrased marks a generated phrasing of the capability's words
	// (source: what it rephrases); test puts it on the split's test side.
	rephrased bool
	source    string
	test      bool
}

// phrases are the words a capability's own vocabulary offers a
// researcher: its aliases, then its name written as words. (Tags are
// shared categories, not names: they are expected to find many.) The
// second result says which phrase is the code name: what it finds counts
// for consistency, not for reachability — researchers do not speak in
// code names.
func phrases(c registry.Capability) ([]string, string) {
	out := slices.Clone(c.Disc.Aliases)
	name := strings.ToLower(strings.ReplaceAll(c.Name, "_", " "))
	if !slices.Contains(out, name) {
		out = append(out, name)
	}
	return out, name
}

// probes lists every question for every capability of the kinds a request
// names, in a fixed order (capabilities by name; its own phrases in every
// template, then its generated phrasings, each in one sentence template
// fixed by the phrase).
func probes(snap *registry.Snapshot, reph map[string]rephrasings, seed uint64) []probe {
	var out []probe
	for _, c := range sortedCaps(snap) {
		ts := templates[c.Kind]
		ps, code := phrases(c)
		for _, p := range ps {
			for ti, t := range ts {
				out = append(out, probe{capability: c.Name, kind: c.Kind, phrase: p, template: ti,
					prompt: strings.ReplaceAll(t, "{p}", p), codeName: p == code && !slices.Contains(c.Disc.Aliases, p)})
			}
		}
		for _, r := range reph[c.Name].asked {
			ti := 1 + int(sampleKey(c.Name, r.phrase)%uint64(len(ts)-1))
			out = append(out, probe{capability: c.Name, kind: c.Kind, phrase: r.phrase, template: ti,
				prompt: strings.ReplaceAll(ts[ti], "{p}", r.phrase), rephrased: true, source: r.source,
				test: inTest(seed, c.Name, r.phrase)})
		}
	}
	return out
}

// order is a seeded permutation of n probes: a run cut short by its time
// budget has sampled every capability, not only the first in name order.
func order(n int, seed uint64) []int {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return r.Perm(n)
}

// answer is what discovery made of one probe: the same-kind names matched.
type answer struct {
	found []string
	err   error
}

// discoverability asks the probes (in seeded order, until ctx ends) and
// turns the answers into findings and the confusion matrix.
type discoverability struct {
	probes  []probe
	reph    map[string]rephrasings
	grammar *Grammar
	answers map[int]answer
	// noise is what each template's own words discover ("the prices"
	// finds operations on prices): not found by the phrase, so not
	// counted.
	noise map[registry.Kind]map[int][]string
}

func (d *discoverability) report(progress func(Progress)) {
	if progress != nil {
		progress(Progress{Done: len(d.answers), Total: len(d.probes)})
	}
}

func (d *discoverability) ask(ctx context.Context, pr Prober, seed uint64, version uint64, progress func(Progress)) (complete bool, err error) {
	d.answers = map[int]answer{}
	d.noise = map[registry.Kind]map[int][]string{}
	for _, k := range slices.Sorted(maps.Keys(templates)) {
		d.noise[k] = map[int][]string{}
		for ti, t := range templates[k] {
			bare := strings.TrimSpace(strings.ReplaceAll(t, "{p}", ""))
			if bare == "" {
				continue
			}
			res, err := pr.Probe(ctx, discover.Query{Prompt: bare})
			if err != nil {
				continue // a template of filler words alone finds nothing
			}
			for _, m := range res.Matches {
				if m.Kind == k {
					d.noise[k][ti] = append(d.noise[k][ti], m.Name)
				}
			}
		}
	}
	for _, i := range order(len(d.probes), seed) {
		if ctx.Err() != nil {
			return false, nil
		}
		a, v, err := d.askOne(ctx, pr, d.probes[i])
		if ctx.Err() != nil {
			return false, nil
		}
		if err == nil && v != version {
			return false, fmt.Errorf("fuzz: the registry moved to version %d during a run pinned to %d", v, version)
		}
		d.answers[i] = a
		d.report(progress)
	}
	return true, nil
}

// askOne asks one probe: the names of its kind discovery finds (sorted,
// the template's noise left out) and the version that answered. A refused
// prompt is an answer (query_refused), not an error of the run.
func (d *discoverability) askOne(ctx context.Context, pr Prober, p probe) (answer, uint64, error) {
	res, err := pr.Probe(ctx, discover.Query{Prompt: p.prompt})
	if err != nil {
		return answer{err: err}, 0, err
	}
	var found []string
	for _, m := range res.Matches {
		if m.Kind != p.kind || slices.Contains(found, m.Name) {
			continue
		}
		if m.Name != p.capability && slices.Contains(d.noise[p.kind][p.template], m.Name) {
			continue // the template's words found it, not the phrase
		}
		found = append(found, m.Name)
	}
	sort.Strings(found)
	return answer{found: found}, res.Version, nil
}

// findings reads the answers, capability by capability (name order):
//   - discoverability, unreachable: no probe of its aliases finds it (its
//     code name does not count: researchers do not speak in code names);
//   - discoverability, dead_phrase: one of its phrases finds it nowhere;
//   - discoverability, confused: probes of its phrases find another
//     capability of its kind instead of it;
//   - discoverability, ambiguous: for a family or metric, probes of its
//     phrases find another of its kind beside it;
//   - consistency: one template with two of its phrases (synonyms) finds
//     different capabilities of its kind.
func (d *discoverability) findings() []findingBody {
	type perCap struct {
		kind     registry.Kind
		asked    int
		hits     int
		phrases  []string            // in probe order
		byPhrase map[string]int      // hits per phrase
		instead  map[string][]string // other name → prompts that found it instead
		beside   map[string][]string // other name → prompts that found it too
		byTmpl   map[int]map[string][]string
		failures []string
	}
	caps := map[string]*perCap{}
	var names []string
	for i, p := range d.probes {
		a, ok := d.answers[i]
		if !ok || p.rephrased {
			continue // generated phrasings: see rephrasedFindings
		}
		pc := caps[p.capability]
		if pc == nil {
			pc = &perCap{kind: p.kind, instead: map[string][]string{}, beside: map[string][]string{}, byTmpl: map[int]map[string][]string{}, byPhrase: map[string]int{}}
			caps[p.capability] = pc
			names = append(names, p.capability)
		}
		pc.asked++
		if a.err != nil {
			pc.failures = append(pc.failures, fmt.Sprintf("%q: %v", p.prompt, a.err))
			continue
		}
		if _, seen := pc.byPhrase[p.phrase]; !seen {
			pc.phrases = append(pc.phrases, p.phrase)
			pc.byPhrase[p.phrase] = 0
		}
		if slices.Contains(a.found, p.capability) {
			if !p.codeName {
				pc.hits++
			}
			pc.byPhrase[p.phrase]++
			for _, o := range a.found {
				if o != p.capability {
					pc.beside[o] = append(pc.beside[o], p.prompt)
				}
			}
		} else {
			for _, o := range a.found {
				pc.instead[o] = append(pc.instead[o], p.prompt)
			}
		}
		if pc.byTmpl[p.template] == nil {
			pc.byTmpl[p.template] = map[string][]string{}
		}
		key := strings.Join(a.found, ",")
		pc.byTmpl[p.template][key] = append(pc.byTmpl[p.template][key], p.phrase)
	}
	sort.Strings(names)
	var out []findingBody
	for _, n := range names {
		pc := caps[n]
		if pc.hits == 0 && len(pc.failures) < pc.asked {
			out = append(out, findingBody{Kind: KindDiscoverability, Capability: n, Rule: "unreachable",
				Detail: fmt.Sprintf("none of %d prompts built from its aliases discovers it (%d aliases; only its code name, if anything, finds it)", pc.asked, len(pc.phrases)-1)})
		}
		if pc.hits > 0 {
			for _, ph := range pc.phrases {
				if pc.byPhrase[ph] == 0 {
					out = append(out, findingBody{Kind: KindDiscoverability, Capability: n, Rule: "dead_phrase",
						Detail: fmt.Sprintf("its phrase %q finds it in none of the prompts built from it (discovery drops or reads it otherwise)", ph)})
				}
			}
		}
		var others []string
		for o := range pc.instead {
			others = append(others, o)
		}
		sort.Strings(others)
		for _, o := range others {
			ps := pc.instead[o]
			out = append(out, findingBody{Kind: KindDiscoverability, Capability: n, Rule: "confused", Other: o,
				Detail:   fmt.Sprintf("%d prompt(s) built from its phrases discover %s %s and not it", len(ps), pc.kind, o),
				Examples: firstN(ps, 3)})
		}
		// A family's or metric's own words finding another of its kind
		// too: the agent must choose, and may choose the other.
		if pc.kind == registry.KindFamily || pc.kind == registry.KindMetric {
			for _, o := range slices.Sorted(maps.Keys(pc.beside)) {
				ps := pc.beside[o]
				out = append(out, findingBody{Kind: KindDiscoverability, Capability: n, Rule: "ambiguous", Other: o,
					Detail:   fmt.Sprintf("%d prompt(s) built from its phrases discover %s %s beside it", len(ps), pc.kind, o),
					Examples: firstN(ps, 3)})
			}
		}
		tmpls := make([]int, 0, len(pc.byTmpl))
		for t := range pc.byTmpl {
			tmpls = append(tmpls, t)
		}
		sort.Ints(tmpls)
		for _, t := range tmpls {
			groups := pc.byTmpl[t]
			if len(groups) < 2 {
				continue
			}
			var parts []string
			for _, key := range slices.Sorted(maps.Keys(groups)) {
				found := key
				if found == "" {
					found = "nothing"
				}
				parts = append(parts, fmt.Sprintf("%s → %s", strings.Join(firstN(groups[key], 3), " / "), found))
			}
			out = append(out, findingBody{Kind: KindConsistency, Capability: n, Rule: "synonyms_disagree",
				Detail:   fmt.Sprintf("its synonyms in the template %q discover different %ss: %s", templates[pc.kind][t], pc.kind, strings.Join(parts, "; ")),
				Examples: nil})
		}
		for _, f := range firstN(pc.failures, 1) {
			out = append(out, findingBody{Kind: KindDiscoverability, Capability: n, Rule: "query_refused", Detail: "discovery refused a prompt: " + f})
		}
	}
	return out
}

// Confusion is, for families and for metrics, how often a prompt built
// from one capability's phrases discovered each capability of its kind:
// Rows[intended][found]. "" in found counts prompts that found none.
type Confusion struct {
	Kind    registry.Kind             `json:"kind"`
	Prompts map[string]int            `json:"prompts"`
	Rows    map[string]map[string]int `json:"rows"`
}

func (d *discoverability) confusion(kind registry.Kind) Confusion {
	c := Confusion{Kind: kind, Prompts: map[string]int{}, Rows: map[string]map[string]int{}}
	for i, p := range d.probes {
		a, ok := d.answers[i]
		if !ok || p.kind != kind || a.err != nil || p.rephrased {
			continue
		}
		c.Prompts[p.capability]++
		row := c.Rows[p.capability]
		if row == nil {
			row = map[string]int{}
			c.Rows[p.capability] = row
		}
		if len(a.found) == 0 {
			row[""]++
		}
		for _, f := range a.found {
			row[f]++
		}
	}
	return c
}

func firstN(xs []string, n int) []string {
	if len(xs) > n {
		return xs[:n]
	}
	return xs
}
