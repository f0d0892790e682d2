// Package s3test runs a real S3 server for tests: SeaweedFS's `weed mini`
// (Apache-2.0; MinIO's server is AGPL and not used) on loopback ports in a
// temporary directory, one server per test binary and one bucket per test.
//
// A test package wires it in its TestMain, so that the server is stopped
// and its directory removed when the binary ends:
//
//	func TestMain(m *testing.M) { s3test.Main(m) }
//
// and each test asks for a bucket of its own:
//
//	srv, bucket := s3test.Bucket(t)
//
// weed is built from its Go module at the version in weed.version by
// scripts/test.sh (scripts/lib/weed.sh) into a cache folder keyed by that
// version; Weed finds it there, at $GROUNDGATE_WEED, or on the PATH. Where
// it is missing, Bucket skips the test (fails it under
// GROUNDGATE_REQUIRE_TOOLS).
package s3test

import (
	"context"
	_ "embed"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/groundgate/groundgate/errkind"
	"github.com/groundgate/groundgate/internal/testio"
)

// Version is the SeaweedFS module version the tests run (weed.version,
// read by scripts/lib/weed.sh too).
//
//go:embed weed.version
var version string

// Version returns the pinned SeaweedFS module version.
func Version() string { return strings.TrimSpace(version) }

// WeedEnv names an explicit weed binary, ahead of the cache and the PATH.
const WeedEnv = "GROUNDGATE_WEED"

// The identity the server is configured with: requests are signed (AWS
// Signature V4) and checked, as against a real deployment.
const (
	AccessKey = "groundgate-test"
	SecretKey = "groundgate-test-secret"
	Region    = "us-east-1"
)

// startTimeout bounds the server's start on a loaded machine: weed mini
// starts a master, a volume server, a filer and the S3 gateway in turn.
const startTimeout = 90 * time.Second

// ErrNotInstalled is returned by Weed when no weed binary is found.
var ErrNotInstalled = errkind.New(errkind.Unavailable, "s3test: SeaweedFS weed is not built (bash scripts/test.sh builds it: scripts/lib/weed.sh)")

// Weed returns the weed binary to run: $GROUNDGATE_WEED, else the pinned
// version in the cache folder scripts/lib/weed.sh builds into, else weed
// on the PATH.
func Weed() (string, error) {
	if p := os.Getenv(WeedEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("s3test: %s=%s: %w", WeedEnv, p, err)
		}
		return p, nil
	}
	if p, err := CachePath(); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath("weed"); err == nil {
		return p, nil
	}
	return "", ErrNotInstalled
}

// CachePath is where scripts/lib/weed.sh builds the pinned weed:
// $GROUNDGATE_CACHE, else the user's cache folder's groundgate/, then
// weed-VERSION/weed.
func CachePath() (string, error) {
	root := os.Getenv("GROUNDGATE_CACHE")
	if root == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		root = filepath.Join(c, "groundgate")
	}
	return filepath.Join(root, "weed-"+Version(), "weed"), nil
}

// Server is one running weed mini.
type Server struct {
	// Endpoint is the S3 gateway's host:port on 127.0.0.1 (plain HTTP).
	Endpoint string

	dir  string
	proc *testio.Proc // weed mini: one process
	next atomic.Int64
}

// shared is the test binary's server.
var shared = testio.Service[*Server]{
	Name: "s3test", Start: Start, Timeout: startTimeout, Missing: ErrNotInstalled,
	TempPrefix: "groundgate-s3-",
}

// Main runs the tests of a package that uses only this harness, then
// stops its server and exits with the tests' code. Call it from
// TestMain; a package using several harnesses calls
// testio.RunStopping(m, s3test.Shared, …).
func Main(m *testing.M) { testio.RunStopping(m, &shared) }

// Shared is the test binary's server, for testio.RunStopping.
var Shared interface{ Stop() } = &shared

// Get returns the test binary's server, starting it on first use; it
// skips tb where weed is missing (fails it under GROUNDGATE_REQUIRE_TOOLS).
func Get(tb testing.TB) *Server {
	tb.Helper()
	return shared.Get(tb)
}

// Bucket returns the test binary's server and the name of a new, empty
// bucket in it, named after the test.
func Bucket(tb testing.TB) (*Server, string) {
	tb.Helper()
	return shared.Take(tb, (*Server).CreateBucket)
}

// Start starts weed mini in dir (an empty directory), every port it
// listens on a free loopback port, and waits until its S3 gateway answers
// a signed request.
func Start(ctx context.Context, dir string) (*Server, error) {
	weed, err := Weed()
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir}
	if err := s.start(ctx, weed); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// identities is weed's S3 configuration: one identity with every action.
const identities = `{"identities":[{"name":"groundgate","credentials":[{"accessKey":"` +
	AccessKey + `","secretKey":"` + SecretKey + `"}],"actions":["Admin","Read","Write","List","Tagging"]}]}`

func (s *Server) start(ctx context.Context, weed string) error {
	conf := filepath.Join(s.dir, "s3.json")
	if err := os.WriteFile(conf, []byte(identities), 0o600); err != nil {
		return fmt.Errorf("s3test: %w", err)
	}
	data := filepath.Join(s.dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		return fmt.Errorf("s3test: %w", err)
	}
	// weed's default ports are fixed (8333, 9333, …) and each gRPC port is
	// its HTTP port + 10000: every one is given explicitly, so that test
	// binaries running side by side do not collide.
	ports, err := freePorts(11)
	if err != nil {
		return err
	}
	p := func(i int) string { return strconv.Itoa(ports[i]) }
	s.Endpoint = "127.0.0.1:" + p(0)
	args := []string{"mini",
		"-dir=" + data, "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-s3.port=" + p(0), "-s3.port.grpc=" + p(1), "-s3.config=" + conf,
		"-master.port=" + p(2), "-master.port.grpc=" + p(3),
		"-volume.port=" + p(4), "-volume.port.grpc=" + p(5),
		"-filer.port=" + p(6), "-filer.port.grpc=" + p(7),
		// Disabled below, but their ports are still checked (and moved
		// when taken, which is harmless): given too, away from the
		// defaults another weed may hold.
		"-webdav.port=" + p(8), "-admin.port=" + p(9), "-admin.port.grpc=" + p(10), "-admin.port.legacy=0",
		"-filer.localSocket=" + filepath.Join(s.dir, "filer.sock"),
		"-s3.localSocket=" + filepath.Join(s.dir, "s3.sock"),
		// Only S3: no WebDAV, admin UI, Iceberg or Lance endpoints (each a
		// fixed port), no telemetry.
		"-webdav=false", "-admin.ui=false", "-s3.port.iceberg=0", "-s3.port.lance=0",
		"-master.telemetry=false",
	}
	cmd := exec.Command(weed, args...)
	cmd.Dir = s.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if s.proc, err = testio.StartProc("s3test: weed", cmd, filepath.Join(s.dir, "weed.log")); err != nil {
		return err
	}
	// Ready when the gateway lists buckets for the configured identity
	// (the filer and a volume server are up by then).
	c, err := s.Client()
	if err != nil {
		return err
	}
	return s.proc.WaitReady(ctx, 100*time.Millisecond, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := c.ListBuckets(ctx)
		return err
	})
}

// Client returns a client of the server as the configured identity.
func (s *Server) Client() (*minio.Client, error) {
	c, err := minio.New(s.Endpoint, &minio.Options{Creds: credentialsWith(AccessKey, SecretKey), Region: Region})
	if err != nil {
		return nil, fmt.Errorf("s3test: %w", err)
	}
	return c, nil
}

func credentialsWith(access, secret string) *credentials.Credentials {
	return credentials.NewStaticV4(access, secret, "")
}

// CreateBucket creates an empty bucket named after hint (a test's name)
// and returns its name.
func (s *Server) CreateBucket(ctx context.Context, hint string) (string, error) {
	name := testio.ResourceName("t-", '-', hint, s.next.Add(1))
	c, err := s.Client()
	if err != nil {
		return "", err
	}
	if err := c.MakeBucket(ctx, name, minio.MakeBucketOptions{Region: Region}); err != nil {
		return "", fmt.Errorf("s3test: make bucket %s: %w", name, err)
	}
	return name, nil
}

// Stop kills weed: it holds nothing the tests keep.
func (s *Server) Stop() error {
	if s.proc != nil {
		return s.proc.Stop(syscall.SIGKILL, time.Minute)
	}
	return nil
}

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("s3test: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// URL is the --blobs URL of bucket on s: what an operator gives
// s3store.ParseURL, with the credentials in the environment (Env).
func (s *Server) URL(bucket string) string {
	return "s3://" + bucket + "/groundgate?endpoint=http://" + s.Endpoint + "&region=" + Region
}

// Env is an environment holding the server's credentials under the names
// S3 clients read (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), for
// s3store.ParseURL.
func Env(k string) string {
	return map[string]string{"AWS_ACCESS_KEY_ID": AccessKey, "AWS_SECRET_ACCESS_KEY": SecretKey}[k]
}
