package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestDecodeConfig(t *testing.T) {
	c, err := DecodeConfig("fs", []byte(`{"transport":"stdio","command":["npx","-y","server"],"env":{"TOKEN":"abc"},"dir":"/srv"}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Pin != PinSchema || c.Ground != GroundAll {
		t.Errorf("defaults: pin %q ground %q", c.Pin, c.Ground)
	}
	// Defaults spelt out give the same configuration, the same bytes.
	d, err := DecodeConfig("fs", []byte(`{"ground":"all","pin":"schema","dir":"/srv","env":{"TOKEN":"abc"},"command":["npx","-y","server"],"transport":"stdio"}`))
	if err != nil {
		t.Fatal(err)
	}
	cd, _ := c.Digest()
	dd, _ := d.Digest()
	if cd != dd {
		t.Errorf("one configuration, two digests: %s %s", cd, dd)
	}
	canon, _ := c.Canonical()
	const want = `{"command":["npx","-y","server"],"dir":"/srv","env":{"TOKEN":"abc"},"ground":"all","pin":"schema","transport":"stdio"}`
	if string(canon) != want {
		t.Errorf("canonical:\n got %s\nwant %s", canon, want)
	}
	// A new secret is a new configuration.
	e, _ := DecodeConfig("fs", []byte(`{"transport":"stdio","command":["npx","-y","server"],"env":{"TOKEN":"abd"},"dir":"/srv"}`))
	if ed, _ := e.Digest(); ed == cd {
		t.Errorf("a changed secret kept the digest")
	}

	h, err := DecodeConfig("api", []byte(`{"transport":"http","url":"https://mcp.example.com/mcp","headers":{"authorization":"Bearer x"},"pin":"version","ground":"writes"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := h.Headers["Authorization"]; !ok || len(h.Headers) != 1 {
		t.Errorf("header names are kept in canonical form: %v", h.Redacted().Headers)
	}
	if h.Pin != PinVersion || h.Ground != GroundWrites {
		t.Errorf("pin %q ground %q", h.Pin, h.Ground)
	}
}

func TestDecodeConfigRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"Bad", `{"transport":"stdio","command":["x"]}`, "must match"},
		{"a-name-that-is-longer-than-32-chars", `{"transport":"stdio","command":["x"]}`, "must match"},
		{"fs", `{"transport":"stdio","command":["x"],"Command":["y"]}`, "only in case"},
		{"fs", `{"transport":"stdio","command":["x"],"shell":"x"}`, `unknown field "shell"`},
		{"fs", `{"transport":"stdio","command":"npx server"}`, "cannot unmarshal"},
		{"fs", `{"transport":"stdio","command":[]}`, "must name a program"},
		{"fs", `{"transport":"stdio","command":[""]}`, "must name a program"},
		{"fs", `{"transport":"stdio","command":["x"],"env":{"1X":"v"}}`, "env: name"},
		{"fs", `{"transport":"stdio","command":["x"],"dir":"relative/dir"}`, "absolute path"},
		{"fs", `{"transport":"stdio","command":["x"],"url":"http://h/"}`, "url and headers are for transport"},
		{"fs", `{"transport":"pipe","command":["x"]}`, "transport"},
		{"fs", `{"transport":"stdio","command":["x"],"pin":"hash"}`, "pin"},
		{"fs", `{"transport":"stdio","command":["x"],"ground":"reads"}`, "ground"},
		{"api", `{"transport":"http","url":"ftp://h/x"}`, "not http or https"},
		{"api", `{"transport":"http","url":"https://user:pw@h/x"}`, "credentials in the URL"},
		{"api", `{"transport":"http","url":"https:///x"}`, "no host"},
		{"api", `{"transport":"http","url":"https://h/x","headers":{"Mcp-Session-Id":"1"}}`, "set by the MCP transport"},
		{"api", `{"transport":"http","url":"https://h/x","headers":{"X-A":"a\r\nX-B: b"}}`, "control character"},
		{"api", `{"transport":"http","url":"https://h/x","headers":{"Bad Name":"v"}}`, "not a header name"},
		{"api", `{"transport":"http","url":"https://h/x","command":["x"]}`, "are for transport"},
		{"api", `{"transport":"http"}`, "url: must not be empty"},
		{"api", `{"transport":"http","url":"https://h/x"} {}`, "malformed"},
	} {
		_, err := DecodeConfig(tc.name, []byte(tc.doc))
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: want ErrInvalidConfig with %q, got %v", tc.doc, tc.want, err)
		}
	}
	big := `{"transport":"stdio","command":["` + strings.Repeat("a", MaxConfigBytes) + `"]}`
	if _, err := DecodeConfig("fs", []byte(big)); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "at most") {
		t.Errorf("oversized document: %v", err)
	}
	args := make([]string, MaxArgs+1)
	for i := range args {
		args[i] = "a"
	}
	if err := (Config{Transport: TransportStdio, Command: args, Pin: PinSchema, Ground: GroundAll}).Validate("fs"); err == nil {
		t.Error("too many arguments accepted")
	}
}

// Secret values (env and header values) never reach Redacted, String,
// GoString, fmt's verbs or slog; their names do.
func TestConfigRedaction(t *testing.T) {
	const envSecret, hdrSecret = "env-secret-5e1f", "hdr-secret-9a7c"
	stdio, err := DecodeConfig("fs", []byte(`{"transport":"stdio","command":["server"],"env":{"API_TOKEN":"`+envSecret+`"}}`))
	if err != nil {
		t.Fatal(err)
	}
	web, err := DecodeConfig("api", []byte(`{"transport":"http","url":"https://h/mcp","headers":{"Authorization":"Bearer `+hdrSecret+`"}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []Config{stdio, web} {
		r := c.Redacted()
		canon, _ := r.Canonical()
		var logs bytes.Buffer
		for _, h := range []slog.Handler{slog.NewJSONHandler(&logs, nil), slog.NewTextHandler(&logs, nil)} {
			slog.New(h).Info("configured", "upstream", c, "ptr", &c)
		}
		outs := map[string]string{
			"Redacted":  string(canon),
			"String":    c.String(),
			"%v":        fmt.Sprintf("%v", c),
			"%+v":       fmt.Sprintf("%+v", c),
			"%#v":       fmt.Sprintf("%#v", c),
			"%s of ptr": fmt.Sprintf("%s", &c),
			"slog":      logs.String(),
		}
		for what, out := range outs {
			if strings.Contains(out, envSecret) || strings.Contains(out, hdrSecret) {
				t.Errorf("%s shows a secret: %s", what, out)
			}
		}
		if !strings.Contains(outs["slog"], "API_TOKEN") && !strings.Contains(outs["slog"], "Authorization") {
			t.Errorf("slog does not name the secrets: %s", outs["slog"])
		}
		if !strings.Contains(string(canon), RedactedValue) {
			t.Errorf("Redacted: %s", canon)
		}
		// The original is untouched.
		if full, _ := c.Canonical(); !strings.Contains(string(full), "secret") {
			t.Errorf("Redacted changed the configuration: %s", full)
		}
	}
	if got := scrub("boom: Bearer "+hdrSecret+" and "+envSecret, append(stdio.secrets(), web.secrets()...)); strings.Contains(got, "secret") {
		t.Errorf("scrub left a secret: %s", got)
	}
}
