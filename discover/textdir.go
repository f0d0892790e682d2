package discover

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/mapping"

	"github.com/groundgate/groundgate/discover/relevance"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
)

// textFormat versions what a text index on disk holds beyond its bleve
// mapping (the documents' fields and how they are folded): change it when
// document or textAnalyzer changes, and every kept index is rebuilt.
const textFormat = 1

// DefaultTextIndexDir is where a process using the registry file db keeps
// its text index: beside the file, the extension replaced by ".index"
// (groundgate.db → groundgate.index).
func DefaultTextIndexDir(db string) string {
	p := strings.TrimSuffix(db, filepath.Ext(db)) + ".index"
	if p == db {
		p += ".index" // never the database itself
	}
	return p
}

const (
	stampFile  = "current.json"
	textPrefix = "text-"
	// relevanceFile keeps the relevance tier's index of the version it
	// names, written when the Discoverer closes, so that a restart reads
	// it instead of analysing every entry again.
	relevanceFile = "relevance.snap"
)

// textStamp says which registry version the text index in Dir holds. It
// is written only once that index is complete and removed before it is
// changed, so a crash leaves no stamp and the next start rebuilds.
type textStamp struct {
	Format  int            `json:"format"`
	Mapping hashing.Digest `json:"mapping"` // SHA-256 of the bleve mapping's JSON
	Version uint64         `json:"version"`
	Content hashing.Digest `json:"content"` // registry.Snapshot.ContentDigest
	Dir     string         `json:"dir"`
}

// textDir keeps the text index of the current registry version on disk,
// so that a restart opens it in milliseconds instead of rebuilding it
// (which takes minutes of CPU for 100,000 entries). It is versioned by the
// version's content digest and the mapping, and rebuilt only when missing
// or stale. A directory must have one user at a time: the process holding
// the registry file's write lock (see Options.TextIndexDir).
type textDir struct {
	path    string
	im      mapping.IndexMapping
	an      *textAnalyzer
	mapping hashing.Digest
	log     *slog.Logger
	mu      sync.Mutex       // orders stamp reads and writes; guards inUse and read
	inUse   map[string]int   // open index directories: sweep leaves them
	read    *relevance.Index // the relevance index last read from the file
}

func newTextDir(path string, im mapping.IndexMapping, an *textAnalyzer, log *slog.Logger) (*textDir, error) {
	raw, err := json.Marshal(im)
	if err != nil {
		return nil, fmt.Errorf("discover: encode index mapping: %w", err)
	}
	if err := os.MkdirAll(path, 0o700); err != nil {
		return nil, fmt.Errorf("discover: text index directory: %w", err)
	}
	return &textDir{path: path, im: im, an: an, mapping: hashing.SumSHA256(raw), log: log, inUse: map[string]int{}}, nil
}

func (t *textDir) stampFor(snap *registry.Snapshot, dir string) textStamp {
	return textStamp{Format: textFormat, Mapping: t.mapping, Version: snap.Version(), Content: snap.ContentDigest(), Dir: dir}
}

// open returns the text index of snap: the one on disk when the stamp
// names snap's content, else a new one built beside it (and stamped once
// complete). Directories of other versions are removed once the one for
// snap is in place.
func (t *textDir) open(ctx context.Context, snap *registry.Snapshot) (bleve.Index, string, error) {
	want := t.stampFor(snap, "")
	if st, ok := t.readStamp(); ok {
		want.Dir = st.Dir
		if st == want {
			bl, err := bleve.Open(filepath.Join(t.path, st.Dir, "bleve"))
			if err == nil {
				t.acquire(st.Dir)
				t.sweep()
				return bl, st.Dir, nil
			}
			t.log.LogAttrs(ctx, slog.LevelWarn, "discovery text index on disk unreadable; rebuilding", slog.Any("error", err))
		}
	}
	if err := t.unstamp(); err != nil {
		return nil, "", err
	}
	// Made and marked in use under the lock, so no sweep sees it unused.
	t.mu.Lock()
	dir, err := os.MkdirTemp(t.path, textPrefix)
	if err == nil {
		t.inUse[filepath.Base(dir)]++
	}
	t.mu.Unlock()
	if err != nil {
		return nil, "", fmt.Errorf("discover: text index directory: %w", err)
	}
	name := filepath.Base(dir)
	bl, err := buildText(ctx, t.im, t.an, filepath.Join(dir, "bleve"), snap.Capabilities())
	if err != nil {
		t.release(name)
		return nil, "", err
	}
	t.restamp(ctx, snap, name)
	t.sweep()
	return bl, name, nil
}

// restamp records that dir holds snap's text index. A failure only costs
// a rebuild at the next start, so it is logged, not returned.
func (t *textDir) restamp(ctx context.Context, snap *registry.Snapshot, dir string) {
	if err := t.stamp(t.stampFor(snap, dir)); err != nil {
		t.log.LogAttrs(ctx, slog.LevelWarn, "discovery text index not stamped; the next start rebuilds it", slog.Any("error", err))
	}
}

func (t *textDir) acquire(dir string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.inUse[dir]++
}

// release is called when the index in dir is closed; a directory no stamp
// names (a superseded version, a failed build) is removed then.
func (t *textDir) release(dir string) {
	t.mu.Lock()
	t.inUse[dir]--
	if t.inUse[dir] > 0 {
		t.mu.Unlock()
		return
	}
	delete(t.inUse, dir)
	t.mu.Unlock()
	if st, ok := t.readStamp(); !ok || st.Dir != dir {
		t.remove(dir)
	}
}

// readStamp returns the stamp, if a well-formed one is there.
func (t *textDir) readStamp() (textStamp, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	raw, err := os.ReadFile(filepath.Join(t.path, stampFile))
	if err != nil {
		return textStamp{}, false
	}
	var st textStamp
	if hashing.DecodeStrict(raw, &st) != nil || !strings.HasPrefix(st.Dir, textPrefix) || filepath.Base(st.Dir) != st.Dir {
		return textStamp{}, false
	}
	return st, true
}

// stamp records st, atomically: a reader sees the old stamp or the new.
func (t *textDir) stamp(st textStamp) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	raw, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return t.replace(stampFile, func(w io.Writer) error {
		_, err := w.Write(raw)
		return err
	})
}

// replace writes the file name in the directory with what write writes,
// atomically: written to a temporary file (name + ".*", which sweep
// removes if a crash leaves it), synced, renamed over name, and the
// directory synced.
func (t *textDir) replace(name string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(t.path, name+".*")
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(tmp, 1<<20)
	werr := write(w)
	ferr := w.Flush()
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, ferr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(t.path, name)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return syncDir(t.path)
}

// unstamp removes the stamp before the index it names is changed.
func (t *textDir) unstamp() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	err := os.Remove(filepath.Join(t.path, stampFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("discover: remove text index stamp: %w", err)
	}
	return syncDir(t.path)
}

// sweep removes the index directories no open index uses: those of past
// versions and of builds a crash interrupted, and stray stamp files.
func (t *textDir) sweep() {
	des, err := os.ReadDir(t.path)
	if err != nil {
		return
	}
	for _, de := range des {
		n := de.Name()
		if !strings.HasPrefix(n, textPrefix) && !strings.HasPrefix(n, stampFile+".") && !strings.HasPrefix(n, relevanceFile+".") {
			continue
		}
		t.mu.Lock()
		used := t.inUse[n] > 0
		t.mu.Unlock()
		if !used {
			t.remove(n)
		}
	}
}

func (t *textDir) remove(name string) {
	if err := os.RemoveAll(filepath.Join(t.path, name)); err != nil {
		t.log.LogAttrs(context.Background(), slog.LevelWarn, "discovery text index: stale directory not removed", slog.Any("error", err))
	}
}

func syncDir(path string) error {
	d, err := os.Open(path)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// relevanceHeader is the first line of the relevance file: the registry
// version and content digest its index holds, and the scoring it was made
// for (relevance.Index.Scoring).
func relevanceHeader(snap *registry.Snapshot, scoring string) string {
	return fmt.Sprintf("%d %s %s\n", snap.Version(), snap.ContentDigest(), scoring)
}

// loadRelevance returns the relevance index of snap kept on disk, if the
// file there holds snap's and reads back under vec's scoring; nil else.
func (t *textDir) loadRelevance(ctx context.Context, snap *registry.Snapshot, vec *relevance.Vectors) *relevance.Index {
	f, err := os.Open(filepath.Join(t.path, relevanceFile))
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil
	}
	want := relevanceHeader(snap, relevance.DefaultConfig().Digest(vec.Digest()))
	head := make([]byte, len(want))
	if _, err := io.ReadFull(f, head); err != nil || string(head) != want {
		return nil
	}
	rx, err := relevance.ReadSnapshot(f, st.Size()-int64(len(want)), vec, relevance.DefaultConfig())
	if err != nil {
		t.log.LogAttrs(ctx, slog.LevelWarn, "discovery relevance index on disk unreadable; rebuilding", slog.Any("error", err))
		return nil
	}
	t.log.LogAttrs(ctx, slog.LevelDebug, "discovery relevance index read from disk", slog.Uint64("version", snap.Version()))
	t.mu.Lock()
	t.read = rx
	t.mu.Unlock()
	return rx
}

// holdsRelevance reports whether the relevance file holds rx, the index
// of snap: rx was read from it and snap's is what it holds.
func (t *textDir) holdsRelevance(snap *registry.Snapshot, rx *relevance.Index) bool {
	t.mu.Lock()
	read := t.read
	t.mu.Unlock()
	if read != rx {
		return false
	}
	f, err := os.Open(filepath.Join(t.path, relevanceFile))
	if err != nil {
		return false
	}
	defer f.Close()
	want := relevanceHeader(snap, rx.Scoring())
	got := make([]byte, len(want))
	_, err = io.ReadFull(f, got)
	return err == nil && string(got) == want
}

// saveRelevance writes rx, the relevance index of snap, atomically.
func (t *textDir) saveRelevance(snap *registry.Snapshot, rx *relevance.Index) error {
	return t.replace(relevanceFile, func(w io.Writer) error {
		if _, err := io.WriteString(w, relevanceHeader(snap, rx.Scoring())); err != nil {
			return err
		}
		return rx.WriteSnapshot(w)
	})
}
