package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/groundgate/groundgate/artifacts"
	"github.com/groundgate/groundgate/calls"
	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/fuzz/runs"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/policy"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/sampledata"
	"github.com/groundgate/groundgate/session"
	"github.com/groundgate/groundgate/store"
	"github.com/groundgate/groundgate/store/boltstore"
)

// Report is what VerifyFile checked, per kind, and every problem found.
type Report struct {
	Registry   registry.VerifyReport `json:"registry"`
	Evidence   int                   `json:"evidence"`
	Groundings int                   `json:"groundings"`
	Footprints int                   `json:"footprints"`
	Blobs      int                   `json:"blobs"`
	// Policies counts stored policies and versions of the policy set.
	Policies int `json:"policies"`
	// FuzzRuns counts stored fuzz runs and findings.
	FuzzRuns int `json:"fuzz_runs"`
	// Calls counts stored call footprints (SPEC §14).
	Calls int `json:"calls"`
	// Sessions counts stored sessions (SPEC §15): each one's turns, calls
	// and its state rebuilt from the calls.
	Sessions int `json:"sessions"`
	// Problems lists the registry's problems as registry.VerifyReport
	// words them, then every other kind's prefixed with the kind.
	Problems []string `json:"problems"`
}

// VerifyFile re-checks everything stored in the bbolt file at path,
// opened read-only (VerifyStore).
func VerifyFile(ctx context.Context, path string) (Report, error) {
	bs, err := boltstore.OpenFile(path, boltstore.FileOptions{ReadOnly: true, Timeout: LockWait})
	if err != nil {
		return Report{Problems: []string{}}, fmt.Errorf("verify: open %s: %w", path, HintLocked(err, path))
	}
	defer bs.Close()
	return VerifyStore(ctx, bs, path)
}

// VerifyStore re-checks everything stored in st, on either engine (the
// bbolt file, or a shared PostgreSQL + S3 store): the registry (records,
// chunks, groups, versions, indexes; registry.VerifyStore), then each
// package verifies its own records through the storage layer (discovery
// evidence, grounding records, policies, fuzz runs, calls, sessions,
// blobs, footprints: store.Verify per keyspace), so no keyspace is named
// here. Each record is hashed once. name is what the error calls the
// store. The error wraps each failing kind's ErrCorrupt when there is a
// problem (the report lists them all), and is the storage error when the
// check could not run.
func VerifyStore(ctx context.Context, st store.Store, name string) (Report, error) {
	rep := Report{Problems: []string{}}
	var corrupt []error
	var err error
	rep.Registry, err = registry.VerifyStore(ctx, st)
	rep.Problems = append(rep.Problems, rep.Registry.Problems...)
	switch {
	case errors.Is(err, registry.ErrCorrupt):
		corrupt = append(corrupt, err)
	case err != nil:
		return rep, err
	}
	arts, err := execution.OpenArtifacts(st)
	if err != nil {
		return rep, err
	}
	x, err := execution.New(noVersions{}, arts, st, sampledata.FS(), execution.Options{})
	if err != nil {
		return rep, err
	}
	for _, k := range []struct {
		name     string
		count    *int
		verify   func(context.Context, store.Viewer) (int, []string, error)
		sentinel error
	}{
		{"evidence", &rep.Evidence, discover.Verify, discover.ErrCorrupt},
		{"grounding", &rep.Groundings, ground.Verify, ground.ErrCorrupt},
		{"policies", &rep.Policies, policy.Verify, policy.ErrCorrupt},
		{"fuzz runs", &rep.FuzzRuns, runs.Verify, runs.ErrCorrupt},
		{"calls", &rep.Calls, calls.Verify, calls.ErrCorrupt},
		{"sessions", &rep.Sessions, session.Verify, session.ErrCorrupt},
		{"blobs", &rep.Blobs, func(ctx context.Context, _ store.Viewer) (int, []string, error) { return arts.Verify(ctx) }, artifacts.ErrCorrupt},
		{"footprints", &rep.Footprints, func(ctx context.Context, _ store.Viewer) (int, []string, error) { return x.Verify(ctx) }, execution.ErrCorrupt},
	} {
		n, problems, err := k.verify(ctx, st)
		*k.count = n
		for _, p := range problems {
			rep.Problems = append(rep.Problems, k.name+": "+p)
		}
		switch {
		case err == nil:
		case errors.Is(err, k.sentinel):
			corrupt = append(corrupt, err)
		default:
			return rep, err
		}
	}
	if len(rep.Problems) > 0 {
		return rep, fmt.Errorf("verify %s: %d problem(s), first: %s: %w", name, len(rep.Problems), rep.Problems[0], errors.Join(corrupt...))
	}
	return rep, nil
}

// noVersions stands in for the registry when the executor only re-checks
// stored footprints: Verify asks it for nothing.
type noVersions struct{}

func (noVersions) Current() *registry.Snapshot { return nil }
func (noVersions) Version(context.Context, uint64) (*registry.Snapshot, error) {
	return nil, registry.ErrNotFound
}
