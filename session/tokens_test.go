package session_test

import (
	"context"
	"errors"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/groundgate/groundgate/session"
)

// TestSessionOf: a token alone names its session, and nothing else does:
// another session's token names that one, an unknown or malformed token
// nothing (ErrUnauthorized, as Authorize answers). A file whose sessions
// predate the index is indexed when the store opens it.
func TestSessionOf(t *testing.T) {
	ctx := context.Background()
	d := mustOpenStore(t, session.Options{})
	a := mustCreate(t, d.st, "cancel my reservation ZFA04Y")
	b := mustCreate(t, d.st, "what is the status of my flight")
	for _, c := range []session.Created{a, b} {
		id, err := d.st.SessionOf(ctx, c.Token)
		if err != nil || id != c.Session.ID {
			t.Fatalf("SessionOf(its token) = %v, %v; want %v", id, err, c.Session.ID)
		}
	}
	for _, tok := range []string{"", "ggs_", a.Token + "x", a.Token[:len(a.Token)-1], "Bearer " + a.Token, a.Token[len(session.TokenPrefix):]} {
		if id, err := d.st.SessionOf(ctx, tok); !errors.Is(err, session.ErrUnauthorized) {
			t.Errorf("SessionOf(%q) = %v, %v; want ErrUnauthorized", tok, id, err)
		}
	}

	// A file from before the index: the index and its mark gone.
	if err := d.db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(session.BucketTokens) }); err != nil {
		t.Fatal(err)
	}
	d.reopen()
	for _, c := range []session.Created{a, b} {
		if id, err := d.st.SessionOf(ctx, c.Token); err != nil || id != c.Session.ID {
			t.Fatalf("after indexing: SessionOf = %v, %v; want %v", id, err, c.Session.ID)
		}
	}
	// An index entry pointing at another session does not authorize.
	if err := d.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(session.BucketTokens).Put(digest(b.Token+"forged").Key(), a.Session.ID.Key())
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.st.SessionOf(ctx, b.Token+"forged"); !errors.Is(err, session.ErrUnauthorized) {
		t.Errorf("a forged index entry: %v", err)
	}
}
