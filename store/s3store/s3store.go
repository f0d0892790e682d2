// Package s3store keeps the store's blobs in an S3-compatible object store
// (SPEC §17): one object per blob, named SPACE/KEY (the keyspace, then the
// digest's text: "artifacts.blobs/blake3:…"), under an optional prefix in
// one bucket. It is the blob half of the PostgreSQL engine
// (store/pgstore), which keeps everything else.
//
// Objects are immutable in use: a blob's key is the hash of its bytes, so
// a put over an object writes the same bytes again (or repairs one gone
// corrupt), and reads need no coordination between replicas: S3 (and
// SeaweedFS) give read-after-write consistency for new objects.
//
// The client is minio-go (Apache-2.0): it speaks plain S3 to any
// compatible server (path-style addressing where the endpoint is not
// AWS's), and its few dependencies already sit in this module's graph;
// aws-sdk-go-v2's newer releases add checksum headers some compatible
// servers reject.
package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/groundgate/groundgate/errkind"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/store"
)

// Config says where the blobs are.
type Config struct {
	// Endpoint is the server's host:port ("127.0.0.1:8333",
	// "s3.eu-west-1.amazonaws.com").
	Endpoint string
	// Secure is HTTPS.
	Secure bool
	// Region is the bucket's region; "" lets the client ask the server.
	Region string
	// AccessKey and SecretKey sign requests (AWS Signature V4).
	AccessKey, SecretKey string
	// Bucket holds the blobs; it must exist.
	Bucket string
	// Prefix, when not empty, is put before every object name (with a
	// "/"), so that one bucket can hold several stores.
	Prefix string
	// Logger receives nothing but debug lines; nil discards them.
	Logger *slog.Logger
}

// Blobs is one bucket's blobs. It is safe for concurrent use.
type Blobs struct {
	c      *minio.Client
	bucket string
	prefix string
	log    *slog.Logger
}

// Open returns the blobs of cfg's bucket, after checking that the bucket
// exists and the credentials reach it.
func Open(ctx context.Context, cfg Config) (*Blobs, error) {
	if cfg.Endpoint == "" || cfg.Bucket == "" {
		return nil, fmt.Errorf("%w: endpoint and bucket are required", ErrConfig)
	}
	c, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds:  credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure: cfg.Secure,
		Region: cfg.Region,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	ok, err := c.BucketExists(ctx, cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("s3store: bucket %s: %w", cfg.Bucket, classify(err))
	}
	if !ok {
		return nil, fmt.Errorf("%w: bucket %s does not exist", ErrConfig, cfg.Bucket)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	prefix := strings.Trim(cfg.Prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	return &Blobs{c: c, bucket: cfg.Bucket, prefix: prefix, log: log}, nil
}

// Client is the underlying client (tests corrupt objects through it).
func (b *Blobs) Client() *minio.Client { return b.c }

// Bucket is the bucket's name.
func (b *Blobs) Bucket() string { return b.bucket }

// Object is the object name of key in space.
func (b *Blobs) Object(space string, key []byte) string {
	return b.prefix + space + "/" + string(key)
}

// Get returns the bytes of key in sp, checked by sp's check: store's
// ErrNotFound, ErrCorrupt as the store's Blob.
func (b *Blobs) Get(ctx context.Context, sp store.Space, key hashing.Digest) ([]byte, error) {
	raw, err := b.get(ctx, b.Object(sp.Name, key.Key()))
	if err != nil {
		return nil, fmt.Errorf("s3store: %s %s: %w", sp.Name, key, err)
	}
	if err := sp.Verify(key, raw); err != nil {
		return nil, err
	}
	return raw, nil
}

func (b *Blobs) get(ctx context.Context, object string) ([]byte, error) {
	obj, err := b.c.GetObject(ctx, b.bucket, object, minio.GetObjectOptions{})
	if err != nil {
		return nil, classify(err)
	}
	defer obj.Close()
	// GetObject is lazy: the first Read makes the request, so a missing
	// object shows here.
	raw, err := io.ReadAll(obj)
	if err != nil {
		return nil, classify(err)
	}
	return raw, nil
}

// Has reports whether key is stored in sp, without reading it.
func (b *Blobs) Has(ctx context.Context, sp store.Space, key hashing.Digest) (bool, error) {
	_, err := b.c.StatObject(ctx, b.bucket, b.Object(sp.Name, key.Key()), minio.StatObjectOptions{})
	if err == nil {
		return true, nil
	}
	if err := classify(err); !errors.Is(err, store.ErrNotFound) {
		return false, fmt.Errorf("s3store: %s %s: %w", sp.Name, key, err)
	}
	return false, nil
}

// Put stores raw under key in sp, replacing what is there. It returns
// once the server has acknowledged the whole object (S3 writes are
// durable when acknowledged).
func (b *Blobs) Put(ctx context.Context, sp store.Space, key hashing.Digest, raw []byte) error {
	return b.put(ctx, b.Object(sp.Name, key.Key()), raw)
}

func (b *Blobs) put(ctx context.Context, object string, raw []byte) error {
	_, err := b.c.PutObject(ctx, b.bucket, object, bytes.NewReader(raw), int64(len(raw)),
		minio.PutObjectOptions{ContentType: "application/octet-stream", DisableMultipart: true})
	if err != nil {
		return fmt.Errorf("s3store: put %s: %w", object, classify(err))
	}
	b.log.Debug("s3store: put", "object", object, "bytes", len(raw))
	return nil
}

// Scan calls fn with the key and bytes of every blob in space, in key
// order (S3 lists names in byte order), unchecked, as store.Scanner.
func (b *Blobs) Scan(ctx context.Context, space string, fn func(key, raw []byte) error) error {
	prefix := b.prefix + space + "/"
	lctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the listing when fn ends the scan early
	for info := range b.c.ListObjects(lctx, b.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if info.Err != nil {
			return fmt.Errorf("s3store: list %s: %w", prefix, classify(info.Err))
		}
		raw, err := b.get(ctx, info.Key)
		if errors.Is(err, store.ErrNotFound) {
			continue // deleted since it was listed
		}
		if err != nil {
			return fmt.Errorf("s3store: %s: %w", info.Key, err)
		}
		if err := fn([]byte(strings.TrimPrefix(info.Key, prefix)), raw); err != nil {
			return err
		}
	}
	return nil
}

// Corrupt flips one bit of the last byte of key's object in space: a
// test's stand-in for a disk that went bad.
func (b *Blobs) Corrupt(ctx context.Context, space string, key []byte) error {
	object := b.Object(space, key)
	raw, err := b.get(ctx, object)
	if err != nil {
		return fmt.Errorf("s3store: %s: %w", object, err)
	}
	if len(raw) == 0 {
		return fmt.Errorf("s3store: %s is empty", object)
	}
	raw[len(raw)-1] ^= 0x20
	return b.put(ctx, object, raw)
}

// classify gives the server's answers their store kinds.
func classify(err error) error {
	if resp := minio.ToErrorResponse(err); resp.StatusCode != 0 || resp.Code != "" {
		switch {
		case resp.StatusCode == http.StatusNotFound || resp.Code == "NoSuchKey":
			return fmt.Errorf("%w: %w", store.ErrNotFound, err)
		case resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusUnauthorized:
			return errkind.Wrap(errkind.Unauthorized, err)
		case resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests:
			return errkind.Wrap(errkind.Busy, err)
		case resp.StatusCode >= 500:
			return errkind.Wrap(errkind.Unavailable, err)
		}
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	// No answer at all: the server is down or unreachable.
	return errkind.Wrap(errkind.Unavailable, err)
}
