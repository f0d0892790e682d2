package server_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/attest"
	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/internal/app"
	"github.com/groundgate/groundgate/internal/app/apptest"
	"github.com/groundgate/groundgate/internal/testio"
)

// startAtDB is startWith on a database file the test names, so that a
// second server can open the same one; stop shuts it down (cleanup does
// when the test did not).
func startAtDB(t *testing.T, db string) (a *api, stop func()) {
	t.Helper()
	logs := &testio.SyncBuffer{}
	m, stop := apptest.Serve(t, app.Config{DB: db, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	return &api{t: t, m: m, addr: m.Addr(), base: "http://" + m.Addr(), logs: logs}, stop
}

type keysReply struct {
	Keys []struct {
		KeyID        string `json:"keyid"`
		KeyType      string `json:"keytype"`
		Scheme       string `json:"scheme"`
		PublicKeyPEM string `json:"public_key_pem"`
		PublicKey    string `json:"public_key"`
	} `json:"keys"`
}

// serverKey fetches GET /v1/keys and checks its one key's fields agree.
func serverKey(t *testing.T, a *api, doc *openAPIDoc) attest.PublicKey {
	t.Helper()
	r := a.do("GET", "/v1/keys", nil)
	doc.check(t, "GET", "/v1/keys", r)
	if r.status != http.StatusOK {
		t.Fatalf("GET /v1/keys: %d %s", r.status, r.body)
	}
	var keys keysReply
	if err := json.Unmarshal(r.body, &keys); err != nil {
		t.Fatal(err)
	}
	if len(keys.Keys) != 1 {
		t.Fatalf("GET /v1/keys: %d keys, want 1: %s", len(keys.Keys), r.body)
	}
	k := keys.Keys[0]
	pub, err := attest.ParsePublicKeyPEM([]byte(k.PublicKeyPEM))
	if err != nil {
		t.Fatal(err)
	}
	if pub.ID != k.KeyID || pub.Base64() != k.PublicKey || k.KeyType != "ed25519" || k.Scheme != "ed25519" {
		t.Fatalf("GET /v1/keys: fields disagree with the PEM (id %s): %s", pub.ID, r.body)
	}
	return pub
}

// GET /v1/executions/{hash}/attestation over a real server: the envelope
// verifies with the key GET /v1/keys serves — in Go and with the
// independent Python verifier —, names the execution and its materials,
// is the same bytes every time, and is refused once the stored footprint
// was altered. The key is created 0600 next to the database on first
// start and is the same after a restart.
func TestAttestation(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "g.db")
	a, stopA := startAtDB(t, db)
	doc := loadOpenAPIDoc(t)
	tr := a.execute()
	path := "/v1/executions/" + tr.execution + "/attestation"

	r := a.do("GET", path, nil)
	doc.check(t, "GET", path, r)
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s: %d %q: %.300s", path, r.status, r.header.Get("Content-Type"), r.body)
	}
	pub := serverKey(t, a, doc)
	st, err := attest.Verify(r.body, pub)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st.Subject[0].Digest["sha256"], strings.TrimPrefix(tr.execution, "sha256:"); got != want {
		t.Fatalf("subject sha256 %s, want %s", got, want)
	}
	materials := map[string]string{}
	for _, m := range st.Predicate.Materials {
		for alg, hx := range m.Digest {
			materials[m.Name] = alg + ":" + hx
		}
	}
	if materials["grounding"] != tr.grounding || materials["discovery"] != tr.discovery {
		t.Fatalf("materials %v do not name grounding %s and discovery %s", materials, tr.grounding, tr.discovery)
	}
	if again := a.do("GET", path, nil); !bytes.Equal(again.body, r.body) {
		t.Fatal("two attestations of one execution differ")
	}

	// The independent verifier agrees.
	envFile, keyFile := filepath.Join(dir, "env.json"), filepath.Join(dir, "key.pem")
	os.WriteFile(envFile, r.body, 0o644)
	os.WriteFile(keyFile, pub.PEM(), 0o644)
	py, err := testio.FindPython("cryptography")
	if err != nil {
		t.Fatalf("%v (Debian: apt-get install python3 python3-cryptography; bash scripts/test.sh installs it)", err)
	}
	if out, err := exec.Command(py, "../tools/verify-attestation.py", envFile, keyFile).CombinedOutput(); err != nil {
		t.Fatalf("tools/verify-attestation.py (needs python3-cryptography): %v\n%s", err, out)
	}

	// The key file: next to the database, owner-only.
	fi, err := os.Stat(filepath.Join(dir, "g.key"))
	if err != nil {
		t.Fatalf("no key file next to the database: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %04o, want 0600", fi.Mode().Perm())
	}

	// Refusals are problems.
	for _, c := range []struct {
		path   string
		status int
		kind   string
	}{
		{"/v1/executions/" + hashing.SumSHA256([]byte("none")).String() + "/attestation", http.StatusNotFound, "not-found"},
		{"/v1/executions/sha256:12/attestation", http.StatusBadRequest, "malformed-request"},
		{"/v1/executions/blake3:" + strings.Repeat("0", 64) + "x/attestation", http.StatusBadRequest, "malformed-request"},
	} {
		r := a.do("GET", c.path, nil)
		doc.check(t, "GET", c.path, r)
		if r.status != c.status || r.problem(t)["type"] != "urn:groundgate:problem:"+c.kind {
			t.Errorf("GET %s: %d %s, want %d %s", c.path, r.status, r.body, c.status, c.kind)
		}
	}

	// Altered stored bytes get no attestation.
	h, _ := hashing.Parse(tr.execution)
	var stored []byte
	bdb := a.m.Store.DB()
	bdb.View(func(tx *bolt.Tx) error {
		stored = bytes.Clone(tx.Bucket(execution.Bucket).Get(h.Key()))
		return nil
	})
	put := func(b []byte) {
		if err := bdb.Update(func(tx *bolt.Tx) error { return tx.Bucket(execution.Bucket).Put(h.Key(), b) }); err != nil {
			t.Fatal(err)
		}
	}
	altered := bytes.Replace(stored, []byte(`"registry_version":`), []byte(`"registry_version":1`), 1)
	// A field no layer of the execution hash covers, still canonical: the
	// executor's record digest catches it.
	unhashed := bytes.Replace(stored, []byte(`"max_leverage":10`), []byte(`"max_leverage":99`), 1)
	if bytes.Equal(unhashed, stored) {
		t.Fatal("no max_leverage to alter")
	}
	for _, b := range [][]byte{altered, unhashed, append([]byte(" "), stored...)} {
		put(b)
		r := a.do("GET", path, nil)
		doc.check(t, "GET", path, r)
		if r.status != http.StatusInternalServerError || r.problem(t)["type"] != "urn:groundgate:problem:corrupt-record" {
			t.Fatalf("altered footprint: %d %.300s, want a 500 corrupt-record problem", r.status, r.body)
		}
	}
	put(stored)
	if again := a.do("GET", path, nil); again.status != http.StatusOK || !bytes.Equal(again.body, r.body) {
		t.Fatalf("restored footprint: %d %.300s", again.status, again.body)
	}

	// A restart keeps the key, and so the envelope.
	stopA()
	b, _ := startAtDB(t, db)
	if pub2 := serverKey(t, b, doc); pub2.ID != pub.ID {
		t.Fatalf("the key changed across a restart: %s, then %s", pub.ID, pub2.ID)
	}
	if r2 := b.do("GET", path, nil); !bytes.Equal(r2.body, r.body) {
		t.Fatal("the attestation changed across a restart")
	}
}
