package execution

import (
	"bytes"
	"context"
	"fmt"
	"math"

	"github.com/groundgate/groundgate/artifacts"
	"github.com/groundgate/groundgate/execution/kernel"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/series"
)

// A weights panel is an exact function of series a whole grid shares:
// w = clip(sig·τ/σ̂, −L, L) per asset (kernel.Size), from the signal
// (one per signal window), the returns (one per data source) and the
// trailing volatility (one per risk window). The executor stores those
// three once each and every weights artifact as a recipe naming them, so a
// 16 × 16 sweep stores 33 panels instead of 256. The artifact's digest is
// still BLAKE3 of the weights' canonical encoding, and the artifact store
// re-derives and re-hashes it on every read.

// weightsRecipeKind names the derivation and its version: a change to
// how weights are computed needs a new kind, and the old one kept, so
// that stored recipes keep deriving what they were written for.
const weightsRecipeKind = "groundgate/v1 volsize.weights"

// weightsRecipe is the stored form of a derived weights artifact
// (canonical JSON). Signals is absent when the signal is the constant
// Signal (VOL_TGT's +1).
type weightsRecipe struct {
	Kind      string          `json:"kind"`
	Returns   hashing.Digest  `json:"returns"`
	Vols      hashing.Digest  `json:"vols"`
	Signals   *hashing.Digest `json:"signals,omitempty"`
	Signal    *float64        `json:"signal,omitempty"`
	TargetVol float64         `json:"target_vol"`
	Leverage  float64         `json:"leverage"`
	Lag       int             `json:"lag"`
}

// Deriver rebuilds derived artifacts; the artifact store needs it to read
// them (see OpenArtifacts).
type Deriver struct{}

var _ artifacts.Deriver = Deriver{}

// OpenArtifacts opens the artifact store in st (registry.Store.Engine()) with the executor's
// deriver: every reader of an executor's blobs opens it this way.
func OpenArtifacts(st artifacts.Backend, opts ...artifacts.Option) (*artifacts.Store, error) {
	return artifacts.Open(st, append(opts, artifacts.WithDeriver(Deriver{}))...)
}

// Derive implements artifacts.Deriver.
func (Deriver) Derive(recipe []byte, get func(hashing.Digest) (*series.Table, error)) ([]byte, error) {
	var r weightsRecipe
	if err := hashing.DecodeStrict(recipe, &r); err != nil {
		return nil, fmt.Errorf("recipe: %w", err)
	}
	if r.Kind != weightsRecipeKind {
		return nil, fmt.Errorf("recipe kind %q: not one this engine derives", r.Kind)
	}
	table := get
	ret, err := table(r.Returns)
	if err != nil {
		return nil, fmt.Errorf("returns: %w", err)
	}
	vol, err := table(r.Vols)
	if err != nil {
		return nil, fmt.Errorf("vols: %w", err)
	}
	var sig *series.Table
	switch {
	case r.Signals != nil && r.Signal == nil:
		if sig, err = table(*r.Signals); err != nil {
			return nil, fmt.Errorf("signals: %w", err)
		}
	case r.Signals == nil && r.Signal != nil:
	default:
		return nil, fmt.Errorf("recipe: exactly one of signals and signal")
	}
	return deriveWeights(nil, ret, vol, sig, r)
}

// deriveWeights computes the weights panel exactly as runVolsize does and
// appends its canonical encoding to dst.
func deriveWeights(dst []byte, ret, vol, sig *series.Table, r weightsRecipe) ([]byte, error) {
	if !sameIndex(ret, vol) || (sig != nil && !sameIndex(ret, sig)) || len(vol.Cols) != len(ret.Cols) {
		return nil, fmt.Errorf("recipe: inputs of different shapes")
	}
	signals := make([][]float64, len(ret.Cols))
	for a := range signals {
		switch {
		case sig == nil:
			c := make([]float64, len(ret.Dates))
			for t := range c {
				c[t] = *r.Signal
			}
			signals[a] = c
		case len(sig.Cols) == 1:
			signals[a] = sig.Cols[0]
		case len(sig.Cols) == len(ret.Cols):
			signals[a] = sig.Cols[a]
		default:
			return nil, fmt.Errorf("recipe: %d signal columns for %d assets", len(sig.Cols), len(ret.Cols))
		}
	}
	res, err := kernel.Size(ret.Cols, signals, vol.Cols, kernel.Params{TargetVol: r.TargetVol, Leverage: r.Leverage, Lag: r.Lag})
	if err != nil {
		return nil, err
	}
	return series.Encode(dst, &series.Table{Dates: ret.Dates, Names: ret.Names, Cols: res.Weights})
}

func sameIndex(a, b *series.Table) bool {
	if len(a.Dates) != len(b.Dates) {
		return false
	}
	for i := range a.Dates {
		if a.Dates[i] != b.Dates[i] {
			return false
		}
	}
	return true
}

// weightsDerivation is what storing one morphism's weights as a recipe
// needs: the volsize node's inputs as tables, their content keys (so each
// is encoded and stored once per grid) and the recipe's constants.
type weightsDerivation struct {
	ret, vol, sig          *series.Table
	retKey, volKey, sigKey string
	recipe                 weightsRecipe
}

// derivationOf reads the derivation off a plan whose output node is
// volsize, from the node values of the run; ok is false for any other
// plan shape.
func derivationOf(cp *compiled, vals []rval, days []int32) (weightsDerivation, bool) {
	if !recipeShaped(cp) {
		return weightsDerivation{}, false
	}
	out := cp.plan.Nodes[cp.plan.Output]
	panelTable := func(a Arg) (*series.Table, string, bool) {
		v := vals[*a.Node].p
		if v == nil {
			return nil, "", false
		}
		return &series.Table{Dates: days, Names: v.names, Cols: v.cols}, cp.keys[*a.Node], true
	}
	var d weightsDerivation
	var ok bool
	if d.ret, d.retKey, ok = panelTable(out.Args[1]); !ok {
		return d, false
	}
	if d.vol, d.volKey, ok = panelTable(out.Args[2]); !ok {
		return d, false
	}
	if out.Args[0].isNode() {
		if d.sig, d.sigKey, ok = panelTable(out.Args[0]); !ok {
			return d, false
		}
	} else {
		c := num(out.Args[0])
		d.recipe.Signal = &c
	}
	d.recipe.Kind = weightsRecipeKind
	d.recipe.TargetVol, d.recipe.Leverage = num(out.Args[3]), num(out.Args[4])
	lag := num(out.Args[5])
	if lag != math.Trunc(lag) {
		return d, false
	}
	d.recipe.Lag = int(lag)
	return d, true
}

// recipeShaped reports whether a plan's weights can be stored as a recipe
// at all: its output is volsize over returns and volatility nodes.
func recipeShaped(cp *compiled) bool {
	out := cp.plan.Nodes[cp.plan.Output]
	return out.Op == "volsize" && len(out.Args) == 6 && out.Args[1].isNode() && out.Args[2].isNode()
}

// storeDerived stores the weights whose canonical encoding is content as
// a recipe, after storing its inputs (once per grid) and checking that the
// recipe derives content exactly; when it does not, the weights are
// stored packed instead. It reports whether it stored anything.
func (s *blobSink) storeDerived(ctx context.Context, d weightsDerivation, content []byte, scratch *[]byte, stage *[]artifacts.Blob) (bool, error) {
	var err error
	if d.recipe.Returns, err = s.node(ctx, d.retKey, d.ret); err != nil {
		return false, err
	}
	if d.recipe.Vols, err = s.node(ctx, d.volKey, d.vol); err != nil {
		return false, err
	}
	if d.sig != nil {
		sd, err := s.node(ctx, d.sigKey, d.sig)
		if err != nil {
			return false, err
		}
		d.recipe.Signals = &sd
	}
	*scratch, err = deriveWeights((*scratch)[:0], d.ret, d.vol, d.sig, d.recipe)
	if err != nil || !bytes.Equal(*scratch, content) {
		return false, nil
	}
	recipe, err := hashing.Canonical(d.recipe)
	if err != nil {
		return false, err
	}
	b, err := s.arts.PrepareDerived(content, recipe)
	if err != nil {
		return false, err
	}
	if stage != nil {
		*stage = append(*stage, b)
		return true, nil
	}
	return true, s.addPrepared(ctx, b)
}
