package apptest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"testing"
	"time"
)

// Client speaks the REST API to a served server as a host or an agent
// does: JSON in, JSON out, a bearer token per request.
type Client struct {
	TB   testing.TB
	Base string // http://host:port
}

// Raw sends a request (body marshalled as JSON when not nil) and returns
// the status and the body's bytes.
func (c Client) Raw(method, path, token string, body any) (int, []byte) {
	c.TB.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.TB.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.Base+path, rd)
	if err != nil {
		c.TB.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.TB.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		c.TB.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return res.StatusCode, raw
}

// Do sends a request and decodes the JSON answer (nil when empty).
func (c Client) Do(method, path, token string, body any) (int, map[string]any) {
	c.TB.Helper()
	st, raw := c.Raw(method, path, token, body)
	var out map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			c.TB.Fatalf("%s %s: %d, not JSON: %.300s", method, path, st, raw)
		}
	}
	return st, out
}

// Want is Do, failing the test unless the status is status.
func (c Client) Want(status int, method, path, token string, body any) map[string]any {
	c.TB.Helper()
	st, out := c.Do(method, path, token, body)
	if st != status {
		b, _ := json.Marshal(out)
		c.TB.Fatalf("%s %s: status %d, want %d: %.1200s", method, path, st, status, b)
	}
	return out
}

// WaitUpstream waits until the upstream name is connected and has listed
// its tools.
func (c Client) WaitUpstream(name string) {
	c.TB.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, v := c.Do(http.MethodGet, "/v1/upstreams/"+name, "", nil)
		st, _ := v["status"].(map[string]any)
		if tools, _ := st["tools"].([]any); st != nil && st["connected"] == true && len(tools) > 0 {
			return
		}
		if time.Now().After(deadline) {
			c.TB.Fatalf("upstream %s did not connect: %v", name, v)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// AirlinePkg is cmd/airline-mcp, τ-bench's airline tools as an MCP server
// over stdio: the real upstream of the sessions' tests.
const AirlinePkg = "github.com/groundgate/groundgate/cmd/airline-mcp"

// MainWithCommand runs a package's tests (from TestMain) with the command
// pkg built once into a temporary directory; set receives its path. It
// returns the exit code.
func MainWithCommand(m *testing.M, pkg string, set func(bin string)) int {
	dir, err := os.MkdirTemp("", "apptest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, path.Base(pkg))
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", pkg, err, out)
		return 1
	}
	set(bin)
	return m.Run()
}
