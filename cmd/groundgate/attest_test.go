package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/attest"
	"github.com/groundgate/groundgate/execution"
)

// runSubcommand runs one subcommand in-process with stdin and returns its
// standard output and error.
func runSubcommand(t *testing.T, c command, stdin string, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	cli := &CLI{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	err := c.Run(context.Background(), cli, args)
	return out.String(), err
}

func TestAttestCommandsRegistered(t *testing.T) {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	for _, want := range []string{"attest", "verify-attestation"} {
		if !slices.Contains(names, want) {
			t.Errorf("groundgate has no %q command", want)
		}
	}
}

// attest prints an envelope that verify-attestation accepts with the
// database's key or its public half; a flipped bit, another key or a
// refused key file fail.
func TestAttestCLI(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "g.db")
	req := filepath.Join(dir, "mom.json")
	os.WriteFile(req, []byte(`{"family":"MOM_WZS","metric":"SRP","params":{"window":[25,50]},"data":"oil-spot/wti-daily.csv"}`), 0o644)
	code, out, stderr := runCLI(t, "run", "--db", db, "--request", req, "--prompt", "momentum on WTI crude oil, scored by Sharpe ratio")
	if code != 0 {
		t.Fatalf("run: %d %s", code, stderr)
	}
	var fp struct {
		Hash string `json:"hash"`
	}
	if err := json.Unmarshal([]byte(out), &fp); err != nil {
		t.Fatal(err)
	}

	env, err := runSubcommand(t, attestCmd{}, "", "--db", db, fp.Hash)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "g.key")
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file next to the database: %v %v", fi, err)
	}
	if again, err := runSubcommand(t, attestCmd{}, "", fp.Hash, "--db", db); err != nil || again != env {
		t.Fatalf("attest again: %v; same bytes: %v", err, again == env)
	}
	envFile := filepath.Join(dir, "env.json")
	os.WriteFile(envFile, []byte(env), 0o644)
	pub, err := attest.LoadPublicKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	pubFile := filepath.Join(dir, "pub.pem")
	os.WriteFile(pubFile, pub.PEM(), 0o644)

	for _, args := range [][]string{
		{"--db", db, envFile},
		{"--key", pubFile, envFile},
		{"--key", keyFile, envFile},
		{"--key", pubFile, "-"},
	} {
		out, err := runSubcommand(t, verifyAttestationCmd{}, env, args...)
		if err != nil {
			t.Fatalf("verify-attestation %v: %v", args, err)
		}
		var sum verificationSummary
		if err := json.Unmarshal([]byte(out), &sum); err != nil {
			t.Fatal(err)
		}
		if !sum.Verified || sum.Execution != fp.Hash || sum.KeyID != pub.ID || sum.PredicateType != attest.PredicateType || len(sum.Materials) < 4 {
			t.Fatalf("verify-attestation %v printed %s", args, out)
		}
	}

	var f map[string]any
	json.Unmarshal([]byte(env), &f)
	payload, _ := base64.StdEncoding.DecodeString(f["payload"].(string))
	payload[100] ^= 4
	f["payload"] = base64.StdEncoding.EncodeToString(payload)
	flipped, _ := json.Marshal(f)
	flippedFile := filepath.Join(dir, "flipped.json")
	os.WriteFile(flippedFile, flipped, 0o644)
	otherFile := filepath.Join(dir, "other.pem")
	os.WriteFile(otherFile, readTestdata(t, "../../attest/testdata/OTHER-TEST-ONLY.pub.pem"), 0o644)

	for _, c := range []struct {
		name string
		cmd  command
		args []string
		want error
	}{
		{"flipped payload", verifyAttestationCmd{}, []string{"--key", pubFile, flippedFile}, attest.ErrBadSignature},
		{"another key", verifyAttestationCmd{}, []string{"--key", otherFile, envFile}, attest.ErrBadSignature},
		{"not an envelope", verifyAttestationCmd{}, []string{"--key", pubFile, req}, attest.ErrNotAttestation},
		{"no key next to the database", verifyAttestationCmd{}, []string{"--db", filepath.Join(dir, "none.db"), envFile}, os.ErrNotExist},
		{"no file", verifyAttestationCmd{}, []string{"--key", pubFile}, errUsage},
		{"two files", verifyAttestationCmd{}, []string{"--key", pubFile, envFile, envFile}, errUsage},
		{"unknown execution", attestCmd{}, []string{"--db", db, "sha256:" + strings.Repeat("0", 64)}, execution.ErrNotFound},
		{"malformed hash", attestCmd{}, []string{"--db", db, "sha256:0"}, errUsage},
		{"no hash", attestCmd{}, []string{"--db", db}, errUsage},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := runSubcommand(t, c.cmd, "", c.args...)
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			if out != "" {
				t.Fatalf("printed %q on failure", out)
			}
		})
	}

	// A key file others can read is refused, and nothing is signed.
	os.Chmod(keyFile, 0o644)
	if out, err := runSubcommand(t, attestCmd{}, "", "--db", db, fp.Hash); !errors.Is(err, attest.ErrKeyPermissions) || out != "" {
		t.Fatalf("attest with a 0644 key: %v %q", err, out)
	}
}

func readTestdata(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
