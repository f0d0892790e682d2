// Package storecopy copies a store kept in one bbolt file into the
// PostgreSQL + S3 engine, and verifies the copy: `groundgate migrate`
// (SPEC §17, docs/storage.md "Copying a file to PostgreSQL + S3").
//
// # What is copied
//
// Every top-level bucket of the file is a keyspace. Its keys and values go
// into PostgreSQL's store_kv as they are, byte for byte (pgstore.Import),
// except in the blob keyspaces that their owners declare (Options.Blobs:
// artifacts.Space), whose values go to the object store under the same
// keys. Each bucket's NextSequence counter is carried into
// store_sequences (pgstore.RaiseSequence), so that a number given after
// the move (a fuzz run's id) was never given before it.
//
// The copy knows no keyspace's shape: a file does not record which shape
// a bucket holds, and the layout is defined as bbolt's buckets byte for
// byte, so the engines' raw primitives (boltstore.Keyspaces, a Scan per
// keyspace; pgstore.Import) carry rows, not records, and store.Tx's
// checked writes (PutVersion after n-1, AppendEntry without gaps) are not
// re-run. What the rows mean is checked afterwards by the same
// verification `registry verify` runs, on the new engine.
//
// # Safe to run again
//
// Check runs first and writes nothing: a target that holds a key the
// source lacks, or another value under one of its keys, is ErrConflict;
// a nested bucket is ErrNested. A target holding part of this source (a
// copy killed half-way) passes, and the copy writes what is missing:
// Import leaves rows that are there with the same bytes, and a blob
// already in the object store with the same bytes is not sent again.
//
// Memory is bounded: rows go in batches (Options.BatchRows,
// Options.BatchBytes, one PostgreSQL transaction each) straight from
// bbolt's memory map; blobs one at a time per worker (Options.BlobWorkers).
package storecopy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/store"
	"github.com/groundgate/groundgate/store/boltstore"
	"github.com/groundgate/groundgate/store/pgstore"
)

// Source is the store copied from: *boltstore.Store.
type Source interface {
	store.Viewer
	Keyspaces(ctx context.Context) ([]boltstore.Keyspace, error)
}

// Target is the store copied into: *pgstore.Store.
type Target interface {
	store.Store
	Keyspaces(ctx context.Context) ([]pgstore.Keyspace, error)
	Import(ctx context.Context, space string, rows []pgstore.Row) error
	RaiseSequence(ctx context.Context, space string, n uint64) error
}

var (
	_ Source = (*boltstore.Store)(nil)
	_ Target = (*pgstore.Store)(nil)
)

// Options tune a copy. The zero value is usable, but copies no blob
// space to the object store: the wiring passes the owners' spaces.
type Options struct {
	// Blobs are the keyspaces whose values go to the object store, as their
	// owners declare them (artifacts.Space).
	Blobs []store.Space
	// BatchRows and BatchBytes bound one PostgreSQL transaction of rows:
	// 1,000 rows and 8 MiB by default.
	BatchRows, BatchBytes int
	// BlobWorkers is how many blobs are in flight at once: 4 by default.
	BlobWorkers int
	// Logger receives a line per keyspace at debug level; nil discards.
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.BatchRows <= 0 {
		o.BatchRows = 1000
	}
	if o.BatchBytes <= 0 {
		o.BatchBytes = 8 << 20
	}
	if o.BlobWorkers <= 0 {
		o.BlobWorkers = 4
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

func (o Options) blobSpace(name string) (store.Space, bool) {
	for _, sp := range o.Blobs {
		if sp.Name == name {
			return sp, true
		}
	}
	return store.Space{}, false
}

// Report is what a copy carried or a verification compared: the JSON that
// `groundgate migrate` prints (docs/operations.md).
type Report struct {
	Keyspaces []Keyspace `json:"keyspaces"`
	// Rows counts the keys of row keyspaces, Blobs those of blob
	// keyspaces; Bytes is their keys' and values' bytes.
	Rows  int64 `json:"rows"`
	Blobs int64 `json:"blobs"`
	Bytes int64 `json:"bytes"`
	// Problems lists every difference Verify found (empty after a copy).
	Problems []string `json:"problems"`
}

// Keyspace is one keyspace's part of a Report.
type Keyspace struct {
	Name string `json:"name"`
	// Blobs is set for a blob keyspace (kept in the object store).
	Blobs bool  `json:"blobs,omitempty"`
	Keys  int64 `json:"keys"`
	Bytes int64 `json:"bytes"`
	// Sequence is the source's NextSequence counter, carried over.
	Sequence uint64 `json:"sequence,omitempty"`
	// Digest is the SHA-256 of the keyspace's keys and values in key
	// order (each length-prefixed): equal on both sides when the copy
	// holds the same bytes. Set by Verify.
	Digest hashing.Digest `json:"digest,omitzero"`
}

// Check refuses, writing nothing, a copy of src into dst that would merge
// two histories (ErrConflict) or drop a nested bucket (ErrNested). A dst
// that is empty, or holds part of src as a copy left it, passes. It reads
// every row dst holds (none, for a first copy) and looks each up in src.
func Check(ctx context.Context, src Source, dst Target, opts Options) error {
	opts = opts.withDefaults()
	sks, err := src.Keyspaces(ctx)
	if err != nil {
		return err
	}
	inSource := map[string]bool{}
	for _, ks := range sks {
		if len(ks.Nested) > 0 {
			return fmt.Errorf("%w: bucket %s holds bucket(s) %q, which no release writes; refusing to copy a file it cannot carry whole", ErrNested, ks.Name, ks.Nested)
		}
		inSource[ks.Name] = true
	}
	dks, err := dst.Keyspaces(ctx)
	if err != nil {
		return err
	}
	var check []string
	for _, ks := range dks {
		if !inSource[ks.Name] {
			return fmt.Errorf("%w: it has keyspace %s (%d rows, sequence %d), which the source has not", ErrConflict, ks.Name, ks.Rows, ks.Sequence)
		}
		if ks.Rows > 0 {
			check = append(check, ks.Name)
		}
	}
	if len(check) == 0 {
		return nil
	}
	return src.View(ctx, func(stx store.Tx) error {
		return dst.View(ctx, func(dtx store.Tx) error {
			for _, name := range check {
				err := dtx.Scan(name, func(k, v []byte) error {
					if err := ctx.Err(); err != nil {
						return err
					}
					sv, err := stx.Value(name, k)
					switch {
					case errors.Is(err, store.ErrNotFound):
						return fmt.Errorf("%w: %s %s is not in the source", ErrConflict, name, quote(name, k))
					case err != nil:
						return err
					case !bytes.Equal(sv, v):
						return fmt.Errorf("%w: %s %s holds other bytes than the source's", ErrConflict, name, quote(name, k))
					}
					return nil
				})
				if err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// quote names a key in an error: a version's number, else its text.
func quote(space string, k []byte) string {
	if len(k) == 8 && strings.HasSuffix(space, ".versions") {
		return fmt.Sprintf("version %d", binary.BigEndian.Uint64(k))
	}
	return fmt.Sprintf("%q", k[:min(len(k), 80)])
}

// Copy checks (Check), then copies src into dst: every keyspace's rows or
// blobs, and every sequence. Run again after an interruption, it writes
// what is missing. It does not verify: call Verify.
func Copy(ctx context.Context, src Source, dst Target, opts Options) (Report, error) {
	opts = opts.withDefaults()
	rep := Report{Keyspaces: []Keyspace{}, Problems: []string{}}
	if err := Check(ctx, src, dst, opts); err != nil {
		return rep, err
	}
	sks, err := src.Keyspaces(ctx)
	if err != nil {
		return rep, err
	}
	// Sequences first: a number issued by the target after any of its
	// rows exist is then above every number of the source.
	for _, ks := range sks {
		if ks.Sequence > 0 {
			if err := dst.RaiseSequence(ctx, ks.Name, ks.Sequence); err != nil {
				return rep, err
			}
		}
	}
	for _, ks := range sks {
		start := time.Now()
		var out Keyspace
		if sp, ok := opts.blobSpace(ks.Name); ok {
			out, err = copyBlobs(ctx, src, dst, sp, opts)
		} else {
			out, err = copyRows(ctx, src, dst, ks.Name, opts)
		}
		if err != nil {
			return rep, err
		}
		out.Sequence = ks.Sequence
		rep.add(out)
		opts.Logger.Debug("storecopy: copied", "keyspace", ks.Name, "keys", out.Keys, "bytes", out.Bytes, "took", time.Since(start))
	}
	return rep, nil
}

func (r *Report) add(ks Keyspace) {
	r.Keyspaces = append(r.Keyspaces, ks)
	if ks.Blobs {
		r.Blobs += ks.Keys
	} else {
		r.Rows += ks.Keys
	}
	r.Bytes += ks.Bytes
}

// copyRows copies name's rows in batches, straight from the file's
// memory map (Import sends them before the read transaction ends).
func copyRows(ctx context.Context, src Source, dst Target, name string, opts Options) (Keyspace, error) {
	out := Keyspace{Name: name}
	batch := make([]pgstore.Row, 0, opts.BatchRows)
	size := 0
	flush := func() error {
		err := dst.Import(ctx, name, batch)
		batch, size = batch[:0], 0
		return err
	}
	err := src.View(ctx, func(tx store.Tx) error {
		err := tx.Scan(name, func(k, v []byte) error {
			if size+len(k)+len(v) > opts.BatchBytes && len(batch) > 0 {
				if err := flush(); err != nil {
					return err
				}
			}
			batch = append(batch, pgstore.Row{Key: k, Value: v})
			size += len(k) + len(v)
			out.Keys++
			out.Bytes += int64(len(k) + len(v))
			if len(batch) >= opts.BatchRows {
				return flush()
			}
			return nil
		})
		if err != nil {
			return err
		}
		return flush()
	})
	if err != nil {
		return out, fmt.Errorf("storecopy: %s: %w", name, err)
	}
	return out, nil
}

// copyBlobs sends sp's values to the target's object store, BlobWorkers
// at a time; a blob there with the same bytes is not sent again.
func copyBlobs(ctx context.Context, src Source, dst Target, sp store.Space, opts Options) (Keyspace, error) {
	out := Keyspace{Name: sp.Name, Blobs: true}
	type blob struct {
		key hashing.Digest
		raw []byte
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	work := make(chan blob)
	var wg sync.WaitGroup
	for range opts.BlobWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range work {
				if err := putBlob(ctx, dst, sp, b.key, b.raw); err != nil {
					cancel(err)
				}
			}
		}()
	}
	err := src.View(ctx, func(tx store.Tx) error {
		return tx.Scan(sp.Name, func(k, v []byte) error {
			key, err := hashing.Parse(string(k))
			if err != nil {
				return fmt.Errorf("blob key %q is not a digest: %w", k[:min(len(k), 80)], err)
			}
			out.Keys++
			out.Bytes += int64(len(k) + len(v))
			select {
			case work <- blob{key, bytes.Clone(v)}: // the map is not ours past the View
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		})
	})
	close(work)
	wg.Wait()
	if err == nil {
		err = context.Cause(ctx)
	}
	if err != nil {
		return out, fmt.Errorf("storecopy: %s: %w", sp.Name, err)
	}
	return out, nil
}

// putBlob stores raw under key unless the object store has those bytes
// there already (a copy run again). Other bytes under the key are
// replaced: a blob's key names its content, so they are the same blob in
// another envelope or one gone corrupt, not another history.
func putBlob(ctx context.Context, dst Target, sp store.Space, key hashing.Digest, raw []byte) error {
	same := false
	err := dst.View(ctx, func(tx store.Tx) error {
		have, err := tx.Blob(sp, key)
		switch {
		case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrCorrupt):
			return nil
		case err != nil:
			return err
		}
		same = bytes.Equal(have, raw)
		return nil
	})
	if err != nil || same {
		return err
	}
	return dst.Update(ctx, func(tx store.Tx) error { return tx.PutBlob(sp, key, raw) })
}

// Verify compares dst with src keyspace by keyspace: the same keys with the
// same bytes (a running digest over each side's Scan, in key order: no
// keyspace is held in memory) and sequences not behind the source's. The
// report has every keyspace's counts and digest and every difference;
// the error wraps ErrMismatch when there is one.
func Verify(ctx context.Context, src Source, dst Target, opts Options) (Report, error) {
	opts = opts.withDefaults()
	rep := Report{Keyspaces: []Keyspace{}, Problems: []string{}}
	sks, err := src.Keyspaces(ctx)
	if err != nil {
		return rep, err
	}
	dks, err := dst.Keyspaces(ctx)
	if err != nil {
		return rep, err
	}
	dseq := map[string]uint64{}
	inSource := map[string]bool{}
	for _, ks := range sks {
		inSource[ks.Name] = true
	}
	for _, ks := range dks {
		dseq[ks.Name] = ks.Sequence
		if !inSource[ks.Name] {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s: %d rows in the target, none in the source", ks.Name, ks.Rows))
		}
	}
	for _, ks := range sks {
		_, blobs := opts.blobSpace(ks.Name)
		s, err := digest(ctx, src, ks.Name)
		if err != nil {
			return rep, err
		}
		d, err := digest(ctx, dst, ks.Name)
		if err != nil {
			return rep, err
		}
		s.Blobs, s.Sequence = blobs, ks.Sequence
		rep.add(s)
		if s != (Keyspace{Name: s.Name, Blobs: blobs, Sequence: ks.Sequence, Keys: d.Keys, Bytes: d.Bytes, Digest: d.Digest}) {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s: source %d keys, %d bytes, %s; target %d keys, %d bytes, %s",
				ks.Name, s.Keys, s.Bytes, s.Digest, d.Keys, d.Bytes, d.Digest))
		}
		if dseq[ks.Name] < ks.Sequence {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s: sequence %d in the target, %d in the source", ks.Name, dseq[ks.Name], ks.Sequence))
		}
	}
	if len(rep.Problems) > 0 {
		return rep, fmt.Errorf("%w: %d difference(s), first: %s", ErrMismatch, len(rep.Problems), rep.Problems[0])
	}
	return rep, nil
}

// digest reads name through v and sums its keys and values in key order.
func digest(ctx context.Context, v store.Viewer, name string) (Keyspace, error) {
	out := Keyspace{Name: name}
	var h hash.Hash
	err := v.View(ctx, func(tx store.Tx) error {
		out, h = Keyspace{Name: name}, sha256.New()
		var n [binary.MaxVarintLen64]byte
		return tx.Scan(name, func(k, v []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			h.Write(n[:binary.PutUvarint(n[:], uint64(len(k)))])
			h.Write(k)
			h.Write(n[:binary.PutUvarint(n[:], uint64(len(v)))])
			h.Write(v)
			out.Keys++
			out.Bytes += int64(len(k) + len(v))
			return nil
		})
	})
	if err != nil {
		return out, fmt.Errorf("storecopy: digest %s: %w", name, err)
	}
	out.Digest = hashing.New(hashing.SHA256, h.Sum(nil))
	return out, nil
}
