package store

import (
	"context"
	"fmt"

	"github.com/groundgate/groundgate/hashing"
)

// Verify re-checks every record in sp, read through tx: each key must be a
// digest and each value pass sp's check, then more (when not nil; a
// domain's decode-and-re-encode). It returns how many records it read and
// a problem per bad one ("KEY: why"); the error wraps ErrCorrupt when
// there is a problem, and is the storage error when the scan could not
// run. It is the one "registry verify" loop every package's records use.
func Verify(ctx context.Context, tx Scanner, sp Space, more func(key hashing.Digest, raw []byte) error) (n int, problems []string, err error) {
	problems = []string{}
	err = tx.Scan(sp.Name, func(k, v []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		n++
		key, err := hashing.Parse(string(k))
		if err != nil {
			problems = append(problems, fmt.Sprintf("key %q is not a digest", clip(k)))
			return nil
		}
		check := sp.Check
		if check == nil {
			check = Hashed
		}
		if err := check(key, v); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", key, err))
			return nil
		}
		if more != nil {
			if err := more(key, v); err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", key, err))
			}
		}
		return nil
	})
	if err != nil {
		return n, problems, fmt.Errorf("verify %s: %w", sp.Name, err)
	}
	if len(problems) > 0 {
		return n, problems, fmt.Errorf("verify %s: %d problem(s): %w", sp.Name, len(problems), ErrCorrupt)
	}
	return n, problems, nil
}

// clip shortens a key quoted in a problem.
func clip(k []byte) string {
	if len(k) > 80 {
		return string(k[:80]) + "…"
	}
	return string(k)
}
