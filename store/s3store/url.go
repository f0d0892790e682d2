package s3store

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// bucketName is S3's rule for bucket names (3 to 63 lower-case letters,
// digits, dots and hyphens, a letter or digit at each end).
var bucketName = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// The environment variables ParseURL reads the credentials from: the AWS
// names every S3 tool knows. Credentials never go in the URL, which ends
// up in process lists, logs and shell history.
const (
	AccessKeyEnv = "AWS_ACCESS_KEY_ID"
	SecretKeyEnv = "AWS_SECRET_ACCESS_KEY"
)

// ParseURL reads a blob store's URL, as `--blobs` takes it:
//
//	s3://BUCKET[/PREFIX][?endpoint=http://HOST:PORT][&region=REGION]
//
// endpoint's scheme says whether to use TLS (https by default: AWS's
// s3.amazonaws.com when there is no endpoint); env (os.Getenv) gives the
// credentials. Anything else in the URL is refused: a typo must not go
// unnoticed.
func ParseURL(raw string, env func(string) string) (Config, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if u.Scheme != "s3" || u.Host == "" || u.Opaque != "" {
		return Config{}, fmt.Errorf("%w: %q is not s3://BUCKET[/PREFIX]", ErrConfig, raw)
	}
	if !bucketName.MatchString(u.Host) {
		return Config{}, fmt.Errorf("%w: %q is not a bucket name", ErrConfig, u.Host)
	}
	if u.User != nil {
		return Config{}, fmt.Errorf("%w: credentials in the URL; set %s and %s instead", ErrConfig, AccessKeyEnv, SecretKeyEnv)
	}
	if u.Fragment != "" {
		return Config{}, fmt.Errorf("%w: %q has a fragment", ErrConfig, raw)
	}
	cfg := Config{
		Bucket: u.Host, Prefix: strings.Trim(u.Path, "/"),
		Endpoint: "s3.amazonaws.com", Secure: true,
		AccessKey: env(AccessKeyEnv), SecretKey: env(SecretKeyEnv),
	}
	q := u.Query()
	for k, vs := range q {
		if len(vs) != 1 {
			return Config{}, fmt.Errorf("%w: %s given %d times", ErrConfig, k, len(vs))
		}
		switch k {
		case "region":
			cfg.Region = vs[0]
		case "endpoint":
			e, err := url.Parse(vs[0])
			if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" || (e.Path != "" && e.Path != "/") || e.RawQuery != "" || e.User != nil {
				return Config{}, fmt.Errorf("%w: endpoint %q is not http(s)://HOST[:PORT]", ErrConfig, vs[0])
			}
			cfg.Endpoint, cfg.Secure = e.Host, e.Scheme == "https"
		default:
			return Config{}, fmt.Errorf("%w: unknown parameter %q (endpoint, region)", ErrConfig, k)
		}
	}
	return cfg, nil
}
