package execution

import (
	"errors"
	"fmt"
	"testing"

	"github.com/groundgate/groundgate/errkind"
)

// A kernel's panic rejects its morphism with a reason whose text is
// hashed: PanicError must spell it as the executor always has, and have
// no kind (a panic is a bug, never the request's fault).
func TestPanicError(t *testing.T) {
	for _, c := range []struct {
		err  *PanicError
		want string
	}{
		{&PanicError{Value: "boom"}, fmt.Sprintf("internal error: %v", "boom")},
		{&PanicError{Op: "volsize", Value: fmt.Errorf("index out of range [3] with length 3")},
			fmt.Sprintf("%s: internal error: %v", "volsize", fmt.Errorf("index out of range [3] with length 3"))},
		{&PanicError{Op: "dlog", Value: 7}, "dlog: internal error: 7"},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
		if k := errkind.Of(fmt.Errorf("run: %w", c.err)); k != errkind.Unknown {
			t.Errorf("%v has kind %v", c.err, k)
		}
	}
}

// A value shared through the memo whose computation panics fails every
// user with the PanicError, not a crash.
func TestMemoPanic(t *testing.T) {
	m := &memo{m: map[string]*memoEntry{"k": {}}, limit: 1 << 20}
	_, err := m.get("k", func() (rval, error) { panic("kernel bug") })
	var pe *PanicError
	if !errors.As(err, &pe) || err.Error() != "internal error: kernel bug" {
		t.Fatalf("got %v", err)
	}
	if _, again := m.get("k", func() (rval, error) { return rval{}, nil }); again != err {
		t.Fatalf("the second user got %v", again)
	}
}
