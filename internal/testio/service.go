package testio

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Service is an outside server a test binary starts once, on the first
// test that asks for it, and stops when the binary ends (a PostgreSQL
// cluster, an S3 server): tests then take a database or a bucket of their
// own in it.
type Service[T interface{ Stop() error }] struct {
	// Name names the service in messages.
	Name string
	// Start starts it within Timeout in dir, a new temporary directory
	// named after TempPrefix (not t.TempDir: the service outlives the
	// test, and may run as another user, who could not enter t.TempDir's
	// 0700 parents), removed after Stop. An error that is (errors.Is)
	// Missing makes Get a MissingTool: skipped, or failed under
	// GROUNDGATE_REQUIRE_TOOLS.
	Start      func(ctx context.Context, dir string) (T, error)
	TempPrefix string
	Timeout    time.Duration
	Missing    error

	once    sync.Once
	v       T
	dir     string
	err     error
	started bool
}

// Get returns the running service, starting it on first use.
func (s *Service[T]) Get(tb testing.TB) T {
	tb.Helper()
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.Timeout)
		defer cancel()
		if s.dir, s.err = os.MkdirTemp("", s.TempPrefix); s.err != nil {
			return
		}
		if s.v, s.err = s.Start(ctx, s.dir); s.err != nil {
			os.RemoveAll(s.dir)
			return
		}
		s.started = true
	})
	if s.Missing != nil && errors.Is(s.err, s.Missing) {
		MissingTool(tb, s.err.Error())
	}
	if s.err != nil {
		tb.Fatal(s.err)
	}
	return s.v
}

// Take returns the running service and a resource of tb's own in it (a
// database, a bucket): what create makes for tb's name, within 30 s.
func (s *Service[T]) Take(tb testing.TB, create func(v T, ctx context.Context, name string) (string, error)) (T, string) {
	tb.Helper()
	v := s.Get(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := create(v, ctx, tb.Name())
	if err != nil {
		tb.Fatal(err)
	}
	return v, r
}

// Stop stops the service if Get started it.
func (s *Service[T]) Stop() {
	if !s.started {
		return
	}
	s.started = false
	if err := errors.Join(s.v.Stop(), os.RemoveAll(s.dir)); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", s.Name, err)
	}
}

// RunStopping runs the tests, then stops every service, then exits with
// the tests' code: a TestMain for packages that use services.
func RunStopping(m *testing.M, services ...interface{ Stop() }) {
	code := m.Run()
	for _, s := range services {
		s.Stop()
	}
	os.Exit(code)
}

// ResourceName makes the name of a test's own database or bucket from
// the test's name: prefix, then the name's lower-case letters and digits
// with sep for anything else (at most 40 bytes in all), then sep and n,
// which keeps it unique. It fits PostgreSQL's identifiers and S3's bucket
// names.
func ResourceName(prefix string, sep byte, hint string, n int64) string {
	var b strings.Builder
	b.WriteString(prefix)
	for _, r := range strings.ToLower(hint) {
		if b.Len() >= 40 {
			break
		}
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte(sep)
		}
	}
	b.WriteByte(sep)
	return b.String() + strconv.FormatInt(n, 10)
}
