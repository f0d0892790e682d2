package execution

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/groundgate/groundgate/execution/frame"
)

// Reasons recorded in a footprint's data.missing when the source could not
// be read. They are fixed strings, not error texts, so that the footprint
// never depends on the host's file system layout or error wording.
const (
	missingInvalid  = "the path is not a relative path inside the data root (empty, absolute, or with . or .. elements)"
	missingNotExist = "no such file in the data root"
	missingOutside  = "the file cannot be opened inside the data root (a link out of it, or no permission)"
	missingNotFile  = "not a regular file"
)

// source is the data an execution runs on: the path as requested, and
// either the bytes read from it or the reason they could not be read.
type source struct {
	path    string
	raw     []byte
	missing string // non-empty when the source could not be read
}

// checkPath applies the lexical rules of the "data" predicate: a relative,
// slash-separated path whose elements are neither empty, "." nor ".."
// (fs.ValidPath), not a bare ".", and no backslash or NUL (which some file
// systems would read as separators or terminators).
func checkPath(p string) bool {
	if !fs.ValidPath(p) || p == "." || strings.ContainsAny(p, "\\\x00") {
		return false
	}
	return path.Clean(p) == p
}

// readSource reads the request's data path from the data root. A path
// that breaks the lexical rules, a file that does not exist, a link out of
// the root (which an os.Root FS refuses) and a directory are not errors:
// they make the "data" predicate fail for every morphism. A file larger
// than max bytes is ErrBadData.
func readSource(root fs.FS, p string, max int64) (source, error) {
	src := source{path: p}
	if !checkPath(p) {
		src.missing = missingInvalid
		return src, nil
	}
	f, err := root.Open(p)
	if err != nil {
		src.missing = openReason(err)
		return src, nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		src.missing = openReason(err)
		return src, nil
	}
	if !st.Mode().IsRegular() {
		src.missing = missingNotFile
		return src, nil
	}
	raw, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		if errors.Is(err, fs.ErrInvalid) || strings.Contains(err.Error(), "is a directory") {
			src.missing = missingNotFile
			return src, nil
		}
		return src, fmt.Errorf("%w: %s: read: %v", ErrBadData, p, err)
	}
	if int64(len(raw)) > max {
		return src, fmt.Errorf("%w: %s: larger than the %d-byte limit", ErrBadData, p, max)
	}
	src.raw = raw
	return src, nil
}

func openReason(err error) string {
	if errors.Is(err, fs.ErrNotExist) {
		return missingNotExist
	}
	return missingOutside
}

// parseSource parses the source bytes into a frame; a path ending in .gz
// is gunzipped first, its output bounded by max bytes. Every failure is
// ErrBadData; parse failures keep the *frame.ParseError (file, line,
// column) in the chain.
func parseSource(src source, max int64) (*frame.Frame, error) {
	var r io.Reader = bytes.NewReader(src.raw)
	if strings.HasSuffix(src.path, ".gz") {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: gzip: %v", ErrBadData, src.path, err)
		}
		defer zr.Close()
		r = &boundedReader{r: zr, left: max, name: src.path}
	}
	f, err := frame.Load(r, src.path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadData, err)
	}
	return f, nil
}

// boundedReader fails once more than left bytes have been read: a guard
// against gzip bombs.
type boundedReader struct {
	r    io.Reader
	left int64
	name string
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, fmt.Errorf("%s: decompresses to more than the size limit", b.name)
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, fmt.Errorf("%s: decompresses to more than the size limit", b.name)
	}
	return n, err
}
