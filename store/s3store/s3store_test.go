package s3store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/groundgate/groundgate/errkind"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/internal/s3test"
	"github.com/groundgate/groundgate/store"
	"github.com/groundgate/groundgate/store/s3store"
)

func TestMain(m *testing.M) { s3test.Main(m) }

func config(t *testing.T) s3store.Config {
	t.Helper()
	srv, bucket := s3test.Bucket(t)
	return s3store.Config{Endpoint: srv.Endpoint, Region: s3test.Region,
		AccessKey: s3test.AccessKey, SecretKey: s3test.SecretKey, Bucket: bucket}
}

// TestOpen: what Open refuses, each with its kind: no bucket, a bucket
// that does not exist, a secret the server does not know.
func TestOpen(t *testing.T) {
	ctx := context.Background()
	good := config(t)
	for _, tc := range []struct {
		name string
		edit func(*s3store.Config)
		kind errkind.Kind
	}{
		{"no bucket", func(c *s3store.Config) { c.Bucket = "" }, errkind.Invalid},
		{"absent bucket", func(c *s3store.Config) { c.Bucket = "never-made" }, errkind.Invalid},
		{"wrong secret", func(c *s3store.Config) { c.SecretKey = "wrong" }, errkind.Unauthorized},
		{"nobody there", func(c *s3store.Config) { c.Endpoint = "127.0.0.1:1" }, errkind.Unavailable},
	} {
		cfg := good
		tc.edit(&cfg)
		_, err := s3store.Open(ctx, cfg)
		if errkind.Of(err) != tc.kind {
			t.Errorf("%s: %v is of kind %q, want %q", tc.name, err, errkind.Of(err), tc.kind)
		}
	}
}

// TestPrefixes: two stores in one bucket under different prefixes keep
// apart; Scan lists one prefix's space, in order, and only it.
func TestPrefixes(t *testing.T) {
	ctx := context.Background()
	cfg := config(t)
	cfg.Prefix = "one"
	one, err := s3store.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Prefix = "two/"
	two, err := s3store.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	sp, other := store.Space{Name: "b"}, store.Space{Name: "b.more"}
	var keys []string
	for _, v := range []string{"x", "y", "z"} {
		k := hashing.SumBLAKE3([]byte(v))
		keys = append(keys, k.String())
		if err := one.Put(ctx, sp, k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := one.Put(ctx, other, hashing.SumBLAKE3([]byte("w")), []byte("w")); err != nil {
		t.Fatal(err)
	}
	if ok, err := two.Has(ctx, sp, hashing.SumBLAKE3([]byte("x"))); ok || err != nil {
		t.Errorf("another prefix's blob: Has = %v, %v", ok, err)
	}
	_, err = two.Get(ctx, sp, hashing.SumBLAKE3([]byte("x")))
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another prefix's blob: Get = %v, want not found", err)
	}
	var got []string
	if err := one.Scan(ctx, sp.Name, func(k, raw []byte) error {
		got = append(got, string(k))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("Scan gave %q, want the 3 keys of space b only", got)
	}
	for i := 1; i < len(got); i++ {
		if got[i-1] >= got[i] {
			t.Errorf("Scan out of order: %q", got)
		}
	}
	stop := errors.New("stop")
	n := 0
	if err := one.Scan(ctx, sp.Name, func([]byte, []byte) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Errorf("Scan stopped by fn: %v after %d", err, n)
	}
}
