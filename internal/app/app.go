// Package app wires groundgate's parts together: the store (the bbolt
// file, or PostgreSQL + S3 shared by several servers), the built-in
// catalog, discovery, the gate, the executor, the data root and the HTTP
// server. The commands in cmd/ and the reproducibility suite share
// it, so there is one wiring; packages never read global
// configuration.
package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"time"

	sdkmcp "github.com/modelcontextprotocol/go-sdk/mcp"
	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/attest"
	"github.com/groundgate/groundgate/calls"
	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/fuzz"
	"github.com/groundgate/groundgate/fuzz/runs"
	"github.com/groundgate/groundgate/gateway"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/jobs"
	"github.com/groundgate/groundgate/mcp"
	"github.com/groundgate/groundgate/policy"
	"github.com/groundgate/groundgate/policy/smt"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/sampledata"
	"github.com/groundgate/groundgate/server"
	"github.com/groundgate/groundgate/session"
	"github.com/groundgate/groundgate/store"
	"github.com/groundgate/groundgate/store/pgstore"
)

// Config is everything the server process needs; nothing is read from
// globals.
type Config struct {
	Addr string // listen address; "127.0.0.1:0" picks a free port
	DB   string // bbolt file, created and seeded when new
	// Store and Blobs, both set and DB empty, run the server on a store
	// several servers share (SPEC §17): Store a PostgreSQL DSN, Blobs an
	// s3:// URL (OpenShared). KeyFile is then required.
	Store, Blobs string
	// Env reads the object store's credentials (s3store.ParseURL); nil
	// means os.Getenv.
	Env        func(string) string
	Data       string // data root: sources resolve inside it; "" means the bundled sample data
	AdminToken string // registry write token; empty refuses writes
	Logger     *slog.Logger
	// ShutdownTimeout bounds the wait for in-flight requests.
	ShutdownTimeout time.Duration
	// Exec bounds executions (budget, concurrency, queue); its zero
	// fields take the executor's defaults. Its Logger is Logger.
	Exec execution.Options
	// Solver checks policies: "z3" (the default) or "cvc5".
	Solver string
	// PolicyTimeout bounds one solver query; zero means policy.DefaultTimeout.
	PolicyTimeout time.Duration
	// RefusePoisonedDisc refuses registry writes whose discovery text
	// addresses agents, hides characters or holds links (fuzz.Screen).
	RefusePoisonedDisc bool
	// Advisor, when set, serves groundings that ask for "repair": "llm",
	// within AdviceBudget; nil refuses them.
	Advisor      ground.Advisor
	AdviceBudget ground.AdviceBudget
	// Gateway bounds every upstream (SPEC §14); zero fields take the
	// gateway's defaults.
	Gateway gateway.Limits
	// KeyFile is the Ed25519 key attestations are signed with, created
	// (mode 0600) when missing; "" means attest.DefaultKeyPath(DB). On a
	// shared store it must be given: every replica signs with one key.
	KeyFile string
	// Clock, when set, is the time every call in a session is decided at
	// (serve --clock): what rules read as now. Zero: the system clock.
	Clock time.Time
}

// Main is the wired server: store, discovery, gate and HTTP, opened from a
// Config. Tests run it on 127.0.0.1:0 in a temp dir.
type Main struct {
	cfg Config
	// Store is the registry; Engine is the storage every other package
	// keeps its records in (the registry's bbolt file, or the shared
	// PostgreSQL + S3 engine), handed to each by the wiring.
	Store  *registry.Store
	Engine store.Store
	Disc   *discover.Discoverer
	Gate   *ground.Gate
	Exec   *execution.Executor
	// Policies is the policy store; Checker decides requests against it.
	Policies *policy.Store
	Checker  *policy.Checker
	// Fuzz runs registry fuzzing in the background (POST /v1/fuzz/runs).
	Fuzz *runs.Manager
	// Upstreams keeps the gateway's upstreams connected; Calls decides,
	// forwards and records calls to their tools (SPEC §14).
	Upstreams *gateway.Manager
	Calls     *calls.Service
	pool      *smt.Pool
	// lintPool serves lint and policy writes: anyone may lint, and a lint
	// may ask many questions, so it never holds the gate's solvers.
	lintPool *smt.Pool
	data     *DataRoot
	http     *http.Server
	ln       net.Listener
	// shared is the engine OpenShared opened (nil on a file), closed
	// last; stopPoll ends the refresher's poll.
	shared   *pgstore.Store
	stopPoll context.CancelFunc
}

// Open checks and binds the listen address, opens the data root, then
// opens the database (seeding a new one with the built-in catalog) and
// builds discovery, the gate and the executor. The order matters: a bad
// address, a busy port or a missing data directory fails before any
// database file exists. If Open fails after it created the database file,
// it removes that file again.
//
// The result is unnamed on purpose: `return nil, err` must not nil out the
// value the deferred Close needs.
func Open(ctx context.Context, cfg Config) (_ *Main, err error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = 15 * time.Second
	}
	shared := cfg.Store != "" || cfg.Blobs != ""
	if err := checkShared(cfg.DB, cfg.Store, cfg.Blobs, cfg.KeyFile, shared); err != nil {
		return nil, err
	}
	if cfg.Env == nil {
		cfg.Env = os.Getenv
	}
	m := &Main{cfg: cfg}
	created := false
	defer func() {
		if err == nil {
			return
		}
		m.Close()
		if created {
			if rerr := os.Remove(cfg.DB); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
				err = errors.Join(err, fmt.Errorf("remove the new database: %w", rerr))
			}
			if rerr := os.RemoveAll(discover.DefaultTextIndexDir(cfg.DB)); rerr != nil {
				err = errors.Join(err, fmt.Errorf("remove the new text index: %w", rerr))
			}
		}
	}()
	if m.ln, err = net.Listen("tcp", cfg.Addr); err != nil {
		return nil, fmt.Errorf("http server: %w", err)
	}
	if m.data, err = OpenDataRoot(cfg.Data); err != nil {
		return nil, err
	}
	// Before the database: a refused key file fails before any database
	// file exists.
	keyFile := cfg.KeyFile
	if keyFile == "" {
		keyFile = attest.DefaultKeyPath(cfg.DB)
	}
	signer, err := attest.LoadOrCreate(keyFile)
	if err != nil {
		return nil, err
	}
	if _, serr := os.Stat(cfg.DB); !shared && errors.Is(serr, fs.ErrNotExist) {
		created = true
	}
	// One contract cache for the registry's entry checks, the executor
	// and the gate: each contract is parsed once.
	contracts := contract.NewCache(1024)
	ropt := registry.Options{Logger: cfg.Logger, Timeout: LockWait, Contracts: contracts}
	if cfg.RefusePoisonedDisc {
		ropt.Screen = fuzz.Screen
	}
	dopt := discover.Options{Logger: cfg.Logger}
	if shared {
		pg, err := OpenShared(ctx, cfg.Store, cfg.Blobs, cfg.Env, cfg.Logger)
		if err != nil {
			return nil, err
		}
		m.shared, m.Engine = pg, pg
		if m.Store, err = registry.OpenEngine(ctx, pg, ropt); err != nil {
			return nil, err
		}
		// The keyword tier's text index stays in memory: a directory is
		// one process's, and replicas share no disk.
	} else {
		m.Store, err = registry.Open(ctx, cfg.DB, ropt)
		if err != nil {
			// A lock timeout means another process made the file meanwhile
			// and holds it: it is not ours to remove.
			created = created && !errors.Is(err, bolt.ErrTimeout)
			return nil, HintLocked(err, cfg.DB)
		}
		m.Engine = m.Store.Engine()
		dopt.TextIndexDir = discover.DefaultTextIndexDir(cfg.DB)
	}
	if err := SeedBuiltin(ctx, m.Store); err != nil {
		return nil, err
	}
	m.Disc, err = discover.New(ctx, m.Store, m.Engine, dopt)
	if err != nil {
		return nil, err
	}
	// Reading the registry and indexing it leave garbage as large as what
	// they keep (hundreds of MB at 100,000 entries): hand it back now, or
	// the process holds it until the runtime's periodic scavenging.
	debug.FreeOSMemory()
	xopt := cfg.Exec
	xopt.Logger = cfg.Logger
	xopt.Contracts = contracts
	if m.Exec, err = NewExecutor(m.Store, m.Engine, m.data, xopt); err != nil {
		return nil, err
	}
	if m.Policies, m.pool, m.Checker, err = openPolicies(ctx, m.Engine, cfg.Solver, cfg.PolicyTimeout); err != nil {
		return nil, err
	}
	// With rules in force the first calls find their solvers warm (a
	// solver's first query costs tens of milliseconds): at start, and when
	// a set is put.
	pool := m.pool // Close sets m.pool to nil; Warm on a closed pool returns
	warm := func(set *policy.Set) {
		if set.Len() > 0 {
			go pool.Warm()
		}
	}
	warm(m.Policies.Current())
	m.Policies.OnChange(warm)
	gopts := []ground.Option{ground.WithLogger(cfg.Logger), ground.WithPolicies(m.Policies, m.Checker, m.Exec), ground.WithContracts(contracts)}
	if cfg.Advisor != nil {
		gopts = append(gopts, ground.WithAdvisor(cfg.Advisor, cfg.AdviceBudget))
	}
	m.Gate, err = ground.New(m.Store, m.Disc, m.Engine, gopts...)
	if err != nil {
		return nil, err
	}
	// On a shared store executions and fuzz runs run on `groundgate
	// worker` processes (SPEC §17): a grid admitted here runs wherever a
	// worker takes it, and a server killed while its client waits loses
	// no execution. The footprint, replay, diff and P&L stay reads of the
	// store here.
	var queue *jobs.Queue
	if pg := m.shared; pg != nil {
		if queue, err = QueueExecutions(ctx, pg, m.Exec, cfg.Logger); err != nil {
			return nil, err
		}
	}
	if m.Fuzz, err = runs.Open(ctx, m.Engine, m.Store, fuzzOptions(m.Engine, cfg.Data, shared, queue, cfg.Logger)); err != nil {
		return nil, err
	}
	if m.Upstreams, err = gateway.OpenManager(ctx, m.Engine, m.Store, gateway.Options{Logger: cfg.Logger, Limits: cfg.Gateway, Shared: shared}); err != nil {
		return nil, err
	}
	if m.Calls, err = calls.New(m.Engine, m.Store, m.Upstreams, m.Gate, m.Policies, calls.Options{
		Logger: cfg.Logger, Screen: ScreenResult, Checker: m.Checker, Signer: signer, Contracts: contracts,
	}); err != nil {
		return nil, err
	}
	opened, err := OpenSessions(m.Engine, m.Calls, m.Disc, m.Upstreams, cfg.Clock, cfg.Logger)
	if err != nil {
		return nil, err
	}
	sessions := session.Watch(opened)
	sv, _ := SolverByName(cfg.Solver) // OpenPolicies accepted the name
	m.lintPool = smt.NewPool(sv, 1)
	scfg := server.Config{AdminToken: cfg.AdminToken, Logger: cfg.Logger}
	if shared {
		// Other replicas write the store too: each request this one
		// begins first brings its views up to date (read-your-writes
		// across replicas), and a poll keeps an idle one's upstreams.
		r := &refresher{st: m.Engine, reg: m.Store, policies: m.Policies, upstreams: m.Upstreams, log: cfg.Logger}
		scfg.Refresh = r.Sync
		var pctx context.Context
		pctx, m.stopPoll = context.WithCancel(context.WithoutCancel(ctx))
		go r.poll(pctx, PollInterval)
	}
	var executor server.Executor = releasing{m.Exec}
	if queue != nil {
		executor = ExecutorVia{Executor: m.Exec, Queue: queue}
	}
	srv := server.New(server.Deps{Registry: m.Store, Discoverer: m.Disc, Gate: m.Gate, Executor: executor,
		Policies: m.Policies, Checker: policy.NewChecker(m.lintPool, cfg.PolicyTimeout), FuzzRuns: m.Fuzz,
		Attester: attest.NewService(signer, m.Exec, m.Gate), Upstreams: m.Upstreams, Calls: m.Calls, Screen: ScreenTool,
		Sessions: sessions},
		scfg)
	ms, err := mcp.New(srv, mcp.Options{Version: Version(), Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	srv.MountMCP(mcp.HTTPHandler(ms, cfg.Logger), mcp.MaxFrame)
	// A session's token at /mcp: that session's tools, told of each turn.
	hub := mcp.NewSessions(srv, mcp.SessionOptions{Version: Version(), Logger: cfg.Logger})
	sessions.OnChange(hub.Changed)
	srv.MountSessionMCP(hub.Handler())
	srv.MountUpstreamMCP(mcp.UpstreamHandler(srv, Version(), cfg.Logger))
	m.http = &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		// Above the longest execution the default budget admits (about
		// 30 s of work after up to 30 s in the queue).
		WriteTimeout: 120 * time.Second,
		IdleTimeout:  120 * time.Second,
		// Above the server's own header limit, so that oversized headers
		// get its 431 problem+json rather than net/http's text/plain.
		MaxHeaderBytes: server.HTTPMaxHeaderBytes,
		ErrorLog:       slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
	}
	return m, nil
}

// Handler is the wired HTTP handler, for tests that drive it in process.
func (m *Main) Handler() http.Handler { return m.http.Handler }

// Addr is the address the server listens on.
func (m *Main) Addr() string { return m.ln.Addr().String() }

// Run serves until ctx is cancelled, then shuts down gracefully: the
// listener closes, in-flight requests finish (up to ShutdownTimeout), and
// the database is closed cleanly.
func (m *Main) Run(ctx context.Context) error {
	cur := m.Store.Current()
	where := []any{"db", m.cfg.DB}
	if m.shared != nil {
		where = []any{"store", "postgres", "blobs", m.cfg.Blobs}
	}
	m.cfg.Logger.Info("serving", append(where, "addr", m.Addr(), "data", m.data.Name,
		"version", cur.Version(), "registry", cur.Registry().String(), "writes", m.cfg.AdminToken != "")...)
	errc := make(chan error, 1)
	go func() { errc <- m.http.Serve(m.ln) }()
	select {
	case err := <-errc:
		m.Close()
		return err
	case <-ctx.Done():
	}
	m.cfg.Logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), m.cfg.ShutdownTimeout)
	defer cancel()
	err := m.http.Shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if cerr := m.Close(); err == nil {
		err = cerr
	}
	return err
}

// Close releases the listener, the data root and the database. Closing
// twice is harmless.
func (m *Main) Close() error {
	if m.ln != nil {
		m.ln.Close()
	}
	if m.stopPoll != nil {
		m.stopPoll()
		m.stopPoll = nil
	}
	if m.Fuzz != nil {
		// Before the database closes: a run in progress is stored as
		// cancelled, with what it found.
		m.Fuzz.Close()
		m.Fuzz = nil
	}
	if m.Upstreams != nil {
		// Before the database closes: the upstreams' processes stop.
		m.Upstreams.Close()
		m.Upstreams = nil
	}
	if m.data != nil {
		m.data.Close()
		m.data = nil
	}
	if m.Disc != nil {
		m.Disc.Close()
		m.Disc = nil
	}
	if m.pool != nil {
		m.pool.Close()
		m.pool = nil
	}
	if m.lintPool != nil {
		m.lintPool.Close()
		m.lintPool = nil
	}
	var errs []error
	if m.Store != nil {
		errs = append(errs, m.Store.Close())
		m.Store = nil
	}
	if m.shared != nil {
		errs = append(errs, m.shared.Close())
		m.shared = nil
	}
	m.Engine = nil
	return errors.Join(errs...)
}

// DataRoot is where request data sources resolve: a directory opened with
// os.OpenRoot (which refuses "..", absolute paths and symlinks leading out
// of it), or the bundled sample data.
type DataRoot struct {
	FS   fs.FS
	Name string
	root *os.Root
}

// OpenDataRoot opens dir as a data root; "" means the bundled sample data.
func OpenDataRoot(dir string) (*DataRoot, error) {
	if dir == "" {
		return &DataRoot{FS: sampledata.FS(), Name: "(bundled sample data)"}, nil
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("data root: %w", err)
	}
	return &DataRoot{FS: root.FS(), Name: dir, root: root}, nil
}

// Close releases the directory handle, if any.
func (d *DataRoot) Close() error {
	if d.root != nil {
		return d.root.Close()
	}
	return nil
}

// NewExecutor builds the executor over the registry s, the storage st
// (footprints and artifacts) and the data root.
func NewExecutor(s *registry.Store, st store.Store, data *DataRoot, opt execution.Options) (*execution.Executor, error) {
	arts, err := execution.OpenArtifacts(st)
	if err != nil {
		return nil, err
	}
	return execution.New(s, arts, st, data.FS, opt)
}

// releasing hands the memory of a large execution back to the operating
// system as soon as it is done, instead of after the runtime's next
// periodic collection (up to a few minutes on an idle server). It is the
// process's decision, so it lives here, not in the executor.
type releasing struct{ *execution.Executor }

// releaseCells is the work above which an execution's memory is returned
// at once: about 100 MB of transient series on the fx panel.
const releaseCells = 1 << 24

func (r releasing) Execute(ctx context.Context, g *ground.Grounded) (*execution.Footprint, error) {
	fp, err := r.Executor.Execute(ctx, g)
	if fp != nil && int64(fp.Data.Rows)*int64(len(fp.Data.Columns))*int64(len(fp.Morphisms)) > releaseCells {
		go debug.FreeOSMemory()
	}
	return fp, err
}

func (r releasing) Replay(ctx context.Context, h hashing.Digest) (*execution.ReplayReport, error) {
	rep, err := r.Executor.Replay(ctx, h)
	if err == nil {
		go debug.FreeOSMemory() // a replay is a whole execution; they are rare, a collection is cheap
	}
	return rep, err
}

// OpenMode says whether a command may create and seed a missing database.
type OpenMode int

const (
	OpenReadOnly OpenMode = iota // an existing file, shared lock; a missing one is created and seeded
	OpenWrite                    // read-write, created and seeded when new
)

// OpenRegistry opens the registry at path. A new database is seeded with
// the built-in catalog, exactly as `groundgate serve` does.
func OpenRegistry(ctx context.Context, path string, mode OpenMode) (*registry.Store, error) {
	return openRegistry(ctx, path, mode, nil)
}

// openRegistry is OpenRegistry, the entries' checks compiling contracts
// with contracts (nil: their own).
func openRegistry(ctx context.Context, path string, mode OpenMode, contracts *contract.Cache) (*registry.Store, error) {
	if mode == OpenReadOnly {
		if _, err := os.Stat(path); err == nil {
			s, err := registry.Open(ctx, path, registry.Options{ReadOnly: true, Timeout: LockWait, Contracts: contracts})
			return s, HintLocked(err, path)
		}
	}
	s, err := registry.Open(ctx, path, registry.Options{Timeout: LockWait, Contracts: contracts})
	if err != nil {
		return nil, HintLocked(err, path)
	}
	if err := SeedBuiltin(ctx, s); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// SeedBuiltin seeds an empty registry with the built-in catalog. On a
// shared store several servers starting at once may all find it empty:
// the version sequence is single, so one seeds and the others' version 1
// is a conflict, after which the registry has caught up with the winner's.
func SeedBuiltin(ctx context.Context, s *registry.Store) error {
	if s.Current().Version() != 0 {
		return nil
	}
	cat, err := registry.BuiltinCatalog()
	if err != nil {
		return fmt.Errorf("built-in catalog: %w", err)
	}
	if _, err := s.Seed(ctx, cat); err != nil {
		if errors.Is(err, store.ErrConflict) && s.Current().Version() != 0 {
			return nil // another server seeded it
		}
		return fmt.Errorf("seed built-in catalog: %w", err)
	}
	return nil
}

// LockWait bounds how long opening a database waits for bbolt's file lock
// before giving up with HintLocked's hint (docs/operations.md promises
// 5 s; registry verify waits as long). Another command's short hold is
// over well within it; a running server holds the lock as long as it runs.
const LockWait = 5 * time.Second

// HintLocked adds a hint when bbolt's file lock timed out: the usual cause
// is a server (or a long command) holding the file.
func HintLocked(err error, path string) error {
	if errors.Is(err, bolt.ErrTimeout) {
		return fmt.Errorf("%w (is a groundgate server using %s?)", err, path)
	}
	return err
}

// Engines is the offline stack the CLI uses: store, discovery and gate on
// one bbolt file, without a server.
type Engines struct {
	Store *registry.Store
	// Engine is the storage the other packages keep their records in.
	Engine store.Store
	Disc   *discover.Discoverer
	Gate   *ground.Gate
	Exec   *execution.Executor
	// Policies and Checker as for the server: the command line grounds
	// through the same policies.
	Policies *policy.Store
	Checker  *policy.Checker
	pool     *smt.Pool
	data     *DataRoot
	// ups is the gateway MCP opens (its upstreams' processes), closed
	// with the engines.
	ups *gateway.Manager
	// sessions are MCPSession's.
	sessions *session.Watched
}

// Sessions is the session service MCPSession opened (nil before).
func (e *Engines) Sessions() *session.Service {
	if e.sessions == nil {
		return nil
	}
	return e.sessions.Service
}

// OpenEngines opens the registry at db (seeding a new one) and builds
// discovery, the gate and the executor over the data root dataDir ("" for
// the bundled sample data).
func OpenEngines(ctx context.Context, db, dataDir string) (*Engines, error) {
	data, err := OpenDataRoot(dataDir)
	if err != nil {
		return nil, err
	}
	e, err := openEngines(ctx, db, data)
	if err != nil {
		data.Close()
		return nil, err
	}
	return e, nil
}

// OpenEnginesFS is OpenEngines over any fs.FS as the data root (nil for
// the bundled sample data), for tests and experiments.
func OpenEnginesFS(ctx context.Context, db string, data fs.FS) (*Engines, error) {
	root := &DataRoot{FS: data, Name: "(fs.FS)"}
	if data == nil {
		root = &DataRoot{FS: sampledata.FS(), Name: "(bundled sample data)"}
	}
	return openEngines(ctx, db, root)
}

// The result is unnamed on purpose: `return nil, err` must not nil out the
// value the deferred Close needs.
func openEngines(ctx context.Context, db string, data *DataRoot) (_ *Engines, err error) {
	e := &Engines{data: data}
	defer func() {
		if err != nil {
			e.data = nil // the caller owns data on failure
			e.Close()
		}
	}()
	// One contract cache for the registry's entry checks, the executor
	// and the gate: each contract is parsed once.
	contracts := contract.NewCache(1024)
	if e.Store, err = openRegistry(ctx, db, OpenWrite, contracts); err != nil {
		return nil, err
	}
	e.Engine = e.Store.Engine()
	// One-shot commands rarely need the keyword tier's text index: it is
	// made (or opened) only when a look-up needs it.
	if e.Disc, err = discover.New(ctx, e.Store, e.Engine, discover.Options{LazyText: true, TextIndexDir: discover.DefaultTextIndexDir(db)}); err != nil {
		return nil, err
	}
	if e.Exec, err = NewExecutor(e.Store, e.Engine, e.data, execution.Options{Contracts: contracts}); err != nil {
		return nil, err
	}
	if e.Policies, e.pool, e.Checker, err = openPolicies(ctx, e.Engine, "", 0); err != nil {
		return nil, err
	}
	if e.Gate, err = ground.New(e.Store, e.Disc, e.Engine, ground.WithPolicies(e.Policies, e.Checker, e.Exec), ground.WithContracts(contracts)); err != nil {
		return nil, err
	}
	return e, nil
}

// MCP is the Model Context Protocol server over the engines (groundgate
// mcp): the REST API's operations, without HTTP, behind MCP's tools. It
// starts the gateway's stored upstreams, so that the call tool reaches
// them as the server's does (stdio is the operator's own process: no
// token); Close stops them. Call attestations are not signed here (the
// MCP tools offer none).
func (e *Engines) MCP(logger *slog.Logger) (*sdkmcp.Server, error) {
	srv, _, err := e.mcpServer(logger, false)
	if err != nil {
		return nil, err
	}
	return mcp.New(srv, mcp.Options{Version: Version(), Logger: logger})
}

// MCPSession is the MCP server of a new session (groundgate mcp
// --session WORDS), for a host that cannot open one over REST: opened
// with agent_discovery on words, which are recorded as the agent's
// (session.ByAgent: nobody vouches for them as the user's). It serves the
// session's tools as /mcp does for a session's token (SPEC §15): the
// grounded tools and exempt reads, discover, calls decided on the
// session's evidence and state. It returns the server and the session's
// id.
func (e *Engines) MCPSession(ctx context.Context, logger *slog.Logger, words string) (*sdkmcp.Server, hashing.Digest, error) {
	srv, sessions, err := e.mcpServer(logger, true)
	if err != nil {
		return nil, hashing.Digest{}, err
	}
	created, _, err := sessions.Open(ctx, session.Words{Prompt: words, By: session.ByAgent}, true)
	if err != nil {
		return nil, hashing.Digest{}, err
	}
	id := created.Session.ID
	hub := mcp.NewSessions(srv, mcp.SessionOptions{Version: Version(), Logger: logger})
	sessions.OnChange(hub.Changed)
	s, err := hub.Server(ctx, id)
	if err != nil {
		return nil, hashing.Digest{}, err
	}
	return s, id, nil
}

// mcpServer is the server over the engines that MCP's tools call: with
// the gateway's stored upstreams started, and sessions when asked.
func (e *Engines) mcpServer(logger *slog.Logger, withSessions bool) (*server.Server, *session.Watched, error) {
	if e.ups != nil {
		return nil, nil, errors.New("app: the engines' MCP server is already open")
	}
	ctx := context.Background()
	ups, err := gateway.OpenManager(ctx, e.Engine, e.Store, gateway.Options{Logger: logger})
	if err != nil {
		return nil, nil, err
	}
	e.ups = ups
	cs, err := calls.New(e.Engine, e.Store, ups, e.Gate, e.Policies, calls.Options{
		Logger: logger, Screen: ScreenResult, Checker: e.Checker,
	})
	if err != nil {
		return nil, nil, err
	}
	deps := server.Deps{Registry: e.Store, Discoverer: e.Disc, Gate: e.Gate, Executor: releasing{e.Exec},
		Policies: e.Policies, Checker: e.Checker, Upstreams: ups, Calls: cs, Screen: ScreenTool}
	var sessions *session.Watched
	if withSessions {
		opened, err := OpenSessions(e.Engine, cs, e.Disc, ups, time.Time{}, logger)
		if err != nil {
			return nil, nil, err
		}
		sessions = session.Watch(opened)
		deps.Sessions, e.sessions = sessions, sessions
	}
	return server.New(deps, server.Config{Logger: logger}), sessions, nil
}

// OpenSessions opens the session store on st (Main.Engine) and the
// service that runs
// sessions' calls through cs (SPEC §15). A non-zero clock fixes the time
// calls are decided at.
func OpenSessions(st session.Backend, cs *calls.Service, disc *discover.Discoverer, ups *gateway.Manager, clock time.Time, logger *slog.Logger) (*session.Service, error) {
	ss, err := session.Open(st, session.Options{Logger: logger})
	if err != nil {
		return nil, err
	}
	now := time.Now
	if !clock.IsZero() {
		now = func() time.Time { return clock }
	}
	return session.NewService(ss, cs, disc, ups, session.ServiceOptions{Now: now, Logger: logger}), nil
}

// Version is the module version this binary was built at, or its VCS
// revision, as servers report it.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			return "devel+" + s.Value[:12]
		}
	}
	return "devel"
}

// Close releases discovery, the data root and the database. Closing twice
// is harmless.
func (e *Engines) Close() error {
	var errs []error
	if e.ups != nil {
		// Before the database closes: the upstreams' processes stop.
		errs = append(errs, e.ups.Close())
	}
	if e.Disc != nil {
		errs = append(errs, e.Disc.Close())
	}
	if e.pool != nil {
		errs = append(errs, e.pool.Close())
	}
	if e.data != nil {
		errs = append(errs, e.data.Close())
	}
	if e.Store != nil {
		errs = append(errs, e.Store.Close())
	}
	*e = Engines{}
	return errors.Join(errs...)
}

// SolverByName gives the solver a name selects: "z3" (also "") or "cvc5".
func SolverByName(name string) (smt.Solver, error) {
	switch name {
	case "", "z3":
		return smt.Z3(), nil
	case "cvc5":
		return smt.CVC5(), nil
	}
	return smt.Solver{}, fmt.Errorf("solver %q: choose z3 or cvc5", name)
}

// PoolSize is the number of solver processes: one query at a time each,
// about a millisecond per check, so two keep up with the gate.
const PoolSize = 2

// OpenPolicies opens the policy store in the registry's file and a pool of
// solver processes for it (started on first use). With a policy in force
// and no solver installed it fails, naming the package to install: the
// gate must never run without the rules it is configured to enforce.
func OpenPolicies(ctx context.Context, s *registry.Store, solver string, timeout time.Duration) (*policy.Store, *smt.Pool, *policy.Checker, error) {
	return openPolicies(ctx, s.Engine(), solver, timeout)
}

// openPolicies is OpenPolicies over any storage.
func openPolicies(ctx context.Context, st policy.Backend, solver string, timeout time.Duration) (*policy.Store, *smt.Pool, *policy.Checker, error) {
	sv, err := SolverByName(solver)
	if err != nil {
		return nil, nil, nil, err
	}
	ps, err := policy.OpenStore(ctx, st, nil)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("policies: %w", err)
	}
	if n := ps.Current().Len(); n > 0 {
		if err := sv.Available(); err != nil {
			return nil, nil, nil, fmt.Errorf("%d policies are in force and no SMT solver can check them: %w", n, err)
		}
	}
	pool := smt.NewPool(sv, PoolSize)
	return ps, pool, policy.NewChecker(pool, timeout), nil
}
