// Package pgtest runs a private PostgreSQL cluster for tests: initdb in a
// temporary directory, postgres listening on a unix socket there only (no
// TCP port, so parallel test binaries never collide), one cluster per test
// binary and one fresh database per test.
//
// A test package wires it in its TestMain, so that the cluster is stopped
// and its directory removed when the binary ends:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// and each test asks for a database of its own:
//
//	dsn := pgtest.DB(t) // postgres://postgres@/t_foo_1?host=/tmp/…
//
// The cluster starts on the first DB call, so a binary whose tests ask for
// none never starts one. Where PostgreSQL is not installed (Debian's
// postgresql package; scripts/test.sh installs it) DB skips the test, or
// fails it under GROUNDGATE_REQUIRE_TOOLS.
//
// postgres refuses to run as root: as root (CI, containers) the cluster runs
// as the postgres user that Debian's package creates, its directory owned
// by that user.
package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/groundgate/groundgate/errkind"
	"github.com/groundgate/groundgate/internal/testio"
)

// Superuser is the cluster's superuser name (initdb -U), the same whoever
// runs it, so DSNs do not depend on the OS user.
const Superuser = "postgres"

// startTimeout bounds initdb plus the server's start on a loaded machine.
const startTimeout = 60 * time.Second

// Cluster is one running PostgreSQL cluster in a temporary directory.
type Cluster struct {
	dir  string       // the temporary directory: data/, the socket, the log
	proc *testio.Proc // postgres
	next atomic.Int64 // database name counter
}

// shared is the test binary's cluster.
var shared = testio.Service[*Cluster]{
	Name: "pgtest", Start: Start, Timeout: startTimeout, Missing: ErrNotInstalled,
	// A short path: a unix socket's path is limited to 107 bytes.
	TempPrefix: "groundgate-pg-",
}

// Main runs the tests of a package that uses only this harness, then
// stops its cluster and exits with the tests' code. Call it from
// TestMain; a package using several harnesses calls
// testio.RunStopping(m, pgtest.Shared, …).
func Main(m *testing.M) { testio.RunStopping(m, &shared) }

// Shared is the test binary's cluster, for testio.RunStopping.
var Shared interface{ Stop() } = &shared

// DB returns the DSN of a new, empty database in the test binary's
// cluster, starting the cluster on first use. It skips the test when
// PostgreSQL is not installed (fails it under GROUNDGATE_REQUIRE_TOOLS).
func DB(tb testing.TB) string {
	tb.Helper()
	_, dsn := shared.Take(tb, (*Cluster).CreateDB)
	return dsn
}

// Get returns the test binary's cluster, starting it on first use (and
// skipping or failing tb as DB does when PostgreSQL is missing).
func Get(tb testing.TB) *Cluster {
	tb.Helper()
	return shared.Get(tb)
}

// ErrNotInstalled is returned by Start when no initdb and postgres are
// found (on the PATH or under /usr/lib/postgresql/*/bin).
var ErrNotInstalled = errkind.New(errkind.Unavailable, "pgtest: PostgreSQL is not installed (Debian package postgresql)")

// Start runs initdb in dir (an empty directory the postgres user may
// enter: Start gives it to that user when running as root) and starts
// postgres on a unix socket there. Durability is off (fsync, synchronous_commit,
// full_page_writes): the cluster dies with the tests.
func Start(ctx context.Context, dir string) (*Cluster, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir}
	if err := c.start(ctx, bin, cred); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context, bin string, cred *syscall.Credential) error {
	if cred != nil {
		if err := os.Chown(c.dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return fmt.Errorf("pgtest: %w", err)
		}
	}
	data := filepath.Join(c.dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"),
		"-D", data, "-U", Superuser, "--auth=trust", "--no-sync",
		"--no-instructions", "-E", "UTF8", "--locale=C")
	c.prepare(initdb, cred)
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("pgtest: initdb: %w: %s", err, strings.TrimSpace(string(out)))
	}
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data,
		"-k", c.dir, "-c", "listen_addresses=",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=200")
	c.prepare(cmd, cred)
	var err error
	if c.proc, err = testio.StartProc("pgtest: postgres", cmd, filepath.Join(c.dir, "postgres.log")); err != nil {
		return err
	}
	return c.proc.WaitReady(ctx, 20*time.Millisecond, func(ctx context.Context) error {
		conn, err := pgx.Connect(ctx, c.DSN("postgres"))
		if err != nil {
			return err
		}
		return conn.Close(ctx)
	})
}

// prepare runs cmd in the cluster's directory (the test's working directory
// may be closed to the postgres user), as cred when set, with a C locale;
// postgres gets SIGQUIT (immediate shutdown) should the test binary die.
func (c *Cluster) prepare(cmd *exec.Cmd, cred *syscall.Credential) {
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "LANG=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT}
}

// DSN is the connection string of database db in the cluster, over its
// unix socket, as the superuser.
func (c *Cluster) DSN(db string) string {
	u := url.URL{Scheme: "postgres", User: url.User(Superuser), Path: "/" + db,
		RawQuery: url.Values{"host": {c.dir}}.Encode()}
	return u.String()
}

// CreateDB creates an empty database named after hint (a test's name) and
// returns its DSN.
func (c *Cluster) CreateDB(ctx context.Context, hint string) (string, error) {
	name := testio.ResourceName("t_", '_', hint, c.next.Add(1))
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		return "", fmt.Errorf("pgtest: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("pgtest: create database %s: %w", name, err)
	}
	return c.DSN(name), nil
}

// Stop shuts postgres down (fast shutdown; killed after 10 s).
func (c *Cluster) Stop() error {
	if c.proc == nil {
		return nil
	}
	return c.proc.Stop(syscall.SIGINT, 10*time.Second) // fast shutdown
}

// binDir finds the directory of initdb and postgres: on the PATH, else
// Debian's /usr/lib/postgresql/VERSION/bin (not on the PATH), the highest
// version first.
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", ErrNotInstalled
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// credential is nil when the tests run as an ordinary user, and the
// postgres user's when they run as root (which postgres refuses).
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root, and postgres refuses root; no postgres user to run it as (Debian's postgresql package creates one): %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("pgtest: postgres uid %q: %w", u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("pgtest: postgres gid %q: %w", u.Gid, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}
