// Package artifacts is groundgate's content-addressed blob store: the
// source data bytes of every execution and the outputs of every morphism,
// kept in the shared bbolt file and keyed by their BLAKE3 digest.
//
// # Layout
//
// One bucket, "artifacts.blobs": key = the digest string "blake3:<64 hex>"
// (hashing.Digest.Key) of the content. The value is the content in an
// envelope that says how it is stored:
//
//	"\x00GGB" codec payload
//
// codec 0: payload is the content; 1: payload is one zstd frame of it;
// 2: payload is a series table packed by series.Packer (the content is its
// canonical encoding); 3: payload is a recipe that a Deriver turns, from
// other stored blobs, back into the content (see Deriver). The key is always the digest of the content, never
// of the stored form, so a better compressor can never change a digest.
// A value without the envelope is content stored raw by the previous
// release, and is read as such.
//
// # Guarantees
//
//   - Writes are idempotent: putting content that is already stored
//     intact writes nothing. Putting it over a blob that has gone corrupt
//     repairs it.
//   - Reads are verified: Get decodes and re-hashes the stored bytes and
//     refuses to return content that does not hash to its key
//     (ErrCorrupt). A corrupt blob is reported, never served.
//   - Verify decodes and re-hashes every blob and lists every problem.
//
// Prepare does the CPU work of a write (hash, compress) outside any
// transaction, so workers can do it in parallel; PutBlobs stores prepared
// blobs in one transaction.
package artifacts

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"sync"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/series"
	"github.com/groundgate/groundgate/store"
)

// Bucket is the bbolt bucket holding the blobs.
var Bucket = []byte("artifacts.blobs")

// Space is the blobs' keyspace in the storage layer, declared here for
// what must know which keyspaces hold blobs (a copy to PostgreSQL + S3
// sends their values to the object store). Its check passes
// everything: reading a blob means decoding its envelope, and a recipe's
// decoding reads other blobs, so the store cannot check one alone; every
// read here decodes and re-hashes what it returns (contentOf), which is
// the check.
var Space = store.Space{Name: string(Bucket), Check: func(hashing.Digest, []byte) error { return nil }}

// Backend is what the blob store needs of the storage layer
// (registry.Store.Engine()).
type Backend interface {
	View(ctx context.Context, fn func(store.Tx) error) error
	Update(ctx context.Context, fn func(store.Tx) error) error
}

// storedValue is the value under d, nil when there is none (valid until the
// transaction ends).
func storedValue(tx store.Blobs, d hashing.Digest) ([]byte, error) {
	v, err := tx.Blob(Space, d)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return v, err
}

// envelope opens every value this release writes.
const envelope = "\x00GGB"

// Codecs: how a blob's content is stored inside the envelope.
const (
	codecRaw     byte = 0
	codecZstd    byte = 1
	codecTable   byte = 2
	codecDerived byte = 3
)

// A Deriver rebuilds a blob's content from a recipe and other blobs. A
// blob that is an exact function of blobs stored anyway (the executor's
// weights panels, from the signal, returns and volatility series that a
// whole parameter grid shares) is then stored as its recipe: a few hundred
// bytes instead of megabytes. Reads re-derive and re-hash it like any
// other blob, so a recipe that no longer derives its content is reported
// corrupt, never served. Inputs are series tables, read with get (which
// may hand the same decoded table to several derivations: it must not be
// modified) and never derived themselves: derivations are one level deep.
type Deriver interface {
	Derive(recipe []byte, get func(hashing.Digest) (*series.Table, error)) ([]byte, error)
}

// Store is the blob store. It is safe for concurrent use (the storage
// layer serialises the writes).
type Store struct {
	st     Backend
	log    *slog.Logger
	pack   *series.Packer
	derive Deriver
	// verifyCache bounds Verify's cache of decoded inputs; zero means
	// verifyCacheBytes (tests make it small).
	verifyCache int
}

// Option configures a Store.
type Option func(*Store)

// WithLogger sets the logger (discarding by default).
func WithLogger(l *slog.Logger) Option { return func(s *Store) { s.log = l } }

// WithDeriver sets the Deriver for derived blobs. Without one, derived
// blobs cannot be read (they are reported corrupt) or written.
func WithDeriver(d Deriver) Option { return func(s *Store) { s.derive = d } }

// Open returns the blob store over st, normally the registry's file
// (registry.Store.Engine()).
func Open(st Backend, opts ...Option) (*Store, error) {
	if st == nil {
		return nil, fmt.Errorf("artifacts: Open needs a store")
	}
	s := &Store{st: st, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, o := range opts {
		o(s)
	}
	var err error
	if s.pack, err = series.NewPacker(); err != nil {
		return nil, fmt.Errorf("artifacts: %w", err)
	}
	return s, nil
}

// Blob is content prepared for storage by Prepare.
type Blob struct {
	Digest hashing.Digest // BLAKE3 of the content
	Size   int            // the content's length
	stored []byte         // the envelope written to the bucket
}

// StoredSize is how many bytes the blob takes in the bucket.
func (b Blob) StoredSize() int { return len(b.stored) }

// Prepare hashes data and codes it for storage: a canonical series table
// is packed, anything else zstd-compressed, and either is kept raw when
// coding does not make it smaller. It does no I/O and is safe to call from
// many goroutines; data may be reused once it returns.
func (s *Store) Prepare(data []byte) (Blob, error) {
	b := Blob{Digest: hashing.SumBLAKE3(data), Size: len(data)}
	out := make([]byte, 0, len(envelope)+1+len(data)/4)
	out = append(out, envelope...)
	var err error
	switch {
	case series.IsEncoded(data):
		out, err = s.pack.Pack(append(out, codecTable), data)
		if err != nil {
			return Blob{}, fmt.Errorf("artifacts: pack %s: %w", b.Digest, err)
		}
	default:
		out = s.pack.Compress(append(out, codecZstd), data)
	}
	if len(out) >= len(envelope)+1+len(data) {
		out = append(append(out[:len(envelope)], codecRaw), data...)
	}
	b.stored = out
	return b, nil
}

// PrepareDerived prepares content to be stored as recipe: the caller has
// checked that the Deriver turns recipe into content (the store checks it
// again on every read).
func (s *Store) PrepareDerived(content, recipe []byte) (Blob, error) {
	if s.derive == nil {
		return Blob{}, fmt.Errorf("artifacts: no deriver for derived blobs")
	}
	out := append(append([]byte(envelope), codecDerived), recipe...)
	return Blob{Digest: hashing.SumBLAKE3(content), Size: len(content), stored: out}, nil
}

// reader reads blobs inside one transaction: derived blobs fetch their
// inputs through it. cache, when not nil, keeps decoded inputs across
// reads (Verify: a grid's derived blobs share a few large inputs).
type reader struct {
	s     *Store
	tx    store.Blobs
	cache *inputCache
	// mu, when not nil, serialises the reader's use of tx and cache, so
	// that several goroutines can decode and derive at once (Verify).
	mu *sync.Mutex
}

func (r reader) lock() {
	if r.mu != nil {
		r.mu.Lock()
	}
}

func (r reader) unlock() {
	if r.mu != nil {
		r.mu.Unlock()
	}
}

// decode returns the content a stored value holds, or an error when the
// value is not a well-formed envelope. A value without the envelope is
// returned as it is (raw content from the previous release).
func (r reader) decode(v []byte, derived bool) ([]byte, error) {
	if len(v) <= len(envelope) || string(v[:len(envelope)]) != envelope {
		return v, nil
	}
	payload := v[len(envelope)+1:]
	switch v[len(envelope)] {
	case codecRaw:
		return payload, nil
	case codecZstd:
		return r.s.pack.Decompress(payload)
	case codecTable:
		return r.s.pack.Unpack(nil, payload)
	case codecDerived:
		if !derived {
			return nil, fmt.Errorf("a derived blob used as the input of another")
		}
		if r.s.derive == nil {
			return nil, fmt.Errorf("a derived blob, and no deriver is configured")
		}
		return r.s.derive.Derive(payload, r.input)
	default:
		return nil, fmt.Errorf("unknown codec %d", v[len(envelope)])
	}
}

// input reads a derivation's input: a stored table that is not derived.
func (r reader) input(d hashing.Digest) (*series.Table, error) {
	r.lock()
	t, ok := r.cache.get(d)
	var v []byte
	var err error
	if !ok {
		v, err = storedValue(r.tx, d) // valid until the transaction ends
	}
	r.unlock()
	if ok {
		return t, nil
	}
	if err != nil {
		return nil, fmt.Errorf("input %s: %w", d, err)
	}
	if v == nil {
		return nil, fmt.Errorf("input %s: %w", d, ErrNotFound)
	}
	c, err := r.contentOf(d, v, false)
	if err != nil {
		return nil, err
	}
	if t, err = series.Decode(c); err != nil {
		return nil, fmt.Errorf("input %s: %w", d, err)
	}
	r.lock()
	defer r.unlock()
	if have, ok := r.cache.get(d); ok {
		return have, nil // another worker decoded it meanwhile
	}
	r.cache.put(d, t)
	return t, nil
}

// content decodes v and checks it against d.
func (s *Store) content(tx store.Blobs, d hashing.Digest, v []byte) ([]byte, error) {
	return reader{s: s, tx: tx}.contentOf(d, v, true)
}

// contentOf decodes v and checks it against d. A value that decodes but
// does not hash to d is tried as raw content, in case a blob of the
// previous release happens to start like an envelope.
func (r reader) contentOf(d hashing.Digest, v []byte, derived bool) ([]byte, error) {
	c, err := r.decode(v, derived)
	if err == nil && hashing.SumBLAKE3(c) == d {
		return c, nil
	}
	if hashing.SumBLAKE3(v) == d {
		return v, nil
	}
	if err != nil {
		return nil, fmt.Errorf("artifact %s: stored value does not decode (%v): %w", d, err, ErrCorrupt)
	}
	return nil, fmt.Errorf("artifact %s: stored content hashes to %s: %w", d, hashing.SumBLAKE3(c), ErrCorrupt)
}

// Put stores data under its BLAKE3 digest and returns the digest. Storing
// content that is already there intact writes nothing.
func (s *Store) Put(ctx context.Context, data []byte) (hashing.Digest, error) {
	b, err := s.Prepare(data)
	if err != nil {
		return hashing.Digest{}, err
	}
	if _, err := s.PutBlobs(ctx, []Blob{b}); err != nil {
		return hashing.Digest{}, err
	}
	return b.Digest, nil
}

// PutBlobs stores prepared blobs in one transaction and reports how many
// it wrote (blobs already stored intact are skipped).
func (s *Store) PutBlobs(ctx context.Context, blobs []Blob) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var todo []Blob
	if err := s.st.View(ctx, func(tx store.Tx) error {
		for _, b := range blobs {
			if s.needsWrite(tx, b) {
				todo = append(todo, b)
			}
		}
		return nil
	}); err != nil {
		return 0, fmt.Errorf("artifacts: put: %w", err)
	}
	if len(todo) == 0 {
		return 0, nil
	}
	n := 0
	err := s.st.Update(ctx, func(tx store.Tx) error {
		n = 0 // an engine may run fn again (store.Updater)
		for _, b := range todo {
			wrote, err := s.put(tx, b)
			if err != nil {
				return err
			}
			if wrote {
				n++
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("artifacts: put: %w", err)
	}
	return n, nil
}

// PutTx is Put inside the caller's writable transaction.
func (s *Store) PutTx(tx store.Blobs, data []byte) (hashing.Digest, error) {
	b, err := s.Prepare(data)
	if err != nil {
		return hashing.Digest{}, err
	}
	if _, err := s.put(tx, b); err != nil {
		return hashing.Digest{}, fmt.Errorf("artifacts: put %s: %w", b.Digest, err)
	}
	return b.Digest, nil
}

// put writes b unless an intact copy is already there, and reports
// whether it wrote.
func (s *Store) put(tx store.Blobs, b Blob) (bool, error) {
	if have, err := tx.HasBlob(Space, b.Digest); err != nil {
		return false, err
	} else if have {
		if !s.needsWrite(tx, b) {
			return false, nil
		}
		s.log.Warn("artifact repaired: stored bytes did not hash to their key", slog.String("digest", b.Digest.String()))
	}
	// bbolt keeps a reference to the value until the transaction ends;
	// b.stored is never modified after Prepare.
	return true, tx.PutBlob(Space, b.Digest, b.stored)
}

// needsWrite reports whether b must be written: nothing intact is stored
// under its digest, or content stored as a recipe comes again as a plain
// blob — a recipe's inputs must be stored as themselves (an all-NA
// weights panel can equal an all-NA input panel).
func (s *Store) needsWrite(tx store.Blobs, b Blob) bool {
	if !s.intact(tx, b) {
		return true
	}
	old, _ := storedValue(tx, b.Digest)
	return isDerived(old) && !isDerived(b.stored)
}

// intact reports whether the blob under b.Digest holds b's content: the
// same stored bytes (Prepare is deterministic), or bytes that decode to
// content with b's digest.
func (s *Store) intact(tx store.Blobs, b Blob) bool {
	v, err := storedValue(tx, b.Digest)
	if v == nil || err != nil {
		return false
	}
	if bytes.Equal(v, b.stored) {
		return true
	}
	_, err = s.content(tx, b.Digest, v)
	return err == nil
}

// Get returns the blob stored under d: ErrNotFound when there is none,
// ErrCorrupt (and no bytes) when the stored content no longer hashes to d.
func (s *Store) Get(ctx context.Context, d hashing.Digest) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []byte
	err := s.st.View(ctx, func(tx store.Tx) error {
		var err error
		out, err = s.GetTx(tx, d)
		return err
	})
	return out, err
}

// GetTx is Get inside the caller's transaction. The bytes are copied out of
// the memory map, so they stay valid after the transaction ends.
func (s *Store) GetTx(tx store.Blobs, d hashing.Digest) ([]byte, error) {
	if d.Algorithm() != hashing.BLAKE3 {
		return nil, fmt.Errorf("artifact %q: only blake3 digests are stored: %w", d, ErrNotFound)
	}
	v, err := storedValue(tx, d)
	if err != nil {
		return nil, fmt.Errorf("artifact %s: %w", d, err)
	}
	if v == nil {
		return nil, fmt.Errorf("artifact %s: %w", d, ErrNotFound)
	}
	c, err := s.content(tx, d, v)
	if err != nil {
		return nil, err
	}
	if aliases(c, v) {
		c = bytes.Clone(c) // raw content still points into the mmap
	}
	return c, nil
}

// Has reports whether an intact blob is stored under d.
func (s *Store) Has(ctx context.Context, d hashing.Digest) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	var have bool
	err := s.st.View(ctx, func(tx store.Tx) error {
		v, err := storedValue(tx, d)
		if v != nil {
			_, err = s.content(tx, d, v)
			have = err == nil
		}
		return nil
	})
	return have, err
}

// Missing returns the digests in ds that the store holds no value for, in
// one read transaction. It checks presence only: Verify checks that every
// stored value is intact, so a whole-file check hashes each blob once.
func (s *Store) Missing(ctx context.Context, ds []hashing.Digest) ([]hashing.Digest, error) {
	var out []hashing.Digest
	err := s.st.View(ctx, func(tx store.Tx) error {
		for _, d := range ds {
			if err := ctx.Err(); err != nil {
				return err
			}
			have, err := tx.HasBlob(Space, d)
			if err != nil {
				return err
			}
			if !have {
				out = append(out, d)
			}
		}
		return nil
	})
	return out, err
}

// Verify decodes and re-hashes every stored blob. It returns how many
// blobs it checked and one line per problem (a key that is not a blake3
// digest, a value that does not decode, content that hashes to another
// digest); err wraps ErrCorrupt when there is at least one problem, and
// is the storage error when the check could not run.
func (s *Store) Verify(ctx context.Context) (n int, problems []string, err error) {
	problems = []string{}
	err = s.st.View(ctx, func(tx store.Tx) error {
		// Gather every value (the slices stay valid while the transaction
		// is open), then decode and hash them on every core: stored blobs
		// first, derived ones after, ordered by recipe so that those
		// sharing inputs come together and find them cached.
		type item struct {
			d   hashing.Digest
			v   []byte
			msg string
		}
		var stored, derived []item
		err := tx.Scan(Space.Name, func(k, v []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			n++
			d, err := hashing.Parse(string(k))
			switch {
			case err != nil:
				problems = append(problems, fmt.Sprintf("key %q is not a digest: %v", clip(k), err))
			case d.Algorithm() != hashing.BLAKE3:
				problems = append(problems, fmt.Sprintf("key %s is not a blake3 digest", d))
			case isDerived(v):
				derived = append(derived, item{d: d, v: v})
			default:
				stored = append(stored, item{d: d, v: v})
			}
			return nil
		})
		if err != nil {
			return err
		}
		slices.SortFunc(derived, func(a, b item) int { return bytes.Compare(a.v, b.v) })
		rd := reader{s: s, tx: tx, cache: newInputCache(cmp.Or(s.verifyCache, verifyCacheBytes)), mu: &sync.Mutex{}}
		for _, items := range [][]item{stored, derived} {
			next := make(chan int)
			var wg sync.WaitGroup
			for range runtime.GOMAXPROCS(0) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range next {
						if _, err := rd.contentOf(items[i].d, items[i].v, true); err != nil {
							items[i].msg = err.Error()
						}
					}
				}()
			}
		feed:
			for i := range items {
				select {
				case next <- i:
				case <-ctx.Done():
					break feed
				}
			}
			close(next)
			wg.Wait()
			if err := ctx.Err(); err != nil {
				return err
			}
			for _, it := range items {
				if it.msg != "" {
					problems = append(problems, it.msg)
				}
			}
		}
		return nil
	})
	if err != nil {
		return n, problems, fmt.Errorf("artifacts: verify: %w", err)
	}
	if len(problems) > 0 {
		return n, problems, fmt.Errorf("artifacts: verify: %d problem(s) in %d blobs, first: %s: %w", len(problems), n, problems[0], ErrCorrupt)
	}
	return n, problems, nil
}

// isDerived reports whether a stored value is a recipe.
func isDerived(v []byte) bool {
	return len(v) > len(envelope) && string(v[:len(envelope)]) == envelope && v[len(envelope)] == codecDerived
}

// verifyCacheBytes bounds the decoded inputs Verify keeps.
const verifyCacheBytes = 128 << 20

// inputCache keeps recently decoded derivation inputs, up to a byte
// bound, evicting the oldest first. A nil cache keeps nothing.
type inputCache struct {
	limit, size int
	keys        []hashing.Digest
	vals        map[hashing.Digest]*series.Table
}

func newInputCache(limit int) *inputCache {
	return &inputCache{limit: limit, vals: map[hashing.Digest]*series.Table{}}
}

func (c *inputCache) get(d hashing.Digest) (*series.Table, bool) {
	if c == nil {
		return nil, false
	}
	t, ok := c.vals[d]
	return t, ok
}

func tableBytes(t *series.Table) int { return 8 * len(t.Dates) * (len(t.Cols) + 1) }

func (c *inputCache) put(d hashing.Digest, t *series.Table) {
	if c == nil || tableBytes(t) > c.limit {
		return
	}
	if _, ok := c.vals[d]; ok {
		return // one entry per key: eviction keeps keys and vals in step
	}
	for c.size+tableBytes(t) > c.limit && len(c.keys) > 0 {
		old := c.keys[0]
		c.keys = c.keys[1:]
		c.size -= tableBytes(c.vals[old])
		delete(c.vals, old)
	}
	c.keys = append(c.keys, d)
	c.vals[d] = t
	c.size += tableBytes(t)
}

// aliases reports whether c lies inside v's memory.
func aliases(c, v []byte) bool {
	if len(c) == 0 || len(c) > len(v) {
		return false
	}
	return &c[0] == &v[len(v)-len(c)] // raw content is always a suffix of its value
}

func clip(k []byte) string {
	if len(k) > 80 {
		return string(k[:80]) + "…"
	}
	return string(k)
}
