package session

import (
	"context"
	"crypto/subtle"
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/hashing"
)

// BucketTokens: SHA-256 of a session's token → the session's id. A token
// alone names its session (/mcp with a session token, SPEC §15); the
// header's token digest stays what authorizes.
var BucketTokens = []byte("session.tokens")

// tokensIndexed marks an index that holds every session's token: set
// once indexTokens has run; Create indexes each new session after it.
var tokensIndexed = []byte("\x00indexed")

// indexTokens indexes the token of every session the index lacks: the
// sessions a store made before it kept the index. It walks the sessions
// once in a file's life, at the first Open that finds no index.
func indexTokens(db *bolt.DB) error {
	done := false
	if err := db.View(func(tx *bolt.Tx) error {
		done = tx.Bucket(BucketTokens).Get(tokensIndexed) != nil
		return nil
	}); err != nil || done {
		return err
	}
	return db.Update(func(tx *bolt.Tx) error {
		idx := tx.Bucket(BucketTokens)
		if err := idx.Put(tokensIndexed, []byte{1}); err != nil {
			return err
		}
		return tx.Bucket(BucketRecords).ForEach(func(k, raw []byte) error {
			id, err := hashing.Parse(string(k))
			if err != nil {
				return nil // a key Get would report; not the index's to judge
			}
			h, err := decodeHeader(id, raw)
			if err != nil || h.TokenSHA256.IsZero() || idx.Get(h.TokenSHA256.Key()) != nil {
				return nil
			}
			return idx.Put(h.TokenSHA256.Key(), id.Key())
		})
	})
}

// putToken indexes a new session's token.
func putToken(tx *bolt.Tx, h header) error {
	return tx.Bucket(BucketTokens).Put(h.TokenSHA256.Key(), h.ID.Key())
}

// SessionOf returns the id of the session whose token is token. Every
// token that is not a session's own (malformed, unknown, or indexed for
// a session whose header says otherwise) is ErrUnauthorized, as
// Authorize answers.
func (s *Store) SessionOf(ctx context.Context, token string) (hashing.Digest, error) {
	if err := ctx.Err(); err != nil {
		return hashing.Digest{}, err
	}
	if !strings.HasPrefix(token, TokenPrefix) {
		return hashing.Digest{}, fmt.Errorf("%w: not a session token", ErrUnauthorized)
	}
	presented := hashing.SumSHA256([]byte(token))
	var id hashing.Digest
	err := s.db.View(func(tx *bolt.Tx) error {
		raw := tx.Bucket(BucketTokens).Get(presented.Key())
		if raw == nil {
			return fmt.Errorf("%w: no session has this token", ErrUnauthorized)
		}
		var err error
		if id, err = hashing.Parse(string(raw)); err != nil {
			return fmt.Errorf("%w: the token index: %v", ErrCorrupt, err)
		}
		h, err := readHeader(tx, id)
		if err != nil {
			return err
		}
		if subtle.ConstantTimeCompare(presented.Sum(), h.TokenSHA256.Sum()) != 1 {
			return fmt.Errorf("%w: %s", ErrUnauthorized, id)
		}
		return nil
	})
	if err != nil {
		return hashing.Digest{}, err
	}
	return id, nil
}

// SessionOf returns the id of the session whose token is token
// (Store.SessionOf).
func (s *Service) SessionOf(ctx context.Context, token string) (hashing.Digest, error) {
	return s.store.SessionOf(ctx, token)
}
