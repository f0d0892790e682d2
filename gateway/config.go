package gateway

import (
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
)

// Transport is how the gateway reaches an upstream.
type Transport string

// The transports SPEC §14 names.
const (
	// TransportStdio runs the upstream as a child process (an argv, never
	// a shell) and speaks newline-delimited JSON-RPC on its stdin and
	// stdout.
	TransportStdio Transport = "stdio"
	// TransportHTTP speaks MCP's streamable HTTP transport to a URL.
	TransportHTTP Transport = "http"
)

// Pin says what a tool entry's identity pins (SPEC §14).
type Pin string

// The pin modes.
const (
	// PinSchema (the default) pins the tool's declared behaviour: schemas
	// and annotations.
	PinSchema Pin = "schema"
	// PinVersion also pins the server's name and version: a new server
	// version is drift for every tool.
	PinVersion Pin = "version"
)

// Ground says which calls must be grounded by discovery evidence.
type Ground string

// The grounding modes.
const (
	// GroundAll (the default): every call.
	GroundAll Ground = "all"
	// GroundWrites: only calls to tools whose effect is write; reads are
	// exempt.
	GroundWrites Ground = "writes"
)

// Bounds of a configuration. A document or value over one is refused,
// with ErrInvalidConfig, never truncated.
const (
	MaxConfigBytes   = 256 << 10 // the whole document
	MaxArgs          = 256       // argv entries
	MaxArgBytes      = 16 << 10  // one argv entry
	MaxEnv           = 256       // env entries
	MaxEnvValueBytes = 32 << 10  // one env value
	MaxHeaders       = 64        // header entries
	MaxHeaderBytes   = 8 << 10   // one header value
	MaxURLBytes      = 2048
	MaxDirBytes      = 4096
)

// RedactedValue replaces every env and header value in Redacted.
const RedactedValue = "[redacted]"

// Config is an upstream's configuration: the body of
// PUT /v1/upstreams/{name} (SPEC §14). Env and Headers values are
// secrets: Redacted, String, GoString and LogValue never show them; the
// JSON of a Config (for storage) holds them.
type Config struct {
	Transport Transport `json:"transport"`
	// Command is the argv of a stdio upstream: Command[0] is run directly
	// (looked up in PATH when it holds no slash), never through a shell.
	Command []string `json:"command,omitempty"`
	// Env is added to the few variables a stdio upstream inherits (see
	// Options.BaseEnv): never the server's whole environment, which holds
	// the admin token.
	Env map[string]string `json:"env,omitempty"`
	// Dir is the stdio upstream's working directory: an absolute path;
	// empty means the server's.
	Dir string `json:"dir,omitempty"`
	// URL is the streamable HTTP endpoint of an http upstream.
	URL string `json:"url,omitempty"`
	// Headers are sent with every request to an http upstream (an
	// Authorization header, say). Names are kept in canonical form.
	Headers map[string]string `json:"headers,omitempty"`
	Pin     Pin               `json:"pin,omitempty"`
	Ground  Ground            `json:"ground,omitempty"`
	// FileAs says where else, besides under its own name and arguments, a
	// tool's result goes in a session's trusted state (SPEC §15): a write
	// that returns the object it changed is filed where the read of that
	// object files it, so a later rule reads the object as it is now.
	// Keyed by the upstream's tool name.
	FileAs map[string][]FileAs `json:"file_as,omitempty"`
}

// FileAs files a tool's result as the result of Tool (this upstream's
// tool name) called with the named Arguments of the call (each one the
// call has; a call lacking one files nothing there).
type FileAs struct {
	Tool      string   `json:"tool"`
	Arguments []string `json:"arguments"`
}

// Bounds on file_as.
const (
	MaxFileAsTools = 256 // tools with a file_as
	MaxFileAs      = 8   // places per tool
	MaxFileAsArgs  = 16  // arguments per place
)

// DecodeConfig strictly decodes (hashing.DecodeStrict: unknown fields,
// duplicate keys and keys differing only in case refused) and validates
// the configuration of the upstream called name, filling in the defaults
// (pin schema, ground all). Every refusal wraps ErrInvalidConfig.
func DecodeConfig(name string, data []byte) (Config, error) {
	if len(data) > MaxConfigBytes {
		return Config{}, fmt.Errorf("%w: %d bytes, at most %d", ErrInvalidConfig, len(data), MaxConfigBytes)
	}
	var c Config
	if err := hashing.DecodeStrict(data, &c); err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	c = c.normalized()
	if err := c.Validate(name); err != nil {
		return Config{}, err
	}
	return c, nil
}

// normalized fills in the defaults and spells header names canonically
// (HTTP header names are case-insensitive: one configuration, one
// spelling). It never changes a valid configuration's meaning.
func (c Config) normalized() Config {
	if c.Pin == "" {
		c.Pin = PinSchema
	}
	if c.Ground == "" {
		c.Ground = GroundAll
	}
	if len(c.Headers) > 0 {
		h := make(map[string]string, len(c.Headers))
		for k, v := range c.Headers {
			h[http.CanonicalHeaderKey(k)] = v
		}
		c.Headers = h
	}
	return c
}

// reservedHeaders are set by the MCP transport itself (or by HTTP): a
// configuration may not override them.
var reservedHeaders = []string{
	"Accept", "Connection", "Content-Length", "Content-Type", "Host", "Keep-Alive",
	"Last-Event-Id", "Mcp-Protocol-Version", "Mcp-Session-Id", "Proxy-Connection",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// Validate reports every problem with the configuration of the upstream
// called name, wrapping ErrInvalidConfig. A configuration not from
// DecodeConfig should be normalised first (DecodeConfig does it); Validate
// refuses an empty pin or ground.
func (c Config) Validate(name string) error {
	var probs []string
	add := func(format string, a ...any) { probs = append(probs, fmt.Sprintf(format, a...)) }
	if !registry.UpstreamNameRE.MatchString(name) {
		add("name %q must match %s", clip(name, 40), registry.UpstreamNameRE)
	}
	switch c.Pin {
	case PinSchema, PinVersion:
	default:
		add("pin: %q is not %q or %q", clip(string(c.Pin), 40), PinSchema, PinVersion)
	}
	switch c.Ground {
	case GroundAll, GroundWrites:
	default:
		add("ground: %q is not %q or %q", clip(string(c.Ground), 40), GroundAll, GroundWrites)
	}
	c.validateFileAs(add)
	switch c.Transport {
	case TransportStdio:
		c.validateStdio(add)
		if c.URL != "" || c.Headers != nil {
			add("url and headers are for transport %q", TransportHTTP)
		}
	case TransportHTTP:
		c.validateHTTP(add)
		if c.Command != nil || c.Env != nil || c.Dir != "" {
			add("command, env and dir are for transport %q", TransportStdio)
		}
	default:
		add("transport: %q is not %q or %q", clip(string(c.Transport), 40), TransportStdio, TransportHTTP)
	}
	if len(probs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: upstream %q: %s", ErrInvalidConfig, clip(name, 40), strings.Join(probs, "; "))
}

func (c Config) validateFileAs(add func(string, ...any)) {
	if len(c.FileAs) > MaxFileAsTools {
		add("file_as: %d tools, at most %d", len(c.FileAs), MaxFileAsTools)
		return
	}
	for _, tool := range slices.Sorted(maps.Keys(c.FileAs)) {
		places := c.FileAs[tool]
		if !registry.ToolNameRE.MatchString(tool) {
			add("file_as: %q is not a tool name (%s)", clip(tool, 40), registry.ToolNameRE)
			continue
		}
		if len(places) == 0 || len(places) > MaxFileAs {
			add("file_as.%s: 1 to %d places, not %d", tool, MaxFileAs, len(places))
			continue
		}
		for i, p := range places {
			if !registry.ToolNameRE.MatchString(p.Tool) {
				add("file_as.%s[%d].tool: %q is not a tool name", tool, i, clip(p.Tool, 40))
			}
			if len(p.Arguments) > MaxFileAsArgs {
				add("file_as.%s[%d].arguments: %d, at most %d", tool, i, len(p.Arguments), MaxFileAsArgs)
			}
			seen := map[string]bool{}
			for _, a := range p.Arguments {
				if a == "" || len(a) > 128 || seen[a] {
					add("file_as.%s[%d].arguments: %q is empty, longer than 128 bytes or repeated", tool, i, clip(a, 40))
				}
				seen[a] = true
			}
		}
	}
}

// FileAsOf returns where else upstream's tool files its result (Config.FileAs).
func (m *Manager) FileAsOf(upstream, tool string) ([]FileAs, error) {
	mg, err := m.get(upstream)
	if err != nil {
		return nil, err
	}
	return mg.cfg.FileAs[tool], nil
}

func (c Config) validateStdio(add func(string, ...any)) {
	switch {
	case len(c.Command) == 0:
		add("command: must name a program (an argv array: [program, arg, …])")
	case len(c.Command) > MaxArgs:
		add("command: %d entries, at most %d", len(c.Command), MaxArgs)
	case c.Command[0] == "":
		add("command[0]: must name a program")
	}
	for i, a := range c.Command {
		switch {
		case len(a) > MaxArgBytes:
			add("command[%d]: %d bytes, at most %d", i, len(a), MaxArgBytes)
		case strings.ContainsRune(a, 0):
			add("command[%d]: holds a NUL byte", i)
		}
	}
	if len(c.Env) > MaxEnv {
		add("env: %d variables, at most %d", len(c.Env), MaxEnv)
	}
	for _, k := range slices.Sorted(maps.Keys(c.Env)) {
		switch v := c.Env[k]; {
		case !envNameOK(k):
			add("env: name %q must be letters, digits and _, not starting with a digit", clip(k, 40))
		case len(v) > MaxEnvValueBytes:
			add("env %s: value over %d bytes", k, MaxEnvValueBytes)
		case strings.ContainsRune(v, 0):
			add("env %s: value holds a NUL byte", k)
		}
	}
	switch {
	case c.Dir == "":
	case len(c.Dir) > MaxDirBytes:
		add("dir: over %d bytes", MaxDirBytes)
	case strings.ContainsRune(c.Dir, 0) || !filepath.IsAbs(c.Dir):
		add("dir: %q must be an absolute path", clip(c.Dir, 80))
	}
}

func (c Config) validateHTTP(add func(string, ...any)) {
	switch u, err := url.Parse(c.URL); {
	case c.URL == "":
		add("url: must not be empty")
	case len(c.URL) > MaxURLBytes:
		add("url: over %d bytes", MaxURLBytes)
	case err != nil:
		add("url: %v", err)
	case u.Scheme != "http" && u.Scheme != "https":
		add("url: scheme %q is not http or https", clip(u.Scheme, 20))
	case u.Host == "":
		add("url: no host")
	case u.User != nil:
		// A GET would show it: credentials belong in headers, which are
		// redacted.
		add("url: credentials in the URL are refused; send them in headers")
	case u.Fragment != "" || strings.Contains(c.URL, "#"):
		add("url: a fragment means nothing to a server")
	}
	if len(c.Headers) > MaxHeaders {
		add("headers: %d, at most %d", len(c.Headers), MaxHeaders)
	}
	for _, k := range slices.Sorted(maps.Keys(c.Headers)) {
		switch v := c.Headers[k]; {
		case !headerNameOK(k):
			add("headers: %q is not a header name", clip(k, 40))
		case slices.Contains(reservedHeaders, http.CanonicalHeaderKey(k)):
			add("headers: %s is set by the MCP transport", k)
		case len(v) > MaxHeaderBytes:
			add("headers %s: value over %d bytes", k, MaxHeaderBytes)
		case !headerValueOK(v):
			add("headers %s: value holds a control character", k)
		}
	}
}

// every reports whether ok holds for every byte of s.
func every(s string, ok func(c byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

func alnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }

// envNameOK: letters, digits and _, not starting with a digit.
func envNameOK(k string) bool {
	return k != "" && len(k) <= 256 && (k[0] < '0' || k[0] > '9') &&
		every(k, func(c byte) bool { return c == '_' || alnum(c) })
}

// headerNameOK: an RFC 9110 token.
func headerNameOK(k string) bool {
	return k != "" && len(k) <= 256 &&
		every(k, func(c byte) bool { return alnum(c) || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 })
}

// headerValueOK: visible characters, spaces and tabs (and UTF-8 text),
// no CR, LF or other control character.
func headerValueOK(v string) bool {
	return every(v, func(c byte) bool { return (c >= 0x20 || c == '\t') && c != 0x7f })
}

// Canonical returns the configuration's RFC 8785 bytes. They hold the
// secret values: store them, never show them.
func (c Config) Canonical() ([]byte, error) {
	return hashing.Canonical(c)
}

// Digest is the SHA-256 of Canonical. It covers the secret values (a new
// token is a new configuration), so it must not be shown to clients
// either: a digest of a short secret can be guessed offline. Show
// Redacted().Digest() instead.
func (c Config) Digest() (hashing.Digest, error) {
	return hashing.SHA256Of(c)
}

// Redacted returns a copy whose env and header values are RedactedValue
// (the names stay): what GET /v1/upstreams shows.
func (c Config) Redacted() Config {
	r := c
	r.Command = slices.Clone(c.Command)
	r.Env = redactMap(c.Env)
	r.Headers = redactMap(c.Headers)
	return r
}

func redactMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k := range m {
		out[k] = RedactedValue
	}
	return out
}

// secrets lists the configuration's secret values, longest first (for
// scrub).
func (c Config) secrets() []string {
	var out []string
	for _, m := range []map[string]string{c.Env, c.Headers} {
		for _, v := range m {
			if v != "" {
				out = append(out, v)
			}
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// scrub replaces every secret value in text (an upstream's stderr, an
// error from outside) with RedactedValue. Values shorter than 4 bytes are
// left: replacing them everywhere would garble the text, not protect it.
func scrub(text string, secrets []string) string {
	for _, s := range secrets {
		if len(s) >= 4 {
			text = strings.ReplaceAll(text, s, RedactedValue)
		}
	}
	return text
}

// String describes the configuration without secrets: the transport, the
// command or URL, and the names of env variables and headers.
func (c Config) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", c.Transport)
	switch c.Transport {
	case TransportStdio:
		fmt.Fprintf(&b, " %q", c.Command)
		if c.Dir != "" {
			fmt.Fprintf(&b, " dir=%q", c.Dir)
		}
		if len(c.Env) > 0 {
			fmt.Fprintf(&b, " env=%s", strings.Join(slices.Sorted(maps.Keys(c.Env)), ","))
		}
	case TransportHTTP:
		fmt.Fprintf(&b, " %s", c.URL)
		if len(c.Headers) > 0 {
			fmt.Fprintf(&b, " headers=%s", strings.Join(slices.Sorted(maps.Keys(c.Headers)), ","))
		}
	}
	fmt.Fprintf(&b, " pin=%s ground=%s", c.Pin, c.Ground)
	return b.String()
}

// GoString keeps %#v from printing the secrets.
func (c Config) GoString() string { return "gateway.Config{" + c.String() + "}" }

// LogValue makes slog show the configuration without secrets.
func (c Config) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("transport", string(c.Transport))}
	switch c.Transport {
	case TransportStdio:
		attrs = append(attrs, slog.Any("command", c.Command))
		if c.Dir != "" {
			attrs = append(attrs, slog.String("dir", c.Dir))
		}
		if len(c.Env) > 0 {
			attrs = append(attrs, slog.Any("env", slices.Sorted(maps.Keys(c.Env))))
		}
	case TransportHTTP:
		attrs = append(attrs, slog.String("url", c.URL))
		if len(c.Headers) > 0 {
			attrs = append(attrs, slog.Any("headers", slices.Sorted(maps.Keys(c.Headers))))
		}
	}
	attrs = append(attrs, slog.String("pin", string(c.Pin)), slog.String("ground", string(c.Ground)))
	return slog.GroupValue(attrs...)
}

var _ slog.LogValuer = Config{}
