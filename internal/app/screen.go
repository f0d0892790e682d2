package app

import (
	"github.com/groundgate/groundgate/fuzz"
	"github.com/groundgate/groundgate/gateway"
	"github.com/groundgate/groundgate/registry"
)

// ScreenTool is the poisoning screen (SPEC §12) of a tool's words at sync.
func ScreenTool(e registry.Entry) []gateway.Finding {
	return findings(fuzz.Poisoning(e))
}

// ScreenResult screens one text of a call's result: text that addresses
// the agent is flagged in the call's footprint.
func ScreenResult(text string) []gateway.Finding {
	return findings(fuzz.ScreenText("", text))
}

func findings(fs []fuzz.Flag) []gateway.Finding {
	out := make([]gateway.Finding, len(fs))
	for i, f := range fs {
		out[i] = gateway.Finding{Field: f.Field, Rule: f.Rule, Why: f.Why, Excerpt: f.Excerpt}
	}
	return out
}
