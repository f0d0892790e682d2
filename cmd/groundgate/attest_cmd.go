package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/groundgate/groundgate/attest"
	"github.com/groundgate/groundgate/calls"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/internal/app"
)

// keyUsage is the --key flag's help, shared by attest and serve.
const keyUsage = "Ed25519 signing key `file` (PKCS#8 PEM, mode 0600), created when missing (default: next to --db, its extension replaced by .key)"

type attestCmd struct{}

// attest prints the GET /v1/executions/{hash}/attestation body: the DSSE
// envelope over the stored execution, signed with the key a server on the
// same database uses.
func (attestCmd) Run(ctx context.Context, cli *CLI, args []string) error {
	fs := cli.newFlags("attest", "attest [--db FILE] [--key FILE] HASH")
	db := fs.String("db", defaultDB, "bbolt database `file`")
	key := fs.String("key", "", keyUsage)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: attest takes one execution hash", errUsage)
	}
	h, err := hashing.Parse(pos[0])
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	keyFile := *key
	if keyFile == "" {
		keyFile = attest.DefaultKeyPath(*db)
	}
	// The key first: a key file that is refused changes nothing.
	signer, err := attest.LoadOrCreate(keyFile)
	if err != nil {
		return err
	}
	e, err := app.OpenEngines(ctx, *db, "")
	if err != nil {
		return err
	}
	defer e.Close()
	env, err := attest.NewService(signer, e.Exec, e.Gate).Attest(ctx, h)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(cli.Stdout, "%s\n", env)
	return err
}

type verifyAttestationCmd struct{}

// verificationSummary is what verify-attestation prints on success: an
// execution's attestation names the execution, a call's the call.
type verificationSummary struct {
	Verified      bool                        `json:"verified"`
	KeyID         string                      `json:"keyid"`
	Execution     string                      `json:"execution,omitempty"`
	Call          string                      `json:"call,omitempty"`
	PredicateType string                      `json:"predicate_type"`
	Materials     []attest.ResourceDescriptor `json:"materials"`
}

// verify-attestation checks an envelope offline, an execution's or a
// call's (SPEC §14): no server, no database; only the key file is read.
func (verifyAttestationCmd) Run(ctx context.Context, cli *CLI, args []string) error {
	fs := cli.newFlags("verify-attestation", "verify-attestation [--key PUBLIC.pem | --db FILE] FILE")
	key := fs.String("key", "", "the verification key `file`: a PEM public key (GET /v1/keys public_key_pem) or the server's private key file (default: the key next to --db)")
	db := fs.String("db", defaultDB, "the database `file` whose key (next to it, .key) verifies, when --key is not given")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: verify-attestation takes one envelope file (- reads standard input)", errUsage)
	}
	keyFile := *key
	if keyFile == "" {
		keyFile = attest.DefaultKeyPath(*db)
	}
	pub, err := attest.LoadPublicKey(keyFile)
	if errors.Is(err, os.ErrNotExist) && *key == "" {
		return fmt.Errorf("%w; give the server's public key with --key (GET /v1/keys)", err)
	}
	if err != nil {
		return err
	}
	env, err := readEnvelope(cli, pos[0])
	if err != nil {
		return err
	}
	st, err := calls.VerifyAttestation(env, pub)
	if err != nil {
		return err
	}
	sum := verificationSummary{Verified: true, KeyID: pub.ID, PredicateType: st.PredicateType, Materials: st.Predicate.Materials}
	if hash := "sha256:" + st.Subject[0].Digest["sha256"]; st.PredicateType == attest.CallPredicateType {
		sum.Call = hash
	} else {
		sum.Execution = hash
	}
	return cli.printJSON(sum)
}

// readEnvelope reads a file ("-": standard input) of at most one byte over
// the envelope limit, so that Verify names the limit.
func readEnvelope(cli *CLI, name string) ([]byte, error) {
	var r io.Reader = cli.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, attest.MaxEnvelopeBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return b, nil
}
