package session

import (
	"bytes"
	"context"
	"fmt"
	"math"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/store"
)

// Rebuild replays a session's call records from the empty state, filing
// each recorded value (read from session.values and checked against its
// digest), and checks that every call left the state it records and that
// the last is the state stored now. It returns the rebuilt state: the
// audit that the state holds exactly what the calls filed, in order.
func (s *Store) Rebuild(ctx context.Context, id hashing.Digest) (*State, error) {
	var st *State
	err := s.st.View(ctx, func(tx store.Tx) error {
		var err error
		st, err = rebuild(ctx, tx, id)
		return err
	})
	return st, err
}

// unbounded is the limit a rebuild files under: the state obeyed the
// limits in force when each call was recorded, which may since have
// shrunk.
var unbounded = Limits{MaxResults: math.MaxInt, MaxBytes: math.MaxInt}

func rebuild(ctx context.Context, tx store.Tx, id hashing.Digest) (*State, error) {
	sess, err := load(tx, id)
	if err != nil {
		return nil, err
	}
	st := &State{}
	for _, c := range sess.Calls {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(c.Filed) > 0 {
			if c.Decision != Admitted || c.Outcome != OutcomeOK {
				return nil, fmt.Errorf("%w: %s: call %d (%s, %s) filed results", ErrCorrupt, id, c.Seq, c.Decision, c.Outcome)
			}
			obs := make([]Observation, len(c.Filed))
			for i, f := range c.Filed {
				v, err := tx.Record(spaceValues, f.Value)
				if err != nil {
					return nil, fmt.Errorf("%w: %s: call %d: value %s is missing or altered", ErrCorrupt, id, c.Seq, f.Value)
				}
				if k, err := Key(f.Arguments); err != nil || k != f.Key {
					return nil, fmt.Errorf("%w: %s: call %d: key %q is not its arguments'", ErrCorrupt, id, c.Seq, clip(f.Key, 64))
				}
				obs[i] = Observation{Tool: f.Tool, Arguments: f.Arguments, Value: bytes.Clone(v)}
			}
			if st, err = st.With(unbounded, obs...); err != nil {
				return nil, fmt.Errorf("%w: %s: call %d: %v", ErrCorrupt, id, c.Seq, err)
			}
		}
		if d := st.Digest(); d != c.State {
			return nil, fmt.Errorf("%w: %s: call %d records state %s, its calls give %s", ErrCorrupt, id, c.Seq, c.State, d)
		}
	}
	h, err := readHeader(tx, id)
	if err != nil {
		return nil, err
	}
	stored, err := readState(tx, h)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(stored.Canonical(), st.Canonical()) {
		return nil, fmt.Errorf("%w: %s: the stored state is not what its calls filed", ErrCorrupt, id)
	}
	return st, nil
}

// Verify re-checks every stored session (registry verify): its header,
// turns and calls, and its state rebuilt from its calls. It returns how
// many sessions there are and a problem per session that fails.
func Verify(ctx context.Context, st store.Viewer) (n int, problems []string, err error) {
	problems = []string{}
	err = st.View(ctx, func(tx store.Tx) error {
		var ids [][]byte
		if err := tx.Scan(nameRecords, func(k, _ []byte) error {
			ids = append(ids, bytes.Clone(k))
			return nil
		}); err != nil {
			return err
		}
		for _, k := range ids {
			if err := ctx.Err(); err != nil {
				return err
			}
			n++
			id, err := hashing.Parse(string(k))
			if err != nil {
				problems = append(problems, fmt.Sprintf("key %q is not a digest", clip(string(k), 80)))
				continue
			}
			if _, err := rebuild(ctx, tx, id); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				problems = append(problems, err.Error())
			}
		}
		return nil
	})
	if err != nil {
		return n, problems, fmt.Errorf("verify sessions: %w", err)
	}
	if len(problems) > 0 {
		return n, problems, fmt.Errorf("%w: %d session(s)", ErrCorrupt, len(problems))
	}
	return n, problems, nil
}
