package main

import (
	"strings"
	"testing"
)

// `groundgate worker` needs the shared store and positive bounds: a usage
// error (exit 2) names what is missing before anything is opened.
func TestWorkerUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"worker"}, "needs --store and --blobs"},
		{[]string{"worker", "--store", "postgres://127.0.0.1:1/x"}, "needs --store and --blobs"},
		{[]string{"worker", "--store", "postgres://127.0.0.1:1/x", "--blobs", "s3://b", "--concurrency", "0"}, "must be positive"},
		{[]string{"worker", "--store", "postgres://127.0.0.1:1/x", "--blobs", "s3://b", "--job-timeout", "-1s"}, "must be positive"},
		{[]string{"worker", "--store", "postgres://127.0.0.1:1/x", "--blobs", "s3://b", "extra"}, "takes no arguments"},
	} {
		code, _, stderr := runCLI(t, tt.args...)
		if code != 2 || !strings.Contains(stderr, tt.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tt.args, code, stderr, tt.want)
		}
	}
}
