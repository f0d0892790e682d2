package app

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/artifacts"
	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/policy"
	"github.com/groundgate/groundgate/registry"
)

// fullDB runs discover → ground → execute once on the bundled sample data,
// so that the file holds every kind of record, and returns it closed.
func fullDB(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "g.db")
	e, err := OpenEngines(ctx, path, "")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	cap256, err := policy.Compile("grid_size_cap", policy.Policy{
		SMTLIB: "(declare-const points Int)\n(define-fun allow () Bool (<= points 256))\n(assert (! (<= points 256) :named at_most_256_grid_points))",
		Bind:   map[string]string{"points": "/grid/points"}, Allow: "allow", AppliesTo: []string{"family"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Policies.Put(ctx, cap256); err != nil {
		t.Fatal(err)
	}
	res, err := e.Disc.Discover(ctx, discover.Query{Prompt: "momentum on WTI, by Sharpe"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.Gate.Ground(ctx, ground.Proposal{
		Request:     []byte(`{"family":"MOM_WZS","metric":"SRP","params":{"window":[25,50]},"data":"oil-spot/wti-daily.csv"}`),
		DiscoveryID: res.ID,
	})
	if err != nil || out.Grounded == nil {
		t.Fatalf("ground: %v %+v", err, out.Record.Decision)
	}
	if _, err := e.Exec.Execute(ctx, out.Grounded); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestVerifyFileCountsEveryKind(t *testing.T) {
	ctx := context.Background()
	clean := fullDB(t)
	rep, err := VerifyFile(ctx, clean)
	if err != nil {
		t.Fatalf("verify: %v %q", err, rep.Problems)
	}
	if rep.Registry.Versions != 1 || rep.Registry.Records == 0 || rep.Registry.Chunks == 0 ||
		rep.Evidence != 1 || rep.Groundings != 1 || rep.Footprints != 1 || rep.Blobs < 2 || rep.Policies != 2 {
		t.Fatalf("counts: %+v", rep)
	}

	// One tamper per kind, each keeping the value's length: named by kind,
	// and the error says which kind of corruption it is.
	flip := func(bucket string, match func(k []byte) bool) func(tx *bolt.Tx) error {
		return func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte(bucket))
			c := b.Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				if match != nil && !match(k) {
					continue
				}
				v = bytes.Clone(v)
				v[len(v)/2] ^= 0x01
				return b.Put(bytes.Clone(k), v)
			}
			t.Fatalf("nothing to tamper with in %s", bucket)
			return nil
		}
	}
	// respell stores a record again in another spelling, under the hash of
	// the new bytes: the key checks out, the decode-and-re-encode does not.
	respell := func(bucket string) func(tx *bolt.Tx) error {
		return func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte(bucket))
			k, v := b.Cursor().First()
			if err := b.Delete(bytes.Clone(k)); err != nil {
				return err
			}
			v = append([]byte("{ "), v[1:]...)
			return b.Put(hashing.SumSHA256(v).Key(), v)
		}
	}
	for _, tc := range []struct {
		name     string
		tamper   func(tx *bolt.Tx) error
		prefix   string
		sentinel error
	}{
		{"evidence", flip("discover.evidence", nil), "evidence: ", discover.ErrCorrupt},
		{"evidence respelled", respell("discover.evidence"), "evidence: ", discover.ErrCorrupt},
		{"grounding respelled", respell("ground.records"), "grounding: ", ground.ErrCorrupt},
		{"grounding", flip("ground.records", nil), "grounding: ", ground.ErrCorrupt},
		{"footprint", flip(string(execution.Bucket), nil), "footprints: ", execution.ErrCorrupt},
		{"blob", flip(string(artifacts.Bucket), nil), "blobs: ", artifacts.ErrCorrupt},
		{"policy", flip("policy.blobs", nil), "policies: policy sha256:", policy.ErrCorrupt},
		{"policy set version", flip("policy.versions", nil), "policies: policy set version 1", policy.ErrCorrupt},
		{"registry record", flip("registry.records", nil), "record sha256:", registry.ErrCorrupt},
		{"registry hash", func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte("registry.versions"))
			k, v := b.Cursor().First()
			re := regexp.MustCompile(`"registry":"sha256:[0-9a-f]`)
			v = re.ReplaceAllFunc(bytes.Clone(v), func(m []byte) []byte {
				m = bytes.Clone(m)
				if m[len(m)-1] == '0' {
					m[len(m)-1] = '1'
				} else {
					m[len(m)-1] = '0'
				}
				return m
			})
			return b.Put(bytes.Clone(k), v)
		}, "version 1 records registry sha256:", registry.ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.db")
			raw, err := os.ReadFile(clean)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, raw, 0o600); err != nil {
				t.Fatal(err)
			}
			db, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = db.Update(tc.tamper)
			db.Close()
			if err != nil {
				t.Fatal(err)
			}
			rep, err := VerifyFile(context.Background(), path)
			if !errors.Is(err, tc.sentinel) {
				t.Fatalf("err %v, want %v (problems %q)", err, tc.sentinel, rep.Problems)
			}
			found := false
			for _, p := range rep.Problems {
				found = found || strings.HasPrefix(p, tc.prefix)
			}
			if !found {
				t.Fatalf("no problem starts with %q: %q", tc.prefix, rep.Problems)
			}
		})
	}
}

func TestVerifyFileMissing(t *testing.T) {
	_, err := VerifyFile(context.Background(), filepath.Join(t.TempDir(), "nope", "g.db"))
	if err == nil || errors.Is(err, registry.ErrCorrupt) {
		t.Fatalf("missing file: %v", err)
	}
}
