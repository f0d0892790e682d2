package execution

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/policy"
)

var _ ground.DataFacts = (*Executor)(nil)

// maxFactsCached bounds the facts kept per source digest: a few scalars
// each, so the bound is about distinct sources, not memory.
const maxFactsCached = 64

// PolicyFacts reads a data source and returns the facts policies bind
// (/facts/data/NAME: the contract state's data facts, scalars only) and the
// digest of the bytes they describe, which the grounding record pins. A
// source that is missing, outside the root or unparseable wraps
// ground.ErrNoData. One source is read for facts at a time (up to
// MaxDataBytes in memory), on its own token rather than an execution slot,
// so grounding never queues behind a running execution; ErrBusy when the
// token does not free up within QueueWait.
func (x *Executor) PolicyFacts(ctx context.Context, path string) (map[string]policy.Value, hashing.Digest, error) {
	wait := time.NewTimer(x.opt.QueueWait)
	defer wait.Stop()
	select {
	case x.factsToken <- struct{}{}:
	case <-ctx.Done():
		return nil, hashing.Digest{}, fmt.Errorf("policy facts: %w", ctx.Err())
	case <-wait.C:
		return nil, hashing.Digest{}, fmt.Errorf("policy facts: %w: another source's facts are being read", ErrBusy)
	}
	defer func() { <-x.factsToken }()
	src, err := readSource(x.data, path, x.opt.MaxDataBytes)
	if err != nil {
		return nil, hashing.Digest{}, fmt.Errorf("%w: %w", ground.ErrNoData, err)
	}
	if src.missing != "" {
		return nil, hashing.Digest{}, fmt.Errorf("%w: %s: %s", ground.ErrNoData, path, src.missing)
	}
	d := hashing.SumBLAKE3(src.raw)
	x.factsMu.Lock()
	facts, ok := x.facts[d]
	x.factsMu.Unlock()
	if ok {
		return facts, d, nil
	}
	f, err := parseSource(src, x.opt.MaxDataBytes)
	if err != nil {
		return nil, hashing.Digest{}, fmt.Errorf("%w: %w", ground.ErrNoData, err)
	}
	st := dataFacts(f, d)
	facts = map[string]policy.Value{}
	for name, srt := range policy.DataFacts {
		v := st["data."+name]
		if d, ok := v.(string); ok && srt == "Int" {
			// Dates are YYYYMMDD integers for policies; a source with no
			// rows has no dates, and no such fact.
			n, err := strconv.Atoi(strings.ReplaceAll(d, "-", ""))
			if err != nil || len(d) != len("2006-01-02") {
				continue
			}
			v = int64(n)
		}
		switch v := v.(type) {
		case int64:
			facts[name] = policy.Num(float64(v))
		case string:
			facts[name] = policy.Str(v)
		case bool:
			facts[name] = policy.Boolean(v)
		case float64:
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				facts[name] = policy.Num(v) // min_price of a source with no values is no fact
			}
		default:
			return nil, hashing.Digest{}, fmt.Errorf("policy facts: data.%s (%s) has no value", name, srt)
		}
	}
	x.factsMu.Lock()
	if len(x.facts) >= maxFactsCached {
		clear(x.facts)
	}
	x.facts[d] = facts
	x.factsMu.Unlock()
	return facts, d, nil
}
