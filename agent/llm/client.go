package llm

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
	"sync/atomic"
	"time"

	"github.com/groundgate/groundgate/hashing"
)

// Environment variables the commands read the endpoint from (flags
// override them). The package itself reads no environment.
const (
	EnvBaseURL = "GROUNDGATE_LLM_BASE_URL" // e.g. https://api.openai.com/v1
	EnvModel   = "GROUNDGATE_LLM_MODEL"
	EnvAPIKey  = "GROUNDGATE_LLM_API_KEY"
)

// DefaultTemperature is the paper's sampling temperature.
const DefaultTemperature = 0.7

// Config configures a Client.
type Config struct {
	// BaseURL is the API root; the client posts to BaseURL +
	// "/chat/completions".
	BaseURL string
	Model   string
	// APIKey is sent as a bearer token when not empty.
	APIKey      string
	Temperature float64
	// HTTP is the client to use (default: 120 s timeout).
	HTTP *http.Client
	// MaxAttempts bounds tries per completion on 429, 5xx and transport
	// errors (default 3); Backoff is the first wait, doubled each time
	// (default 2 s).
	MaxAttempts int
	Backoff     time.Duration
}

// Client asks an OpenAI-compatible chat-completions endpoint for
// completions. It asks for a JSON object (response_format json_object)
// and drops that field for the client's lifetime once the endpoint
// refuses it. It is safe for concurrent use.
type Client struct {
	cfg      Config
	endpoint string
	label    string
	// noJSONMode is set once the endpoint refused response_format; the
	// server's advisor calls Complete from concurrent requests.
	noJSONMode atomic.Bool
}

// NewClient checks the configuration.
func NewClient(cfg Config) (*Client, error) {
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
	return &Client{
		cfg:      cfg,
		endpoint: strings.TrimRight(cfg.BaseURL, "/") + "/chat/completions",
		label:    fmt.Sprintf("LLM %s via OpenAI-compatible API at %s (temperature %g)", cfg.Model, u.Host, cfg.Temperature),
	}, nil
}

// Name says which model answers, where and at which temperature; it never
// includes the key.
func (c *Client) Name() string { return c.label }

// Message is one message of a chat-completions request.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model          string            `json:"model"`
	Messages       []Message         `json:"messages"`
	Temperature    float64           `json:"temperature"`
	ResponseFormat map[string]string `json:"response_format,omitempty"`
}

type chatResponse struct {
	Choices []struct {
		Message Message `json:"message"`
	} `json:"choices"`
}

// Complete sends the messages and returns the first choice's content ("",
// not an error, when the answer has no choice). 429, 5xx and transport
// errors are retried up to MaxAttempts; every other failure, and the last
// retry's, is an error wrapping ErrFailed.
func (c *Client) Complete(ctx context.Context, msgs []Message) (string, error) {
	wait := c.cfg.Backoff
	var last error
	for attempt := 1; attempt <= c.cfg.MaxAttempts; attempt++ {
		jsonMode := !c.noJSONMode.Load()
		req := chatRequest{Model: c.cfg.Model, Messages: msgs, Temperature: c.cfg.Temperature}
		if jsonMode {
			req.ResponseFormat = map[string]string{"type": "json_object"}
		}
		status, body, err := c.post(ctx, req)
		switch {
		case err != nil:
			last = err
		case status == http.StatusOK:
			var cr chatResponse
			if err := hashing.DecodeFields(body, &cr); err != nil {
				return "", fmt.Errorf("%w: the chat-completions answer does not decode: %v", ErrFailed, err)
			}
			if len(cr.Choices) == 0 {
				return "", nil // an empty answer is the caller's to judge, not an outage
			}
			return cr.Choices[0].Message.Content, nil
		case status == http.StatusBadRequest && jsonMode && bytes.Contains(bytes.ToLower(body), []byte("response_format")):
			c.noJSONMode.Store(true) // the endpoint does not support JSON mode
			attempt--
			continue
		case status == http.StatusTooManyRequests || status >= 500:
			last = fmt.Errorf("HTTP %d: %s", status, clipBytes(body))
		default:
			return "", fmt.Errorf("%w: HTTP %d from %s: %s", ErrFailed, status, c.endpoint, clipBytes(body))
		}
		if attempt < c.cfg.MaxAttempts {
			select {
			case <-ctx.Done():
				return "", fmt.Errorf("%w: %v", ErrFailed, ctx.Err())
			case <-time.After(wait):
			}
			wait *= 2
		}
	}
	return "", fmt.Errorf("%w: %d attempts at %s: %v", ErrFailed, c.cfg.MaxAttempts, c.endpoint, last)
}

func (c *Client) post(ctx context.Context, cr chatRequest) (int, []byte, error) {
	b, err := json.Marshal(cr)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(b))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.cfg.HTTP.Do(req)
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

// jsonObject is the JSON object an answer holds — from its first "{" to
// its last "}", so prose or a code fence around it does not matter — when
// it is valid and at most max bytes.
func jsonObject(content string, max int) ([]byte, bool) {
	s := strings.TrimSpace(content)
	i, j := strings.Index(s, "{"), strings.LastIndex(s, "}")
	if i < 0 || j < i || j-i+1 > max || !json.Valid([]byte(s[i:j+1])) {
		return nil, false
	}
	return []byte(s[i : j+1]), true
}
