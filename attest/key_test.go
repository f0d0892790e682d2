package attest_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/groundgate/groundgate/attest"
)

// A missing key file is created with mode 0600 and a PKCS#8 Ed25519 key;
// later loads return the same key.
func TestLoadOrCreate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "groundgate.key")
	s, err := attest.LoadOrCreate(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Fatalf("new key file mode %04o, want 0600", perm)
	}
	b := readFile(t, path)
	block, rest := pem.Decode(b)
	if block == nil || block.Type != "PRIVATE KEY" || len(rest) != 0 {
		t.Fatalf("key file is not one PRIVATE KEY block:\n%s", b)
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err != nil {
		t.Fatal(err)
	} else if _, ok := k.(ed25519.PrivateKey); !ok {
		t.Fatalf("key is a %T", k)
	}
	again, err := attest.LoadOrCreate(path)
	if err != nil {
		t.Fatal(err)
	}
	if again.PublicKey().ID != s.PublicKey().ID {
		t.Fatal("loading the key file again gave another key")
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Fatalf("a temporary file was left behind: %v", ents)
	}
	pub, err := attest.LoadPublicKey(path)
	if err != nil || pub.ID != s.PublicKey().ID {
		t.Fatalf("LoadPublicKey of the private key file: %v, %v", pub.ID, err)
	}
	if !strings.HasPrefix(s.PublicKey().ID, "sha256:") || len(s.PublicKey().ID) != 7+64 {
		t.Fatalf("key id %q", s.PublicKey().ID)
	}
}

// Processes starting at once end up with one key.
func TestLoadOrCreateConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "groundgate.key")
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := attest.LoadOrCreate(path)
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = s.PublicKey().ID
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("concurrent creation gave different keys: %v", ids)
		}
	}
}

// The test key's id is what openssl computes (see testKeyID), and its
// public PEM is the committed one.
func TestKeyID(t *testing.T) {
	s := testSigner(t)
	if got := s.PublicKey().ID; got != testKeyID {
		t.Fatalf("key id %s, want %s", got, testKeyID)
	}
	if got, want := string(s.PublicKey().PEM()), string(readFile(t, testPubFile)); got != want {
		t.Fatalf("public PEM\n%s\nwant\n%s", got, want)
	}
	if pub := mustLoadPublic(t, testPubFile); pub.ID != testKeyID || pub.Base64() != "P2S4Njo5WQjwa8ucrRI1OJns0w3+et9T5KelsJNbonw=" {
		t.Fatalf("public key file: %s %s", pub.ID, pub.Base64())
	}
}

func TestLoadRefuses(t *testing.T) {
	dir := t.TempDir()
	good := readFile(t, testKeyFile)
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecDER, _ := x509.MarshalPKCS8PrivateKey(ecKey)
	ecPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: ecDER})
	pub := readFile(t, testPubFile)
	for _, c := range []struct {
		name    string
		content []byte
		mode    fs.FileMode
		want    error
	}{
		{"world-readable", good, 0o644, attest.ErrKeyPermissions},
		{"group-readable", good, 0o640, attest.ErrKeyPermissions},
		{"group-writable", good, 0o620, attest.ErrKeyPermissions},
		{"others-writable", good, 0o602, attest.ErrKeyPermissions},
		{"ECDSA key", ecPEM, 0o600, attest.ErrKeyType},
		{"public key", pub, 0o600, attest.ErrKeyType},
		{"empty", nil, 0o600, attest.ErrKeyType},
		{"not PEM", []byte("hello"), 0o600, attest.ErrKeyType},
		{"two blocks", append(append([]byte{}, good...), good...), 0o600, attest.ErrKeyType},
		{"PEM headers", []byte(strings.Replace(string(good), "-----\n", "-----\nProc-Type: 4,ENCRYPTED\n\n", 1)), 0o600, attest.ErrKeyType},
		{"bad DER", []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), 0o600, attest.ErrKeyType},
		{"huge", append(append([]byte{}, good...), make([]byte, 1<<17)...), 0o600, attest.ErrKeyType},
		{"group-readable and not a key", []byte("x"), 0o644, attest.ErrKeyPermissions},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".key")
			if err := os.WriteFile(path, c.content, c.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, c.mode); err != nil { // past the umask
				t.Fatal(err)
			}
			s, err := attest.LoadOrCreate(path)
			if !errors.Is(err, c.want) || s != nil {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("the error does not name the file: %v", err)
			}
			if after := readFile(t, path); string(after) != string(c.content) {
				t.Error("a refused key file was changed")
			}
			t.Logf("refused: %v", err)
		})
	}
	t.Run("directory", func(t *testing.T) {
		path := filepath.Join(dir, "a-dir")
		if err := os.Mkdir(path, 0o700); err != nil {
			t.Fatal(err)
		}
		if _, err := attest.LoadOrCreate(path); err == nil {
			t.Fatal("a directory was used as a key file")
		}
	})
	t.Run("missing directory", func(t *testing.T) {
		if _, err := attest.LoadOrCreate(filepath.Join(dir, "no", "such.key")); err == nil {
			t.Fatal("created a key in a missing directory")
		}
	})
	t.Run("public key file must be Ed25519", func(t *testing.T) {
		der, _ := x509.MarshalPKIXPublicKey(&ecKey.PublicKey)
		path := filepath.Join(dir, "ec.pub")
		os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644)
		if _, err := attest.LoadPublicKey(path); !errors.Is(err, attest.ErrKeyType) {
			t.Fatalf("got %v, want ErrKeyType", err)
		}
	})
	t.Run("a private key file read for its public key is checked too", func(t *testing.T) {
		path := filepath.Join(dir, "open.key")
		os.WriteFile(path, good, 0o644)
		os.Chmod(path, 0o644)
		if _, err := attest.LoadPublicKey(path); !errors.Is(err, attest.ErrKeyPermissions) {
			t.Fatalf("got %v, want ErrKeyPermissions", err)
		}
	})
}

func TestDefaultKeyPath(t *testing.T) {
	for db, want := range map[string]string{
		"groundgate.db":       "groundgate.key",
		"/var/lib/gg/data.db": "/var/lib/gg/data.key",
		"plain":               "plain.key",
		"dir.d/plain":         "dir.d/plain.key",
		"x.key":               "x.key.key",
		"a.b.db":              "a.b.key",
	} {
		if got := attest.DefaultKeyPath(db); got != want {
			t.Errorf("DefaultKeyPath(%q) = %q, want %q", db, got, want)
		}
	}
}
