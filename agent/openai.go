package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Environment variables the command reads the LLM endpoint from (flags
// override them). The package itself reads no environment.
const (
	EnvLLMBaseURL = "GROUNDGATE_LLM_BASE_URL" // e.g. https://api.openai.com/v1
	EnvLLMModel   = "GROUNDGATE_LLM_MODEL"
	EnvLLMAPIKey  = "GROUNDGATE_LLM_API_KEY"
)

// DefaultTemperature is the paper's sampling temperature.
const DefaultTemperature = 0.7

// OpenAIConfig configures an OpenAIProposer.
type OpenAIConfig struct {
	// BaseURL is the API root; the proposer posts to BaseURL +
	// "/chat/completions".
	BaseURL string
	Model   string
	// APIKey is sent as a bearer token when not empty.
	APIKey      string
	Temperature float64
	// HTTP is the client to use (default: 120 s timeout).
	HTTP *http.Client
	// MaxAttempts bounds tries per prompt on 429, 5xx and transport
	// errors (default 3); Backoff is the first wait, doubled each time
	// (default 2 s).
	MaxAttempts int
	Backoff     time.Duration
}

// OpenAIProposer asks any OpenAI-compatible chat-completions endpoint for
// a proposal. It asks for a JSON object (response_format json_object) and
// drops that field for the rest of the run when the endpoint refuses it.
type OpenAIProposer struct {
	cfg      OpenAIConfig
	endpoint string
	label    string
	jsonMode bool
}

var _ Proposer = (*OpenAIProposer)(nil)

// NewOpenAIProposer checks the configuration.
func NewOpenAIProposer(cfg OpenAIConfig) (*OpenAIProposer, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("LLM base URL %q: want http(s)://host[/path]", cfg.BaseURL)
	}
	if cfg.Model == "" {
		return nil, errors.New("LLM model is not set")
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 120 * time.Second}
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 3
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 2 * time.Second
	}
	return &OpenAIProposer{
		cfg:      cfg,
		endpoint: strings.TrimRight(cfg.BaseURL, "/") + "/chat/completions",
		label:    fmt.Sprintf("LLM %s via OpenAI-compatible API at %s (temperature %g)", cfg.Model, u.Host, cfg.Temperature),
		jsonMode: true,
	}, nil
}

// Name says which model made the proposals; it never includes the key.
func (o *OpenAIProposer) Name() string { return o.label }

// ChatMessage is one message of a chat-completions request.
type ChatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model          string            `json:"model"`
	Messages       []ChatMessage     `json:"messages"`
	Temperature    float64           `json:"temperature"`
	ResponseFormat map[string]string `json:"response_format,omitempty"`
}

type chatResponse struct {
	Choices []struct {
		Message ChatMessage `json:"message"`
	} `json:"choices"`
}

// Propose sends the messages of Messages(in) and reads the answer. An
// answer that is not a proposal is returned with Malformed set (F1); an
// error wraps ErrProposer.
func (o *OpenAIProposer) Propose(ctx context.Context, in Input) (Proposal, error) {
	content, err := o.complete(ctx, Messages(in))
	if err != nil {
		return Proposal{}, err
	}
	p := ParseProposal(content, in.Data)
	p.Proposer = o.label
	p.Raw = content
	return p, nil
}

func (o *OpenAIProposer) complete(ctx context.Context, msgs []ChatMessage) (string, error) {
	wait := o.cfg.Backoff
	var last error
	for attempt := 1; attempt <= o.cfg.MaxAttempts; attempt++ {
		req := chatRequest{Model: o.cfg.Model, Messages: msgs, Temperature: o.cfg.Temperature}
		if o.jsonMode {
			req.ResponseFormat = map[string]string{"type": "json_object"}
		}
		status, body, err := o.post(ctx, req)
		switch {
		case err != nil:
			last = err
		case status == http.StatusOK:
			var cr chatResponse
			if err := json.Unmarshal(body, &cr); err != nil {
				return "", fmt.Errorf("%w: the chat-completions answer does not decode: %v", ErrProposer, err)
			}
			if len(cr.Choices) == 0 {
				return "", nil // an empty answer is malformed, not an outage
			}
			return cr.Choices[0].Message.Content, nil
		case status == http.StatusBadRequest && o.jsonMode && bytes.Contains(bytes.ToLower(body), []byte("response_format")):
			o.jsonMode = false // the endpoint does not support JSON mode
			attempt--
			continue
		case status == http.StatusTooManyRequests || status >= 500:
			last = fmt.Errorf("HTTP %d: %s", status, clipBytes(body))
		default:
			return "", fmt.Errorf("%w: HTTP %d from %s: %s", ErrProposer, status, o.endpoint, clipBytes(body))
		}
		if attempt < o.cfg.MaxAttempts {
			select {
			case <-ctx.Done():
				return "", fmt.Errorf("%w: %v", ErrProposer, ctx.Err())
			case <-time.After(wait):
			}
			wait *= 2
		}
	}
	return "", fmt.Errorf("%w: %d attempts at %s: %v", ErrProposer, o.cfg.MaxAttempts, o.endpoint, last)
}

func (o *OpenAIProposer) post(ctx context.Context, cr chatRequest) (int, []byte, error) {
	b, err := json.Marshal(cr)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.endpoint, bytes.NewReader(b))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if o.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+o.cfg.APIKey)
	}
	resp, err := o.cfg.HTTP.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return resp.StatusCode, body, err
}

func clipBytes(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
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
func Messages(in Input) []ChatMessage {
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
	return []ChatMessage{{Role: "system", Content: sys}, {Role: "user", Content: b.String()}}
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
