package main

import (
	"fmt"
	"testing"

	"github.com/groundgate/groundgate/errkind"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/server"
)

// Every kind has its own exit status, apart from success, failure and
// usage; a local error and a server's problem of one kind exit alike.
func TestExitCodes(t *testing.T) {
	seen := map[int]errkind.Kind{0: errkind.Unknown, 2: errkind.Unknown}
	for _, k := range errkind.Kinds() {
		c, ok := exitCodes[k]
		if !ok || c == 1 {
			t.Errorf("kind %v has no exit status of its own (%d)", k, c)
		}
		if other, dup := seen[c]; dup {
			t.Errorf("kinds %v and %v share exit status %d", k, other, c)
		}
		seen[c] = k
	}
	if exitCodes[errkind.Unknown] != 1 {
		t.Errorf("an unclassified failure exits %d, want 1", exitCodes[errkind.Unknown])
	}
	remote := &problemError{Status: 404, Type: "urn:groundgate:problem:not-found"}
	local := fmt.Errorf("replay: %w", registry.ErrNotFound)
	if a, b := exitCodes[errkind.Of(remote)], exitCodes[errkind.Of(local)]; a != 3 || b != 3 {
		t.Errorf("not found exits %d (server) and %d (local), want 3", a, b)
	}
	if k := server.KindOfProblem("urn:groundgate:problem:internal"); k != errkind.Unknown {
		t.Errorf("internal is read back as %v", k)
	}
}
