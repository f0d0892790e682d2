package registry

import (
	"bytes"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/groundgate/groundgate/hashing"
)

// Chunks and version roots are written and checked by a direct RFC 8785
// encoder rather than hashing.Canonical: at 100,000 entries a version is
// 20 MB of chunk JSON, and a generic canonicaliser costs seconds per
// version read. The shapes are fixed (sorted keys, strings, small
// integers), and TestCodecMatchesJCS / FuzzCodecMatchesJCS hold these
// encoders to hashing.Canonical's bytes. Decoding is a plain decode
// followed by re-encoding and comparing bytes, which refuses every other
// spelling (whitespace, key order or case, duplicate keys, escapes).

// maxExactInt bounds the integers in a root: beyond 2^53 RFC 8785 would
// print them as doubles.
const maxExactInt = 1 << 53

// appendString appends s as an RFC 8785 string: only '"', '\\' and
// control characters are escaped, with the short forms where JSON has
// them; everything else, non-ASCII included, is written as is.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c >= 0x20:
			b = append(b, c)
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\t':
			b = append(b, '\\', 't')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c == '\r':
			b = append(b, '\\', 'r')
		default:
			const hex = "0123456789abcdef"
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
	}
	return append(b, '"')
}

func appendDigest(b []byte, d hashing.Digest) ([]byte, error) {
	if d.IsZero() {
		return nil, fmt.Errorf("%w: zero digest", hashing.ErrMalformed)
	}
	return appendString(b, d.String()), nil
}

func appendInt(b []byte, v int64) ([]byte, error) {
	if v > maxExactInt || v < -maxExactInt {
		return nil, fmt.Errorf("%w: integer %d out of range", hashing.ErrMalformed, v)
	}
	return strconv.AppendInt(b, v, 10), nil
}

func appendRefs(b []byte, refs []chunkRef) ([]byte, error) {
	if refs == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	var err error
	for i, r := range refs {
		if i > 0 {
			b = append(b, ',')
		}
		if !utf8.ValidString(r.Name) {
			return nil, fmt.Errorf("%w: name is not UTF-8", hashing.ErrMalformed)
		}
		b = append(b, `{"identity":`...)
		if b, err = appendDigest(b, r.Identity); err != nil {
			return nil, err
		}
		b = append(b, `,"name":`...)
		b = appendString(b, r.Name)
		b = append(b, `,"record":`...)
		if b, err = appendDigest(b, r.Record); err != nil {
			return nil, err
		}
		b = append(b, '}')
	}
	return append(b, ']'), nil
}

func appendStrings(b []byte, ss []string) ([]byte, error) {
	if ss == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		if !utf8.ValidString(s) {
			return nil, fmt.Errorf("%w: string is not UTF-8", hashing.ErrMalformed)
		}
		b = appendString(b, s)
	}
	return append(b, ']'), nil
}

// marshalChunk is the canonical form of a chunk: {"entries":[…]}.
func marshalChunk(refs []chunkRef) ([]byte, error) {
	b := make([]byte, 0, 16+len(refs)*200)
	b = append(b, `{"entries":`...)
	b, err := appendRefs(b, refs)
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// marshalVersion is the canonical form of a version document, keys in
// RFC 8785 order: change, chunks, count, created, entries, format,
// groups, parent, registry, version (absent ones omitted as
// encoding/json's omitempty would).
func marshalVersion(d *versionDoc) ([]byte, error) {
	b := make([]byte, 0, 512+(len(d.Chunks)+len(d.Groups))*75+len(d.Entries)*200+len(d.Change.Names)*24)
	var err error
	b = append(b, `{"change":{"names":`...)
	if b, err = appendStrings(b, d.Change.Names); err != nil {
		return nil, err
	}
	if !utf8.ValidString(d.Change.Op) {
		return nil, fmt.Errorf("%w: op is not UTF-8", hashing.ErrMalformed)
	}
	b = append(b, `,"op":`...)
	b = appendString(b, d.Change.Op)
	b = append(b, '}')
	if len(d.Chunks) > 0 {
		b = append(b, `,"chunks":`...)
		if b, err = appendStrings(b, d.Chunks); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"count":`...)
	if b, err = appendInt(b, int64(d.Count)); err != nil {
		return nil, err
	}
	created, err := d.Created.MarshalJSON() // a quoted RFC 3339 string: ASCII, nothing to escape
	if err != nil {
		return nil, err
	}
	b = append(b, `,"created":`...)
	b = append(b, created...)
	if len(d.Entries) > 0 {
		b = append(b, `,"entries":`...)
		if b, err = appendRefs(b, d.Entries); err != nil {
			return nil, err
		}
	}
	if d.Format != 0 {
		b = append(b, `,"format":`...)
		if b, err = appendInt(b, int64(d.Format)); err != nil {
			return nil, err
		}
	}
	if len(d.Groups) > 0 {
		b = append(b, `,"groups":`...)
		if b, err = appendStrings(b, d.Groups); err != nil {
			return nil, err
		}
	}
	if d.Parent > maxExactInt || d.Version > maxExactInt {
		return nil, fmt.Errorf("%w: version number out of range", hashing.ErrMalformed)
	}
	b = append(b, `,"parent":`...)
	b = strconv.AppendUint(b, d.Parent, 10)
	b = append(b, `,"registry":`...)
	if b, err = appendDigest(b, d.Registry); err != nil {
		return nil, err
	}
	b = append(b, `,"version":`...)
	b = strconv.AppendUint(b, d.Version, 10)
	return append(b, '}'), nil
}

// marshalGroup is the canonical form of a group: {"chunks":[…]}.
func marshalGroup(d *groupDoc) ([]byte, error) {
	b := make([]byte, 0, 16+len(d.Chunks)*75)
	b = append(b, `{"chunks":`...)
	b, err := appendStrings(b, d.Chunks)
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// decodeCanonical decodes raw into v (unknown fields refused) and checks
// that marshal gives raw back byte for byte.
func decodeCanonical[T any](raw []byte, v *T, marshal func(*T) ([]byte, error)) error {
	if err := hashing.DecodePart(raw, v); err != nil {
		return err
	}
	canon, err := marshal(v)
	if err != nil {
		return err
	}
	if !bytes.Equal(canon, raw) {
		return fmt.Errorf("%w: not in canonical form", hashing.ErrMalformed)
	}
	return nil
}
