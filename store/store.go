// Package store is groundgate's one storage layer (SPEC §17): the small
// interfaces every engine implements and every domain package writes
// through, so that "verify the hash on read", the version sequence, the
// append-only logs and group commit are written once, not once per
// package.
//
// # What is stored
//
// Four shapes, each in a named keyspace (a Space or a name: the bbolt
// bucket today, a table or key prefix in another engine):
//
//   - Records: values addressed by a digest and checked on every read
//     (RecordReader, RecordWriter). The check is the Space's: by default
//     the bytes must hash, under the key's algorithm, to the key. A read
//     whose bytes fail it is ErrCorrupt (errkind.Corrupt), never served; an
//     absent key is ErrNotFound (errkind.NotFound).
//   - Versions: one sequence 1, 2, 3… per name (Versions): the policy
//     set's versions. PutVersion takes the next number only; any other is
//     ErrConflict, so two writers never both make version n.
//   - Logs: append-only sequences of entries 0, 1, 2… per log id (Logs):
//     a session's turns and calls. AppendEntry at a position that is taken
//     or not next is ErrConflict.
//   - Values: mutable documents under plain keys (Values): headers,
//     pointers such as "current", the newest state.
//
// and Blobs, big content-addressed payloads (executions' artifacts) that
// an engine may keep apart from the rest (an object store).
//
// Get (read and decode one record in a View of its own), Verify and
// VerifyIn (re-check every record of a Space: "registry verify") are the
// helpers a domain package's reads and verification are built from.
//
// # Transactions
//
// Every method above is a method of Tx, one transaction: a Store's View
// runs a function on a snapshot, Update commits all its writes at once or
// none, and Batch is Update for many concurrent small writers, who may
// share one commit (group commit: one fsync for all). A domain operation
// that must write several things atomically (a call's footprint and the
// session's call record; a policy and the set's version naming it) does it
// in one Update.
//
// # What every engine promises
//
// These are the guarantees the storetest suite checks, and what a
// PostgreSQL engine must give as well as the embedded bbolt one:
//
//   - Durability: once Update or Batch returns nil, the writes survive a
//     crash and a reopen (an acknowledged write is never lost).
//   - Atomicity: an Update whose function returns an error writes
//     nothing. Blobs are the one exception an engine may take: a blob put
//     in a transaction that then fails may stay (content-addressed, an
//     orphan is harmless and is never read through a record).
//   - Isolation: a View sees one consistent snapshot; Updates are
//     serialisable (bbolt has one writer; PostgreSQL runs them
//     SERIALIZABLE or locks what they read).
//   - Read-your-writes everywhere: a write acknowledged by any process is
//     seen by every View begun afterwards on any process sharing the
//     store (several servers over one PostgreSQL: no lagging replica
//     serves reads).
//   - One version sequence per name, across every process.
//   - Records and blobs are immutable: a key always holds the same bytes,
//     so PutRecord and PutBlob of a key that is there write nothing.
//
// Bytes returned inside a transaction are valid only until it ends (bbolt
// hands out its memory map); copy what must outlive it.
//
// The bbolt engine is package store/boltstore. Domain packages declare, where
// they use it, the part of Tx they need, and take a Store.
package store

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/groundgate/groundgate/hashing"
)

// Space is a keyspace of records or blobs and the check every read of it
// applies. Spaces are declared by the domain package that owns them, next
// to the code that writes them.
type Space struct {
	// Name is the keyspace: the bbolt bucket ("policy.blobs"); another
	// engine uses it as a table or key prefix. Names are part of the
	// on-disk format: never rename one.
	Name string
	// Check decides whether raw may be served as the record under key; an
	// error makes the read ErrCorrupt. Nil is Hashed: raw must hash, under
	// key's algorithm, to key. Records keyed by something else than the
	// hash of their bytes (a call footprint's call hash) give their own.
	Check func(key hashing.Digest, raw []byte) error
}

// Hashed is the check of a content-addressed record: raw hashes, under
// key's algorithm, to key.
func Hashed(key hashing.Digest, raw []byte) error {
	var got hashing.Digest
	switch key.Algorithm() {
	case hashing.SHA256:
		got = hashing.SumSHA256(raw)
	case hashing.BLAKE3:
		got = hashing.SumBLAKE3(raw)
	default:
		return fmt.Errorf("key %s names no algorithm", key)
	}
	if got != key {
		return fmt.Errorf("bytes hash to %s", got)
	}
	return nil
}

// SHA256 is the check of a record addressed by the SHA-256 of its bytes
// and by nothing else (evidence, groundings, policies): a key of another
// algorithm is a problem even if the bytes hash to it.
func SHA256(key hashing.Digest, raw []byte) error {
	if key.Algorithm() != hashing.SHA256 {
		return fmt.Errorf("key %s is not a sha256 digest", key)
	}
	return Hashed(key, raw)
}

// Verify runs sp's check (Hashed when it has none) on raw as read under
// key, wrapping a failure in ErrCorrupt. Engines call it on every read;
// a domain package's own verification calls it too.
func (sp Space) Verify(key hashing.Digest, raw []byte) error {
	check := sp.Check
	if check == nil {
		check = Hashed
	}
	if err := check(key, raw); err != nil {
		return fmt.Errorf("%w: %s %s: %v", ErrCorrupt, sp.Name, key, err)
	}
	return nil
}

// RecordReader reads records.
type RecordReader interface {
	// Record returns the bytes stored under key in sp, checked by sp's
	// check: ErrNotFound when there are none, ErrCorrupt when they fail.
	Record(sp Space, key hashing.Digest) ([]byte, error)
	// HasRecord reports whether key is stored in sp, without reading or
	// checking it: a writer's "is it there already" before a Batch.
	HasRecord(sp Space, key hashing.Digest) (bool, error)
}

// RecordWriter writes records.
type RecordWriter interface {
	// PutRecord stores raw under key unless key holds bytes already (a key
	// always holds the same bytes). It does not check raw: the writer
	// computed key from it.
	PutRecord(sp Space, key hashing.Digest, raw []byte) error
	// DeleteRecord removes key from sp (retention: the fuzz findings no
	// kept run lists); removing an absent key is no error. A record is
	// never changed, only written once and perhaps removed.
	DeleteRecord(sp Space, key hashing.Digest) error
}

// Scanner lists a keyspace for verification and maintenance.
type Scanner interface {
	// Scan calls fn with every key and value stored under name, in key
	// order, unchecked (a verifier reports each bad one rather than
	// stopping at the first). Keys are the engine's encoding: a record's
	// or blob's is its digest's text (hashing.Digest.Key), a version's
	// VersionKey, a log entry's EntryKey, a value's its own key. An
	// error from fn stops the scan and is returned. fn may read through
	// the transaction but not write the keyspace it scans (an engine that
	// cannot interleave, one connection per transaction, reads the scan
	// in pages before calling fn).
	Scan(name string, fn func(key, raw []byte) error) error
}

// Versions is a single version sequence per name: 1, 2, 3…, each version
// written once.
type Versions interface {
	// LatestVersion returns the newest version number and its bytes; 0 and
	// nil when none is stored.
	LatestVersion(name string) (uint64, []byte, error)
	// Version returns the bytes of version n: ErrNotFound when it is not
	// stored.
	Version(name string, n uint64) ([]byte, error)
	// PutVersion stores version n, which must be the latest plus one:
	// any other n is ErrConflict (another writer made it first, or the
	// caller skipped one). Across processes sharing the store, exactly one
	// PutVersion of a given n succeeds.
	PutVersion(name string, n uint64, raw []byte) error
}

// Logs are append-only sequences of entries 0, 1, 2… under a log id (a
// session's id) in a named keyspace.
type Logs interface {
	// Entry returns entry seq of log: ErrNotFound when it is not stored.
	Entry(name string, log []byte, seq uint64) ([]byte, error)
	// AppendEntry stores raw as entry seq of log. seq must be the log's
	// length: ErrConflict when entry seq exists (another writer appended
	// at that position) or when entry seq-1 does not (a gap).
	AppendEntry(name string, log []byte, seq uint64, raw []byte) error
	// ScanLog calls fn with each entry of log from seq from on, in order.
	ScanLog(name string, log []byte, from uint64, fn func(seq uint64, raw []byte) error) error
}

// Values are mutable documents under plain keys.
type Values interface {
	// Value returns the bytes under key in name: ErrNotFound when absent.
	Value(name string, key []byte) ([]byte, error)
	// PutValue stores raw under key, replacing what was there.
	PutValue(name string, key, raw []byte) error
	// DeleteValue removes key; removing an absent key is no error.
	DeleteValue(name string, key []byte) error
	// NextSequence returns a number unique in name, increasing: 1, 2, 3…
	// (bbolt's bucket sequence; a PostgreSQL sequence).
	NextSequence(name string) (uint64, error)
}

// Blobs are big content-addressed payloads.
type Blobs interface {
	// Blob returns the bytes stored under key in sp, checked by sp's
	// check: ErrNotFound, ErrCorrupt as for Record. A blob's stored form
	// may be an envelope its owner decodes (artifacts' compression), whose
	// Check then decodes it or, when decoding needs other blobs, leaves it
	// to the owner, which checks what it decodes.
	Blob(sp Space, key hashing.Digest) ([]byte, error)
	// HasBlob reports whether key is stored in sp, without reading it.
	HasBlob(sp Space, key hashing.Digest) (bool, error)
	// PutBlob stores raw under key, replacing what is there (a blob put
	// over one that has gone corrupt repairs it; its owner decides when
	// to write, see HasBlob).
	PutBlob(sp Space, key hashing.Digest, raw []byte) error
}

// Tx is one transaction over every shape. A Tx from View refuses writes
// (ErrReadOnly).
type Tx interface {
	RecordReader
	RecordWriter
	Scanner
	Versions
	Logs
	Values
	Blobs
}

// Viewer runs read transactions.
type Viewer interface {
	// View runs fn in a read-only transaction: one snapshot. ctx is
	// checked before fn runs; fn checks it in long loops.
	View(ctx context.Context, fn func(Tx) error) error
}

// Updater runs writing transactions.
type Updater interface {
	// Update runs fn in a writing transaction and commits it: when Update
	// returns nil, every write fn made is durable; when fn returns an
	// error, none is made and Update returns it. An engine may run fn
	// again on a fresh transaction when it aborted the first for a
	// conflict with another writer (PostgreSQL's serialisation failures):
	// fn must read and write through tx only and start from the same
	// values on every run (reset what it accumulates; copy what it
	// mutates). When the engine gives up, the error is of kind busy.
	Update(ctx context.Context, fn func(Tx) error) error
	// Batch is Update for many concurrent writers: calls made while a
	// commit is in progress share the next one (one fsync). fn may run
	// more than once (when a shared commit fails, each fn is retried in a
	// commit of its own, so that one writer's failure is not the
	// others'): it must only write, deterministically, what it was called
	// to write. Batch returns once fn's own writes are durable.
	Batch(ctx context.Context, fn func(Tx) error) error
}

// Store is an engine: read and write transactions.
type Store interface {
	Viewer
	Updater
}

// VersionKey is a version number's key: 8 bytes, big-endian, so keys sort
// as numbers.
func VersionKey(n uint64) []byte { return binary.BigEndian.AppendUint64(make([]byte, 0, 8), n) }

// EntryKey is the key of entry seq of log: the log id, a zero byte, then
// seq in 8 big-endian bytes, so that a log's entries are contiguous and in
// order.
func EntryKey(log []byte, seq uint64) []byte {
	k := make([]byte, 0, len(log)+9)
	k = append(append(k, log...), 0)
	return binary.BigEndian.AppendUint64(k, seq)
}
