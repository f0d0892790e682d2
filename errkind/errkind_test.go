package errkind_test

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/groundgate/groundgate/errkind"
)

func TestKinds(t *testing.T) {
	errMissing := errkind.New(errkind.NotFound, "thing: not found")
	errMissing2 := errkind.New(errkind.NotFound, "thing: not found")
	wrapped := fmt.Errorf("get %q: %w", "x", errMissing)
	tests := []struct {
		name string
		err  error
		want errkind.Kind
		also errkind.Kind // a kind deeper in the tree, which errors.Is also sees
	}{
		{"nil", nil, errkind.Unknown, errkind.Unknown},
		{"plain", errors.New("boom"), errkind.Unknown, errkind.Unknown},
		{"sentinel", errMissing, errkind.NotFound, errkind.Unknown},
		{"wrapped sentinel", wrapped, errkind.NotFound, errkind.Unknown},
		{"foreign classified", errkind.Wrap(errkind.Unavailable, fs.ErrPermission), errkind.Unavailable, errkind.Unknown},
		{"outermost kind wins", errkind.Wrap(errkind.Corrupt, wrapped), errkind.Corrupt, errkind.NotFound},
		{"joined", errors.Join(errors.New("a"), errkind.New(errkind.Busy, "full")), errkind.Busy, errkind.Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errkind.Of(tt.err); got != tt.want {
				t.Fatalf("Of = %v, want %v", got, tt.want)
			}
			for _, k := range errkind.Kinds() {
				if got := errors.Is(tt.err, k); got != (k == tt.want || k == tt.also) {
					t.Errorf("errors.Is(err, %v) = %v", k, got)
				}
			}
		})
	}
	if !errors.Is(wrapped, errMissing) || errors.Is(wrapped, errMissing2) {
		t.Fatal("sentinels must stay distinct under errors.Is")
	}
	if !errors.Is(errkind.Wrap(errkind.Unavailable, fs.ErrPermission), fs.ErrPermission) {
		t.Fatal("Wrap must keep the wrapped error reachable")
	}
	if errkind.Wrap(errkind.Busy, nil) != nil {
		t.Fatal("Wrap(k, nil) must be nil")
	}
}

func TestNames(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range append(errkind.Kinds(), errkind.Unknown) {
		s := k.String()
		if s == "" || seen[s] {
			t.Fatalf("kind %d has an empty or repeated name %q", k, s)
		}
		seen[s] = true
	}
	if errkind.Kind(200).String() != "unknown" {
		t.Fatal("an out-of-range kind must read as unknown")
	}
}

func TestCodes(t *testing.T) {
	errDrift := errkind.Coded(errkind.Conflict, "registry-drift", "registry drift")
	errPlain := errkind.New(errkind.Conflict, "closed")
	tests := []struct {
		name string
		err  error
		kind errkind.Kind
		code string
	}{
		{"nil", nil, errkind.Unknown, ""},
		{"foreign", errors.New("boom"), errkind.Unknown, ""},
		{"coded", errDrift, errkind.Conflict, "registry-drift"},
		{"wrapped coded", fmt.Errorf("execute: %w", errDrift), errkind.Conflict, "registry-drift"},
		{"uncoded", errPlain, errkind.Conflict, ""},
		// The code comes from the error the kind comes from: an outer
		// uncoded kind hides an inner code.
		{"outer uncoded", fmt.Errorf("%w: %w", errPlain, errDrift), errkind.Conflict, ""},
		{"outer wrap", errkind.Wrap(errkind.Unavailable, errDrift), errkind.Unavailable, ""},
		{"outer coded", fmt.Errorf("%w: %w", errDrift, errPlain), errkind.Conflict, "registry-drift"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if k, c := errkind.Of(tt.err), errkind.CodeOf(tt.err); k != tt.kind || c != tt.code {
				t.Fatalf("Of, CodeOf = %v, %q; want %v, %q", k, c, tt.kind, tt.code)
			}
		})
	}
	if !errors.Is(errDrift, errkind.Conflict) || errors.Is(errDrift, errPlain) {
		t.Fatal("a coded sentinel is of its kind and distinct from others")
	}
}
