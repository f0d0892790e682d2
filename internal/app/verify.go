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

// storeVerifier is a store that can re-check everything it holds:
// execution.Executor (footprints) and artifacts.Store (blobs).
type storeVerifier interface {
	Verify(ctx context.Context) (n int, problems []string, err error)
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
	var err error
	var corrupt []error
	collect := func(kind string, problems []string, err error, sentinel error) error {
		for _, p := range problems {
			if kind != "" {
				p = kind + ": " + p
			}
			rep.Problems = append(rep.Problems, p)
		}
		switch {
		case err == nil:
			return nil
		case errors.Is(err, sentinel):
			corrupt = append(corrupt, err)
			return nil
		default:
			return err
		}
	}

	rep.Registry, err = registry.VerifyStore(ctx, st)
	if err := collect("", rep.Registry.Problems, err, registry.ErrCorrupt); err != nil {
		return rep, err
	}
	var problems []string
	rep.Evidence, problems, err = discover.Verify(ctx, st)
	if err := collect("evidence", problems, err, discover.ErrCorrupt); err != nil {
		return rep, err
	}
	rep.Groundings, problems, err = ground.Verify(ctx, st)
	if err := collect("grounding", problems, err, ground.ErrCorrupt); err != nil {
		return rep, err
	}
	rep.Policies, problems, err = policy.Verify(ctx, st)
	if err := collect("policies", problems, err, policy.ErrCorrupt); err != nil {
		return rep, err
	}
	rep.FuzzRuns, problems, err = runs.Verify(ctx, st)
	if err := collect("fuzz runs", problems, err, runs.ErrCorrupt); err != nil {
		return rep, err
	}
	rep.Calls, problems, err = calls.Verify(ctx, st)
	if err := collect("calls", problems, err, calls.ErrCorrupt); err != nil {
		return rep, err
	}
	rep.Sessions, problems, err = session.Verify(ctx, st)
	if err := collect("sessions", problems, err, session.ErrCorrupt); err != nil {
		return rep, err
	}
	arts, err := execution.OpenArtifacts(st)
	if err != nil {
		return rep, err
	}
	rep.Blobs, problems, err = storeVerifier(arts).Verify(ctx)
	if err := collect("blobs", problems, err, artifacts.ErrCorrupt); err != nil {
		return rep, err
	}
	x, err := execution.New(noVersions{}, arts, st, sampledata.FS(), execution.Options{})
	if err != nil {
		return rep, err
	}
	rep.Footprints, problems, err = storeVerifier(x).Verify(ctx)
	if err := collect("footprints", problems, err, execution.ErrCorrupt); err != nil {
		return rep, err
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
