package server

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/groundgate/groundgate/attest"
	"github.com/groundgate/groundgate/hashing"
)

// Attester is what the server needs to attest executions (SPEC §13): the
// DSSE envelope for a stored execution, and the keys it verifies with.
type Attester interface {
	Attest(ctx context.Context, hash hashing.Digest) ([]byte, error)
	Keys() []attest.PublicKey
}

var _ Attester = (*attest.Service)(nil)

// attestHandlers serves GET /v1/executions/{hash}/attestation and GET
// /v1/keys; with a nil Attester the first is a 404 problem and the second
// lists no key.
type attestHandlers struct{ a Attester }

var errNoAttest = newError(ptNotFound, "this server signs no attestations")

// getAttestation answers with the envelope's bytes as the attester made
// them: they are canonical JSON, and re-encoding them could only change
// what an outside verifier sees. The executor's Get refuses a footprint
// whose stored bytes were altered (corrupt-record), so nothing altered is
// ever signed.
func (h attestHandlers) getAttestation(c echo.Context) error {
	if h.a == nil {
		return errNoAttest
	}
	hash, err := digestParam(c, "hash")
	if err != nil {
		return err
	}
	env, err := h.a.Attest(c.Request().Context(), hash)
	if err != nil {
		return err
	}
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, env)
}

// keyBody is one entry of GET /v1/keys. keytype and scheme are
// securesystemslib's names for Ed25519; public_key is the raw 32-byte key
// in standard base64, public_key_pem its SubjectPublicKeyInfo PEM.
type keyBody struct {
	KeyID        string `json:"keyid"`
	KeyType      string `json:"keytype"`
	Scheme       string `json:"scheme"`
	PublicKeyPEM string `json:"public_key_pem"`
	PublicKey    string `json:"public_key"`
}

type keysBody struct {
	Keys []keyBody `json:"keys"`
}

func (h attestHandlers) getKeys(c echo.Context) error {
	body := keysBody{Keys: []keyBody{}}
	if h.a != nil {
		for _, k := range h.a.Keys() {
			body.Keys = append(body.Keys, keyBody{KeyID: k.ID, KeyType: "ed25519", Scheme: "ed25519",
				PublicKeyPEM: string(k.PEM()), PublicKey: k.Base64()})
		}
	}
	return c.JSON(http.StatusOK, body)
}
