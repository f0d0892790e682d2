package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
)

// Only the request's own cancellation is the client's doing: a
// context.Canceled while the request is alive is a fault of ours.
func TestProblemForCancellation(t *testing.T) {
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	wrapped := fmt.Errorf("execute: %w", context.Canceled)
	for _, c := range []struct {
		name   string
		ctx    context.Context
		err    error
		status int
		logged bool
	}{
		{"client gone", gone, wrapped, StatusClientClosedRequest, false},
		{"request alive", context.Background(), wrapped, http.StatusInternalServerError, true},
		{"client gone, other error", gone, errors.New("disk on fire"), http.StatusInternalServerError, true},
	} {
		st, p, logged := problemFor(c.ctx, c.err)
		if st != c.status || p.Status != c.status || logged != c.logged {
			t.Errorf("%s: status %d (problem %d), logged %v; want %d, %v", c.name, st, p.Status, logged, c.status, c.logged)
		}
	}
}

// Every problem type has a status and a title, and statuses come only from
// that table.
func TestKindsComplete(t *testing.T) {
	for k, v := range problemTypes {
		if v.status < 400 || v.title == "" {
			t.Errorf("%s: %+v", k, v)
		}
		st, p, _ := problemFor(context.Background(), newError(k, "x"))
		if st != v.status || p.Title != v.title || p.Type != problemPrefix+k {
			t.Errorf("%s: %d %+v", k, st, p)
		}
	}
}
