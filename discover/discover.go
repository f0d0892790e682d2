// Package discover turns a researcher's words into capabilities, with
// content-addressed evidence.
//
// # Cascade
//
// Each term is matched against the live registry by the four tiers of SPEC
// §4 — exact name, alias, tag, keyword — and the highest tier with a match
// wins for that term. Terms are compared by key: NFKC, UAX #29 words,
// possessives stripped, lower case, plurals stemmed, so "Sharpe's",
// "sharpe-ratio" and "Sharpe ratios" behave like "sharpe ratio". The keyword
// tier runs phrase queries on a bleve index of names and descriptions.
//
// # Inversion
//
// A term such as "opposite" or "other way round" is an inversion cue: it
// surfaces the opposite of the family the nearest term discovered, as a
// match of its own mode ("inversion", confidence 0.4). Opposites are found
// from behavioural layers only (see docs/discovery.md).
//
// # Evidence
//
// A Result is content-addressed: its id is the SHA-256 of the RFC 8785
// encoding of everything else. Discover stores it in the storage layer
// (package store; the record space "discover.evidence", id → canonical
// bytes without the id, a bbolt bucket of that name); Lookup reads it back
// and checks the hash (the store's check on every read), then that it
// re-encodes to its bytes; Verify does both for every record; Rederive recomputes it from its terms at its
// registry version, without storing, for evidence given inline.
//
// # Determinism
//
// A result depends only on the terms and the registry version: matches are
// sorted (term order, tier, name), the keyword tier uses hit sets, never
// scores, and its limits are constants. Incremental index updates and full
// rebuilds give the same results.
package discover

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/mapping"

	"github.com/groundgate/groundgate/discover/relevance"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/store"
)

// Source is what discovery needs from the registry.
type Source interface {
	// Current returns the current version, without I/O.
	Current() *registry.Snapshot
	// Version returns version n, or an error wrapping registry.ErrNotFound.
	Version(ctx context.Context, n uint64) (*registry.Snapshot, error)
}

var _ Source = (*registry.Store)(nil)

// Query is the input of Discover: exactly one of a prompt and a term list.
type Query struct {
	// Prompt is a researcher's prompt; terms are extracted from it (see
	// ExtractTerms).
	Prompt string `json:"prompt,omitempty"`
	// Terms are used as given, after folding: each is folded to its words
	// (NFKC, UAX #29 words, possessive 's stripped, lower case) joined by
	// single spaces, and terms folding to the same key are kept once. No
	// stop or filler word is removed from given terms.
	Terms []string `json:"terms,omitempty"`
}

// Options configure a Discoverer. The zero value is usable.
type Options struct {
	// Logger receives index events; nil discards them.
	Logger *slog.Logger
	// MaxPromptBytes bounds a prompt; zero means DefaultMaxPromptBytes.
	MaxPromptBytes int
	// MaxTerms bounds the terms of one query, given or extracted; zero
	// means DefaultMaxTerms.
	MaxTerms int
	// TextIndexDir, when set, keeps the keyword tier's text index of the
	// current registry version in this directory, so that a restart opens
	// it instead of rebuilding it (what start-up on a large registry
	// costs). It is rebuilt when missing or stale (see docs/discovery.md).
	// Only the process holding the registry file's write lock may use a
	// directory, and one Discoverer at a time.
	TextIndexDir string
	// LazyText defers making the text index (and the relevance tier's)
	// until a look-up needs it, for one-shot commands that usually never
	// do. By default it is made in the background from the start, and
	// Ready says when it is.
	LazyText bool
	// Vectors are the word vectors the relevance tier reads; nil means the
	// table embedded in package wordvec (parsed once per process).
	Vectors *relevance.Vectors
}

// pastIndexes is how many indexes of past versions Rederive keeps.
const pastIndexes = 4

// spaceEvidence holds evidence records: id → canonical result without id.
var spaceEvidence = store.Space{Name: "discover.evidence", Check: store.SHA256}

// Backend is what discovery needs of the storage layer: reads, and
// batched writes (evidence made at the same time shares a commit).
type Backend interface {
	View(ctx context.Context, fn func(store.Tx) error) error
	Batch(ctx context.Context, fn func(store.Tx) error) error
}

// Discoverer matches terms against a registry and keeps the evidence. It
// is safe for concurrent use.
type Discoverer struct {
	src Source
	st  Backend
	log *slog.Logger
	opt Options
	an  *textAnalyzer
	im  mapping.IndexMapping
	vec *relevance.Vectors

	disk *textDir // nil unless Options.TextIndexDir is set

	mu  sync.RWMutex // guards cur and its contents
	cur *index

	pastMu sync.Mutex
	past   []*index // most recently used last
}

// New builds the index of the current registry version and keeps evidence
// in st, normally the registry's file (registry.Store.Engine()). The bleve text index is filled in the background;
// only keyword look-ups inside names and descriptions wait for it. Close
// releases the indexes.
func New(ctx context.Context, src Source, st Backend, opt Options) (*Discoverer, error) {
	if src == nil || st == nil {
		return nil, errors.New("discover: New needs a source and a database")
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opt.MaxPromptBytes <= 0 {
		opt.MaxPromptBytes = DefaultMaxPromptBytes
	}
	if opt.MaxTerms <= 0 {
		opt.MaxTerms = DefaultMaxTerms
	}
	im, err := indexMapping()
	if err != nil {
		return nil, fmt.Errorf("discover: index mapping: %w", err)
	}
	if opt.Vectors == nil {
		if opt.Vectors, err = defaultVectors(); err != nil {
			return nil, fmt.Errorf("discover: word vectors: %w", err)
		}
	}
	d := &Discoverer{src: src, st: st, log: opt.Logger, opt: opt, an: newTextAnalyzer(), im: im, vec: opt.Vectors}
	if opt.TextIndexDir != "" {
		if d.disk, err = newTextDir(opt.TextIndexDir, im, d.an, d.log); err != nil {
			return nil, err
		}
	}
	snap := src.Current()
	if d.cur, err = d.buildCurrent(ctx, snap); err != nil {
		return nil, err
	}
	d.log.LogAttrs(ctx, slog.LevelDebug, "discovery index built",
		slog.Uint64("version", snap.Version()), slog.Int("entries", len(snap.Capabilities())))
	return d, nil
}

// buildCurrent indexes snap as the current version: its text index is
// kept on disk when the Discoverer has a directory for it, and made from
// the start unless Options.LazyText.
func (d *Discoverer) buildCurrent(ctx context.Context, snap *registry.Snapshot) (*index, error) {
	x, err := buildIndex(ctx, d.an, snap, func(snap *registry.Snapshot) *textIndex {
		if d.disk != nil {
			return newTextIndex(func(ctx context.Context) (bleve.Index, string, error) {
				return d.disk.open(ctx, snap)
			}, d.relevanceOf(snap), !d.opt.LazyText)
		}
		return d.memoryText(snap, !d.opt.LazyText)
	})
	if err != nil {
		return nil, err
	}
	x.disk = d.disk
	return x, nil
}

// memoryText is a text index of snap held in memory.
func (d *Discoverer) memoryText(snap *registry.Snapshot, eager bool) *textIndex {
	caps := snap.Capabilities()
	return newTextIndex(func(ctx context.Context) (bleve.Index, string, error) {
		bl, err := buildText(ctx, d.im, d.an, "", caps)
		return bl, "", err
	}, d.relevanceOf(snap), eager)
}

// relevanceOf returns what makes the relevance tier's index of snap: read
// from the text index directory when it keeps snap's, else built.
func (d *Discoverer) relevanceOf(snap *registry.Snapshot) func(context.Context) (*relevance.Index, error) {
	return func(ctx context.Context) (*relevance.Index, error) {
		if d.disk != nil {
			if rx := d.disk.loadRelevance(ctx, snap, d.vec); rx != nil {
				return rx, nil
			}
		}
		return buildRelevance(ctx, d.vec, snap.Capabilities())
	}
}

// pastText makes the text index of a past version, on first need: a
// Rederive whose terms the equality tiers settle never builds it.
func (d *Discoverer) pastText(snap *registry.Snapshot) *textIndex { return d.memoryText(snap, false) }

// Close releases the indexes, keeping the relevance tier's index of the
// current version in the text index directory when there is one (a
// restart reads it back). The database is not closed.
func (d *Discoverer) Close() error {
	d.mu.Lock()
	if x := d.cur; x != nil {
		if d.disk != nil {
			// A failure only costs a rebuild at the next start: logged,
			// not returned.
			if err := d.keepRelevance(x); err != nil {
				d.log.LogAttrs(context.Background(), slog.LevelWarn, "discovery relevance index not kept; the next start rebuilds it", slog.Any("error", err))
			}
		}
		x.close()
		d.cur = nil
	}
	d.mu.Unlock()
	d.pastMu.Lock()
	for _, x := range d.past {
		x.close()
	}
	d.past = nil
	d.pastMu.Unlock()
	return nil
}

// keepRelevance writes x's relevance index to the text index directory if
// it is made and the directory does not hold it already (an index being
// made is not waited for: the next start makes it again).
func (d *Discoverer) keepRelevance(x *index) error {
	select {
	case <-x.text.relReady:
	default:
		return nil
	}
	if x.text.relErr != nil || x.text.rel == nil || d.disk.holdsRelevance(x.snap, x.text.rel) {
		return nil
	}
	if err := d.disk.saveRelevance(x.snap, x.text.rel); err != nil {
		return fmt.Errorf("discover: keep the relevance index: %w", err)
	}
	return nil
}

// Discover matches the query against the current registry version, stores
// the evidence record (storing the same record twice is a no-op) and
// returns it. The index is brought up to the current version first, so the
// version reported is the one matched against.
func (d *Discoverer) Discover(ctx context.Context, q Query) (Result, error) {
	res, canon, err := d.discover(ctx, q)
	if err != nil {
		return Result{}, err
	}
	if err := d.store(ctx, res.ID, canon); err != nil {
		return Result{}, err
	}
	return res, nil
}

// Probe matches the query like Discover but stores nothing: for tests of
// the registry's own words (package fuzz), which ask thousands of
// questions no agent will ground. Its results are not evidence the gate
// can look up.
func (d *Discoverer) Probe(ctx context.Context, q Query) (Result, error) {
	res, _, err := d.discover(ctx, q)
	return res, err
}

func (d *Discoverer) discover(ctx context.Context, q Query) (Result, []byte, error) {
	switch {
	case q.Prompt == "" && len(q.Terms) == 0:
		return Result{}, nil, fmt.Errorf("%w: give a prompt or terms", ErrBadQuery)
	case q.Prompt != "" && len(q.Terms) > 0:
		return Result{}, nil, fmt.Errorf("%w: give a prompt or terms, not both", ErrBadQuery)
	}
	var terms []folded
	if len(q.Terms) > 0 {
		var err error
		if terms, err = normaliseTerms(d.an, q.Terms, d.opt.MaxTerms); err != nil {
			return Result{}, nil, err
		}
	}
	x, unlock, err := d.current(ctx)
	if err != nil {
		return Result{}, nil, err
	}
	defer unlock()
	if q.Prompt != "" {
		words, err := extractTerms(q.Prompt, x.vocab, d.opt.MaxPromptBytes, d.opt.MaxTerms)
		if err != nil {
			return Result{}, nil, err
		}
		// Extracted terms are folded already; folding them again only
		// computes their keys.
		if terms, err = normaliseTerms(d.an, words, d.opt.MaxTerms); err != nil {
			return Result{}, nil, err
		}
	}
	res, err := x.match(ctx, terms)
	if err != nil {
		return Result{}, nil, err
	}
	canon, err := res.seal()
	if err != nil {
		return Result{}, nil, err
	}
	return res, canon, nil
}

// Ready reports, without waiting, whether every tier answers now: nil when
// the text index the keyword tier reads and the relevance tier's index are
// built, ErrStarting while one is being built (the exact, alias and tag
// tiers answer from the start; a keyword or relevance look-up waits for
// its index), a build's error if it failed.
func (d *Discoverer) Ready() error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.cur == nil {
		return errors.New("discover: discoverer is closed")
	}
	return d.cur.text.state()
}

// Sync brings the index to the registry's current version and waits until
// the keyword tier answers: its text index made and, when it is kept on
// disk, stamped with that version; with a text index directory it also
// waits for the relevance tier's index, which Close then keeps there. A
// command that changes the registry calls it before it closes, so that
// the next start reads both instead of making them (at 100,000 entries
// after a bulk load, about 2 s to ready instead of 7).
func (d *Discoverer) Sync(ctx context.Context) error {
	x, unlock, err := d.current(ctx)
	if err != nil {
		return err
	}
	text := x.text
	unlock()
	if d.disk == nil {
		_, err = text.wait(ctx)
		return err
	}
	text.start() // both at once: the builds overlap
	if _, err = text.wait(ctx); err != nil {
		return err
	}
	_, err = text.relevance(ctx)
	return err
}

// current returns the index of the current registry version, read-locked;
// the caller calls unlock when done with it.
func (d *Discoverer) current(ctx context.Context) (*index, func(), error) {
	snap := d.src.Current()
	d.mu.RLock()
	if d.cur == nil {
		d.mu.RUnlock()
		return nil, nil, errors.New("discover: discoverer is closed")
	}
	if d.cur.version() == snap.Version() {
		return d.cur, d.mu.RUnlock, nil
	}
	d.mu.RUnlock()

	d.mu.Lock()
	if d.cur == nil {
		d.mu.Unlock()
		return nil, nil, errors.New("discover: discoverer is closed")
	}
	if err := d.advance(ctx, d.src.Current()); err != nil {
		d.mu.Unlock()
		return nil, nil, err
	}
	// Match under the write lock: the index now reflects a version at
	// least as new as the one the caller saw.
	return d.cur, d.mu.Unlock, nil
}

// advance brings the current index to snap. Callers hold d.mu.
func (d *Discoverer) advance(ctx context.Context, snap *registry.Snapshot) error {
	x := d.cur
	if x.version() == snap.Version() {
		return nil
	}
	if x.canUpdateTo(snap) {
		err := x.update(ctx, snap)
		if err == nil {
			d.log.LogAttrs(ctx, slog.LevelDebug, "discovery index updated",
				slog.Uint64("version", snap.Version()), slog.Int("changed", len(snap.Info.Change.Names)))
			return nil
		}
		if ctx.Err() != nil {
			// The index may be half updated: rebuild it next time.
			d.cur, err = d.rebuildAfterFailure(x)
			return errors.Join(ctx.Err(), err)
		}
		d.log.LogAttrs(ctx, slog.LevelWarn, "discovery index update failed; rebuilding", slog.Any("error", err))
	}
	nx, err := d.buildCurrent(ctx, snap)
	if err != nil {
		return err
	}
	x.close()
	d.cur = nx
	d.log.LogAttrs(ctx, slog.LevelDebug, "discovery index rebuilt",
		slog.Uint64("version", snap.Version()), slog.Int("entries", len(snap.Capabilities())))
	return nil
}

// rebuildAfterFailure rebuilds the index of the version x was at before a
// cancelled update left it inconsistent.
func (d *Discoverer) rebuildAfterFailure(x *index) (*index, error) {
	prev, err := d.src.Version(context.Background(), x.version())
	if err == nil {
		var nx *index
		if nx, err = d.buildCurrent(context.Background(), prev); err == nil {
			x.close()
			return nx, nil
		}
	}
	// Keep a usable index of some version: the next call rebuilds it for
	// the current version because canUpdateTo refuses it.
	x.updates = compactAfter
	return x, err
}

// Rederive matches terms (already extracted, as listed in a Result) against
// registry version `version`, without storing anything. For the terms and
// version of a Result that Discover produced it returns the identical
// Result. A version that does not exist gives an error wrapping
// registry.ErrNotFound.
func (d *Discoverer) Rederive(ctx context.Context, terms []string, version uint64) (Result, error) {
	fs, err := normaliseTerms(d.an, terms, d.opt.MaxTerms)
	if err != nil {
		return Result{}, err
	}
	if len(fs) == 0 {
		return Result{}, fmt.Errorf("%w: no terms", ErrBadQuery)
	}
	var res Result
	for attempt := 0; ; attempt++ {
		res, err = d.rederive(ctx, fs, version)
		if !errors.Is(err, errIndexClosed) || attempt > 2 {
			break
		}
	}
	if err != nil {
		return Result{}, err
	}
	if _, err := res.seal(); err != nil {
		return Result{}, err
	}
	return res, nil
}

func (d *Discoverer) rederive(ctx context.Context, fs []folded, version uint64) (Result, error) {
	d.mu.RLock()
	if d.cur != nil && d.cur.version() == version {
		defer d.mu.RUnlock()
		return d.cur.match(ctx, fs)
	}
	d.mu.RUnlock()
	x, err := d.pastIndex(ctx, version)
	if err != nil {
		return Result{}, err
	}
	x.use.RLock()
	defer x.use.RUnlock()
	if x.closed {
		return Result{}, errIndexClosed
	}
	return x.match(ctx, fs)
}

// pastIndex returns a cached index of version n, building it if needed.
func (d *Discoverer) pastIndex(ctx context.Context, n uint64) (*index, error) {
	d.pastMu.Lock()
	for i, x := range d.past {
		if x.version() == n {
			d.past = append(append(d.past[:i:i], d.past[i+1:]...), x)
			d.pastMu.Unlock()
			return x, nil
		}
	}
	d.pastMu.Unlock()

	snap, err := d.src.Version(ctx, n)
	if err != nil {
		return nil, fmt.Errorf("discover: registry version %d: %w", n, err)
	}
	x, err := buildIndex(ctx, d.an, snap, d.pastText)
	if err != nil {
		return nil, err
	}
	d.pastMu.Lock()
	defer d.pastMu.Unlock()
	for _, y := range d.past {
		if y.version() == n { // built concurrently: keep the first
			go x.close()
			return y, nil
		}
	}
	d.past = append(d.past, x)
	if len(d.past) > pastIndexes {
		old := d.past[0]
		d.past = d.past[1:]
		go old.close() // waits for readers
	}
	return x, nil
}

// store writes an evidence record unless it is there already.
func (d *Discoverer) store(ctx context.Context, id hashing.Digest, canon []byte) error {
	var have bool
	err := d.st.View(ctx, func(tx store.Tx) error {
		var err error
		have, err = tx.HasRecord(spaceEvidence, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("discover: read evidence: %w", err)
	}
	if have {
		return nil
	}
	// New evidence made at the same time shares a commit.
	err = d.st.Batch(ctx, func(tx store.Tx) error { return tx.PutRecord(spaceEvidence, id, canon) })
	if errors.Is(err, store.ErrReadOnly) {
		d.log.LogAttrs(ctx, slog.LevelDebug, "read-only database: evidence not stored", slog.String("id", id.String()))
		return nil
	}
	if err != nil {
		return fmt.Errorf("discover: store evidence %s: %w", id, err)
	}
	return nil
}

// Lookup returns the stored evidence record id. It returns an error
// wrapping ErrNotFound when there is none, and ErrCorrupt when the stored
// bytes no longer hash to id or do not decode.
func (d *Discoverer) Lookup(ctx context.Context, id hashing.Digest) (Result, error) {
	if id.Algorithm() != hashing.SHA256 {
		return Result{}, fmt.Errorf("discover: evidence %s: %w", id, ErrNotFound)
	}
	res, err := store.Get(ctx, d.st, spaceEvidence, id, decodeEvidence)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Result{}, fmt.Errorf("discover: evidence %s: %w", id, ErrNotFound)
	case errors.Is(err, store.ErrCorrupt):
		return Result{}, fmt.Errorf("discover: evidence %s: %w: %w", id, ErrCorrupt, err)
	case err != nil:
		return Result{}, fmt.Errorf("discover: read evidence: %w", err)
	}
	res.Terms, res.Matches, res.Unresolved = nonNil(res.Terms), nonNil(res.Matches), nonNil(res.Unresolved)
	return res, nil
}

// decodeEvidence decodes a stored record that hashes to id and checks
// that it re-encodes to its bytes.
func decodeEvidence(id hashing.Digest, raw []byte) (Result, error) {
	var b body
	if err := hashing.DecodeStrict(raw, &b); err != nil {
		return Result{}, fmt.Errorf("discover: evidence %s: %v: %w", id, err, ErrCorrupt)
	}
	res := Result{ID: id, Registry: b.Registry, Version: b.Version, Terms: b.Terms, Matches: b.Matches, Unresolved: b.Unresolved, OK: b.OK, Relevance: b.Relevance}
	if canon, err := res.Canonical(); err != nil || hashing.SumSHA256(canon) != id {
		return Result{}, fmt.Errorf("discover: evidence %s does not re-encode to its bytes: %w", id, ErrCorrupt)
	}
	return res, nil
}

// Verify re-checks every stored evidence record: it hashes to its id, and
// decodes and re-encodes to its bytes (as Lookup does). It returns how
// many there are and a problem per bad one; the error wraps ErrCorrupt
// when there is one.
func Verify(ctx context.Context, st store.Viewer) (n int, problems []string, err error) {
	return store.VerifyIn(ctx, st, spaceEvidence, func(id hashing.Digest, raw []byte) error {
		_, err := decodeEvidence(id, raw)
		return err
	}, ErrCorrupt)
}
