package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/groundgate/groundgate/agent/llm"
	"github.com/groundgate/groundgate/hashing"
)

// OpenAIProposer asks any OpenAI-compatible chat-completions endpoint
// (through an llm.Client) for a proposal.
type OpenAIProposer struct{ c *llm.Client }

var _ Proposer = (*OpenAIProposer)(nil)

// NewOpenAIProposer checks the configuration.
func NewOpenAIProposer(cfg llm.Config) (*OpenAIProposer, error) {
	c, err := llm.NewClient(cfg)
	if err != nil {
		return nil, err
	}
	return &OpenAIProposer{c: c}, nil
}

// Name says which model made the proposals; it never includes the key.
func (o *OpenAIProposer) Name() string { return o.c.Name() }

// Propose sends the messages of Messages(in) and reads the answer. An
// answer that is not a proposal is returned with Malformed set (F1); an
// error wraps ErrProposer (and llm.ErrFailed).
func (o *OpenAIProposer) Propose(ctx context.Context, in Input) (Proposal, error) {
	content, err := o.c.Complete(ctx, Messages(in))
	if err != nil {
		return Proposal{}, fmt.Errorf("%w: %w", ErrProposer, err)
	}
	p := ParseProposal(content, in.Data)
	p.Proposer = o.c.Name()
	p.Raw = content
	return p, nil
}

// ParseProposal reads an LLM's answer: one JSON object (a ``` fence or
// text around it is tolerated) with string family, metric and data and an
// object params, or {"abstain": true, "reason": …}. data defaults to the
// attached file when the answer leaves it out. Anything else is returned
// with Malformed saying what is wrong.
func ParseProposal(content, data string) Proposal {
	s := strings.TrimSpace(content)
	i, j := strings.Index(s, "{"), strings.LastIndex(s, "}")
	if i < 0 || j < i {
		return Proposal{Malformed: "the answer holds no JSON object"}
	}
	// Checked as every input is (no key twice, in any case), then read
	// with numbers kept as their text.
	if err := hashing.CheckStrict([]byte(s[i : j+1])); err != nil {
		return Proposal{Malformed: "the answer's JSON object does not decode: " + err.Error()}
	}
	dec := json.NewDecoder(strings.NewReader(s[i : j+1]))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return Proposal{Malformed: "the answer's JSON object does not decode: " + err.Error()}
	}
	var p Proposal
	if r, ok := m["rationale"].(string); ok {
		p.Rationale = r
	}
	if ab, ok := m["abstain"].(bool); ok && ab {
		p.Abstain = true
		if r, ok := m["reason"].(string); ok {
			p.Rationale = r
		}
		return p
	}
	str := func(key string) (string, string) {
		v, ok := m[key]
		if !ok {
			return "", key + " is missing"
		}
		s, ok := v.(string)
		if !ok || strings.TrimSpace(s) == "" {
			return "", key + " is not a non-empty string"
		}
		return s, ""
	}
	var bad []string
	var why string
	if p.Family, why = str("family"); why != "" {
		bad = append(bad, why)
	}
	if p.Metric, why = str("metric"); why != "" {
		bad = append(bad, why)
	}
	if _, ok := m["data"]; !ok {
		p.Data = data
	} else if p.Data, why = str("data"); why != "" {
		bad = append(bad, why)
	}
	switch ps := m["params"].(type) {
	case nil:
		p.Params = map[string]any{}
	case map[string]any:
		p.Params = ps
	default:
		bad = append(bad, "params is not an object")
	}
	if len(bad) > 0 {
		return Proposal{Malformed: strings.Join(bad, "; ")}
	}
	return p
}

// Messages is the exact chat an LLM proposer is sent: the same
// instructions for both pipelines, and the options shown, each with its
// registry description, aliases, tags and parameters. Only the scope
// sentence and the options differ between the pipelines.
func Messages(in Input) []llm.Message {
	sys := `You are the planning step of a research agent for systematic trading research. Turn the researcher's request into one backtest request for a research server. Choose exactly one strategy family and exactly one scoring metric from the options listed, and parameters from the chosen family's parameter list.

Answer with one JSON object and nothing else:
{"family": "<family name>", "metric": "<metric name>", "params": {"<parameter>": <value or list of values>}, "data": "<data file>", "rationale": "<one sentence>"}

A list of values sweeps that parameter: one backtest per value, and the best by the metric is selected. Parameters you leave out take their defaults; parameters marked required must be given. Use the data file the researcher attached.
If none of the listed families fits the request, answer {"abstain": true, "reason": "<one sentence>"} instead.`
	var b strings.Builder
	fmt.Fprintf(&b, "Researcher's request:\n%s\n\nData file attached by the researcher: %s\n\n", in.Prompt, in.Data)
	switch in.Scope {
	case ScopeDiscovered:
		b.WriteString("The options below are the capabilities the server discovered from the researcher's words; only these may be used.\n")
	default:
		b.WriteString("The options below are every capability the server has; any of them may be used.\n")
	}
	b.WriteString("\nStrategy families:\n")
	if len(in.Families) == 0 {
		b.WriteString("(none)\n")
	}
	for _, f := range in.Families {
		writeOption(&b, f)
		b.WriteString("  Parameters: ")
		if len(f.Params) == 0 {
			b.WriteString("none")
		}
		for i, p := range f.Params {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(describeParam(p))
		}
		b.WriteString("\n")
	}
	b.WriteString("\nScoring metrics:\n")
	if len(in.Metrics) == 0 {
		b.WriteString("(none)\n")
	}
	for _, m := range in.Metrics {
		writeOption(&b, m)
	}
	var pairs []string
	for _, f := range in.Families {
		for _, m := range in.Metrics {
			pairs = append(pairs, f.Name+" × "+m.Name)
		}
	}
	if len(pairs) > 0 {
		fmt.Fprintf(&b, "\nValid family × metric pairs (%d): %s\n", len(pairs), strings.Join(pairs, ", "))
	}
	return []llm.Message{{Role: "system", Content: sys}, {Role: "user", Content: b.String()}}
}

func writeOption(b *strings.Builder, o Option) {
	fmt.Fprintf(b, "- %s: %s\n", o.Name, o.Description)
	if len(o.Aliases) > 0 {
		fmt.Fprintf(b, "  Also called: %s\n", strings.Join(o.Aliases, ", "))
	}
	if len(o.Tags) > 0 {
		fmt.Fprintf(b, "  Tags: %s\n", strings.Join(o.Tags, ", "))
	}
}

func describeParam(p Param) string {
	s := p.Name + " (" + string(p.Type)
	if p.Default == nil {
		s += ", required"
	} else {
		s += fmt.Sprintf(", default %v", p.Default)
	}
	if p.Min != nil {
		s += fmt.Sprintf(", min %g", *p.Min)
	}
	if p.Max != nil {
		s += fmt.Sprintf(", max %g", *p.Max)
	}
	s += ")"
	if p.Doc != "" {
		s += ": " + p.Doc
	}
	return s
}
