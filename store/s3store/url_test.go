package s3store

import (
	"errors"
	"testing"
)

func TestParseURL(t *testing.T) {
	env := func(k string) string { return map[string]string{AccessKeyEnv: "ak", SecretKeyEnv: "sk"}[k] }
	for _, tc := range []struct {
		raw  string
		want Config // without the credentials, which every good case has
		bad  bool
	}{
		{raw: "s3://blobs", want: Config{Endpoint: "s3.amazonaws.com", Secure: true, Bucket: "blobs"}},
		{raw: "s3://blobs/gg/prod/", want: Config{Endpoint: "s3.amazonaws.com", Secure: true, Bucket: "blobs", Prefix: "gg/prod"}},
		{raw: "s3://blobs?endpoint=http://127.0.0.1:8333&region=us-east-1",
			want: Config{Endpoint: "127.0.0.1:8333", Region: "us-east-1", Bucket: "blobs"}},
		{raw: "s3://blobs/p?endpoint=https://s3.example.net/", want: Config{Endpoint: "s3.example.net", Secure: true, Bucket: "blobs", Prefix: "p"}},
		{raw: "s3:///p", bad: true},                            // no bucket
		{raw: "gs://blobs", bad: true},                         // another scheme
		{raw: "s3://ak:sk@blobs", bad: true},                   // credentials in the URL
		{raw: "s3://blobs?endpoint=127.0.0.1:8333", bad: true}, // endpoint without its scheme
		{raw: "s3://blobs?endpoint=http://h/x", bad: true},     // endpoint with a path
		{raw: "s3://blobs?regoin=x", bad: true},                // a typo
		{raw: "s3://blobs?region=a&region=b", bad: true},       // twice
		{raw: "s3://blobs#frag", bad: true},                    // a fragment
		{raw: "s3://blobs?endpoint=ftp://h", bad: true},        // not http(s)
		{raw: "s3://blobs?endpoint=http://u:p@h", bad: true},   // credentials in the endpoint
		{raw: "s3://blobs?endpoint=http://h?x=1", bad: true},   // a query in the endpoint
	} {
		got, err := ParseURL(tc.raw, env)
		if tc.bad {
			if !errors.Is(err, ErrConfig) {
				t.Errorf("ParseURL(%q) = %+v, %v; want ErrConfig", tc.raw, got, err)
			}
			continue
		}
		tc.want.AccessKey, tc.want.SecretKey = "ak", "sk"
		if err != nil || got != tc.want {
			t.Errorf("ParseURL(%q) = %+v, %v; want %+v", tc.raw, got, err, tc.want)
		}
	}
}

// FuzzParseURL: never a panic; what is accepted names a valid bucket and
// an endpoint, and no credentials come from the URL.
func FuzzParseURL(f *testing.F) {
	for _, s := range []string{"s3://blobs", "s3://b/p?endpoint=http://127.0.0.1:8333&region=r", "s3://a:b@c", "s3:x", "s3://b?endpoint=https://h/"} {
		f.Add(s)
	}
	env := func(string) string { return "" }
	f.Fuzz(func(t *testing.T, raw string) {
		cfg, err := ParseURL(raw, env)
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("ParseURL(%q): %v is not ErrConfig", raw, err)
			}
			return
		}
		if !bucketName.MatchString(cfg.Bucket) || cfg.Endpoint == "" || cfg.AccessKey != "" || cfg.SecretKey != "" {
			t.Fatalf("ParseURL(%q) accepted %+v", raw, cfg)
		}
	})
}
