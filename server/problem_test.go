package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"testing"

	"github.com/groundgate/groundgate/errkind"
	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/gateway"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/policy"
	"github.com/groundgate/groundgate/policy/smt"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/session"
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

// An error is answered by its kind and code: the type, the detail (the
// error's text with the type's hint, or the type's fixed detail) and
// whether its cause is logged.
func TestProblemByKind(t *testing.T) {
	for _, c := range []struct {
		err    error
		typ    string
		detail string
		logged bool
	}{
		{fmt.Errorf("execute: %w", execution.ErrDrift), ptDrift, "execute: registry drift (F7): discover and ground again", false},
		{fmt.Errorf("load: %w", ground.ErrCorrupt), ptCorrupt, "a stored record failed its integrity check; run `groundgate registry verify`", true},
		{session.ErrUnauthorized, ptUnauthorized, "this session needs Authorization: Bearer <its token> (or the admin token)", false},
		{fmt.Errorf("queue: %w", execution.ErrBusy), ptBusy, "queue: executor busy; retry later", false},
		{fmt.Errorf("check: %w: %w", policy.ErrNoSolver, smt.ErrNotInstalled), ptNoSolver, "check: no SMT solver: smt: solver not installed; the request was not admitted, retry later", true},
		{fmt.Errorf("call: %w", gateway.ErrTimeout), "upstream-timeout", "call: upstream timed out", false},
		{registry.ErrClosed, ptNotReady, "registry closed", true},
		{errkind.Wrap(errkind.NotFound, fs.ErrNotExist), ptNotFound, "file does not exist", false},
		// A kind with no type of its own and no code: a server failure.
		{errkind.New(errkind.Conflict, "stale"), ptInternal, "the server failed to handle the request; the cause is in its log", true},
		{errors.New("disk on fire"), ptInternal, "the server failed to handle the request; the cause is in its log", true},
	} {
		st, p, logged := problemFor(context.Background(), c.err)
		if p.Type != problemPrefix+c.typ || p.Detail != c.detail || logged != c.logged || st != problemTypes[c.typ].status {
			t.Errorf("%v: %d %s %q logged %v; want %s %q logged %v", c.err, st, p.Type, p.Detail, logged, c.typ, c.detail, c.logged)
		}
	}
}
