package mcp

import (
	"fmt"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/hashing/hashingtest"
)

var envelopeSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
	`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"discover","arguments":{"prompt":"momentum","terms":["sharpe ratio"]}}}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","id":3,"result":{}}`,
}

// A JSON-RPC message with a key twice (exactly or in two cases), at any
// depth, or a top-level member in another case alone, is refused before
// the SDK, whose decoder matches names case-insensitively, reads it.
func TestCheckMessageSpellings(t *testing.T) {
	for _, seed := range envelopeSeeds {
		if err := checkMessage([]byte(seed)); err != nil {
			t.Fatalf("%s: %v", seed, err)
		}
		for _, m := range hashingtest.KeyMutations([]byte(seed)) {
			if m.Kind == "case" && !m.Top {
				continue // params are decoded by whoever reads them, strictly
			}
			err := checkMessage(m.Doc)
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", m.Key)) {
				t.Errorf("%s %q: %v\n%s", m.Kind, m.Key, err, m.Doc)
			}
		}
	}
}
