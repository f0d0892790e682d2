package s3test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/minio/minio-go/v7"
)

func TestMain(m *testing.M) { Main(m) }

// TestBucket: each test's bucket is new and empty; an object put reads
// back; requests are checked (a wrong secret is refused).
func TestBucket(t *testing.T) {
	ctx := context.Background()
	srv, a := Bucket(t)
	_, b := Bucket(t)
	if a == b {
		t.Fatalf("two buckets, one name %s", a)
	}
	c, err := srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	body := []byte("hello, seaweed")
	if _, err := c.PutObject(ctx, a, "k", bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	obj, err := c.GetObject(ctx, a, "k", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(obj)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("read back %q, %v", got, err)
	}
	for o := range c.ListObjects(ctx, b, minio.ListObjectsOptions{Recursive: true}) {
		t.Errorf("a new bucket holds %q (%v)", o.Key, o.Err)
	}
	bad, err := minio.New(srv.Endpoint, &minio.Options{Creds: credentialsWith(AccessKey, "wrong"), Region: Region})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.ListBuckets(ctx); minio.ToErrorResponse(err).StatusCode != 403 {
		t.Errorf("a wrong secret: %v, want a 403", err)
	}
}
