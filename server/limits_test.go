package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/internal/app"
)

// groundFX grounds a MOM_WZS sweep of n signal windows on the fx panel
// and returns the grounding id.
func (a *api) groundFX(n int) string {
	a.t.Helper()
	disc := a.json("POST", "/v1/discover", `{"prompt": "momentum strategy scored by sharpe ratio"}`, http.StatusOK)
	windows := make([]string, n)
	for i := range windows {
		windows[i] = fmt.Sprint(10 + 5*i)
	}
	g := a.json("POST", "/v1/ground", fmt.Sprintf(`{"request": {"family": "MOM_WZS", "metric": "SRP", "data": "fx-fed-h10/daily.csv",
		"params": {"window": [%s]}}, "discovery": %q}`, strings.Join(windows, ","), disc["id"]), http.StatusOK)
	return g["id"].(string)
}

// A grid over the budget is a 422 over-budget problem naming the budget,
// answered before anything runs.
func TestOverBudgetIs422(t *testing.T) {
	a := startWith(t, app.Config{Exec: execution.Options{MaxCells: 1 << 20}})
	id := a.groundFX(4)
	start := time.Now()
	r := a.do("POST", "/v1/executions", []byte(`{"grounding": "`+id+`"}`))
	p := r.problem(t)
	if r.status != http.StatusUnprocessableEntity || p["type"] != "urn:groundgate:problem:over-budget" ||
		!strings.Contains(p["detail"].(string), "the budget is 1048576 cells") {
		t.Fatalf("%d %v", r.status, p)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("refusal took %v", d)
	}
}

// With one execution running and the queue full, further executions are
// 503 busy with Retry-After at once; none is a 500; the others complete.
func TestBusyIs503(t *testing.T) {
	a := startWith(t, app.Config{Exec: execution.Options{MaxConcurrent: 1, MaxQueued: 1, QueueWait: time.Millisecond}})
	id := a.groundFX(8)
	const n = 4
	var wg sync.WaitGroup
	replies := make([]reply, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replies[i] = a.do("POST", "/v1/executions", []byte(`{"grounding": "`+id+`"}`))
		}()
	}
	wg.Wait()
	busy := 0
	for _, r := range replies {
		switch r.status {
		case http.StatusCreated:
		case http.StatusServiceUnavailable:
			busy++
			if p := r.problem(t); p["type"] != "urn:groundgate:problem:busy" || r.header.Get("Retry-After") == "" {
				t.Errorf("503 without the busy type or Retry-After: %v %v", r.header, p)
			}
		default:
			t.Errorf("status %d: %s", r.status, r.body)
		}
	}
	if busy == 0 {
		t.Fatal("4 simultaneous executions with one slot and a 1 ms queue wait: none was refused")
	}
	if strings.Contains(a.logs.String(), "level=ERROR") {
		t.Errorf("busy refusals logged as errors:\n%s", a.logs)
	}
}
