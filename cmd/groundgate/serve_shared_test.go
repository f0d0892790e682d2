package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/groundgate/groundgate/internal/app/apptest"
	"github.com/groundgate/groundgate/store/pgstore/pgstoretest"
)

// TestServeSharedStore: serve --store --blobs --key from the command
// line, with a worker beside it, writes a PostgreSQL + S3 store that `registry verify --store
// --blobs` finds whole; after one byte of a grounding record is flipped
// behind the server's back, verify exits 1 naming the record. The flags'
// misuses are usage errors that say what to give.
func TestServeSharedStore(t *testing.T) {
	p := pgstoretest.New(t)
	env := func(k string) string {
		if k == "GROUNDGATE_ADMIN_TOKEN" {
			return testToken
		}
		return pgstoretest.Env(k)
	}
	cliWith := func(out, errb *bytes.Buffer) *CLI {
		return &CLI{Stdin: strings.NewReader(""), Stdout: out, Stderr: errb, Getenv: env}
	}
	shared := []string{"--store", p.DSN, "--blobs", p.BlobsURL}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--store", p.DSN}, "needs both --store"},
		{append([]string{"serve", "--db", "x.db"}, shared...), "--db and --store/--blobs name two stores"},
		{append([]string{"serve"}, shared...), "needs --key FILE"},
		{append([]string{"registry", "put", "e.json"}, shared...), "through a server"},
	} {
		var out, errb bytes.Buffer
		if code := cliWith(&out, &errb).Main(context.Background(), tc.args); code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errb.String(), tc.want)
		}
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	key := filepath.Join(t.TempDir(), "attest.key")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var sout, serr bytes.Buffer
	go func() {
		done <- cliWith(&sout, &serr).Main(ctx, append([]string{"serve", "--addr", addr, "--key", key}, shared...))
	}()
	// The execution runs on a worker, as every execution on a shared store.
	worked := make(chan int, 1)
	var wout, werr bytes.Buffer
	go func() {
		worked <- cliWith(&wout, &werr).Main(ctx, append([]string{"worker", "--concurrency", "1"}, shared...))
	}()
	c := apptest.Client{TB: t, Base: "http://" + addr}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if resp, err := http.Get(c.Base + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d: %s", code, serr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("serve did not answer")
		}
		time.Sleep(50 * time.Millisecond)
	}
	found := c.Want(http.StatusOK, http.MethodPost, "/v1/discover", testToken, map[string]any{"prompt": "momentum on WTI scored by Sharpe ratio"})
	g := c.Want(http.StatusOK, http.MethodPost, "/v1/ground", testToken, map[string]any{"discovery": found["id"],
		"request": map[string]any{"family": "MOM_WZS", "metric": "SRP", "params": map[string]any{"window": []int{25, 50}}, "data": "oil-spot/wti-daily.csv"}})
	grounding := g["id"].(string)
	c.Want(http.StatusCreated, http.MethodPost, "/v1/executions", testToken, map[string]any{"grounding": grounding})
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("serve: exit %d: %s", code, serr.String())
	}
	if code := <-worked; code != 0 {
		t.Fatalf("worker: exit %d: %s", code, werr.String())
	}

	verify := func() (int, string, string) {
		var out, errb bytes.Buffer
		code := cliWith(&out, &errb).Main(context.Background(), append([]string{"registry", "verify"}, shared...))
		return code, out.String(), errb.String()
	}
	code, out, errs := verify()
	if code != 0 || !strings.HasPrefix(out, "ok: 1 version(s)") || !strings.Contains(out, "1 grounding record(s), 1 footprint(s)") {
		t.Fatalf("verify of what serve wrote: exit %d\n%s%s", code, out, errs)
	}
	p.Corrupt(t, "ground.records", []byte(grounding))
	code, _, errs = verify()
	if code != 1 || !strings.Contains(errs, "MISMATCH: grounding: "+grounding+": bytes hash to") {
		t.Fatalf("verify after a flipped byte: exit %d\n%s", code, errs)
	}
}
