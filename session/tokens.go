package session

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/store"
)

// BucketTokens: SHA-256 of a session's token → the session's id. A token
// alone names its session (/mcp with a session token, SPEC §15); the
// header's token digest stays what authorizes.
var BucketTokens = []byte("session.tokens")

var nameTokens = string(BucketTokens)

// tokensIndexed marks an index that holds every session's token: set
// once indexTokens has run; Create indexes each new session after it.
var tokensIndexed = []byte("\x00indexed")

// indexTokens indexes the token of every session the index lacks: the
// sessions a store made before it kept the index. It walks the sessions
// once in a file's life, at the first Open that finds no index.
func indexTokens(ctx context.Context, st Backend) error {
	done := false
	if err := st.View(ctx, func(tx store.Tx) error {
		_, err := tx.Value(nameTokens, tokensIndexed)
		done = err == nil
		return nil
	}); err != nil || done {
		return err
	}
	err := st.Update(ctx, func(tx store.Tx) error {
		if err := tx.PutValue(nameTokens, tokensIndexed, []byte{1}); err != nil {
			return err
		}
		var hs []header
		if err := tx.Scan(nameRecords, func(k, raw []byte) error {
			id, err := hashing.Parse(string(k))
			if err != nil {
				return nil // a key Get would report; not the index's to judge
			}
			if h, err := decodeHeader(id, raw); err == nil && !h.TokenSHA256.IsZero() {
				hs = append(hs, h)
			}
			return nil
		}); err != nil {
			return err
		}
		for _, h := range hs {
			if _, err := tx.Value(nameTokens, h.TokenSHA256.Key()); err == nil {
				continue
			}
			if err := putToken(tx, h); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, store.ErrReadOnly) {
		return nil // a reader of the file: the index is for the server
	}
	return err
}

// putToken indexes a new session's token.
func putToken(tx store.Values, h header) error {
	return tx.PutValue(nameTokens, h.TokenSHA256.Key(), h.ID.Key())
}

// SessionOf returns the id of the session whose token is token. Every
// token that is not a session's own (malformed, unknown, or indexed for
// a session whose header says otherwise) is ErrUnauthorized, as
// Authorize answers.
func (s *Store) SessionOf(ctx context.Context, token string) (hashing.Digest, error) {
	if !strings.HasPrefix(token, TokenPrefix) {
		return hashing.Digest{}, fmt.Errorf("%w: not a session token", ErrUnauthorized)
	}
	presented := hashing.SumSHA256([]byte(token))
	var id hashing.Digest
	err := s.st.View(ctx, func(tx store.Tx) error {
		raw, err := tx.Value(nameTokens, presented.Key())
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w: no session has this token", ErrUnauthorized)
		}
		if err != nil {
			return err
		}
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
