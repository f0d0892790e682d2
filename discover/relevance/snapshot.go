package relevance

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
)

// A snapshot is an index written to bytes, so that a process can read it
// back instead of analysing every document again (what a start on a large
// registry costs). It is derived data: a reader checks its checksum and
// that it was scored by the same rule, and on any doubt the caller builds
// the index afresh. An index read back holds the same documents, terms and
// frequencies as the one written, so it scores every prompt the same.

// snapshotMagic starts every snapshot; its last byte is the format.
var snapshotMagic = []byte("groundgate/relevance-snapshot/1\n")

// WriteSnapshot writes the index to w: documents in slot order and terms
// renumbered by first use, then the SHA-256 of everything before it.
func (x *Index) WriteSnapshot(w io.Writer) error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, h), 1<<16)
	var buf []byte
	flush := func() error {
		_, err := bw.Write(buf)
		buf = buf[:0]
		return err
	}
	str := func(s string) {
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	buf = append(buf, snapshotMagic...)
	str(x.scoring)
	// Terms in order of first use by the documents in slot order: ids
	// that are dense whatever was removed before.
	ids := make(map[uint32]uint32, x.dict.n)
	var order []uint32
	for _, d := range x.docs {
		if d == nil {
			continue
		}
		for _, id := range d.terms {
			if _, ok := ids[id]; !ok {
				ids[id] = uint32(len(order))
				order = append(order, id)
			}
		}
	}
	buf = binary.AppendUvarint(buf, uint64(x.n))
	buf = binary.AppendUvarint(buf, uint64(len(order)))
	for _, id := range order {
		t := x.terms[id]
		k := x.dict.bytes(id)
		buf = binary.AppendUvarint(buf, uint64(len(k)))
		buf = append(buf, k...)
		buf = binary.AppendVarint(buf, int64(t.vec))
		if len(buf) > 1<<15 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	for s, d := range x.docs {
		if d == nil {
			continue
		}
		str(d.name)
		buf = append(buf, d.hash[:]...)
		for _, l := range d.lens {
			buf = binary.AppendUvarint(buf, uint64(l))
		}
		group := ""
		if d.group != nil {
			group = d.group.name
		}
		str(group)
		buf = binary.AppendUvarint(buf, uint64(len(d.vecs)))
		for _, v := range d.vecs {
			buf = binary.AppendVarint(buf, int64(v))
		}
		buf = binary.AppendUvarint(buf, uint64(len(d.terms)))
		for _, id := range d.terms {
			p, _ := x.posting(id, uint32(s))
			buf = binary.AppendUvarint(buf, uint64(ids[id]))
			buf = binary.AppendUvarint(buf, uint64(p.tf))
		}
		if len(buf) > 1<<15 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(h.Sum(nil))
	return err
}

// Bounds on what a snapshot may declare, so that damaged bytes cannot ask
// for a huge allocation: counts grow as they are read.
const (
	maxSnapCount  = 1 << 26
	maxSnapString = 1 << 20
)

// ReadSnapshot reads an index WriteSnapshot wrote, size bytes from r, for
// the vectors vec and constants cfg. It streams: the bytes are not held
// at once. A snapshot scored by another rule, constants or vector table,
// or whose checksum fails, is refused with an error wrapping ErrSnapshot.
func ReadSnapshot(r io.Reader, size int64, vec *Vectors, cfg Config) (*Index, error) {
	x, err := New(vec, cfg)
	if err != nil {
		return nil, err
	}
	if size < int64(len(snapshotMagic))+sha256.Size {
		return nil, fmt.Errorf("%w: %d bytes", ErrSnapshot, size)
	}
	h := sha256.New()
	sr := &snapReader{br: bufio.NewReaderSize(io.TeeReader(io.LimitReader(r, size-sha256.Size), h), 1<<16)}
	if magic := sr.bytes(len(snapshotMagic)); sr.err != nil || !bytes.Equal(magic, snapshotMagic) {
		return nil, fmt.Errorf("%w: no snapshot header", ErrSnapshot)
	}
	if s := sr.str(); s != x.scoring {
		return nil, fmt.Errorf("%w: scored by %.20s…, this index scores by %.20s…", ErrSnapshot, s, x.scoring)
	}
	nDocs, nTerms := sr.uint(maxSnapCount), sr.uint(maxSnapCount)
	if err := x.readSnapshot(sr, nDocs, nTerms); err != nil {
		return nil, err
	}
	if _, err := sr.br.ReadByte(); err != io.EOF {
		return nil, fmt.Errorf("%w: bytes after the documents", ErrSnapshot)
	}
	sum := make([]byte, sha256.Size)
	if _, err := io.ReadFull(r, sum); err != nil || !bytes.Equal(sum, h.Sum(nil)) {
		return nil, fmt.Errorf("%w: checksum", ErrSnapshot)
	}
	return x, nil
}

// readSnapshot reads the terms and documents into x, a new index.
func (x *Index) readSnapshot(r *snapReader, nDocs, nTerms uint64) error {
	vecMax := int64(x.vec.t.Len() - 1)
	x.terms = make([]*term, 0, min(nTerms, 1<<16))
	// Bounded like every count: damaged bytes may declare any.
	x.dict.reserve(int(min(nTerms, 1<<20)))
	for i := uint64(0); i < nTerms && r.err == nil; i++ {
		key := r.str()
		t := &term{vec: int32(r.int(-1, vecMax))}
		if r.err != nil {
			break
		}
		if _, dup := x.dict.get(key); dup || key == "" {
			r.err = errors.New("a term twice or empty")
			break
		}
		x.dict.put(key, uint32(i))
		x.terms = append(x.terms, t)
	}
	x.docs = make([]*doc, 0, min(nDocs, 1<<16))
	var tfs []uint32
	for s := uint32(0); uint64(s) < nDocs && r.err == nil; s++ {
		d := &doc{name: r.str(), gid: -1}
		copy(d.hash[:], r.bytes(32))
		for f := range d.lens {
			d.lens[f] = uint16(r.uint(math.MaxUint16))
		}
		if g := r.str(); g != "" {
			grp, ok := x.groups[g]
			if !ok {
				grp = &group{name: g, id: uint32(len(x.gList))}
				x.groups[g] = grp
				x.gList = append(x.gList, grp)
			}
			d.group, d.gid = grp, int32(grp.id)
			grp.members = append(grp.members, s)
		}
		d.vecs = make([]int32, r.uint(uint64(x.cfg.MaxVecWords)))
		for i := range d.vecs {
			d.vecs[i] = int32(r.int(0, vecMax))
		}
		n := r.uint(maxSnapCount)
		if n > 0 && nTerms == 0 && r.err == nil {
			r.err = errors.New("a posting without terms")
		}
		d.terms = make([]uint32, 0, min(n, 1<<12))
		tfs = tfs[:0]
		for i := uint64(0); i < n && r.err == nil; i++ {
			d.terms = append(d.terms, uint32(r.uint(max(nTerms, 1)-1)))
			tfs = append(tfs, uint32(r.uint(math.MaxUint32)))
		}
		if r.err != nil {
			break
		}
		if _, dup := x.byName[d.name]; dup || d.name == "" {
			return fmt.Errorf("%w: document %q twice or unnamed", ErrSnapshot, d.name)
		}
		x.byName[d.name] = s
		x.docs = append(x.docs, d)
		for f := range d.lens {
			x.totLen[f] += int64(d.lens[f])
		}
		// Slots are read in order, so each term's postings stay sorted.
		for i, id := range d.terms {
			t := x.terms[id]
			t.postings = append(t.postings, posting{s, tfs[i]})
		}
		slices.Sort(d.terms)
	}
	if r.err != nil {
		return fmt.Errorf("%w: %v", ErrSnapshot, r.err)
	}
	for _, g := range x.gList {
		slices.SortFunc(g.members, func(a, b uint32) int { return cmp.Compare(x.docs[a].name, x.docs[b].name) })
	}
	x.n = int64(len(x.docs))
	x.compact()
	return nil
}

// snapReader reads a snapshot's fields; the first failure sticks in err
// and every later read returns zero values.
type snapReader struct {
	br  *bufio.Reader
	err error
}

func (r *snapReader) uint(limit uint64) uint64 {
	if r.err != nil {
		return 0
	}
	v, err := binary.ReadUvarint(r.br)
	if err != nil || v > limit {
		r.err = errors.New("a number out of range or truncated")
		return 0
	}
	return v
}

func (r *snapReader) int(lo, hi int64) int64 {
	if r.err != nil {
		return 0
	}
	v, err := binary.ReadVarint(r.br)
	if err != nil || v < lo || v > hi {
		r.err = errors.New("a number out of range or truncated")
		return 0
	}
	return v
}

func (r *snapReader) bytes(n int) []byte {
	out := make([]byte, n)
	if r.err != nil {
		return out
	}
	if _, err := io.ReadFull(r.br, out); err != nil {
		r.err = errors.New("truncated")
	}
	return out
}

func (r *snapReader) str() string {
	n := r.uint(maxSnapString)
	if r.err != nil {
		return ""
	}
	return string(r.bytes(int(n)))
}
