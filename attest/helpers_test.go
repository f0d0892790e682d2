package attest_test

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"flag"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/attest"
	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/internal/app"
)

var update = flag.Bool("update", false, "rewrite testdata/statement.json and testdata/envelope.json from a fresh execution")

// The committed test key. It signs test vectors only: its private half is
// public, so nothing signed with it means anything.
const (
	testKeyFile   = "testdata/TEST-ONLY-DO-NOT-USE.key.pem"
	testPubFile   = "testdata/TEST-ONLY-DO-NOT-USE.pub.pem"
	otherPubFile  = "testdata/OTHER-TEST-ONLY.pub.pem"
	statementFile = "testdata/statement.json"
	envelopeFile  = "testdata/envelope.json"
	// testKeyID is what `openssl pkey -pubin -in testdata/TEST-ONLY-DO-NOT-USE.pub.pem
	// -outform DER | sha256sum` prints.
	testKeyID = "sha256:3bf389775840679a14f2382b2e3d6f413d87361c4bee4f0a403f01abbaa97218"
)

// testSigner parses the committed test key. Git does not keep the file's
// mode, so it is read here rather than with LoadSigner, which would refuse
// a checkout's 0644.
func testSigner(t testing.TB) *attest.Signer {
	t.Helper()
	b, err := os.ReadFile(testKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	s, err := attest.NewSigner(k.(ed25519.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustLoadPublic(t testing.TB, path string) attest.PublicKey {
	t.Helper()
	k, err := attest.LoadPublicKey(path)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// goldenStatement is the committed statement about a real execution.
func goldenStatement(t testing.TB) *attest.Statement {
	t.Helper()
	var st attest.Statement
	if err := hashing.DecodeStrict(readFile(t, statementFile), &st); err != nil {
		t.Fatal(err)
	}
	return &st
}

// executed is a real execution on the bundled sample data, in a bbolt
// file in a temp dir.
type executed struct {
	db        string
	e         *app.Engines
	hash      hashing.Digest
	grounding hashing.Digest
	discovery hashing.Digest
}

func execute(t *testing.T) *executed {
	t.Helper()
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "g.db")
	e, err := app.OpenEnginesFS(ctx, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	d, err := e.Disc.Discover(ctx, discover.Query{Prompt: "momentum on WTI crude oil, scored by Sharpe ratio"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.Gate.Ground(ctx, ground.Proposal{
		Request:     []byte(`{"family":"MOM_WZS","metric":"SRP","params":{"window":[25,50]},"data":"oil-spot/wti-daily.csv"}`),
		DiscoveryID: d.ID,
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Grounded == nil {
		t.Fatalf("not admitted: %+v", out.Record.Decision)
	}
	fp, err := e.Exec.Execute(ctx, out.Grounded)
	if err != nil {
		t.Fatal(err)
	}
	return &executed{db: db, e: e, hash: fp.Hash, grounding: out.ID, discovery: d.ID}
}

// reopen closes the engines, lets edit change the bbolt file, and opens
// them again.
func (x *executed) reopen(t *testing.T, edit func(tx *bolt.Tx) error) {
	t.Helper()
	if err := x.e.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(x.db, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(edit); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if x.e, err = app.OpenEnginesFS(context.Background(), x.db, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.e.Close() })
}

// envelopeFields decodes an envelope into its fields for tampering.
type envelopeFields struct {
	Payload     string `json:"payload"`
	PayloadType string `json:"payloadType"`
	Signatures  []struct {
		KeyID string `json:"keyid"`
		Sig   string `json:"sig"`
	} `json:"signatures"`
}

func decodeEnvelope(t testing.TB, env []byte) envelopeFields {
	t.Helper()
	var f envelopeFields
	if err := json.Unmarshal(env, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f envelopeFields) encode(t testing.TB) []byte {
	t.Helper()
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// flipBit flips bit i (mod the length) of a base64 field's decoded bytes.
func flipBit(t testing.TB, b64 string, i int) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	i %= 8 * len(b)
	b[i/8] ^= 1 << (i % 8)
	return base64.StdEncoding.EncodeToString(b)
}

func flipPayloadBit(t testing.TB, env []byte, i int) []byte {
	f := decodeEnvelope(t, env)
	f.Payload = flipBit(t, f.Payload, i)
	return f.encode(t)
}

func flipSigBit(t testing.TB, env []byte, i int) []byte {
	f := decodeEnvelope(t, env)
	f.Signatures[0].Sig = flipBit(t, f.Signatures[0].Sig, i)
	return f.encode(t)
}
