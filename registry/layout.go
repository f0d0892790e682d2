package registry

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/groundgate/groundgate/hashing"
)

// On-disk layout (docs/hashing.md, "Stored records and versions").
//
// Records are content-addressed. A version does not list every entry:
// entries are partitioned into NumBuckets buckets by the first byte of
// SHA-256(name), each non-empty bucket is one content-addressed chunk,
// the chunks are gathered NumGroups groups of groupSize consecutive
// buckets, each non-empty group one content-addressed list of its chunks'
// digests, and a version's root lists its header and the digest of each
// group. Chunks and groups are shared between versions, so a one-entry
// change writes one record, one chunk, one group and one root, whatever
// the size of the registry.
//
// Versions written before groups existed (format 2) list the digest of
// every chunk in their root: 256 digests, ~12–19 KB, for every version.
// Versions written before chunks existed hold a legacy manifest (the
// header and every entry). Both are read as they are and never rewritten.
var (
	bucketMeta       = []byte("registry.meta")       // "current" -> uint64 version
	bucketRecords    = []byte("registry.records")    // record digest -> canonical entry JSON
	bucketChunks     = []byte("registry.chunks")     // chunk digest -> canonical chunk JSON
	bucketGroups     = []byte("registry.groups")     // group digest -> canonical group JSON
	bucketVersions   = []byte("registry.versions")   // uint64 big-endian -> canonical root (or legacy manifest) JSON
	bucketNames      = []byte("registry.names")      // name -> identity (current version)
	bucketIdentities = []byte("registry.identities") // identity -> record digest (current version)

	keyCurrent = []byte("current")
)

// NumBuckets is how many chunks a version's entries are spread over. At
// 100,000 entries a chunk holds ~390 entries (~75 KB).
const NumBuckets = 256

// NumGroups is how many groups a version's chunks are gathered in, each
// of groupSize consecutive buckets: a root lists NumGroups digests and a
// group groupSize, ~1.2 KB each, which is the least an edit can write
// over two levels of 256 chunks (16 + 16 digests rather than 256).
const (
	NumGroups = 16
	groupSize = NumBuckets / NumGroups
)

// The formats of a version root. Legacy manifests have no "format" field.
const (
	formatChunks = 2 // the root lists NumBuckets chunk digests
	formatGroups = 3 // the root lists NumGroups group digests
)

// bucketOf is the chunk an entry name belongs to.
func bucketOf(name string) uint8 {
	return sha256.Sum256([]byte(name))[0]
}

// chunkRef is one entry of a chunk or of a legacy manifest: the name, the
// identity (so that registry hashes are recomputed without decoding
// records) and the digest of the full record.
type chunkRef struct {
	Name     string         `json:"name"`
	Identity hashing.Digest `json:"identity"`
	Record   hashing.Digest `json:"record"`
}

// chunkDoc is the stored form of one bucket: its entries sorted by name.
// It is keyed by the SHA-256 of its canonical bytes.
type chunkDoc struct {
	Entries []chunkRef `json:"entries"`
}

// versionDoc is the stored form of one version: the header and either
// Groups (format 3: NumGroups group digests, "" for an empty group),
// Chunks (format 2: NumBuckets chunk digests, "" for an empty bucket) or
// Entries (a legacy manifest, every entry).
type versionDoc struct {
	VersionInfo
	Format  int        `json:"format,omitempty"`
	Chunks  []string   `json:"chunks,omitempty"`
	Entries []chunkRef `json:"entries,omitempty"`
	Groups  []string   `json:"groups,omitempty"`

	// Set by decodeVersion: the digests Chunks (format 2) or Groups
	// (format 3) list.
	chunks *root
	groups *groupRoot
}

// root is the chunk list of a version stored over chunks (format 2, or
// format 3 once its groups are read). A zero digest is an empty bucket.
type root [NumBuckets]hashing.Digest

// groupRoot is the group list of a format-3 version. A zero digest is an
// empty group.
type groupRoot [NumGroups]hashing.Digest

// group is the chunk list of one group: the chunks of buckets
// g*groupSize to (g+1)*groupSize-1. A zero digest is an empty bucket.
type group [groupSize]hashing.Digest

func (d *versionDoc) legacy() bool { return d.Format == 0 }

// decodeVersion decodes the bytes stored under key k, checks that they
// are in canonical form (one version, one spelling), that the key and
// the header agree, and that the document is either a well-formed root
// (format 3 or 2) or a legacy manifest.
func decodeVersion(k, v []byte) (*versionDoc, error) {
	if len(k) != 8 {
		return nil, fmt.Errorf("%w: version key %x is not 8 bytes", ErrCorrupt, k)
	}
	n := binary.BigEndian.Uint64(k)
	var d versionDoc
	if err := decodeCanonical(v, &d, marshalVersion); err != nil {
		return nil, fmt.Errorf("%w: version %d: %v", ErrCorrupt, n, err)
	}
	if d.Version != n {
		return nil, fmt.Errorf("%w: version key %d holds version %d", ErrCorrupt, n, d.Version)
	}
	switch {
	case d.legacy():
		if d.Chunks != nil || d.Groups != nil || len(d.Entries) == 0 {
			return nil, fmt.Errorf("%w: version %d: a manifest lists entries and no chunks", ErrCorrupt, n)
		}
		return &d, nil
	case d.Format == formatChunks:
		if d.Entries != nil || d.Groups != nil || len(d.Chunks) != NumBuckets {
			return nil, fmt.Errorf("%w: version %d: a root lists %d chunks, want %d, and no entries or groups", ErrCorrupt, n, len(d.Chunks), NumBuckets)
		}
		var r root
		if err := parseDigests(r[:], d.Chunks); err != nil {
			return nil, fmt.Errorf("%w: version %d, %v", ErrCorrupt, n, err)
		}
		d.chunks = &r
		return &d, nil
	case d.Format == formatGroups:
		if d.Entries != nil || d.Chunks != nil || len(d.Groups) != NumGroups {
			return nil, fmt.Errorf("%w: version %d: a root lists %d groups, want %d, and no entries or chunks", ErrCorrupt, n, len(d.Groups), NumGroups)
		}
		var g groupRoot
		if err := parseDigests(g[:], d.Groups); err != nil {
			return nil, fmt.Errorf("%w: version %d, %v", ErrCorrupt, n, err)
		}
		d.groups = &g
		return &d, nil
	default:
		return nil, fmt.Errorf("%w: version %d: unknown format %d", ErrCorrupt, n, d.Format)
	}
}

// parseDigests parses a list of sha256 digests, "" for a zero one.
func parseDigests(out []hashing.Digest, ss []string) error {
	for i, s := range ss {
		if s == "" {
			continue
		}
		d, err := hashing.Parse(s)
		if err != nil || d.Algorithm() != hashing.SHA256 {
			return fmt.Errorf("entry %d: %q is not a sha256 digest", i, s)
		}
		out[i] = d
	}
	return nil
}

// digestStrings is the stored form of a digest list: "" for a zero one.
func digestStrings(ds []hashing.Digest) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.String() // "" for a zero digest
	}
	return out
}

// encodeRoot is the canonical form of a format-3 version.
func encodeRoot(info VersionInfo, g *groupRoot) ([]byte, error) {
	d := versionDoc{VersionInfo: info, Format: formatGroups, Groups: digestStrings(g[:])}
	return marshalVersion(&d)
}

// groupDoc is the stored form of a group, keyed by the SHA-256 of its
// canonical bytes.
type groupDoc struct {
	Chunks []string `json:"chunks"`
}

// groupOf is group g of chunk list r.
func groupOf(r *root, g int) *group {
	return (*group)(r[g*groupSize : (g+1)*groupSize])
}

// encodeGroup is the canonical form of a group; the zero digest and no
// bytes for an empty one.
func encodeGroup(cs *group) ([]byte, hashing.Digest, error) {
	if *cs == (group{}) {
		return nil, hashing.Digest{}, nil
	}
	b, err := marshalGroup(&groupDoc{Chunks: digestStrings(cs[:])})
	if err != nil {
		return nil, hashing.Digest{}, err
	}
	return b, hashing.SumSHA256(b), nil
}

// decodeGroup checks group bytes against their digest and their own
// rules: canonical, groupSize chunk digests, not all empty.
func decodeGroup(d hashing.Digest, raw []byte) (*group, error) {
	if raw == nil {
		return nil, fmt.Errorf("%w: group %s is missing", ErrCorrupt, d)
	}
	if got := hashing.SumSHA256(raw); got != d {
		return nil, fmt.Errorf("%w: group %s hashes to %s", ErrCorrupt, d, got)
	}
	var doc groupDoc
	if err := decodeCanonical(raw, &doc, marshalGroup); err != nil {
		return nil, fmt.Errorf("%w: group %s: %v", ErrCorrupt, d, err)
	}
	if len(doc.Chunks) != groupSize {
		return nil, fmt.Errorf("%w: group %s lists %d chunks, want %d", ErrCorrupt, d, len(doc.Chunks), groupSize)
	}
	var cs group
	if err := parseDigests(cs[:], doc.Chunks); err != nil {
		return nil, fmt.Errorf("%w: group %s, %v", ErrCorrupt, d, err)
	}
	if cs == (group{}) {
		return nil, fmt.Errorf("%w: group %s is empty", ErrCorrupt, d)
	}
	return &cs, nil
}

// encodeChunk is the canonical form of a bucket's entries (sorted by name).
func encodeChunk(refs []chunkRef) ([]byte, hashing.Digest, error) {
	b, err := marshalChunk(refs)
	if err != nil {
		return nil, hashing.Digest{}, err
	}
	return b, hashing.SumSHA256(b), nil
}

// decodeChunk checks chunk bytes against their digest and their own rules:
// canonical, non-empty, names strictly increasing and all in one bucket,
// which it returns.
func decodeChunk(d hashing.Digest, raw []byte) ([]chunkRef, uint8, error) {
	if raw == nil {
		return nil, 0, fmt.Errorf("%w: chunk %s is missing", ErrCorrupt, d)
	}
	if got := hashing.SumSHA256(raw); got != d {
		return nil, 0, fmt.Errorf("%w: chunk %s hashes to %s", ErrCorrupt, d, got)
	}
	var doc chunkDoc
	var err error
	if doc.Entries, err = parseChunk(raw); err != nil {
		// For the error's words.
		err = decodeCanonical(raw, &doc, func(c *chunkDoc) ([]byte, error) { return marshalChunk(c.Entries) })
		if err == nil {
			err = errors.New("unreadable") // parseChunk reads every canonical chunk (FuzzCodecMatchesJCS)
		}
		return nil, 0, fmt.Errorf("%w: chunk %s: %v", ErrCorrupt, d, err)
	}
	if len(doc.Entries) == 0 {
		return nil, 0, fmt.Errorf("%w: chunk %s is empty", ErrCorrupt, d)
	}
	b := bucketOf(doc.Entries[0].Name)
	for i, e := range doc.Entries {
		if i > 0 && e.Name <= doc.Entries[i-1].Name {
			return nil, 0, fmt.Errorf("%w: chunk %s: names not strictly sorted at %q", ErrCorrupt, d, e.Name)
		}
		if bucketOf(e.Name) != b {
			return nil, 0, fmt.Errorf("%w: chunk %s mixes buckets (%q)", ErrCorrupt, d, e.Name)
		}
	}
	return doc.Entries, b, nil
}

// parseChunk reads chunk bytes in the one form marshalChunk writes,
// refusing every other: at 100,000 entries an open reads 20 MB of chunks,
// which encoding/json decodes in a third of a second. It allocates only
// what it returns.
func parseChunk(raw []byte) ([]chunkRef, error) {
	r := recordReader{b: raw}
	lit := func(s string) error {
		if !bytes.HasPrefix(raw[r.i:], []byte(s)) {
			return fmt.Errorf("%w: want %s at byte %d", hashing.ErrMalformed, s, r.i)
		}
		r.i += len(s)
		return nil
	}
	digest := func() (hashing.Digest, error) {
		end := bytes.IndexByte(raw[r.i:], '"')
		if end < 0 {
			return hashing.Digest{}, fmt.Errorf("%w: unterminated digest at byte %d", hashing.ErrMalformed, r.i)
		}
		d, err := parseDigest(raw[r.i : r.i+end])
		r.i += end + 1
		return d, err
	}
	if err := lit(`{"entries":[`); err != nil {
		return nil, err
	}
	refs := make([]chunkRef, 0, bytes.Count(raw, []byte(`{"identity":`)))
	var scratch []byte
	for {
		var ref chunkRef
		var err error
		if err = lit(`{"identity":"`); err != nil {
			return nil, err
		}
		if ref.Identity, err = digest(); err != nil {
			return nil, err
		}
		if err = lit(`,"name":`); err != nil {
			return nil, err
		}
		from := r.i
		if ref.Name, err = r.str(false); err != nil {
			return nil, err
		}
		// One spelling: the name as appendString writes it (escapes,
		// UTF-8). Digests parse only in their one spelling.
		if scratch = appendString(scratch[:0], ref.Name); !bytes.Equal(scratch, raw[from:r.i]) {
			return nil, fmt.Errorf("%w: not in canonical form (name at byte %d)", hashing.ErrMalformed, from)
		}
		if err = lit(`,"record":"`); err != nil {
			return nil, err
		}
		if ref.Record, err = digest(); err != nil {
			return nil, err
		}
		if err = lit(`}`); err != nil {
			return nil, err
		}
		refs = append(refs, ref)
		if r.i < len(raw) && raw[r.i] == ',' {
			r.i++
			continue
		}
		if err = lit(`]}`); err != nil {
			return nil, err
		}
		if r.i != len(raw) {
			return nil, fmt.Errorf("%w: trailing data at byte %d", hashing.ErrMalformed, r.i)
		}
		return refs, nil
	}
}

// parseDigest is hashing.Parse of tok, without making a string of it.
func parseDigest(tok []byte) (hashing.Digest, error) {
	var a hashing.Algorithm
	switch {
	case bytes.HasPrefix(tok, []byte("sha256:")):
		a = hashing.SHA256
	case bytes.HasPrefix(tok, []byte("blake3:")):
		a = hashing.BLAKE3
	}
	h := tok[min(len(tok), 7):]
	var sum [hashing.Size]byte
	ok := a != 0 && len(h) == 2*hashing.Size
	for i := 0; ok && i < len(sum); i++ {
		hi, ok1 := lowerHex(h[2*i])
		lo, ok2 := lowerHex(h[2*i+1])
		sum[i], ok = hi<<4|lo, ok1 && ok2
	}
	if !ok {
		return hashing.Parse(string(tok)) // for its error
	}
	return hashing.New(a, sum[:]), nil
}

// lowerHex is the value of a lower-case hex digit (digests have no other).
func lowerHex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// registryHash is hashing.RegistryHash without a string per identity: at
// 100,000 entries those are 45 MB of garbage per open.
func registryHash(ids []hashing.Digest) hashing.Digest {
	arena := make([]byte, 0, len(ids)*(len("sha256:")+2*hashing.Size))
	keys := make([][]byte, len(ids))
	for i, id := range ids {
		from := len(arena)
		arena = appendKey(arena, id)
		keys[i] = arena[from:len(arena):len(arena)]
	}
	slices.SortFunc(keys, bytes.Compare) // byte order, as sort.Strings
	h := sha256.New()
	for _, k := range keys {
		h.Write(k)
		h.Write([]byte{'\n'})
	}
	var sum [sha256.Size]byte
	return hashing.New(hashing.SHA256, h.Sum(sum[:0]))
}

// appendKey appends d's bbolt key, d.Key(), to b.
func appendKey(b []byte, d hashing.Digest) []byte {
	b = append(b, d.Algorithm().String()...)
	b = append(b, ':')
	return hex.AppendEncode(b, d.Sum())
}

func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}
