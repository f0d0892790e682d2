// Package boltstore is the embedded engine of package store: one bbolt
// file, as groundgate has always kept it.
//
// # Layout
//
// The engine maps the store's shapes onto the buckets and bytes every
// release has written, so an existing file opens and verifies unchanged:
//
//   - a keyspace name is a top-level bucket of the same name
//     ("policy.blobs", "calls.records"), created by the first write to it
//     (a file opened read-only, or never written, simply has none: reads
//     find nothing);
//   - a record or blob: key = the digest's text, "sha256:<64 hex>"
//     (hashing.Digest.Key); value = the bytes as given;
//   - a version: key = the number in 8 big-endian bytes (store.VersionKey);
//   - a log entry: key = log id ‖ 0x00 ‖ seq in 8 big-endian bytes
//     (store.EntryKey): a session's calls under its id;
//   - a value: its own key; NextSequence is the bucket's sequence.
//
// # Consistency
//
// bbolt has one writer at a time and readers on snapshots, so every
// Update is serialisable and the version sequence single by construction;
// a commit is durable (fsync) before Update returns. Batch shares one
// commit among the writers that arrive while another commit runs, and
// never waits for company that is not there (bolt.DB.Batch waits up to
// 10 ms for it).
package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/store"
)

// Store is the bbolt engine. It is safe for concurrent use.
type Store struct {
	db  *bolt.DB
	own bool // Close closes db

	mu      sync.Mutex
	queue   []*pending
	leading bool // a goroutine is committing a batch; the queue waits for it
	commits int  // batch commits begun, for tests
}

var _ store.Store = (*Store)(nil)

// Wrap returns the engine over db, an open bbolt file the caller keeps
// and closes (the registry's file, shared by every package).
func Wrap(db *bolt.DB) *Store { return &Store{db: db} }

// Open opens (creating it if need be) the bbolt file at path; Close
// closes it.
func Open(path string, opts *bolt.Options) (*Store, error) {
	db, err := bolt.Open(path, 0o600, opts)
	if err != nil {
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	return &Store{db: db, own: true}, nil
}

// DB is the bbolt file, for the packages that still open their buckets
// themselves (the registry's chunked versions).
func (s *Store) DB() *bolt.DB { return s.db }

// Close closes the file if Open opened it.
func (s *Store) Close() error {
	if !s.own {
		return nil
	}
	return s.db.Close()
}

// View implements store.Viewer.
func (s *Store) View(ctx context.Context, fn func(store.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return engineErr(s.db.View(func(btx *bolt.Tx) error { return fn(&tx{tx: btx}) }))
}

// Update implements store.Updater.
func (s *Store) Update(ctx context.Context, fn func(store.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return engineErr(s.db.Update(func(btx *bolt.Tx) error { return fn(&tx{tx: btx}) }))
}

// engineErr gives bbolt's own errors their store kinds.
func engineErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, berrors.ErrDatabaseReadOnly), errors.Is(err, berrors.ErrTxNotWritable):
		return fmt.Errorf("%w: %w", store.ErrReadOnly, err)
	case errors.Is(err, berrors.ErrDatabaseNotOpen), errors.Is(err, berrors.ErrTxClosed):
		return fmt.Errorf("%w: %w", store.ErrClosed, err)
	}
	return err
}

// Tx is a bbolt transaction seen as a store.Tx, for a package that still
// runs its own bbolt transactions and must write, in the same one, through
// a package that has moved onto the store (a session's call record and the
// call's footprint, calls.PutTx).
func Tx(btx *bolt.Tx) store.Tx { return &tx{tx: btx} }

// tx is one bbolt transaction seen as a store.Tx. It is used by one
// goroutine at a time, as a bbolt transaction is.
type tx struct {
	tx *bolt.Tx
	// buckets are the buckets opened in this transaction: a read-only
	// bbolt transaction opens a bucket anew on every Bucket call (a seek
	// and an allocation), which a registry open of 100,000 records would
	// pay per record.
	buckets map[string]*bolt.Bucket
	// cursors are, in a read-only transaction, one cursor per bucket that
	// every get seeks with (bolt.Bucket.Get allocates a cursor per call).
	cursors map[string]*bolt.Cursor
}

// bucket is name's bucket, nil when it does not exist.
func (t *tx) bucket(name string) *bolt.Bucket {
	if b, ok := t.buckets[name]; ok {
		return b
	}
	b := t.tx.Bucket([]byte(name))
	if b != nil {
		if t.buckets == nil {
			t.buckets = make(map[string]*bolt.Bucket)
		}
		t.buckets[name] = b
	}
	return b
}

// writable is name's bucket, created if need be, in a writing transaction.
func (t *tx) writable(name string) (*bolt.Bucket, error) {
	if !t.tx.Writable() {
		return nil, fmt.Errorf("%s: %w", name, store.ErrReadOnly)
	}
	if b := t.bucket(name); b != nil {
		return b, nil
	}
	b, err := t.tx.CreateBucket([]byte(name))
	if err != nil {
		return nil, fmt.Errorf("boltstore: create bucket %s: %w", name, err)
	}
	if t.buckets == nil {
		t.buckets = make(map[string]*bolt.Bucket)
	}
	t.buckets[name] = b
	return b, nil
}

// get is the value under key in name, nil when there is none (or it is a
// nested bucket, which is not the store's).
func (t *tx) get(name string, key []byte) []byte {
	b := t.bucket(name)
	if b == nil {
		return nil
	}
	if t.tx.Writable() {
		return b.Get(key) // writes move pages under a kept cursor
	}
	c, ok := t.cursors[name]
	if !ok {
		if t.cursors == nil {
			t.cursors = make(map[string]*bolt.Cursor)
		}
		c = b.Cursor()
		t.cursors[name] = c
	}
	if k, v := c.Seek(key); bytes.Equal(k, key) {
		return v
	}
	return nil
}

func (t *tx) Record(sp store.Space, key hashing.Digest) ([]byte, error) {
	raw := t.get(sp.Name, key.Key())
	if raw == nil {
		return nil, fmt.Errorf("%s %s: %w", sp.Name, key, store.ErrNotFound)
	}
	if err := sp.Verify(key, raw); err != nil {
		return nil, err
	}
	return raw, nil
}

func (t *tx) HasRecord(sp store.Space, key hashing.Digest) (bool, error) {
	return t.get(sp.Name, key.Key()) != nil, nil
}

func (t *tx) PutRecord(sp store.Space, key hashing.Digest, raw []byte) error {
	b, err := t.writable(sp.Name)
	if err != nil {
		return err
	}
	k := key.Key()
	if b.Get(k) != nil {
		return nil
	}
	if err := b.Put(k, raw); err != nil {
		return fmt.Errorf("boltstore: put %s %s: %w", sp.Name, key, err)
	}
	return nil
}

func (t *tx) DeleteRecord(sp store.Space, key hashing.Digest) error {
	return t.DeleteValue(sp.Name, key.Key())
}

func (t *tx) Scan(name string, fn func(key, raw []byte) error) error {
	b := t.bucket(name)
	if b == nil {
		return nil
	}
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if v == nil {
			continue // a nested bucket: not the store's
		}
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) LatestVersion(name string) (uint64, []byte, error) {
	b := t.bucket(name)
	if b == nil {
		return 0, nil, nil
	}
	k, v := b.Cursor().Last()
	if k == nil {
		return 0, nil, nil
	}
	if len(k) != 8 {
		return 0, nil, fmt.Errorf("%w: %s: version key %x is not a version number", store.ErrCorrupt, name, k)
	}
	return binary.BigEndian.Uint64(k), v, nil
}

func (t *tx) Version(name string, n uint64) ([]byte, error) {
	raw := t.get(name, store.VersionKey(n))
	if raw == nil {
		return nil, fmt.Errorf("%s version %d: %w", name, n, store.ErrNotFound)
	}
	return raw, nil
}

func (t *tx) PutVersion(name string, n uint64, raw []byte) error {
	b, err := t.writable(name)
	if err != nil {
		return err
	}
	latest, _, err := t.LatestVersion(name)
	if err != nil {
		return err
	}
	if n != latest+1 {
		return fmt.Errorf("%w: %s: version %d after %d", store.ErrConflict, name, n, latest)
	}
	if err := b.Put(store.VersionKey(n), raw); err != nil {
		return fmt.Errorf("boltstore: put %s version %d: %w", name, n, err)
	}
	return nil
}

func (t *tx) Entry(name string, log []byte, seq uint64) ([]byte, error) {
	raw := t.get(name, store.EntryKey(log, seq))
	if raw == nil {
		return nil, fmt.Errorf("%s %s entry %d: %w", name, log, seq, store.ErrNotFound)
	}
	return raw, nil
}

func (t *tx) AppendEntry(name string, log []byte, seq uint64, raw []byte) error {
	b, err := t.writable(name)
	if err != nil {
		return err
	}
	k := store.EntryKey(log, seq)
	if b.Get(k) != nil {
		return fmt.Errorf("%w: %s %s: entry %d is taken", store.ErrConflict, name, log, seq)
	}
	if seq > 0 && b.Get(store.EntryKey(log, seq-1)) == nil {
		return fmt.Errorf("%w: %s %s: entry %d follows no entry %d", store.ErrConflict, name, log, seq, seq-1)
	}
	if err := b.Put(k, raw); err != nil {
		return fmt.Errorf("boltstore: append %s %s entry %d: %w", name, log, seq, err)
	}
	return nil
}

func (t *tx) ScanLog(name string, log []byte, from uint64, fn func(seq uint64, raw []byte) error) error {
	b := t.bucket(name)
	if b == nil {
		return nil
	}
	prefix := append(bytes.Clone(log), 0)
	c := b.Cursor()
	for k, v := c.Seek(store.EntryKey(log, from)); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if len(k) != len(prefix)+8 {
			continue // another log whose id extends this one's past a zero byte
		}
		if err := fn(binary.BigEndian.Uint64(k[len(prefix):]), v); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) Value(name string, key []byte) ([]byte, error) {
	raw := t.get(name, key)
	if raw == nil {
		return nil, fmt.Errorf("%s %q: %w", name, clip(key), store.ErrNotFound)
	}
	return raw, nil
}

func (t *tx) PutValue(name string, key, raw []byte) error {
	b, err := t.writable(name)
	if err != nil {
		return err
	}
	if err := b.Put(key, raw); err != nil {
		return fmt.Errorf("boltstore: put %s %q: %w", name, clip(key), err)
	}
	return nil
}

func (t *tx) DeleteValue(name string, key []byte) error {
	if !t.tx.Writable() {
		return fmt.Errorf("%s: %w", name, store.ErrReadOnly)
	}
	b := t.bucket(name)
	if b == nil {
		return nil
	}
	if err := b.Delete(key); err != nil {
		return fmt.Errorf("boltstore: delete %s %q: %w", name, clip(key), err)
	}
	return nil
}

func (t *tx) NextSequence(name string) (uint64, error) {
	b, err := t.writable(name)
	if err != nil {
		return 0, err
	}
	n, err := b.NextSequence()
	if err != nil {
		return 0, fmt.Errorf("boltstore: %s sequence: %w", name, err)
	}
	return n, nil
}

func (t *tx) Blob(sp store.Space, key hashing.Digest) ([]byte, error) {
	return t.Record(sp, key)
}

func (t *tx) HasBlob(sp store.Space, key hashing.Digest) (bool, error) {
	return t.HasRecord(sp, key)
}

func (t *tx) PutBlob(sp store.Space, key hashing.Digest, raw []byte) error {
	return t.PutValue(sp.Name, key.Key(), raw)
}

// clip shortens a key quoted in an error.
func clip(k []byte) string {
	if len(k) > 80 {
		return string(k[:80]) + "…"
	}
	return string(k)
}
