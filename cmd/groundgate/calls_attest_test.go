package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/attest"
	"github.com/groundgate/groundgate/calls"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/internal/app"
	"github.com/groundgate/groundgate/internal/app/apptest"
	"github.com/groundgate/groundgate/internal/testio"
)

// gw talks to a wired server's gateway routes with the admin token.
type gw struct {
	t    *testing.T
	base string
}

func (g gw) do(method, path, body string) (int, []byte) {
	g.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, g.base+path, rd)
	if err != nil {
		g.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		g.t.Fatal(err)
	}
	return resp.StatusCode, b
}

// must is do, failing the test unless the status is want.
func (g gw) must(want int, method, path, body string) []byte {
	g.t.Helper()
	status, b := g.do(method, path, body)
	if status != want {
		g.t.Fatalf("%s %s: %d, want %d\n%s", method, path, status, want, b)
	}
	return b
}

// buildTestUpstream builds cmd/mcp-testupstream once into a temp dir.
func buildTestUpstream(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mcp-testupstream")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/groundgate/groundgate/cmd/mcp-testupstream").CombinedOutput(); err != nil {
		t.Fatalf("go build mcp-testupstream: %v\n%s", err, out)
	}
	return bin
}

// The arguments of the two calls: text and keys that exercise RFC 8785's
// string escapes, non-ASCII and UTF-16 key order (U+FB01 sorts after
// U+1F600's surrogates), and numbers in ECMAScript form.
const (
	echoArgs    = `{"text":"h\u00e9llo \u2603 \ud834\udd1e \u0001 \"q\" \\ </b> &amp;\n"}`
	numbersArgs = `{"\ufb01":1,"\ud83d\ude00":2,"b":1e21,"c":[1e20,1e-6,1e-7,123.456,-1e-7,0.000001234],"a":[0.1,-0,1.5e-7,123456789012345678,100,-2.5,1E+2,5e-324],"\u00e9":{"z":true,"y":null,"x":"\u20ac"}}`
)

// A call through the wired gateway is attested; the attestation verifies
// with calls.VerifyAttestation, groundgate verify-attestation and the
// independent tools/verify-attestation.py, the footprint with
// tools/verify-call.py; each refuses it tampered. A stored call record
// with a flipped byte fails registry verify.
func TestCallAttestation(t *testing.T) {
	py, err := testio.FindPython("cryptography.hazmat.primitives.asymmetric.ed25519")
	if err != nil {
		t.Fatalf("%v (Debian: apt-get install python3 python3-cryptography)", err)
	}
	bin := buildTestUpstream(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "g.db")
	m, stop := apptest.Serve(t, app.Config{DB: db, AdminToken: testToken})
	g := gw{t, "http://" + m.Addr()}

	// Two upstreams grounding only writes, so their reads are exempt: the
	// normal tools, and one synthetic read-only tool answering with its
	// arguments (input schema {"type": "object"}: any numbers).
	for name, cmd := range map[string][]string{"u": {bin}, "n": {bin, "--tools", "1"}} {
		cfg, _ := json.Marshal(map[string]any{"transport": "stdio", "command": cmd, "ground": "writes"})
		g.must(http.StatusCreated, "PUT", "/v1/upstreams/"+name, string(cfg))
		g.must(http.StatusOK, "POST", "/v1/upstreams/"+name+"/sync", `{"apply": true}`)
	}
	call := func(tool, args string) hashing.Digest {
		t.Helper()
		var res struct {
			Call calls.Footprint `json:"call"`
		}
		if err := json.Unmarshal(g.must(http.StatusOK, "POST", "/v1/calls", `{"tool":"`+tool+`","arguments":`+args+`}`), &res); err != nil {
			t.Fatal(err)
		}
		if res.Call.Decision.Grounding != calls.GroundingExempt || res.Call.Outcome != calls.OutcomeOK {
			t.Fatalf("%s: %+v", tool, res.Call)
		}
		return res.Call.Hash
	}
	echoHash := call("u.echo", echoArgs)
	numbersHash := call("n.tool_1", numbersArgs)

	var keys struct {
		Keys []struct {
			PEM string `json:"public_key_pem"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(g.must(http.StatusOK, "GET", "/v1/keys", ""), &keys); err != nil || len(keys.Keys) != 1 {
		t.Fatalf("keys: %v %+v", err, keys)
	}
	pubFile := filepath.Join(dir, "server.pub.pem")
	writeBytes(t, pubFile, []byte(keys.Keys[0].PEM))
	pub, err := attest.LoadPublicKey(pubFile)
	if err != nil {
		t.Fatal(err)
	}
	// The server's own key signs the tampered statements below, so that
	// the footprint checks, not the signature, must refuse them.
	signer, err := attest.LoadOrCreate(attest.DefaultKeyPath(db))
	if err != nil {
		t.Fatal(err)
	}

	// verifyAll runs every verifier on env and checks they agree with ok;
	// a refusal from Go matches want, Python's says msg.
	verifyAll := func(t *testing.T, name string, env []byte, ok bool, want error, msg string) {
		t.Helper()
		st, err := calls.VerifyAttestation(env, pub)
		switch {
		case ok && err != nil:
			t.Fatalf("calls.VerifyAttestation refused a good envelope: %v", err)
		case !ok && !errors.Is(err, want):
			t.Fatalf("calls.VerifyAttestation: %v, want %v", err, want)
		}
		file := filepath.Join(dir, name+".json")
		writeBytes(t, file, env)
		out, cliErr := runSubcommand(t, verifyAttestationCmd{}, "", "--key", pubFile, file)
		if (cliErr == nil) != ok {
			t.Fatalf("groundgate verify-attestation: %v, want ok=%v\n%s", cliErr, ok, out)
		}
		pyOut, pyErr := exec.Command(py, "../../tools/verify-attestation.py", file, pubFile).CombinedOutput()
		if ok {
			var sum verificationSummary
			if err := json.Unmarshal([]byte(out), &sum); err != nil || !sum.Verified || sum.Call != st.Subject[0].Name[len(attest.CallSubjectPrefix):] || sum.Execution != "" {
				t.Fatalf("groundgate verify-attestation printed %s (%v)", out, err)
			}
			if pyErr != nil || !strings.HasPrefix(string(pyOut), "OK: call "+sum.Call+" signed by "+pub.ID) {
				t.Fatalf("verify-attestation.py refused a good envelope: %v\n%s", pyErr, pyOut)
			}
			return
		}
		var ee *exec.ExitError
		if !errors.As(pyErr, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("verify-attestation.py accepted a bad envelope (%v):\n%s", pyErr, pyOut)
		}
		if !strings.Contains(string(pyOut), msg) {
			t.Errorf("verify-attestation.py's refusal does not say %q:\n%s", msg, pyOut)
		}
	}
	// verifyCall runs tools/verify-call.py on a footprint.
	verifyCall := func(t *testing.T, name string, body []byte, ok bool, msg string) {
		t.Helper()
		file := filepath.Join(dir, name+".call.json")
		writeBytes(t, file, body)
		out, err := exec.Command(py, "../../tools/verify-call.py", file).CombinedOutput()
		if ok {
			if err != nil || !strings.HasPrefix(string(out), "OK: call ") {
				t.Fatalf("verify-call.py refused a good footprint: %v\n%s", err, out)
			}
			return
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), msg) {
			t.Fatalf("verify-call.py on a bad footprint: %v, want exit 1 saying %q\n%s", err, msg, out)
		}
	}

	for _, h := range []hashing.Digest{echoHash, numbersHash} {
		body := g.must(http.StatusOK, "GET", "/v1/calls/"+h.String(), "")
		env := g.must(http.StatusOK, "GET", "/v1/calls/"+h.String()+"/attestation", "")
		t.Run(h.String()[7:19], func(t *testing.T) {
			verifyAll(t, "good", env, true, nil, "")
			verifyCall(t, "good", body, true, "")
			st, _ := calls.VerifyAttestation(env, pub)
			if st.PredicateType != attest.CallPredicateType || st.Subject[0].Name != attest.CallSubjectPrefix+h.String() {
				t.Fatalf("statement %s about %+v", st.PredicateType, st.Subject)
			}
			// The execution verifier does not take a call for an execution.
			if _, err := attest.Verify(env, pub); !errors.Is(err, attest.ErrNotAttestation) {
				t.Fatalf("attest.Verify on a call: %v", err)
			}
		})
	}

	env := g.must(http.StatusOK, "GET", "/v1/calls/"+echoHash.String()+"/attestation", "")
	another := strings.Repeat("ab", 32)
	tampered := []struct {
		name string
		env  []byte
		want error
		msg  string
	}{
		{"footprint byte flipped", flipFootprintByte(t, env, "llo"), attest.ErrBadSignature, "no signature verifies"},
		{"arguments edited, re-signed", resign(t, signer, env, func(st *attest.Statement) {
			st.Predicate.Footprint = bytes.Replace(st.Predicate.Footprint, []byte("llo"), []byte("lLo"), 1)
		}), attest.ErrFootprint, "tool and arguments hash to"},
		{"a layer edited, re-signed", resign(t, signer, env, editCall(t, func(fp map[string]any) {
			fp["layers"].(map[string]any)["state"] = "sha256:" + another
		})), attest.ErrFootprint, "layers hash to"},
		{"result edited, re-signed", resign(t, signer, env, editCall(t, func(fp map[string]any) {
			fp["result"] = "sha256:" + another
		})), attest.ErrFootprint, "differs from the result layer"},
		{"a material dropped, re-signed", resign(t, signer, env, func(st *attest.Statement) {
			st.Predicate.Materials = st.Predicate.Materials[:len(st.Predicate.Materials)-1]
		}), attest.ErrFootprint, "the materials are"},
		{"a material's digest edited, re-signed", resign(t, signer, env, func(st *attest.Statement) {
			st.Predicate.Materials[0].Digest["sha256"] = another
		}), attest.ErrFootprint, "the materials are"},
		{"subject another call, re-signed", resign(t, signer, env, func(st *attest.Statement) {
			st.Subject[0].Digest["sha256"] = another
			st.Subject[0].Name = attest.CallSubjectPrefix + "sha256:" + another
		}), attest.ErrFootprint, "is not the subject's"},
		{"subject named as an execution, re-signed", resign(t, signer, env, func(st *attest.Statement) {
			st.Subject[0].Name = attest.SubjectPrefix + echoHash.String()
		}), attest.ErrNotAttestation, "subject name"},
		{"another predicate type, re-signed", resign(t, signer, env, func(st *attest.Statement) {
			st.PredicateType = "https://groundgate.dev/attestation/call/v2"
		}), attest.ErrNotAttestation, "predicateType"},
	}
	for i, c := range tampered {
		t.Run(c.name, func(t *testing.T) { verifyAll(t, fmt.Sprintf("tampered-%d", i), c.env, false, c.want, c.msg) })
	}

	body := g.must(http.StatusOK, "GET", "/v1/calls/"+echoHash.String(), "")
	for i, c := range []struct {
		name string
		body []byte
		msg  string
	}{
		{"arguments edited", bytes.Replace(body, []byte("llo"), []byte("lLo"), 1), "tool and arguments hash to"},
		{"tool renamed", bytes.Replace(body, []byte(`"tool":"u.echo"`), []byte(`"tool":"u.echO"`), 1), "tool and arguments hash to"},
		{"a layer edited", bytes.Replace(body, []byte(calls.EmptyState.String()), []byte("sha256:"+another), 1), "layers hash to"},
		{"a layer not a digest", bytes.Replace(body, []byte(`"state":"sha256:`), []byte(`"state":"sha256:0`), 1), "not sha256:HEX"},
		{"hash edited", bytes.Replace(body, []byte(`"hash":"`+echoHash.String()), []byte(`"hash":"sha256:`+another), 1), "layers hash to"},
		{"not JSON", body[:len(body)/2], "not JSON"},
	} {
		t.Run("verify-call "+c.name, func(t *testing.T) {
			if bytes.Equal(c.body, body) {
				t.Fatal("the edit changed nothing")
			}
			verifyCall(t, fmt.Sprintf("bad-%d", i), c.body, false, c.msg)
		})
	}

	// The stored record: registry verify counts both calls, then finds the
	// one with a flipped byte.
	stop()
	if code, out, stderr := runCLI(t, "registry", "verify", "--db", db); code != 0 || !strings.Contains(out, " 2 call(s)") {
		t.Fatalf("registry verify before tampering: %d %s %s", code, out, stderr)
	}
	bdb, err := bolt.Open(db, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := bdb.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(calls.SpaceCalls.Name))
		v := bytes.Clone(b.Get(echoHash.Key()))
		i := bytes.Index(v, []byte("llo"))
		if i < 0 {
			return fmt.Errorf("no echoed text in %s", v)
		}
		v[i+1] ^= 0x20 // l → L
		return b.Put(echoHash.Key(), v)
	}); err != nil {
		t.Fatal(err)
	}
	if err := bdb.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := app.VerifyFile(t.Context(), db)
	if !errors.Is(err, calls.ErrCorrupt) || rep.Calls != 2 || len(rep.Problems) != 1 ||
		!strings.HasPrefix(rep.Problems[0], "calls: "+echoHash.String()+": ") {
		t.Fatalf("VerifyFile after a flipped byte: %v, %d call(s), problems %q", err, rep.Calls, rep.Problems)
	}
	code, _, stderr := runCLI(t, "registry", "verify", "--db", db)
	if code != 1 || !strings.Contains(stderr, "MISMATCH: calls: "+echoHash.String()) {
		t.Fatalf("registry verify after a flipped byte: %d %s", code, stderr)
	}
}

func writeBytes(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// envelopeOf decodes a DSSE envelope's payload.
func envelopeOf(t *testing.T, env []byte) (map[string]any, []byte) {
	t.Helper()
	var e map[string]any
	if err := json.Unmarshal(env, &e); err != nil {
		t.Fatal(err)
	}
	payload, err := base64.StdEncoding.DecodeString(e["payload"].(string))
	if err != nil {
		t.Fatal(err)
	}
	return e, payload
}

// flipFootprintByte flips the case of the byte after the first occurrence
// of at inside the payload's footprint, keeping the signature.
func flipFootprintByte(t *testing.T, env []byte, at string) []byte {
	t.Helper()
	e, payload := envelopeOf(t, env)
	fp := bytes.Index(payload, []byte(`"footprint":`))
	i := bytes.Index(payload[fp:], []byte(at))
	if fp < 0 || i < 0 {
		t.Fatalf("no %q in the footprint of %s", at, payload)
	}
	payload[fp+i+1] ^= 0x20
	e["payload"] = base64.StdEncoding.EncodeToString(payload)
	out, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// resign edits the envelope's statement and signs it again with s.
func resign(t *testing.T, s *attest.Signer, env []byte, edit func(*attest.Statement)) []byte {
	t.Helper()
	_, payload := envelopeOf(t, env)
	var st attest.Statement
	if err := json.Unmarshal(payload, &st); err != nil {
		t.Fatal(err)
	}
	edit(&st)
	out, err := s.Sign(t.Context(), &st)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// editCall edits the statement's footprint as JSON, keeping it canonical.
func editCall(t *testing.T, edit func(fp map[string]any)) func(*attest.Statement) {
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
