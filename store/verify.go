package store

import (
	"context"
	"errors"
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

// VerifyIn is Verify in a View of its own: a package's Verify over a
// store. When a record fails, the error wraps corrupt (the package's own
// sentinel) besides ErrCorrupt.
func VerifyIn(ctx context.Context, v Viewer, sp Space, more func(key hashing.Digest, raw []byte) error, corrupt error) (n int, problems []string, err error) {
	err = v.View(ctx, func(tx Tx) error {
		var err error
		n, problems, err = Verify(ctx, tx, sp, more)
		return err
	})
	if errors.Is(err, ErrCorrupt) {
		err = fmt.Errorf("%w: %w", corrupt, err)
	}
	return n, problems, err
}

// Get reads the record under key in sp in a View of its own and decodes
// it there (the bytes are valid only inside the transaction): the store's
// errors (ErrNotFound, ErrCorrupt) or decode's.
func Get[T any](ctx context.Context, v Viewer, sp Space, key hashing.Digest, decode func(key hashing.Digest, raw []byte) (T, error)) (T, error) {
	var out T
	err := v.View(ctx, func(tx Tx) error {
		raw, err := tx.Record(sp, key)
		if err != nil {
			return err
		}
		out, err = decode(key, raw)
		return err
	})
	return out, err
}
