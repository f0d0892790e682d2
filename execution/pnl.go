package execution

import (
	"context"
	"errors"
	"fmt"

	"github.com/groundgate/groundgate/artifacts"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/series"
)

// PnL returns the morphism and the P&L series of one morphism of a stored execution, read
// from its pnl artifact: what an equity curve is drawn from. The footprint
// is checked as Get checks it, and the artifact is served only when the
// footprint names it. ErrNotFound when there is no such execution, index
// or stored artifact (a rejected morphism has none), ErrCorrupt when the
// artifact no longer decodes.
func (x *Executor) PnL(ctx context.Context, hash hashing.Digest, index int) (Morphism, *series.Table, error) {
	fp, err := x.Get(ctx, hash)
	if err != nil {
		return Morphism{}, nil, err
	}
	if index < 0 || index >= len(fp.Morphisms) {
		return Morphism{}, nil, fmt.Errorf("execution %s has %d morphisms, no index %d: %w", hash, len(fp.Morphisms), index, ErrNotFound)
	}
	if fp.ArtifactEncoding != EncodingSeries {
		return Morphism{}, nil, fmt.Errorf("execution %s stores its artifacts as CSV (a previous release): %w", hash, ErrNotFound)
	}
	m := fp.Morphisms[index]
	for _, a := range m.Artifacts {
		if a.Name != "pnl" {
			continue
		}
		raw, err := x.arts.Get(ctx, a.Digest)
		switch {
		case errors.Is(err, artifacts.ErrNotFound):
			return Morphism{}, nil, fmt.Errorf("pnl artifact %s: %w", a.Digest, ErrNotFound)
		case errors.Is(err, artifacts.ErrCorrupt):
			return Morphism{}, nil, fmt.Errorf("pnl artifact %s: %w", a.Digest, ErrCorrupt)
		case err != nil:
			return Morphism{}, nil, err
		}
		t, err := series.Decode(raw)
		if err != nil {
			return Morphism{}, nil, fmt.Errorf("pnl artifact %s: %v: %w", a.Digest, err, ErrCorrupt)
		}
		return m, t, nil
	}
	return Morphism{}, nil, fmt.Errorf("morphism %d of execution %s did not run (rejected: %v), so it has no P&L: %w", index, hash, m.Rejected, ErrNotFound)
}
