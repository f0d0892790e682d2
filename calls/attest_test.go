package calls

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/attest"
	"github.com/groundgate/groundgate/gateway"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/internal/testio"
	"github.com/groundgate/groundgate/registry"
)

// discovered is a sealed footprint of a call grounded by discovery
// evidence (so its materials name the discovery), and its stored bytes.
func discovered(t *testing.T) (*Footprint, []byte) {
	t.Helper()
	disc := hashing.SumSHA256([]byte("evidence"))
	f := &Footprint{
		Tool:      "u.put_item",
		Identity:  hashing.SumSHA256([]byte("identity")),
		Arguments: []byte(`{"id":"a","ttl":3,"value":"v"}`),
		Decision:  Decision{Admitted: true, Grounding: GroundingDiscovered, Failures: []ground.Failure{}},
		Upstream: UpstreamRef{Name: "u", Server: gateway.ServerInfo{Name: "s", Version: "1"},
			ToolDigest: hashing.SumSHA256([]byte("tool"))},
		RegistryVersion: 2,
		Effect:          registry.EffectWrite,
		Discovery:       &disc,
		Outcome:         OutcomeOK,
		Findings:        []gateway.Finding{},
	}
	rd, err := RequestDigest(f.Tool, f.Arguments)
	if err != nil {
		t.Fatal(err)
	}
	f.Layers = Layers{Registry: f.Identity, Request: rd, Evidence: disc, State: EmptyState,
		Policies: hashing.SumSHA256([]byte("policies")), Upstream: f.Upstream.ToolDigest, Result: hashing.SumSHA256([]byte("result"))}
	raw, err := f.seal()
	if err != nil {
		t.Fatal(err)
	}
	return f, raw
}

func testKey(t *testing.T) (*attest.Signer, string) {
	t.Helper()
	s, err := attest.NewSigner(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize)))
	if err != nil {
		t.Fatal(err)
	}
	pub := filepath.Join(t.TempDir(), "pub.pem")
	if err := os.WriteFile(pub, s.PublicKey().PEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	return s, pub
}

// A discovered call's attestation lists the discovery among its materials,
// in CallMaterials' order; Go and tools/verify-attestation.py both
// recompute them, and refuse them reordered or without the discovery.
func TestVerifyAttestationDiscovered(t *testing.T) {
	py, err := testio.FindPython("cryptography.hazmat.primitives.asymmetric.ed25519")
	if err != nil {
		t.Fatalf("%v (Debian: apt-get install python3 python3-cryptography)", err)
	}
	f, raw := discovered(t)
	s, pubFile := testKey(t)
	ms := attest.CallMaterials(f.Identity, f.Discovery, f.Layers.Policies, f.Layers.Upstream)
	names := []string{}
	for _, m := range ms {
		names = append(names, m.Name)
	}
	if got := strings.Join(names, ","); got != "tool,discovery,policies,upstream" {
		t.Fatalf("materials %s", got)
	}
	sign := func(ms []attest.ResourceDescriptor, footprint []byte) []byte {
		env, err := s.Sign(context.Background(), attest.NewCallStatement(f.Hash, footprint, ms))
		if err != nil {
			t.Fatal(err)
		}
		return env
	}
	other := hashing.SumSHA256([]byte("other evidence"))
	swapped := append([]attest.ResourceDescriptor{ms[1], ms[0]}, ms[2:]...)
	withoutDiscovery := append([]attest.ResourceDescriptor{ms[0]}, ms[2:]...)
	dir := t.TempDir()
	for _, c := range []struct {
		name   string
		env    []byte
		ok     bool
		pyOK   bool
		reason string
	}{
		{"good", sign(ms, raw), true, true, ""},
		// The materials agree with the edited discovery; its layer does not.
		{"discovery edited", sign(attest.CallMaterials(f.Identity, &other, f.Layers.Policies, f.Layers.Upstream),
			bytes.Replace(raw, []byte(f.Discovery.String()), []byte(other.String()), 1)), false, false, "differs from the evidence layer"},
		{"materials reordered", sign(swapped, raw), false, false, "the materials are"},
		{"discovery material left out", sign(withoutDiscovery, raw), false, false, "the materials are"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := VerifyAttestation(c.env, s.PublicKey())
			if c.ok != (err == nil) || (!c.ok && !errors.Is(err, attest.ErrFootprint)) {
				t.Fatalf("VerifyAttestation: %v, want ok=%v", err, c.ok)
			}
			// attest alone refuses every call: it cannot check one.
			if _, err := attest.Verify(c.env, s.PublicKey()); !errors.Is(err, attest.ErrNotAttestation) {
				t.Fatalf("attest.Verify on a call: %v", err)
			}
			file := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".json")
			if err := os.WriteFile(file, c.env, 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(py, "../tools/verify-attestation.py", file, pubFile).CombinedOutput()
			if c.pyOK {
				if err != nil || !strings.HasPrefix(string(out), "OK: call "+f.Hash.String()) {
					t.Fatalf("python refused: %v\n%s", err, out)
				}
				return
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), c.reason) {
				t.Fatalf("python: %v, want exit 1 saying %q\n%s", err, c.reason, out)
			}
		})
	}
}
