package attest_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/attest"
	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
)

// The committed envelope is what signing the committed statement with the
// test key gives, byte for byte, and it verifies. With -update both are
// made again from a fresh execution.
func TestGolden(t *testing.T) {
	s := testSigner(t)
	if *update {
		x := execute(t)
		fp, err := x.e.Exec.Get(context.Background(), x.hash)
		if err != nil {
			t.Fatal(err)
		}
		st, err := attest.NewStatement(fp, x.discovery)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := hashing.Canonical(st)
		if err != nil {
			t.Fatal(err)
		}
		env, err := s.Sign(context.Background(), st)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(statementFile, append(raw, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(envelopeFile, append(env, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st := goldenStatement(t)
	env, err := s.Sign(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.TrimSuffix(readFile(t, envelopeFile), []byte("\n"))
	if !bytes.Equal(env, want) {
		t.Fatalf("signing %s gives\n%s\nwant (%s)\n%s", statementFile, env, envelopeFile, want)
	}
	got, err := attest.Verify(want, mustLoadPublic(t, testPubFile))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := hashing.Canonical(got)
	b, _ := hashing.Canonical(st)
	if !bytes.Equal(a, b) {
		t.Fatal("Verify returned another statement than the one signed")
	}
	f := decodeEnvelope(t, env)
	if f.PayloadType != attest.PayloadType || len(f.Signatures) != 1 || f.Signatures[0].KeyID != testKeyID {
		t.Fatalf("envelope fields: %+v", f)
	}
	payload, _ := base64.StdEncoding.DecodeString(f.Payload)
	if canon, err := hashing.CanonicalizeJSON(payload); err != nil || !bytes.Equal(canon, payload) {
		t.Fatalf("the payload is not RFC 8785 canonical JSON (%v)", err)
	}
}

// signed signs the golden statement after mutate changed it.
func signed(t *testing.T, mutate func(st *attest.Statement)) []byte {
	t.Helper()
	st := goldenStatement(t)
	mutate(st)
	env, err := testSigner(t).Sign(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// editFootprint changes the statement's footprint as a JSON object.
func editFootprint(t *testing.T, edit func(fp map[string]any)) func(st *attest.Statement) {
	return func(st *attest.Statement) {
		var fp map[string]any
		if err := json.Unmarshal(st.Predicate.Footprint, &fp); err != nil {
			t.Fatal(err)
		}
		edit(fp)
		raw, err := hashing.Canonical(fp)
		if err != nil {
			t.Fatal(err)
		}
		st.Predicate.Footprint = raw
	}
}

func TestVerify(t *testing.T) {
	good := bytes.TrimSpace(readFile(t, envelopeFile))
	key, other := mustLoadPublic(t, testPubFile), mustLoadPublic(t, otherPubFile)
	st := goldenStatement(t)
	hash := st.Subject[0].Digest["sha256"]
	anotherHash := strings.Repeat("ab", 32)
	withFields := func(edit func(f *envelopeFields)) []byte {
		f := decodeEnvelope(t, good)
		edit(&f)
		return f.encode(t)
	}
	cases := []struct {
		name string
		env  []byte
		keys []attest.PublicKey
		want error // nil: verifies
	}{
		{"good", good, []attest.PublicKey{key}, nil},
		{"good, one of two keys", good, []attest.PublicKey{other, key}, nil},
		{"good, key twice", good, []attest.PublicKey{key, key}, nil},
		{"good, no keyid", withFields(func(f *envelopeFields) { f.Signatures[0].KeyID = "" }), []attest.PublicKey{key}, nil},
		{"good, URL-safe base64 payload (DSSE allows it)", withFields(func(f *envelopeFields) {
			f.Payload = strings.NewReplacer("+", "-", "/", "_").Replace(f.Payload)
		}), []attest.PublicKey{key}, nil},
		{"good, a bad signature and a good one", withFields(func(f *envelopeFields) {
			bad := f.Signatures[0]
			bad.Sig = flipBit(t, bad.Sig, 3)
			f.Signatures = append(f.Signatures[:0:0], bad, f.Signatures[0])
		}), []attest.PublicKey{key}, nil},

		{"wrong key", good, []attest.PublicKey{other}, attest.ErrBadSignature},
		{"no key", good, nil, attest.ErrNoKey},
		{"payload bit 0 flipped", flipPayloadBit(t, good, 0), []attest.PublicKey{key}, attest.ErrBadSignature},
		{"payload bit 1001 flipped", flipPayloadBit(t, good, 1001), []attest.PublicKey{key}, attest.ErrBadSignature},
		{"payload last bit flipped", flipPayloadBit(t, good, -1+8*len(mustPayload(t, good))), []attest.PublicKey{key}, attest.ErrBadSignature},
		{"signature bit 0 flipped", flipSigBit(t, good, 0), []attest.PublicKey{key}, attest.ErrBadSignature},
		{"signature bit 300 flipped", flipSigBit(t, good, 300), []attest.PublicKey{key}, attest.ErrBadSignature},
		{"signature bit 511 flipped", flipSigBit(t, good, 511), []attest.PublicKey{key}, attest.ErrBadSignature},
		{"signature truncated", withFields(func(f *envelopeFields) { f.Signatures[0].Sig = f.Signatures[0].Sig[:40] }), []attest.PublicKey{key}, attest.ErrBadSignature},
		{"signature not base64", withFields(func(f *envelopeFields) { f.Signatures[0].Sig = "!!" }), []attest.PublicKey{key}, attest.ErrBadSignature},
		{"another key's keyid", withFields(func(f *envelopeFields) { f.Signatures[0].KeyID = other.ID }), []attest.PublicKey{key}, attest.ErrBadSignature},
		{"no signatures", withFields(func(f *envelopeFields) { f.Signatures = f.Signatures[:0] }), []attest.PublicKey{key}, attest.ErrBadSignature},
		{"too many signatures", withFields(func(f *envelopeFields) {
			for len(f.Signatures) < 9 {
				f.Signatures = append(f.Signatures, f.Signatures[0])
			}
		}), []attest.PublicKey{key}, attest.ErrNotAttestation},
		{"payload type", withFields(func(f *envelopeFields) { f.PayloadType = "application/json" }), []attest.PublicKey{key}, attest.ErrNotAttestation},
		{"payload not base64", withFields(func(f *envelopeFields) { f.Payload = "%%%" }), []attest.PublicKey{key}, attest.ErrNotAttestation},
		{"unknown envelope field", bytes.Replace(good, []byte(`{"payload"`), []byte(`{"x":1,"payload"`), 1), []attest.PublicKey{key}, attest.ErrNotAttestation},
		{"duplicate envelope key", bytes.Replace(good, []byte(`{"payload"`), []byte(`{"payloadType":"x","payload"`), 1), []attest.PublicKey{key}, attest.ErrNotAttestation},
		{"not JSON", []byte("not json"), []attest.PublicKey{key}, attest.ErrNotAttestation},
		{"null", []byte("null"), []attest.PublicKey{key}, attest.ErrNotAttestation},
		{"empty", nil, []attest.PublicKey{key}, attest.ErrNotAttestation},
		{"too large", bytes.Repeat([]byte(" "), attest.MaxEnvelopeBytes+1), []attest.PublicKey{key}, attest.ErrTooLarge},

		// Signed by the right key, but not a statement about an execution.
		{"statement type", signed(t, func(st *attest.Statement) { st.Type = "https://in-toto.io/Statement/v0.1" }), []attest.PublicKey{key}, attest.ErrNotAttestation},
		{"predicate type", signed(t, func(st *attest.Statement) { st.PredicateType = "https://slsa.dev/provenance/v1" }), []attest.PublicKey{key}, attest.ErrNotAttestation},
		{"no subject", signed(t, func(st *attest.Statement) { st.Subject = nil }), []attest.PublicKey{key}, attest.ErrNotAttestation},
		{"two subjects", signed(t, func(st *attest.Statement) { st.Subject = append(st.Subject, st.Subject[0]) }), []attest.PublicKey{key}, attest.ErrNotAttestation},
		{"subject digest upper case", signed(t, func(st *attest.Statement) {
			st.Subject[0].Digest["sha256"] = strings.ToUpper(hash)
			st.Subject[0].Name = attest.SubjectPrefix + "sha256:" + strings.ToUpper(hash)
		}), []attest.PublicKey{key}, attest.ErrNotAttestation},
		{"subject digest with another algorithm", signed(t, func(st *attest.Statement) { st.Subject[0].Digest["sha512"] = hash }), []attest.PublicKey{key}, attest.ErrNotAttestation},
		{"subject name disagrees with its digest", signed(t, func(st *attest.Statement) { st.Subject[0].Name = attest.SubjectPrefix + "sha256:" + anotherHash }), []attest.PublicKey{key}, attest.ErrNotAttestation},
		{"subject is another execution", signed(t, func(st *attest.Statement) {
			st.Subject[0].Digest["sha256"] = anotherHash
			st.Subject[0].Name = attest.SubjectPrefix + "sha256:" + anotherHash
		}), []attest.PublicKey{key}, attest.ErrFootprint},
		{"footprint hash edited", signed(t, editFootprint(t, func(fp map[string]any) { fp["hash"] = "sha256:" + anotherHash })), []attest.PublicKey{key}, attest.ErrFootprint},
		{"footprint layer edited", signed(t, editFootprint(t, func(fp map[string]any) { fp["layers"].(map[string]any)["score"] = "sha256:" + anotherHash })), []attest.PublicKey{key}, attest.ErrFootprint},
		{"footprint score edited, layers kept", signed(t, editFootprint(t, func(fp map[string]any) {
			m := fp["morphisms"].([]any)[0].(map[string]any)
			m["score"] = m["score"].(float64) + 1
		})), []attest.PublicKey{key}, attest.ErrFootprint},
		{"footprint unknown field", signed(t, editFootprint(t, func(fp map[string]any) { fp["extra"] = true })), []attest.PublicKey{key}, attest.ErrFootprint},
		{"footprint missing", signed(t, func(st *attest.Statement) { st.Predicate.Footprint = json.RawMessage("null") }), []attest.PublicKey{key}, attest.ErrFootprint},
		{"data material dropped", signed(t, func(st *attest.Statement) { st.Predicate.Materials = st.Predicate.Materials[1:] }), []attest.PublicKey{key}, attest.ErrFootprint},
		{"data material digest edited", signed(t, func(st *attest.Statement) { st.Predicate.Materials[0].Digest["blake3"] = anotherHash }), []attest.PublicKey{key}, attest.ErrFootprint},
		{"registry material edited", signed(t, func(st *attest.Statement) { st.Predicate.Materials[1].Digest["sha256"] = anotherHash }), []attest.PublicKey{key}, attest.ErrFootprint},
		{"discovery material not sha256", signed(t, func(st *attest.Statement) {
			for _, m := range st.Predicate.Materials {
				if m.Name == attest.MaterialDiscovery {
					m.Digest["blake3"] = m.Digest["sha256"]
					delete(m.Digest, "sha256")
				}
			}
		}), []attest.PublicKey{key}, attest.ErrFootprint},
		{"materials reordered", signed(t, func(st *attest.Statement) {
			ms := st.Predicate.Materials
			ms[0], ms[1] = ms[1], ms[0]
		}), []attest.PublicKey{key}, attest.ErrFootprint},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := attest.Verify(c.env, c.keys...)
			switch {
			case c.want == nil && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want == nil && got.Subject[0].Digest["sha256"] != hash:
				t.Fatalf("verified another subject: %+v", got.Subject)
			case c.want != nil && !errors.Is(err, c.want):
				t.Fatalf("got %v, want %v", err, c.want)
			case c.want != nil && got != nil:
				t.Fatal("a statement came back with the error")
			}
			if err != nil {
				t.Logf("refused: %v", err)
			}
		})
	}
}

func mustPayload(t *testing.T, env []byte) []byte {
	b, err := base64.StdEncoding.DecodeString(decodeEnvelope(t, env).Payload)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A Verifier uses the footprint check it is given, and its verdict.
func TestVerifierCheckFootprint(t *testing.T) {
	good := bytes.TrimSpace(readFile(t, envelopeFile))
	key := mustLoadPublic(t, testPubFile)
	var called hashing.Digest
	v := attest.Verifier{Keys: []attest.PublicKey{key}, CheckFootprint: func(h hashing.Digest, raw []byte) (*execution.Footprint, error) {
		called = h
		return execution.CheckFootprint(h, raw)
	}}
	if _, err := v.Verify(good); err != nil {
		t.Fatal(err)
	}
	if called.IsZero() {
		t.Fatal("the check was not called")
	}
	v.CheckFootprint = func(hashing.Digest, []byte) (*execution.Footprint, error) {
		return nil, errors.New("layer plans differs")
	}
	if _, err := v.Verify(good); !errors.Is(err, attest.ErrFootprint) || !strings.Contains(err.Error(), "layer plans differs") {
		t.Fatalf("got %v, want ErrFootprint with the check's message", err)
	}
}

// A stored execution attests and verifies; its statement carries the
// footprint exactly as stored and the materials it was made from; the
// same execution and key give the same bytes again.
func TestServiceAttest(t *testing.T) {
	ctx := context.Background()
	x := execute(t)
	s := testSigner(t)
	svc := attest.NewService(s, x.e.Exec, x.e.Gate)
	env, err := svc.Attest(ctx, x.hash)
	if err != nil {
		t.Fatal(err)
	}
	again, err := svc.Attest(ctx, x.hash)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(env, again) {
		t.Fatal("two attestations of one execution differ")
	}
	st, err := attest.Verify(env, svc.Keys()...)
	if err != nil {
		t.Fatal(err)
	}
	var stored []byte
	x.e.Store.DB().View(func(tx *bolt.Tx) error {
		stored = bytes.Clone(tx.Bucket(execution.Bucket).Get(x.hash.Key()))
		return nil
	})
	if !bytes.Equal(st.Predicate.Footprint, stored) {
		t.Fatal("the signed footprint is not the stored bytes")
	}
	if want := strings.TrimPrefix(x.hash.String(), "sha256:"); st.Subject[0].Digest["sha256"] != want {
		t.Fatalf("subject %v, want sha256 %s", st.Subject[0].Digest, want)
	}
	fp, _ := x.e.Exec.Get(ctx, x.hash)
	got := map[string]map[string]string{}
	for _, m := range st.Predicate.Materials {
		got[m.Name] = m.Digest
	}
	hexOf := func(d hashing.Digest) string { return fmt.Sprintf("%x", d.Sum()) }
	for name, want := range map[string]map[string]string{
		attest.MaterialData:      {"blake3": hexOf(fp.Data.Digest)},
		attest.MaterialRegistry:  {"sha256": hexOf(fp.Registry)},
		attest.MaterialGrounding: {"sha256": hexOf(x.grounding)},
		attest.MaterialDiscovery: {"sha256": hexOf(x.discovery)},
		attest.MaterialPolicies:  {"sha256": hexOf(*fp.Policies)},
	} {
		if fmt.Sprint(got[name]) != fmt.Sprint(want) {
			t.Errorf("material %s: %v, want %v", name, got[name], want)
		}
	}
	if _, err := svc.Attest(ctx, hashing.SumSHA256([]byte("no such execution"))); !errors.Is(err, execution.ErrNotFound) {
		t.Errorf("an unknown hash: %v, want execution.ErrNotFound", err)
	}
}

// A footprint whose stored bytes were altered gets no attestation: every
// edit below is refused with execution.ErrCorrupt, before anything is
// signed.
func TestServiceRefusesAlteredFootprint(t *testing.T) {
	x := execute(t)
	var stored []byte
	x.e.Store.DB().View(func(tx *bolt.Tx) error {
		stored = bytes.Clone(tx.Bucket(execution.Bucket).Get(x.hash.Key()))
		return nil
	})
	var fp map[string]any
	if err := json.Unmarshal(stored, &fp); err != nil {
		t.Fatal(err)
	}
	canonical := func(edit func(fp map[string]any)) []byte {
		var c map[string]any
		json.Unmarshal(stored, &c)
		edit(c)
		b, err := hashing.Canonical(c)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	other := "sha256:" + strings.Repeat("cd", 32)
	out, err := x.e.Gate.Ground(context.Background(), ground.Proposal{
		Request:     []byte(`{"family":"MOM_WZS","metric":"SRP","params":{"window":[10]},"data":"oil-spot/wti-daily.csv"}`),
		DiscoveryID: x.discovery,
	})
	if err != nil || out.Grounded == nil {
		t.Fatalf("second grounding: %v %+v", err, out.Record.Decision)
	}
	otherGrounding := out.ID
	for _, c := range []struct {
		name string
		raw  []byte
	}{
		{"a score", canonical(func(fp map[string]any) {
			m := fp["morphisms"].([]any)[0].(map[string]any)
			m["score"] = m["score"].(float64) + 1e-9
		})},
		{"a layer", canonical(func(fp map[string]any) { fp["layers"].(map[string]any)["plans"] = other })},
		{"the data digest", canonical(func(fp map[string]any) { fp["data"].(map[string]any)["digest"] = "blake3:" + strings.Repeat("cd", 32) })},
		{"the registry version (not hashed)", canonical(func(fp map[string]any) { fp["registry_version"] = fp["registry_version"].(float64) + 1 })},
		{"the grounding, to none (not hashed)", canonical(func(fp map[string]any) { fp["grounding"] = other })},
		{"the grounding, to another (not hashed)", canonical(func(fp map[string]any) { fp["grounding"] = otherGrounding.String() })},
		{"whitespace", append([]byte(" "), stored...)},
		{"a byte", func() []byte { b := bytes.Clone(stored); b[len(b)/2] ^= 1; return b }()},
		{"truncated", stored[:len(stored)-1]},
	} {
		t.Run(c.name, func(t *testing.T) {
			x.reopen(t, func(tx *bolt.Tx) error { return tx.Bucket(execution.Bucket).Put(x.hash.Key(), c.raw) })
			env, err := attest.NewService(testSigner(t), x.e.Exec, x.e.Gate).Attest(context.Background(), x.hash)
			if !errors.Is(err, execution.ErrCorrupt) {
				t.Fatalf("attested altered bytes (%v): %.200s", err, env)
			}
			if env != nil {
				t.Fatal("an envelope came back with the error")
			}
			t.Logf("refused: %v", err)
		})
	}
}
