package execution

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/groundgate/groundgate/artifacts"
	"github.com/groundgate/groundgate/hashing"
)

// ReplayReport says, layer by layer, whether a re-run reproduced a stored
// footprint.
type ReplayReport struct {
	Hash       hashing.Digest `json:"hash"`
	ReplayHash hashing.Digest `json:"replay_hash"`
	Match      bool           `json:"match"`
	// RegistryVersion is the registry version the replay ran against: the
	// footprint's.
	RegistryVersion uint64       `json:"registry_version"`
	Layers          []LayerMatch `json:"layers"`
	// Morphisms lists the grid indices whose hash, plan, artifacts, score,
	// verdict or contract clauses differ; empty when every morphism
	// matched.
	Morphisms []int `json:"morphisms"`
	// Contracts is true when every morphism's contract clauses ran and
	// decided as the footprint records.
	Contracts bool `json:"contracts"`
	// Steps names, for a pipeline, each step whose plan or value the
	// replay did not reproduce (at most 256, earliest layers first);
	// absent when every step matched, and for a family.
	Steps []StepChange `json:"steps,omitempty"`
}

// LayerMatch compares one layer of the stored footprint with the replay.
type LayerMatch struct {
	Layer    string         `json:"layer"`
	Stored   hashing.Digest `json:"stored"`
	Replayed hashing.Digest `json:"replayed"`
	Match    bool           `json:"match"`
}

// Replay re-runs a stored execution from what the footprint recorded: its
// request, the data blob stored under its data digest (not the file at the
// path, which may have changed since), the registry version it ran
// against and its risk policy. It stores nothing. Errors: ErrNotFound (no
// such footprint, data blob or registry version), ErrCorrupt (the
// footprint or the data blob no longer hashes right), ErrDrift.
func (x *Executor) Replay(ctx context.Context, hash hashing.Digest) (*ReplayReport, error) {
	fp, err := x.Get(ctx, hash)
	if err != nil {
		return nil, err
	}
	release, err := x.admit(ctx)
	if err != nil {
		return nil, fmt.Errorf("execution %s: replay: %w", hash, err)
	}
	defer release()
	snap, err := x.snapshotAt(ctx, fp.RegistryVersion, fp.Registry)
	if err != nil {
		return nil, fmt.Errorf("execution %s: %w", hash, err)
	}
	src, err := x.storedSource(ctx, fp)
	if err != nil {
		return nil, fmt.Errorf("execution %s: %w", hash, err)
	}
	ro := x.runOptions()
	switch fp.ArtifactEncoding {
	case EncodingSeries:
	case EncodingCSV:
		ro.legacyCSV = true
	default:
		return nil, fmt.Errorf("execution %s: artifact encoding %q is not one this release writes: %w", hash, fp.ArtifactEncoding, ErrNotRunnable)
	}
	out, err := compute(ctx, input{
		snap: snap, req: fp.Request, grounding: fp.Grounding, policies: fp.Policies, src: src,
		risk: fp.Risk, maxBytes: max(x.opt.MaxDataBytes, int64(len(src.raw))), budget: x.budget(), contracts: x.contracts,
	}, ro)
	if err != nil {
		return nil, fmt.Errorf("execution %s: replay: %w", hash, err)
	}
	r := &ReplayReport{Hash: fp.Hash, ReplayHash: out.fp.Hash, Match: out.fp.Hash == fp.Hash,
		RegistryVersion: snap.Version(), Morphisms: []int{}, Contracts: len(fp.Morphisms) == len(out.fp.Morphisms)}
	stored, replayed := fp.Layers.List(), out.fp.Layers.List()
	for i, name := range LayerNames {
		r.Layers = append(r.Layers, LayerMatch{Layer: name, Stored: stored[i], Replayed: replayed[i], Match: stored[i] == replayed[i]})
	}
	for i := range max(len(fp.Morphisms), len(out.fp.Morphisms)) {
		if i >= len(fp.Morphisms) || i >= len(out.fp.Morphisms) || !sameMorphism(fp.Morphisms[i], out.fp.Morphisms[i]) {
			r.Morphisms = append(r.Morphisms, i)
		}
		if i < len(fp.Morphisms) && i < len(out.fp.Morphisms) && !slices.Equal(fp.Morphisms[i].Contracts, out.fp.Morphisms[i].Contracts) {
			r.Contracts = false
		}
	}
	if len(fp.Steps) > 0 {
		r.Steps = stepChanges(fp, out.fp)
	}
	return r, nil
}

func sameMorphism(a, b Morphism) bool {
	if a.Hash != b.Hash || (a.Plan == nil) != (b.Plan == nil) || (a.Plan != nil && *a.Plan != *b.Plan) || a.Score != b.Score || len(a.Artifacts) != len(b.Artifacts) ||
		a.Admissible != b.Admissible || !slices.Equal(a.Rejected, b.Rejected) || !slices.Equal(a.Contracts, b.Contracts) ||
		!slices.EqualFunc(a.Steps, b.Steps, sameStepRun) {
		return false
	}
	for i := range a.Artifacts {
		if a.Artifacts[i] != b.Artifacts[i] {
			return false
		}
	}
	return true
}

// storedSource rebuilds an execution's source from the artifact store.
func (x *Executor) storedSource(ctx context.Context, fp *Footprint) (source, error) {
	src := source{path: fp.Data.Path, missing: fp.Data.Missing}
	if src.missing != "" {
		return src, nil
	}
	raw, err := x.arts.Get(ctx, fp.Data.Digest)
	switch {
	case errors.Is(err, artifacts.ErrNotFound):
		return src, fmt.Errorf("data blob %s: %w", fp.Data.Digest, ErrNotFound)
	case errors.Is(err, artifacts.ErrCorrupt):
		return src, fmt.Errorf("data blob %s: %w", fp.Data.Digest, ErrCorrupt)
	case err != nil:
		return src, err
	}
	src.raw = raw
	return src, nil
}
