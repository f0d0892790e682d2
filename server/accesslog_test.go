package server_test

import (
	"regexp"
	"strings"
	"testing"
)

// TestAccessLogAndRequestID: every response carries an X-Request-Id (the
// client's own, or 32 fresh letters), every request leaves one access line
// with that id, and it is counted in the metrics under its route, method
// and status — the second and later requests of a label set too (the
// server keeps the metric children it made).
func TestAccessLogAndRequestID(t *testing.T) {
	a := start(t, token)
	before := a.logs.String()
	fresh := regexp.MustCompile(`^[a-zA-Z]{32}$`)
	var ids []string
	for range 3 {
		r := a.do("GET", "/healthz", nil)
		id := r.header.Get("X-Request-Id")
		if !fresh.MatchString(id) {
			t.Errorf("X-Request-Id %q: want 32 letters", id)
		}
		for _, seen := range ids {
			if id == seen {
				t.Errorf("X-Request-Id %q given twice", id)
			}
		}
		ids = append(ids, id)
	}
	if got := a.do("GET", "/healthz", nil, "X-Request-Id", "chosen-by-the-client").header.Get("X-Request-Id"); got != "chosen-by-the-client" {
		t.Errorf("the client's X-Request-Id came back as %q", got)
	}
	ids = append(ids, "chosen-by-the-client")
	// One route, two statuses: two series.
	if st := a.do("GET", "/v1/registry/capabilities/SRP", nil).status; st != 200 {
		t.Fatalf("SRP: %d", st)
	}
	if st := a.do("GET", "/v1/registry/capabilities/NO_SUCH_THING", nil).status; st != 404 {
		t.Fatalf("unknown capability: %d", st)
	}

	logs := strings.TrimPrefix(a.logs.String(), before)
	for _, id := range ids {
		line := grep(logs, "request_id="+id)
		if !regexp.MustCompile(`level=INFO msg=http request_id=` + id + ` method=GET path=/healthz route=/healthz status=200 bytes=[1-9][0-9]* duration=[0-9.]+[µmn]?s remote=127\.0\.0\.1$`).MatchString(line) {
			t.Errorf("access line of %s:\n%q\nlogs:\n%s", id, line, logs)
		}
	}
	if !regexp.MustCompile(`msg=http request_id=[a-zA-Z]{32} method=GET path=/v1/registry/capabilities/NO_SUCH_THING route=/v1/registry/capabilities/:name status=404 `).MatchString(logs) {
		t.Errorf("no access line for the 404:\n%s", logs)
	}

	metrics := string(a.do("GET", "/metrics", nil).body)
	for _, want := range []string{
		`groundgate_http_requests_total{method="GET",route="/healthz",status="OK"} 4`,
		`groundgate_http_requests_total{method="GET",route="/v1/registry/capabilities/:name",status="OK"} 1`,
		`groundgate_http_requests_total{method="GET",route="/v1/registry/capabilities/:name",status="Not Found"} 1`,
		`groundgate_http_request_duration_seconds_count{route="/healthz"} 4`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s:\n%s", want, grep(metrics, "groundgate_http_request"))
		}
	}
}
