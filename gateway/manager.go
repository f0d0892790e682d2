package gateway

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/store"
)

// BucketUpstreams holds the upstreams' configurations: name → the
// configuration's RFC 8785 form, secrets included (the file is the
// server's, mode 0600).
var BucketUpstreams = []byte("gateway.upstreams")

var nameUpstreams = string(BucketUpstreams)

// The upstreams' generation on a shared store (Options.Shared): a value
// every Put advances, so that a replica learns of another's change by
// reading one value rather than every configuration.
var (
	nameGeneration = "gateway.generation"
	keyGeneration  = []byte("upstreams")
)

// Backend is what the Manager needs of the storage layer
// (registry.Store.Engine()): the configurations are store values.
type Backend interface {
	View(ctx context.Context, fn func(store.Tx) error) error
	Update(ctx context.Context, fn func(store.Tx) error) error
}

// Registry is what the Manager needs from the registry: the entries in
// force, and a way to write a sync as one version.
type Registry interface {
	Current() *registry.Snapshot
	Apply(ctx context.Context, entries []registry.Entry) (uint64, []string, error)
}

// Manager keeps the configured upstreams connected: it stores their
// configurations, starts each at Open and on Put, and keeps, per upstream,
// the live identity of every tool listed (for drift, SPEC §14). It is safe
// for concurrent use.
type Manager struct {
	st   Backend
	reg  Registry
	log  *slog.Logger
	opts Options

	ctx    context.Context
	cancel context.CancelFunc

	mu  sync.RWMutex
	ups map[string]*managed
	// writeMu orders configuration writes and syncs.
	writeMu sync.Mutex
	// base caches baseIdentity: in-force identity → base identity.
	base sync.Map
	// refused is, per name, the stored bytes Refresh could not start: not
	// tried (nor logged) again on every refresh. Under writeMu.
	refused map[string]string
	// gen is the generation of the configurations running (Options.Shared).
	gen atomic.Uint64
}

// managed is one running upstream and the identities of its live tools.
type managed struct {
	up  *Upstream
	cfg Config
	// canon is cfg's stored form, which Refresh compares with the store's.
	canon []byte
	live  atomic.Pointer[liveIndex]
}

// liveIndex is one published tool list with each tool's identity
// computed once (calls compare it with the entry in force).
type liveIndex struct {
	list   ToolList
	byName map[string]Live
}

// Live is what the gateway knows of one listed tool now.
type Live struct {
	Tool LiveTool
	// Identity is the tool's identity as an entry would have it (zero
	// when the tool cannot be an entry: see Tool.Problem).
	Identity hashing.Digest
	Server   ServerInfo
	// Generation is the list's.
	Generation uint64
}

// OpenManager starts every upstream stored in st. opts are the template every Upstream gets (OnTools is
// the Manager's own).
func OpenManager(ctx context.Context, st Backend, reg Registry, opts Options) (*Manager, error) {
	m := &Manager{st: st, reg: reg, log: opts.Logger, opts: opts, ups: map[string]*managed{}}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	m.ctx, m.cancel = context.WithCancel(context.WithoutCancel(ctx))
	cfgs := map[string]Config{}
	err := st.View(ctx, func(tx store.Tx) error {
		gen, err := GenerationIn(tx)
		if err != nil {
			return err
		}
		m.gen.Store(gen)
		return tx.Scan(nameUpstreams, func(k, v []byte) error {
			var c Config
			if err := hashing.DecodeStrict(v, &c); err != nil {
				return fmt.Errorf("gateway: stored upstream %q: %w", k, err)
			}
			cfgs[string(k)] = c
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	for name, c := range cfgs {
		if _, err := m.start(name, c); err != nil {
			// A stored configuration this version refuses stays stored
			// (a GET shows it); it is not started.
			m.log.Error("upstream not started", "upstream", name, "error", err)
		}
	}
	return m, nil
}

// Close stops every upstream.
func (m *Manager) Close() error {
	m.cancel()
	m.mu.Lock()
	ups := m.ups
	m.ups = map[string]*managed{}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, mu := range ups {
		wg.Add(1)
		go func() { defer wg.Done(); _ = mu.up.Close() }()
	}
	wg.Wait()
	return nil
}

func (m *Manager) start(name string, cfg Config) (*managed, error) {
	mg := &managed{cfg: cfg.normalized()}
	canon, err := mg.cfg.Canonical()
	if err != nil {
		return nil, err
	}
	mg.canon = canon
	opts := m.opts
	opts.OnTools = func(tl ToolList) { mg.index(tl, mg.cfg.Pin) }
	up, err := New(name, cfg, opts)
	if err != nil {
		return nil, err
	}
	mg.up = up
	m.mu.Lock()
	old := m.ups[name]
	m.ups[name] = mg
	m.mu.Unlock()
	if old != nil {
		go func() { _ = old.up.Close() }()
	}
	up.Start(m.ctx)
	return mg, nil
}

// index computes the identity of every listed tool, once per list.
func (mg *managed) index(tl ToolList, pin Pin) {
	ix := &liveIndex{list: tl, byName: make(map[string]Live, len(tl.Tools))}
	for _, t := range tl.Tools {
		l := Live{Tool: t, Server: tl.Server, Generation: tl.Generation}
		if id, err := ToolIdentity(tl.Upstream, pin, tl.Server, t); err == nil {
			l.Identity = id
		}
		ix.byName[t.Name] = l
	}
	mg.live.Store(ix)
}

// Put stores the configuration of the upstream called name and (re)starts
// it: a configuration equal to the stored one changes nothing. It reports
// whether the upstream is new.
func (m *Manager) Put(ctx context.Context, name string, cfg Config) (created bool, err error) {
	cfg = cfg.normalized()
	if err := cfg.Validate(name); err != nil {
		return false, err
	}
	canon, err := cfg.Canonical()
	if err != nil {
		return false, err
	}
	m.writeMu.Lock()
	defer m.writeMu.Unlock()
	m.mu.RLock()
	cur := m.ups[name]
	m.mu.RUnlock()
	if cur != nil && string(cur.canon) == string(canon) {
		return false, nil
	}
	var before, after uint64
	if err := m.st.Update(ctx, func(tx store.Tx) error {
		_, err := tx.Value(nameUpstreams, []byte(name))
		created = errors.Is(err, store.ErrNotFound)
		if err := tx.PutValue(nameUpstreams, []byte(name), canon); err != nil {
			return err
		}
		if !m.opts.Shared {
			return nil
		}
		if before, err = GenerationIn(tx); err != nil {
			return err
		}
		after = before + 1
		return tx.PutValue(nameGeneration, keyGeneration, binary.BigEndian.AppendUint64(nil, after))
	}); err != nil {
		return false, fmt.Errorf("gateway: store upstream %s: %w", name, err)
	}
	// Only when no other replica's change came between: else the next
	// Refresh must still see a generation this process has not caught up with.
	m.gen.CompareAndSwap(before, after)
	if _, err := m.start(name, cfg); err != nil {
		return created, err
	}
	return created, nil
}

// GenerationIn reads, in tx, the upstreams' generation on a shared store
// (Options.Shared): a replica compares it with Generation to learn that
// another put an upstream. 0 when none was put.
func GenerationIn(tx store.Values) (uint64, error) {
	raw, err := tx.Value(nameGeneration, keyGeneration)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("gateway: upstreams' generation: %w", err)
	case len(raw) != 8:
		return 0, fmt.Errorf("gateway: upstreams' generation is %d bytes: %w", len(raw), store.ErrCorrupt)
	}
	return binary.BigEndian.Uint64(raw), nil
}

// Generation is the generation of the configurations running.
func (m *Manager) Generation() uint64 { return m.gen.Load() }

// Refresh makes the running upstreams the stored ones: one another
// process sharing the store added or changed is (re)started, one no
// longer stored is stopped; those already running as stored are left
// alone. It reports whether anything changed.
func (m *Manager) Refresh(ctx context.Context) (bool, error) {
	m.writeMu.Lock()
	defer m.writeMu.Unlock()
	var gen uint64
	stored := map[string][]byte{}
	err := m.st.View(ctx, func(tx store.Tx) error {
		var err error
		if gen, err = GenerationIn(tx); err != nil {
			return err
		}
		return tx.Scan(nameUpstreams, func(k, v []byte) error {
			stored[string(k)] = bytes.Clone(v)
			return nil
		})
	})
	if err != nil {
		return false, fmt.Errorf("gateway: read upstreams: %w", err)
	}
	changed := m.reconcile(stored)
	m.gen.Store(gen)
	return changed, nil
}

// reconcile starts and stops upstreams to match stored. Callers hold
// writeMu.
func (m *Manager) reconcile(stored map[string][]byte) bool {
	if m.ctx.Err() != nil {
		return false // closed: a late refresh starts nothing
	}
	m.mu.RLock()
	var gone []string
	changed := map[string][]byte{}
	for name, raw := range stored {
		if mg := m.ups[name]; (mg == nil || string(mg.canon) != string(raw)) && m.refused[name] != string(raw) {
			changed[name] = raw
		}
	}
	for name := range m.ups {
		if _, ok := stored[name]; !ok {
			gone = append(gone, name)
		}
	}
	m.mu.RUnlock()
	for name, raw := range changed {
		var c Config
		err := hashing.DecodeStrict(raw, &c)
		if err == nil {
			_, err = m.start(name, c)
		}
		if err != nil {
			if m.refused == nil {
				m.refused = map[string]string{}
			}
			m.refused[name] = string(raw)
			m.log.Error("upstream not started", "upstream", name, "error", err)
		}
	}
	for _, name := range gone {
		m.mu.Lock()
		mg := m.ups[name]
		delete(m.ups, name)
		m.mu.Unlock()
		if mg != nil {
			go func() { _ = mg.up.Close() }()
		}
	}
	return len(changed)+len(gone) > 0
}

// Names lists the configured upstreams, sorted.
func (m *Manager) Names() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]string, 0, len(m.ups))
	for n := range m.ups {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (m *Manager) get(name string) (*managed, error) {
	m.mu.RLock()
	mg := m.ups[name]
	m.mu.RUnlock()
	if mg == nil {
		return nil, fmt.Errorf("%w: %q", ErrNoUpstream, clip(name, 64))
	}
	return mg, nil
}

// Upstream returns the running upstream called name.
func (m *Manager) Upstream(name string) (*Upstream, error) {
	mg, err := m.get(name)
	if err != nil {
		return nil, err
	}
	return mg.up, nil
}

// View is what GET /v1/upstreams/{name} shows: the configuration with its
// secret values redacted, and the status (SPEC §14).
type View struct {
	Name   string     `json:"name"`
	Config Config     `json:"config"`
	Status ViewStatus `json:"status"`
}

// ViewStatus is an upstream's status as GET shows it.
type ViewStatus struct {
	Connected bool        `json:"connected"`
	Server    *ServerInfo `json:"server"`
	// Tools compares each live tool with the entry in force.
	Tools     []ToolState `json:"tools"`
	LastError string      `json:"last_error,omitempty"`
	Restarts  int         `json:"restarts"`
	InFlight  int         `json:"in_flight"`
}

// View returns the upstream's view.
func (m *Manager) View(name string) (View, error) {
	mg, err := m.get(name)
	if err != nil {
		return View{}, err
	}
	st := mg.up.Status()
	v := View{Name: name, Config: mg.cfg.Redacted(), Status: ViewStatus{
		Connected: st.Connected, Server: st.Server, LastError: st.LastError, Restarts: st.Restarts, InFlight: st.InFlight,
	}}
	var live []LiveTool
	var srv ServerInfo
	if ix := mg.live.Load(); ix != nil {
		live, srv = ix.list.Tools, ix.list.Server
	}
	v.Status.Tools = Compare(name, mg.cfg.Pin, srv, live, InForce(m.reg.Current(), name))
	if v.Status.Tools == nil {
		v.Status.Tools = []ToolState{}
	}
	return v, nil
}

// Views returns every upstream's view, sorted by name.
func (m *Manager) Views() []View {
	out := []View{}
	for _, n := range m.Names() {
		if v, err := m.View(n); err == nil {
			out = append(out, v)
		}
	}
	return out
}

// InForce returns the registry's tool entries of upstream name that are in
// force (not removed by a sync).
func InForce(snap *registry.Snapshot, name string) []registry.Capability {
	var out []registry.Capability
	for _, c := range snap.Capabilities() {
		if c.Kind == registry.KindTool && c.Tool != nil && c.Tool.Impl.Upstream == name && !c.Disc.Deprecated {
			out = append(out, c)
		}
	}
	return out
}

// Ground returns how the upstream is grounded.
func (m *Manager) Ground(name string) (Ground, error) {
	mg, err := m.get(name)
	if err != nil {
		return "", err
	}
	return mg.cfg.Ground, nil
}

// Live returns what the gateway knows of tool now: ok is false when the
// upstream has not listed its tools yet (it is connecting), and Live's
// Tool.Name is empty when the last list lacks the tool.
func (m *Manager) Live(upstream, tool string) (l Live, ok bool, err error) {
	mg, err := m.get(upstream)
	if err != nil {
		return Live{}, false, err
	}
	ix := mg.live.Load()
	if ix == nil {
		return Live{}, false, nil
	}
	return ix.byName[tool], true, nil
}

// Call forwards a call to the upstream (see Upstream.Call).
func (m *Manager) Call(ctx context.Context, upstream, tool string, args []byte) (Result, error) {
	mg, err := m.get(upstream)
	if err != nil {
		return Result{}, err
	}
	return mg.up.Call(ctx, tool, args)
}

// WaitReady waits until the upstream has listed its tools, at most d.
func (m *Manager) WaitReady(ctx context.Context, name string, d time.Duration) error {
	mg, err := m.get(name)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if err := mg.up.WaitReady(ctx); err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	// The list is indexed just after the session is published (OnTools).
	for mg.live.Load() == nil {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %s has not listed its tools", ErrUnavailable, name)
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

// Drift says whether the entry c in force still matches its live tool:
// StateOK, StateDrift (the upstream declares something else now, or
// cannot be read as an entry), or StateRemoved (the last list lacks it).
// ok is false when the upstream has not listed its tools yet.
func (m *Manager) Drift(c registry.Capability) (st State, l Live, ok bool, err error) {
	if c.Tool == nil {
		return "", Live{}, false, fmt.Errorf("%w: %s is not a tool", ErrNoUpstream, c.Name)
	}
	l, ok, err = m.Live(c.Tool.Impl.Upstream, c.Tool.Impl.Tool)
	if err != nil || !ok {
		return "", l, ok, err
	}
	switch {
	case l.Tool.Name == "":
		return StateRemoved, l, true, nil
	case l.Identity.IsZero() || l.Identity != m.baseIdentity(c):
		return StateDrift, l, true, nil
	}
	return StateOK, l, true, nil
}

// baseIdentity is BaseIdentity, cached: identities are content
// addresses, so an entry's base identity never changes.
func (m *Manager) baseIdentity(c registry.Capability) hashing.Digest {
	if c.Tool.Sem.Contract.Empty() {
		return c.Identity
	}
	if v, ok := m.base.Load(c.Identity); ok {
		return v.(hashing.Digest)
	}
	id := BaseIdentity(c)
	m.base.Store(c.Identity, id)
	return id
}
