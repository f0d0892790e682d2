package registry

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"github.com/groundgate/groundgate/hashing"
)

// On-disk layout (docs/hashing.md, "Stored records and versions").
//
// Records are content-addressed. A version does not list every entry:
// entries are partitioned into NumBuckets buckets by the first byte of
// SHA-256(name), each non-empty bucket is one content-addressed chunk, and
// a version's root lists its header and the digest of each bucket's chunk.
// Chunks are shared between versions, so a one-entry change writes one
// record, one chunk and one root, whatever the size of the registry.
//
// Versions written before chunks existed hold a legacy manifest (the header
// and every entry); they are read as they are and never rewritten.
var (
	bucketMeta       = []byte("registry.meta")       // "current" -> uint64 version
	bucketRecords    = []byte("registry.records")    // record digest -> canonical entry JSON
	bucketChunks     = []byte("registry.chunks")     // chunk digest -> canonical chunk JSON
	bucketVersions   = []byte("registry.versions")   // uint64 big-endian -> canonical root (or legacy manifest) JSON
	bucketNames      = []byte("registry.names")      // name -> identity (current version)
	bucketIdentities = []byte("registry.identities") // identity -> record digest (current version)

	keyCurrent = []byte("current")
)

// NumBuckets is how many chunks a version's entries are spread over. At
// 100,000 entries a chunk holds ~390 entries (~75 KB) and a root ~19 KB.
const NumBuckets = 256

// rootFormat marks a version stored as a root over chunks. Legacy
// manifests have no "format" field.
const rootFormat = 2

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
// Chunks (format 2: NumBuckets chunk digests, "" for an empty bucket) or
// Entries (a legacy manifest, every entry).
type versionDoc struct {
	VersionInfo
	Format  int        `json:"format,omitempty"`
	Chunks  []string   `json:"chunks,omitempty"`
	Entries []chunkRef `json:"entries,omitempty"`
}

// root is the decoded chunk list of a format-2 version. A zero digest is
// an empty bucket.
type root [NumBuckets]hashing.Digest

func (d *versionDoc) legacy() bool { return d.Format == 0 }

// decodeVersion decodes the bytes stored under key k, checks that they
// are in canonical form (one version, one spelling), that the key and
// the header agree, and that the document is either a well-formed root or
// a legacy manifest.
func decodeVersion(k, v []byte) (*versionDoc, *root, error) {
	if len(k) != 8 {
		return nil, nil, fmt.Errorf("%w: version key %x is not 8 bytes", ErrCorrupt, k)
	}
	n := binary.BigEndian.Uint64(k)
	var d versionDoc
	if err := decodeCanonical(v, &d, marshalVersion); err != nil {
		return nil, nil, fmt.Errorf("%w: version %d: %v", ErrCorrupt, n, err)
	}
	if d.Version != n {
		return nil, nil, fmt.Errorf("%w: version key %d holds version %d", ErrCorrupt, n, d.Version)
	}
	switch {
	case d.legacy():
		if d.Chunks != nil || len(d.Entries) == 0 {
			return nil, nil, fmt.Errorf("%w: version %d: a manifest lists entries and no chunks", ErrCorrupt, n)
		}
		return &d, nil, nil
	case d.Format == rootFormat:
		if d.Entries != nil || len(d.Chunks) != NumBuckets {
			return nil, nil, fmt.Errorf("%w: version %d: a root lists %d chunks, want %d, and no entries", ErrCorrupt, n, len(d.Chunks), NumBuckets)
		}
		var r root
		for b, s := range d.Chunks {
			if s == "" {
				continue
			}
			cd, err := hashing.Parse(s)
			if err != nil || cd.Algorithm() != hashing.SHA256 {
				return nil, nil, fmt.Errorf("%w: version %d, bucket %d: chunk %q is not a sha256 digest", ErrCorrupt, n, b, s)
			}
			r[b] = cd
		}
		return &d, &r, nil
	default:
		return nil, nil, fmt.Errorf("%w: version %d: unknown format %d", ErrCorrupt, n, d.Format)
	}
}

// encodeRoot is the canonical form of a format-2 version.
func encodeRoot(info VersionInfo, r *root) ([]byte, error) {
	d := versionDoc{VersionInfo: info, Format: rootFormat, Chunks: make([]string, NumBuckets)}
	for b, cd := range r {
		d.Chunks[b] = cd.String() // "" for an empty bucket
	}
	return marshalVersion(&d)
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
	if err := decodeCanonical(raw, &doc, func(c *chunkDoc) ([]byte, error) { return marshalChunk(c.Entries) }); err != nil {
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

func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}
