// Package groupcommit stores records in a bbolt bucket durably, in shared
// transactions: a record waits for the commit in progress, if any, and
// then goes into one transaction with every record that arrived meanwhile
// — one fsync for all of them. A record never waits for company when
// there is none (bolt.DB.Batch waits up to 10 ms for it), and every Put
// returns only once its own record is committed, or with the error that
// kept it out. Writers of content-addressed records (a key always holds
// the same bytes) use it: evidence, groundings.
package groupcommit

import (
	"fmt"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// Writer puts records into one bucket. It is safe for concurrent use.
type Writer struct {
	db     *bolt.DB
	bucket []byte

	mu      sync.Mutex
	queue   []*pendingPut
	leading bool // a goroutine is committing; the queue waits for it
	commits int  // group commits begun, for tests
}

// New returns a Writer into db's bucket (which must exist when Put is
// called).
func New(db *bolt.DB, bucket []byte) *Writer { return &Writer{db: db, bucket: bucket} }

type pendingPut struct {
	key, val []byte
	done     chan error
}

// Put stores val under key unless the key is there already (the same key
// holds the same bytes), and returns once the transaction holding it is
// committed.
func (w *Writer) Put(key, val []byte) error {
	p := &pendingPut{key: key, val: val, done: make(chan error, 1)}
	w.mu.Lock()
	w.queue = append(w.queue, p)
	lead := !w.leading
	w.leading = true
	w.mu.Unlock()
	if lead {
		w.lead()
	}
	return <-p.done
}

// lead commits what is queued, its caller's record among it; if more
// arrived meanwhile, a new goroutine leads the next commit, so that no
// caller commits others' records for longer than its own took.
func (w *Writer) lead() {
	w.mu.Lock()
	batch := w.queue
	w.queue = nil
	w.commits++
	w.mu.Unlock()
	w.commit(batch)
	w.mu.Lock()
	more := len(w.queue) > 0
	w.leading = more
	w.mu.Unlock()
	if more {
		go w.lead()
	}
}

// commit writes batch in one transaction; if that fails, each record
// alone, so that one record's failure is not the others'.
func (w *Writer) commit(batch []*pendingPut) {
	err := w.db.Update(func(tx *bolt.Tx) error { return w.write(tx, batch) })
	if err != nil && len(batch) > 1 {
		for _, p := range batch {
			p.done <- w.db.Update(func(tx *bolt.Tx) error { return w.write(tx, []*pendingPut{p}) })
		}
		return
	}
	for _, p := range batch {
		p.done <- err
	}
}

func (w *Writer) write(tx *bolt.Tx, batch []*pendingPut) error {
	b := tx.Bucket(w.bucket)
	if b == nil {
		return fmt.Errorf("bucket %s is missing", w.bucket)
	}
	for _, p := range batch {
		if b.Get(p.key) != nil {
			continue
		}
		if err := b.Put(p.key, p.val); err != nil {
			return err
		}
	}
	return nil
}
