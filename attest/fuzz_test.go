package attest_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/groundgate/groundgate/attest"
	"github.com/groundgate/groundgate/hashing"
)

// FuzzVerify feeds the envelope decoder arbitrary bytes. It never panics,
// every refusal is one of the sentinel errors, and whatever verifies under
// the test key is the golden statement: only it was signed.
func FuzzVerify(f *testing.F) {
	good := bytes.TrimSpace(readFile(f, envelopeFile))
	f.Add(good)
	f.Add(flipPayloadBit(f, good, 5))
	f.Add(flipSigBit(f, good, 5))
	f.Add([]byte(`{"payload":"","payloadType":"application/vnd.in-toto+json","signatures":[{"keyid":"","sig":""}]}`))
	f.Add([]byte(`{"payload":"e30=","payloadType":"application/vnd.in-toto+json","signatures":[]}`))
	f.Add([]byte("null"))
	key := mustLoadPublic(f, testPubFile)
	want, err := hashing.Canonical(goldenStatement(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, env []byte) {
		st, err := attest.Verify(env, key)
		if err != nil {
			for _, s := range []error{attest.ErrTooLarge, attest.ErrNotAttestation, attest.ErrBadSignature, attest.ErrFootprint} {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("an error outside the sentinels: %v", err)
		}
		got, err := hashing.Canonical(st)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("verified a statement that was never signed:\n%s", got)
		}
	})
}
