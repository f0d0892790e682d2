package session

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/groundgate/groundgate/calls"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/store"
)

// The store's buckets.
var (
	// BucketRecords: session id → its header, RFC 8785.
	BucketRecords = []byte("session.records")
	// BucketTurns: session id ‖ 0x00 ‖ seq (8 bytes, big-endian) → a Turn.
	BucketTurns = []byte("session.turns")
	// BucketCalls: session id ‖ 0x00 ‖ seq → a CallRecord.
	BucketCalls = []byte("session.calls")
	// BucketStates: session id → the session's state now, RFC 8785 ({}
	// when empty); its SHA-256 is the header's state.
	BucketStates = []byte("session.states")
	// BucketValues: SHA-256 of a filed value → the value, RFC 8785: every
	// result ever filed, so that the state after any call can be rebuilt
	// from the call records (Rebuild).
	BucketValues = []byte("session.values")
)

// The buckets as the storage layer names them: headers and states are
// values (they change), turns and calls append-only logs under the
// session's id, filed values content-addressed records.
var (
	nameRecords = string(BucketRecords)
	nameTurns   = string(BucketTurns)
	nameCalls   = string(BucketCalls)
	nameStates  = string(BucketStates)
	spaceValues = store.Space{Name: string(BucketValues), Check: store.SHA256}
)

// Backend is what sessions need of the storage layer
// (registry.Store.Engine()).
type Backend interface {
	View(ctx context.Context, fn func(store.Tx) error) error
	Update(ctx context.Context, fn func(store.Tx) error) error
}

// TokenPrefix starts every session token.
const TokenPrefix = "ggs_"

// Options configure a Store. Zero fields take the defaults.
type Options struct {
	Limits Limits
	// Now is the clock (time.Now); it stamps records, and nothing hashed
	// reads it.
	Now func() time.Time
	// Rand is the source of nonces and tokens (crypto/rand).
	Rand   io.Reader
	Logger *slog.Logger
}

// Store keeps sessions in the storage layer. It is safe for concurrent
// use. Two writers of one session (two replicas over one PostgreSQL) never
// both record turn or call n: the logs refuse the second (store.ErrConflict);
// and Hold keeps a session's calls one at a time across them when the
// engine has a lock (locker).
type Store struct {
	st    Backend
	opts  Options
	cache stateCache
	holds holds
	lock  locker // the engine's, when it has one (Hold)
}

// Open returns the store over st, first indexing the tokens of sessions
// made before the token index (once in a file's life).
func Open(st Backend, opts Options) (*Store, error) {
	if err := indexTokens(context.Background(), st); err != nil {
		return nil, fmt.Errorf("session: index tokens: %w", err)
	}
	opts.Limits = opts.Limits.withDefaults()
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Rand == nil {
		opts.Rand = rand.Reader
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	lock, _ := st.(locker)
	return &Store{st: st, opts: opts, lock: lock}, nil
}

// NewTurn is a turn to record: the words and the discovery result they
// gave (the caller discovered them).
type NewTurn struct {
	Prompt   string
	Evidence hashing.Digest
	By       string // ByHost (the default) or ByAgent
	// Facts is a JSON object the host asserts with the words (nil: none);
	// at most Limits.MaxFactsBytes in RFC 8785 form, and only by the host.
	Facts json.RawMessage
}

// Create opens a session whose first turn is first, and returns it with
// its token (the only time the token is given).
func (s *Store) Create(ctx context.Context, first NewTurn, agentDiscovery bool) (Created, error) {
	if err := ctx.Err(); err != nil {
		return Created{}, err
	}
	if err := s.checkTurn(&first, agentDiscovery); err != nil {
		return Created{}, err
	}
	var secret [64]byte
	if _, err := io.ReadFull(s.opts.Rand, secret[:]); err != nil {
		return Created{}, fmt.Errorf("session: random: %w", err)
	}
	g := genesis{AgentDiscovery: agentDiscovery, Nonce: hex.EncodeToString(secret[:32]), Version: RecordVersion}
	token := TokenPrefix + base64.RawURLEncoding.EncodeToString(secret[32:])
	now := s.now()
	h := header{ID: g.id(), Version: RecordVersion, Nonce: g.Nonce, AgentDiscovery: agentDiscovery, Created: now,
		TokenSHA256: hashing.SumSHA256([]byte(token)), State: (&State{}).Digest()}
	var out *Session
	err := s.st.Update(ctx, func(tx store.Tx) error {
		h := h // an engine may run fn again (store.Updater): each run starts from the header as made
		if _, err := tx.Value(nameRecords, h.ID.Key()); err == nil {
			return fmt.Errorf("session: id %s is taken: the random source repeats", h.ID)
		}
		if err := putJSON(tx, nameStates, h.ID.Key(), (&State{}).Canonical()); err != nil {
			return err
		}
		if err := putToken(tx, h); err != nil {
			return err
		}
		if err := s.addTurn(tx, &h, first, now); err != nil {
			return err
		}
		var err error
		out, err = load(tx, h.ID)
		return err
	})
	if err != nil {
		return Created{}, err
	}
	return Created{Session: out, Token: token}, nil
}

// Get returns a session with its turns and calls.
func (s *Store) Get(ctx context.Context, id hashing.Digest) (*Session, error) {
	var out *Session
	err := s.inTx(ctx, id, reading, func(tx store.Tx, _ header) error {
		var err error
		out, err = load(tx, id)
		return err
	})
	return out, err
}

// Authorize checks that token is the session's own. It returns
// ErrUnauthorized when it is not, and when no session has the id.
func (s *Store) Authorize(ctx context.Context, id hashing.Digest, token string) error {
	presented := hashing.SumSHA256([]byte(token))
	err := s.inTx(ctx, id, reading, func(_ store.Tx, h header) error {
		if subtle.ConstantTimeCompare(presented.Sum(), h.TokenSHA256.Sum()) != 1 {
			return fmt.Errorf("%w: %s", ErrUnauthorized, id)
		}
		return nil
	})
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("%w: %s", ErrUnauthorized, id)
	}
	return err
}

// AddTurn records the next turn of an open session.
func (s *Store) AddTurn(ctx context.Context, id hashing.Digest, t NewTurn) (*Session, error) {
	var out *Session
	err := s.inTx(ctx, id, writeOpen, func(tx store.Tx, h header) error {
		if err := s.checkTurn(&t, h.AgentDiscovery); err != nil {
			return err
		}
		if err := s.addTurn(tx, &h, t, s.now()); err != nil {
			return err
		}
		var err error
		out, err = load(tx, id)
		return err
	})
	return out, err
}

// State returns the session's trusted state now, checked against the
// digest its header records.
func (s *Store) State(ctx context.Context, id hashing.Digest) (*State, error) {
	var st *State
	err := s.inTx(ctx, id, reading, func(tx store.Tx, h header) error {
		var err error
		st, err = s.cache.read(tx, h)
		return err
	})
	return st, err
}

// AppendCall records a call in an open session and, when the call was
// admitted and its outcome is OutcomeOK, files its observations in the
// state, in one transaction. It returns the call as recorded. When the
// result would take the state past the limits, or an observation is not
// well formed, the call is still recorded (it ran), the state is left as
// it was, the record says why (Unfiled), and the error wraps ErrTooLarge
// or ErrInvalid. A call that is not well formed itself (checkCall), or on
// a closed session (ErrClosed), records nothing.
func (s *Store) AppendCall(ctx context.Context, id hashing.Digest, c Call) (CallRecord, error) {
	if err := checkCall(c); err != nil {
		return CallRecord{}, err
	}
	var (
		rec     CallRecord
		filed   *State // the state the call left, once committed
		unfiled error  // why the result was not filed
	)
	err := s.inTx(ctx, id, writeOpen, func(tx store.Tx, h header) error {
		rec = CallRecord{Seq: h.Calls, Request: c.Request, Tool: c.Tool, Decision: c.Decision, Outcome: c.Outcome,
			At: s.now(), State: h.State, Filed: []Filed{}, Failures: c.Failures}
		if !c.Hash.IsZero() {
			hash := c.Hash
			rec.Hash = &hash
		}
		if !c.Read.IsZero() {
			r := c.Read
			rec.Read = &r
		}
		if c.Decision == Admitted && c.Outcome == OutcomeOK && len(c.Observe) > 0 {
			cur, err := s.cache.read(tx, h)
			if err != nil {
				return err
			}
			next, err := cur.With(s.opts.Limits, c.Observe...)
			switch {
			case err == nil:
				if err := s.file(tx, &h, &rec, next, c.Observe); err != nil {
					return err
				}
				filed = next
			case errors.Is(err, ErrTooLarge), errors.Is(err, ErrInvalid):
				rec.Unfiled, unfiled = err.Error(), err
			default:
				return err
			}
		}
		if c.Footprint != nil {
			if err := calls.PutTx(tx, c.Footprint, c.FootprintRaw); err != nil {
				return err
			}
		}
		if err := appendEntry(tx, nameCalls, id, rec.Seq, rec); err != nil {
			return err
		}
		h.Calls++
		return putRecord(tx, nameRecords, id.Key(), h)
	})
	if err != nil {
		return CallRecord{}, err
	}
	if filed != nil {
		s.cache.put(id, filed)
	}
	if unfiled != nil {
		return rec, fmt.Errorf("session %s: call %d (%s) recorded, result not filed: %w", id, rec.Seq, c.Tool, unfiled)
	}
	return rec, nil
}

// file writes the new state, its values and where they went.
func (s *Store) file(tx store.Tx, h *header, rec *CallRecord, next *State, obs []Observation) error {
	for _, o := range obs {
		args, key, err := keyOf(o.Arguments)
		if err != nil {
			return err
		}
		v, err := hashing.CanonicalizeJSON(o.Value)
		if err != nil {
			return err
		}
		d := valueDigest(v)
		if err := tx.PutRecord(spaceValues, d, v); err != nil {
			return err
		}
		rec.Filed = append(rec.Filed, Filed{Tool: o.Tool, Arguments: args, Key: key, Value: d})
	}
	if err := putJSON(tx, nameStates, h.ID.Key(), next.Canonical()); err != nil {
		return err
	}
	h.State, h.Results = next.Digest(), next.Len()
	rec.State = h.State
	return nil
}

// Close closes a session: later turns and calls are refused (ErrClosed);
// the record stays. Closing a closed session changes nothing.
func (s *Store) Close(ctx context.Context, id hashing.Digest) (*Session, error) {
	var out *Session
	err := s.inTx(ctx, id, writing, func(tx store.Tx, h header) error {
		if !h.Closed {
			now := s.now()
			h.Closed, h.ClosedAt = true, &now
			if err := putRecord(tx, nameRecords, id.Key(), h); err != nil {
				return err
			}
		}
		var err error
		out, err = load(tx, id)
		return err
	})
	return out, err
}

// A transaction's mode: whether it writes, and whether a closed session
// is ErrClosed.
type txMode int

const (
	reading   txMode = iota // a read transaction
	writing                 // a writing transaction, committed before it returns
	writeOpen               // writing, on an open session only
)

// inTx runs f on a session's checked header in one transaction of mode.
func (s *Store) inTx(ctx context.Context, id hashing.Digest, mode txMode, f func(store.Tx, header) error) error {
	run := s.st.View
	if mode != reading {
		run = s.st.Update
	}
	return run(ctx, func(tx store.Tx) error {
		h, err := readHeader(tx, id)
		if err != nil {
			return err
		}
		if mode == writeOpen && h.Closed {
			return fmt.Errorf("%w: %s", ErrClosed, id)
		}
		return f(tx, h)
	})
}

func (s *Store) now() time.Time { return s.opts.Now().UTC().Round(0) }

// checkTurn checks a turn and fills its speaker.
func (s *Store) checkTurn(t *NewTurn, agentDiscovery bool) error {
	if t.Evidence.IsZero() {
		return fmt.Errorf("%w: a turn needs the discovery result's id", ErrInvalid)
	}
	return s.checkWords(t, agentDiscovery)
}

// checkWords checks a turn's words, facts and speaker (before they are
// discovered), and fills its speaker.
func (s *Store) checkWords(t *NewTurn, agentDiscovery bool) error {
	switch {
	case strings.TrimSpace(t.Prompt) == "":
		return fmt.Errorf("%w: the prompt is empty", ErrInvalid)
	case !utf8.ValidString(t.Prompt):
		return fmt.Errorf("%w: the prompt is not UTF-8", ErrInvalid)
	case len(t.Prompt) > s.opts.Limits.MaxPromptBytes:
		return fmt.Errorf("%w: the prompt is %d bytes, at most %d", ErrTooLarge, len(t.Prompt), s.opts.Limits.MaxPromptBytes)
	}
	if err := s.checkFacts(t); err != nil {
		return err
	}
	switch t.By {
	case "":
		t.By = ByHost
	case ByHost:
	case ByAgent:
		if !agentDiscovery {
			return fmt.Errorf("%w: the agent's words are turns only of an agent_discovery session", ErrInvalid)
		}
	default:
		return fmt.Errorf("%w: a turn is by %q or %q, not %q", ErrInvalid, ByHost, ByAgent, clip(t.By, 32))
	}
	return nil
}

// checkFacts puts a turn's facts in RFC 8785 form, or refuses them: not a
// JSON object, too large, or sent with the agent's words.
func (s *Store) checkFacts(t *NewTurn) error {
	if len(t.Facts) == 0 || string(t.Facts) == "null" {
		t.Facts = nil
		return nil
	}
	canon, err := hashing.CanonicalizeJSON(t.Facts)
	switch {
	case err != nil:
		return fmt.Errorf("%w: facts are not valid JSON: %s", ErrInvalid, hashing.Reason(err))
	case canon[0] != '{':
		return fmt.Errorf("%w: facts must be a JSON object", ErrInvalid)
	case len(canon) > s.opts.Limits.MaxFactsBytes:
		return fmt.Errorf("%w: the facts are %d bytes, at most %d", ErrTooLarge, len(canon), s.opts.Limits.MaxFactsBytes)
	case t.By == ByAgent:
		return fmt.Errorf("%w: facts are the host's: an agent's turn has none", ErrInvalid)
	case string(canon) == "{}":
		canon = nil
	}
	t.Facts = canon
	return nil
}

func (s *Store) addTurn(tx store.Tx, h *header, t NewTurn, at time.Time) error {
	turn := Turn{Seq: h.Turns, Prompt: t.Prompt, Evidence: t.Evidence, By: t.By, Facts: t.Facts, At: at}
	if err := appendEntry(tx, nameTurns, h.ID, turn.Seq, turn); err != nil {
		return err
	}
	h.Turns++
	return putRecord(tx, nameRecords, h.ID.Key(), *h)
}

func checkCall(c Call) error {
	switch {
	case c.Request.IsZero():
		return fmt.Errorf("%w: a call needs its request digest", ErrInvalid)
	case c.Decision == Admitted && c.Hash.IsZero():
		return fmt.Errorf("%w: an admitted call needs its footprint's hash", ErrInvalid)
	case c.Tool == "":
		return fmt.Errorf("%w: a call needs its tool", ErrInvalid)
	case c.Decision != Admitted && c.Decision != Refused:
		return fmt.Errorf("%w: decision %q: %q or %q", ErrInvalid, clip(string(c.Decision), 32), Admitted, Refused)
	case c.Decision == Refused && c.Outcome != "":
		return fmt.Errorf("%w: a refused call has no outcome", ErrInvalid)
	case c.Decision == Admitted && len(c.Failures) > 0:
		return fmt.Errorf("%w: an admitted call has no failures", ErrInvalid)
	}
	return nil
}

// appendEntry appends v's RFC 8785 form as entry seq of the session's log
// name (its turns or its calls: key = the session id, a zero byte, the
// sequence number big-endian, store.EntryKey). Entry seq taken already
// is a conflict: another writer recorded it first.
func appendEntry(tx store.Logs, name string, id hashing.Digest, seq int, v any) error {
	raw, err := hashing.Canonical(v)
	if err != nil {
		return fmt.Errorf("session: encode: %w", err)
	}
	if err := tx.AppendEntry(name, id.Key(), uint64(seq), raw); err != nil {
		return fmt.Errorf("session %s: %w", id, err)
	}
	return nil
}

// putRecord stores v's RFC 8785 form.
func putRecord(tx store.Values, name string, key []byte, v any) error {
	raw, err := hashing.Canonical(v)
	if err != nil {
		return fmt.Errorf("session: encode: %w", err)
	}
	return putJSON(tx, name, key, raw)
}

func putJSON(tx store.Values, name string, key, raw []byte) error {
	if err := tx.PutValue(name, key, raw); err != nil {
		return fmt.Errorf("session: store: %w", err)
	}
	return nil
}

// readHeader reads and checks a session's header.
func readHeader(tx store.Values, id hashing.Digest) (header, error) {
	raw, err := tx.Value(nameRecords, id.Key())
	if errors.Is(err, store.ErrNotFound) {
		return header{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return header{}, fmt.Errorf("session %s: %w", id, err)
	}
	h, err := decodeHeader(id, raw)
	if err != nil {
		return header{}, fmt.Errorf("%w: %s: %v", ErrCorrupt, id, err)
	}
	return h, nil
}

// decodeHeader decodes a stored header and checks it: its canonical
// form, its id (the genesis' digest, and the key it is stored under).
func decodeHeader(key hashing.Digest, raw []byte) (header, error) {
	var h header
	if err := decodeRecord(raw, &h); err != nil {
		return header{}, err
	}
	switch {
	case h.ID != key:
		return header{}, fmt.Errorf("stored under %s, says %s", key, h.ID)
	case h.Version != RecordVersion:
		return header{}, fmt.Errorf("version %q, want %q", clip(h.Version, 64), RecordVersion)
	case genesis{AgentDiscovery: h.AgentDiscovery, Nonce: h.Nonce, Version: h.Version}.id() != h.ID:
		return header{}, fmt.Errorf("its genesis does not hash to its id")
	case h.Turns < 1 || h.Calls < 0 || h.Results < 0:
		return header{}, fmt.Errorf("%d turns, %d calls, %d results", h.Turns, h.Calls, h.Results)
	}
	return h, nil
}

// decodeRecord decodes a stored record strictly and checks that its bytes
// are its canonical form.
func decodeRecord(raw []byte, v any) error {
	if err := hashing.DecodeStrict(raw, v); err != nil {
		return err
	}
	canon, err := hashing.Canonical(v)
	if err != nil {
		return err
	}
	if !bytes.Equal(canon, raw) {
		return fmt.Errorf("does not re-encode to its bytes")
	}
	return nil
}

// readState reads a session's state and checks it against its header.
func readState(tx store.Values, h header) (*State, error) {
	raw, err := stateBytes(tx, h)
	if err != nil {
		return nil, err
	}
	return decodeStored(h, raw)
}

// stateBytes reads a session's state's bytes and checks that they hash to
// the digest its header records.
func stateBytes(tx store.Values, h header) ([]byte, error) {
	raw, err := tx.Value(nameStates, h.ID.Key())
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s: no state", ErrCorrupt, h.ID)
	}
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", h.ID, err)
	}
	if d := hashing.SumSHA256(raw); d != h.State {
		return nil, fmt.Errorf("%w: %s: the state hashes to %s, the session says %s", ErrCorrupt, h.ID, d, h.State)
	}
	return raw, nil
}

// decodeStored decodes a state's checked bytes.
func decodeStored(h header, raw []byte) (*State, error) {
	st, err := DecodeState(bytes.Clone(raw))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: state: %v", ErrCorrupt, h.ID, err)
	}
	if st.Len() != h.Results {
		return nil, fmt.Errorf("%w: %s: the state holds %d results, the session says %d", ErrCorrupt, h.ID, st.Len(), h.Results)
	}
	return st, nil
}

// load reads a whole session: header, turns and calls, each checked.
func load(tx store.Tx, id hashing.Digest) (*Session, error) {
	h, err := readHeader(tx, id)
	if err != nil {
		return nil, err
	}
	out := &Session{ID: h.ID, Created: h.Created, AgentDiscovery: h.AgentDiscovery, Closed: h.Closed, ClosedAt: h.ClosedAt,
		Turns: make([]Turn, 0, h.Turns), Calls: make([]CallRecord, 0, h.Calls), State: h.State, Results: h.Results}
	for i := range h.Turns {
		var t Turn
		if err := readSeq(tx, nameTurns, id, i, &t); err != nil {
			return nil, err
		}
		if t.Seq != i || t.Evidence.IsZero() || (t.By != ByHost && t.By != ByAgent) {
			return nil, fmt.Errorf("%w: %s: turn %d does not check", ErrCorrupt, id, i)
		}
		out.Turns = append(out.Turns, t)
	}
	for i := range h.Calls {
		var c CallRecord
		if err := readSeq(tx, nameCalls, id, i, &c); err != nil {
			return nil, err
		}
		if c.Seq != i || c.Filed == nil || (c.Decision != Admitted && c.Decision != Refused) || c.Request.IsZero() ||
			(c.Decision == Admitted && c.Hash == nil) {
			return nil, fmt.Errorf("%w: %s: call %d does not check", ErrCorrupt, id, i)
		}
		out.Calls = append(out.Calls, c)
	}
	last := (&State{}).Digest()
	if n := len(out.Calls); n > 0 {
		last = out.Calls[n-1].State
	}
	if last != h.State {
		return nil, fmt.Errorf("%w: %s: the calls left state %s, the session says %s", ErrCorrupt, id, last, h.State)
	}
	return out, nil
}

func readSeq(tx store.Logs, bucket string, id hashing.Digest, seq int, v any) error {
	raw, err := tx.Entry(bucket, id.Key(), uint64(seq))
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: %s: %s %d is missing", ErrCorrupt, id, bucket, seq)
	}
	if err != nil {
		return fmt.Errorf("session %s: %w", id, err)
	}
	if err := decodeRecord(raw, v); err != nil {
		return fmt.Errorf("%w: %s: %s %d: %v", ErrCorrupt, id, bucket, seq, err)
	}
	return nil
}
