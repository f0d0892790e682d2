package calls

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/store"
)

// SpaceCalls holds call footprints: call hash → the footprint's RFC 8785
// form (the bbolt bucket "calls.records"). The key is the hash of the
// footprint's layers, not of its bytes, so the store checks every read
// with checkRecord: the bytes decode, name their key, check
// (Footprint.Check) and are their canonical form.
var SpaceCalls = store.Space{Name: "calls.records", Check: checkRecord}

// Errors of the store. REST: 404, 500 (corrupt-record).
var (
	ErrNotFound = errors.New("no such call")
	ErrCorrupt  = errors.New("call record corrupt")
)

// Backend is what the calls service needs of the storage layer
// (registry.Store.Engine()): reads, and batched writes (footprints made at
// once share a commit).
type Backend interface {
	View(ctx context.Context, fn func(store.Tx) error) error
	Batch(ctx context.Context, fn func(store.Tx) error) error
}

// put stores a sealed footprint and returns once it is durable. Two
// identical calls (same layers) are one record.
func (s *Service) put(ctx context.Context, f *Footprint) error {
	raw, err := f.seal()
	if err != nil {
		return err
	}
	if err := s.st.Batch(ctx, func(tx store.Tx) error { return tx.PutRecord(SpaceCalls, f.Hash, raw) }); err != nil {
		return fmt.Errorf("calls: store footprint: %w", err)
	}
	return nil
}

// PutTx stores a sealed footprint's bytes (Session.Keep's raw) in tx: the
// record a session writes in its own transaction. Two identical calls
// (same layers) are one record.
func PutTx(tx store.RecordWriter, f *Footprint, raw []byte) error {
	if err := tx.PutRecord(SpaceCalls, f.Hash, raw); err != nil {
		return fmt.Errorf("calls: store footprint: %w", err)
	}
	return nil
}

// get reads a footprint, checked by the store (checkRecord).
func (s *Service) get(ctx context.Context, hash hashing.Digest) (*Footprint, error) {
	var f *Footprint
	err := s.st.View(ctx, func(tx store.Tx) error {
		raw, err := tx.Record(SpaceCalls, hash)
		if err != nil {
			return err
		}
		f, err = decodeRecord(hash, raw)
		return err
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, fmt.Errorf("%w: %s", ErrNotFound, hash)
	case errors.Is(err, store.ErrCorrupt):
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, hash, err)
	case err != nil:
		return nil, fmt.Errorf("calls: read %s: %w", hash, err)
	}
	return f, nil
}

// checkRecord is SpaceCalls' check.
func checkRecord(key hashing.Digest, raw []byte) error {
	_, err := decodeRecord(key, raw)
	return err
}

// decodeRecord reads a stored footprint and checks it.
func decodeRecord(key hashing.Digest, raw []byte) (*Footprint, error) {
	var f Footprint
	if err := hashing.DecodeStrict(raw, &f); err != nil {
		return nil, err
	}
	if f.Hash != key {
		return nil, fmt.Errorf("stored under %s, says %s", key, f.Hash)
	}
	if err := f.Check(); err != nil {
		return nil, err
	}
	canon, err := hashing.Canonical(&f)
	if err != nil || !bytes.Equal(canon, raw) {
		return nil, fmt.Errorf("does not re-encode to its bytes")
	}
	return &f, nil
}

// Verify re-checks every stored call footprint (registry verify): it
// returns how many there are and a problem per record that fails.
func Verify(ctx context.Context, st store.Viewer) (n int, problems []string, err error) {
	err = st.View(ctx, func(tx store.Tx) error {
		var err error
		n, problems, err = store.Verify(ctx, tx, SpaceCalls, nil)
		return err
	})
	if errors.Is(err, store.ErrCorrupt) {
		return n, problems, fmt.Errorf("%w: %d call record(s): %w", ErrCorrupt, len(problems), err)
	}
	if err != nil {
		return n, problems, fmt.Errorf("verify calls: %w", err)
	}
	return n, problems, nil
}

// clip shortens text quoted in an error.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
