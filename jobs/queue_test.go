package jobs

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/groundgate/groundgate/errkind"
	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/hashing"
)

// row is a job row in state s after attempt, with out recorded.
func row(t *testing.T, s rivertype.JobState, attempt int, out *Output) *rivertype.JobRow {
	t.Helper()
	meta := []byte(`{}`)
	if out != nil {
		b, err := json.Marshal(map[string]any{rivertype.MetadataKeyOutput: out})
		if err != nil {
			t.Fatal(err)
		}
		meta = b
	}
	return &rivertype.JobRow{ID: 7, State: s, Attempt: attempt, Metadata: meta,
		Errors: []rivertype.AttemptError{{Attempt: attempt, Error: "stuck job rescued by Rescuer"}}}
}

// How a finished job is answered: the execution hash; a refusal by its
// own kind and code (an over-budget grid stays a 4xx); the queue giving
// up (a worker's death, transient failures) as unavailable, never as
// the client's error.
func TestFinished(t *testing.T) {
	hash := hashing.SumSHA256([]byte("an execution"))
	overBudget := failureOf(fmt.Errorf("execution: %w: 2^30 cells", execution.ErrOverBudget), 1)
	busy := failureOf(fmt.Errorf("execution: %w", execution.ErrBusy), 5)
	unknown := failureOf(errors.New("a bug"), 1)
	tests := []struct {
		name string
		row  *rivertype.JobRow
		done bool
		kind errkind.Kind
		code string
		lost bool
	}{
		{"available", row(t, rivertype.JobStateAvailable, 0, nil), false, 0, "", false},
		{"running", row(t, rivertype.JobStateRunning, 1, nil), false, 0, "", false},
		{"retryable", row(t, rivertype.JobStateRetryable, 1, &Output{Error: busy}), false, 0, "", false},
		{"completed", row(t, rivertype.JobStateCompleted, 1, &Output{Hash: hash.String()}), true, 0, "", false},
		{"refused", row(t, rivertype.JobStateCancelled, 1, &Output{Error: overBudget}), true, errkind.TooLarge, "over-budget", false},
		{"a bug stays a 500", row(t, rivertype.JobStateCancelled, 1, &Output{Error: unknown}), true, errkind.Unknown, "", false},
		{"gave up after failures", row(t, rivertype.JobStateDiscarded, 5, &Output{Error: busy}), true, errkind.Unavailable, "", true},
		{"gave up after deaths", row(t, rivertype.JobStateDiscarded, 5, &Output{Error: overBudget}), true, errkind.Unavailable, "", true},
		{"gave up, no output", row(t, rivertype.JobStateDiscarded, 5, nil), true, errkind.Unavailable, "", true},
		{"cancelled by hand", row(t, rivertype.JobStateCancelled, 1, nil), true, errkind.Unavailable, "", true},
		{"completed, no output", row(t, rivertype.JobStateCompleted, 1, nil), true, errkind.Unavailable, "", true},
		{"completed, bad hash", row(t, rivertype.JobStateCompleted, 1, &Output{Hash: "sha256:zz"}), true, errkind.Corrupt, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, done, err := finished(tt.row)
			if done != tt.done {
				t.Fatalf("done = %v", done)
			}
			if !done {
				return
			}
			if tt.name == "completed" {
				if err != nil || h != hash {
					t.Fatalf("%s, %v", h, err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			if errkind.Of(err) != tt.kind || errkind.CodeOf(err) != tt.code || errors.Is(err, ErrLost) != tt.lost {
				t.Fatalf("%v: kind %v code %q lost %v", err, errkind.Of(err), errkind.CodeOf(err), errors.Is(err, ErrLost))
			}
		})
	}
}

// Which failures end a job and which retry it.
func TestPermanent(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{execution.ErrOverBudget, true},
		{execution.ErrDrift, true},
		{execution.ErrNotFound, true},
		{ErrInvalidJob, true},
		{execution.ErrBusy, false},
		{errkind.Wrap(errkind.Unavailable, errors.New("connection refused")), false},
		{errors.New("unclassified"), false},
	} {
		if got := permanent(tt.err); got != tt.want {
			t.Errorf("permanent(%v) = %v", tt.err, got)
		}
	}
}

// Retries come after 1, 2, 4… seconds, never more than 30.
func TestRetryPolicy(t *testing.T) {
	for attempt, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 5: 16 * time.Second, 6: 30 * time.Second, 25: 30 * time.Second} {
		got := time.Until(retryPolicy{}.NextRetry(&rivertype.JobRow{Attempt: attempt}))
		if got > want || got < want-time.Second {
			t.Errorf("attempt %d: retry in %s, want %s", attempt, got, want)
		}
	}
}
