package attest_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/attest"
	"github.com/groundgate/groundgate/internal/testio"
)

// An independent implementation — tools/verify-attestation.py, computing
// DSSE's PAE itself and checking Ed25519 with python3-cryptography —
// accepts the envelopes Verify accepts and refuses the tampered ones.
func TestIndependentVerifier(t *testing.T) {
	// Debian's /usr/bin/python3 (or $GROUNDGATE_PYTHON), which has
	// python3-cryptography; the pyenv python3 on a developer's PATH may not.
	// Missing, it fails the test even without GROUNDGATE_REQUIRE_TOOLS.
	py, err := testio.FindPython("cryptography.hazmat.primitives.asymmetric.ed25519")
	if err != nil {
		t.Fatalf("%v (Debian: apt-get install python3 python3-cryptography; bash scripts/test.sh installs it)", err)
	}
	dir := t.TempDir()
	good := bytes.TrimSpace(readFile(t, envelopeFile))
	x := execute(t)
	s := testSigner(t)
	live, err := attest.NewService(s, x.e.Exec, x.e.Gate).Attest(context.Background(), x.hash)
	if err != nil {
		t.Fatal(err)
	}
	// A server's own key, created as the server creates it.
	fresh, err := attest.LoadOrCreate(filepath.Join(dir, "server.key"))
	if err != nil {
		t.Fatal(err)
	}
	freshEnv, err := attest.NewService(fresh, x.e.Exec, x.e.Gate).Attest(context.Background(), x.hash)
	if err != nil {
		t.Fatal(err)
	}
	freshPub := filepath.Join(dir, "server.pub.pem")
	if err := os.WriteFile(freshPub, fresh.PublicKey().PEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	anotherHash := strings.Repeat("ab", 32)
	cases := []struct {
		name string
		env  []byte
		key  string
		ok   bool
		msg  string // in the refusal
	}{
		{"golden", good, testPubFile, true, ""},
		{"live", live, testPubFile, true, ""},
		{"server key", freshEnv, freshPub, true, ""},
		{"wrong key", good, otherPubFile, false, "no signature verifies"},
		{"server key, test public key", freshEnv, testPubFile, false, "no signature verifies"},
		{"payload bit 0 flipped", flipPayloadBit(t, good, 0), testPubFile, false, "no signature verifies"},
		{"payload bit 777 flipped", flipPayloadBit(t, live, 777), testPubFile, false, "no signature verifies"},
		{"signature bit 0 flipped", flipSigBit(t, good, 0), testPubFile, false, "no signature verifies"},
		{"signature bit 400 flipped", flipSigBit(t, live, 400), testPubFile, false, "no signature verifies"},
		{"payload type", bytes.Replace(good, []byte(attest.PayloadType), []byte("application/json"), 1), testPubFile, false, "payloadType"},
		{"statement type", signed(t, func(st *attest.Statement) { st.Type = "https://in-toto.io/Statement/v0.1" }), testPubFile, false, "_type"},
		{"predicate type", signed(t, func(st *attest.Statement) { st.PredicateType = "https://example.com/x" }), testPubFile, false, "predicateType"},
		{"subject is another execution", signed(t, func(st *attest.Statement) {
			st.Subject[0].Digest["sha256"] = anotherHash
			st.Subject[0].Name = attest.SubjectPrefix + "sha256:" + anotherHash
		}), testPubFile, false, "is not the subject's"},
		{"footprint layer edited", signed(t, editFootprint(t, func(fp map[string]any) { fp["layers"].(map[string]any)["score"] = "sha256:" + anotherHash })), testPubFile, false, "layers hash to"},
		{"not JSON", []byte("{"), testPubFile, false, "not JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Go agrees with Python on every case.
			pub := mustLoadPublic(t, c.key)
			if _, err := attest.Verify(c.env, pub); (err == nil) != c.ok {
				t.Fatalf("attest.Verify: %v, want ok=%v", err, c.ok)
			}
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".json")
			if err := os.WriteFile(path, c.env, 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(py, "../tools/verify-attestation.py", path, c.key)
			out, err := cmd.CombinedOutput()
			if c.ok {
				if err != nil || !strings.HasPrefix(string(out), "OK: ") {
					t.Fatalf("python refused a good envelope: %v\n%s", err, out)
				}
				if !strings.Contains(string(out), "signed by "+pub.ID) {
					t.Errorf("python computes another key id than %s:\n%s", pub.ID, out)
				}
				return
			}
			var ee *exec.ExitError
			if err == nil || !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("python accepted a bad envelope (exit %v):\n%s", err, out)
			}
			if !strings.Contains(string(out), c.msg) {
				t.Errorf("python's refusal does not say %q:\n%s", c.msg, out)
			}
		})
	}
	t.Run("usage", func(t *testing.T) {
		err := exec.Command(py, "../tools/verify-attestation.py").Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Fatalf("no arguments: %v, want exit 2", err)
		}
	})
}
