package runs

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/groundgate/groundgate/fuzz"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/store"
)

var (
	// spaceFindings maps a finding's id to its canonical body (the
	// finding without its id, whose SHA-256 the id is): written once,
	// shared by every run that finds it.
	spaceFindings = store.Space{Name: "fuzz.findings", Check: store.SHA256}
	// nameRuns maps a run id (8 bytes, big-endian: newest last) to its
	// canonical record (store values: a record changes as its run ends).
	nameRuns = "fuzz.runs"
)

// Backend is what fuzz runs need of the storage layer
// (registry.Store.Engine()): transactions, and batches for the discovery
// each run builds (PinnedDiscovery).
type Backend interface {
	View(ctx context.Context, fn func(store.Tx) error) error
	Update(ctx context.Context, fn func(store.Tx) error) error
	Batch(ctx context.Context, fn func(store.Tx) error) error
}

// record is a stored run: its header, and once it has ended the finding
// ids and the rest of its report. The report is kept in two parts so that
// a finding found by many runs is stored once; ResultDigest is the
// SHA-256 of the whole report's canonical bytes, so reassembling it is
// checked bit for bit.
type record struct {
	Run
	// Findings lists the report's findings by id, in report order; null
	// when the report is kept whole in Report (it had no findings list).
	Findings []hashing.Digest `json:"findings"`
	// Report is the report's canonical JSON without "findings".
	Report       json.RawMessage `json:"report,omitempty"`
	ResultDigest *hashing.Digest `json:"result_digest,omitempty"`
	// On a shared store (Options.Shared) only; absent on a bbolt file, so
	// its records are what they always were. Owner is the Manager that
	// runs the run (a random id per process). Lease is when the run is
	// interrupted unless its owner renews it; a run's end clears it.
	// CancelRequested is another replica's DELETE, for the owner to act on.
	Owner           string     `json:"owner,omitempty"`
	Lease           *time.Time `json:"lease,omitempty"`
	CancelRequested bool       `json:"cancel_requested,omitempty"`
}

func runKey(id uint64) []byte {
	k := make([]byte, 8)
	binary.BigEndian.PutUint64(k, id)
	return k
}

// storedFinding is one finding as split out of a report.
type storedFinding struct {
	id   hashing.Digest
	body []byte // canonical, without "id"; SHA-256(body) == id
}

// split cuts a report's canonical bytes into its findings and the rest;
// fs is nil when the report has no findings list (rest is then the whole).
// Each finding's id must be the SHA-256 of its canonical body (how package
// fuzz addresses findings): a finding stored under its id can then be
// checked like any content-addressed record.
func split(full []byte) (rest []byte, fs []storedFinding, err error) {
	var m map[string]json.RawMessage
	if err := hashing.DecodeStrict(full, &m); err != nil {
		return nil, nil, fmt.Errorf("fuzz runs: report is not a JSON object: %w", err)
	}
	raw, ok := m["findings"]
	if !ok || len(raw) == 0 || raw[0] != '[' {
		return full, nil, nil // nothing to share: kept whole in the record
	}
	var items []map[string]json.RawMessage
	if err := hashing.DecodePart(raw, &items); err != nil {
		return nil, nil, fmt.Errorf("fuzz runs: findings: %w", err)
	}
	fs = make([]storedFinding, len(items))
	for i, f := range items {
		var id hashing.Digest
		if err := hashing.DecodePart(f["id"], &id); err != nil {
			return nil, nil, fmt.Errorf("fuzz runs: finding %d has no id: %w", i, err)
		}
		delete(f, "id")
		body, err := hashing.Canonical(f)
		if err != nil {
			return nil, nil, fmt.Errorf("fuzz runs: finding %s: %w", id, err)
		}
		if got := hashing.SumSHA256(body); got != id {
			return nil, nil, fmt.Errorf("fuzz runs: finding id %s is not the SHA-256 of its body (%s)", id, got)
		}
		fs[i] = storedFinding{id: id, body: body}
	}
	delete(m, "findings")
	if rest, err = hashing.Canonical(m); err != nil {
		return nil, nil, fmt.Errorf("fuzz runs: report: %w", err)
	}
	return rest, fs, nil
}

// assemble is split's inverse: the report's canonical bytes from the rest
// and the findings' bodies.
func assemble(rest []byte, bodies [][]byte, ids []hashing.Digest) ([]byte, error) {
	if ids == nil {
		return rest, nil // kept whole
	}
	var m map[string]json.RawMessage
	if err := hashing.DecodeStrict(rest, &m); err != nil {
		return nil, err
	}
	items := make([]map[string]json.RawMessage, len(bodies))
	for i, b := range bodies {
		if err := hashing.DecodeStrict(b, &items[i]); err != nil {
			return nil, err
		}
		items[i]["id"], _ = json.Marshal(ids[i]) // a digest always encodes
	}
	raw, err := json.Marshal(items)
	if err != nil {
		return nil, err
	}
	m["findings"] = raw
	return hashing.Canonical(m)
}

// create stores a new running record, giving it the next id, and drops
// the oldest records beyond keep (with the findings no kept run lists).
// With busy (a shared store), a stored running record busy reports as
// another process's live run refuses it (a *RunningError), and the other
// running records, whose owners are gone, are stored interrupted: both in
// the transaction that stores the new run, so that two replicas starting
// runs at once do not both succeed.
func create(ctx context.Context, st Backend, rec *record, keep int, busy func(*record) bool) error {
	return st.Update(ctx, func(tx store.Tx) error {
		if busy != nil {
			if err := claim(tx, busy); err != nil {
				return err
			}
		}
		id, err := tx.NextSequence(nameRuns)
		if err != nil {
			return fmt.Errorf("fuzz runs: next id: %w", err)
		}
		rec.ID = id
		if err := putRecord(tx, rec); err != nil {
			return err
		}
		return prune(tx, keep)
	})
}

// claim refuses when a run busy reports as live is stored, and marks the
// other running runs interrupted.
func claim(tx store.Tx, busy func(*record) bool) error {
	var dead []record
	if err := tx.Scan(nameRuns, func(k, v []byte) error {
		if len(k) != 8 {
			return nil
		}
		rec, err := decodeRecord(binary.BigEndian.Uint64(k), v)
		switch {
		case err != nil || rec.State != StateRunning:
			return nil // reading it reports the corruption
		case busy(&rec):
			return &RunningError{ID: rec.ID}
		}
		dead = append(dead, rec)
		return nil
	}); err != nil {
		return err
	}
	for i := range dead {
		interrupted(&dead[i])
		if err := putRecord(tx, &dead[i]); err != nil {
			return err
		}
	}
	return nil
}

// renew stores a run's progress and its lease's new end, after fence (the
// owner's check: still its run, under a lease) accepts the stored record,
// and reports whether another replica has asked to cancel the run.
func renew(ctx context.Context, st Backend, id uint64, p fuzz.Progress, lease time.Time, fence func(*record) error) (cancel bool, err error) {
	err = update(ctx, st, id, func(rec *record) error {
		if err := fence(rec); err != nil {
			return err
		}
		cancel = rec.CancelRequested
		rec.Progress, rec.Lease = p, &lease
		return nil
	})
	return cancel, err
}

// update rewrites run id's record with fn in one transaction; an error
// of fn leaves it as it is.
func update(ctx context.Context, st Backend, id uint64, fn func(*record) error) error {
	return st.Update(ctx, func(tx store.Tx) error {
		rec, err := getRecord(tx, id)
		if err != nil {
			return err
		}
		if err := fn(&rec); err != nil {
			return err
		}
		return putRecord(tx, &rec)
	})
}

// requestCancel marks a run cancel_requested if live reports it as
// another process's live run, and reports whether it did (or it was).
func requestCancel(ctx context.Context, st Backend, id uint64, live func(*record) bool) (bool, error) {
	asked := false
	err := st.Update(ctx, func(tx store.Tx) error {
		rec, err := getRecord(tx, id)
		if err != nil {
			return err
		}
		if asked = live(&rec); !asked || rec.CancelRequested {
			return nil
		}
		rec.CancelRequested = true
		return putRecord(tx, &rec)
	})
	return asked, err
}

// getRecord reads and decodes one record in tx.
func getRecord(tx store.Values, id uint64) (record, error) {
	raw, err := tx.Value(nameRuns, runKey(id))
	if errors.Is(err, store.ErrNotFound) {
		return record{}, fmt.Errorf("fuzz run %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return record{}, err
	}
	return decodeRecord(id, raw)
}

func putRecord(tx store.Values, rec *record) error {
	doc, err := hashing.Canonical(rec)
	if err != nil {
		return fmt.Errorf("fuzz runs: encode run %d: %w", rec.ID, err)
	}
	if err := tx.PutValue(nameRuns, runKey(rec.ID), doc); err != nil {
		return fmt.Errorf("fuzz runs: store run %d: %w", rec.ID, err)
	}
	return nil
}

// prune deletes the oldest runs beyond keep, then every finding of theirs
// that no kept run lists: the findings space holds exactly what the kept
// runs found.
func prune(tx store.Tx, keep int) error {
	type run struct {
		key      []byte
		findings []hashing.Digest
	}
	var all []run
	if err := tx.Scan(nameRuns, func(k, v []byte) error {
		all = append(all, run{bytes.Clone(k), findingIDs(v)})
		return nil
	}); err != nil {
		return err
	}
	if len(all) <= keep {
		return nil
	}
	drop, kept := all[:len(all)-keep], all[len(all)-keep:]
	var dropped []hashing.Digest
	for _, r := range drop {
		if err := tx.DeleteValue(nameRuns, r.key); err != nil {
			return fmt.Errorf("fuzz runs: drop run: %w", err)
		}
		dropped = append(dropped, r.findings...)
	}
	if len(dropped) == 0 {
		return nil
	}
	still := map[hashing.Digest]bool{}
	for _, r := range kept {
		for _, id := range r.findings {
			still[id] = true
		}
	}
	for _, id := range dropped {
		if !still[id] {
			if err := tx.DeleteRecord(spaceFindings, id); err != nil {
				return fmt.Errorf("fuzz runs: drop finding %s: %w", id, err)
			}
		}
	}
	return nil
}

// findingIDs reads only a stored record's finding ids. A record that does
// not decode lists none: pruning never fails on it (reading it does).
func findingIDs(v []byte) []hashing.Digest {
	var r struct {
		Findings []hashing.Digest `json:"findings"`
	}
	if hashing.DecodeFields(v, &r) != nil {
		return nil
	}
	return r.Findings
}

// finish stores a run's final record and, with a report, the findings
// the findings space does not hold yet, in one transaction; with fence (a
// shared store), only if fence accepts the stored record.
func finish(st Backend, rec *record, full []byte, fence func(*record) error) error {
	// A run's end is stored even when the server is shutting down.
	ctx := context.Background()
	var fs []storedFinding
	if full != nil {
		rest, split, err := split(full)
		if err != nil {
			return err
		}
		fs = split
		d := hashing.SumSHA256(full)
		rec.Report, rec.ResultDigest = rest, &d
		rec.Findings = nil
		if fs != nil {
			rec.Findings = make([]hashing.Digest, len(fs))
		}
		for i, f := range fs {
			rec.Findings[i] = f.id
		}
	}
	return st.Update(ctx, func(tx store.Tx) error {
		if fence != nil {
			stored, err := getRecord(tx, rec.ID)
			if err != nil {
				return err
			}
			if err := fence(&stored); err != nil {
				return err
			}
		}
		for _, f := range fs {
			if err := tx.PutRecord(spaceFindings, f.id, f.body); err != nil {
				return fmt.Errorf("fuzz runs: store finding %s: %w", f.id, err)
			}
		}
		return putRecord(tx, rec)
	})
}

// load reads one record and, if withResult, reassembles its report and
// checks it against the record's digest. The result is copied out of the
// transaction.
func load(ctx context.Context, st Backend, id uint64, withResult bool) (record, []byte, error) {
	var (
		rec    record
		result []byte
	)
	err := st.View(ctx, func(tx store.Tx) error {
		var err error
		if rec, err = getRecord(tx, id); err != nil {
			return err
		}
		if !withResult || rec.ResultDigest == nil {
			return nil
		}
		result, err = reassemble(tx, &rec)
		return err
	})
	return rec, result, err
}

func decodeRecord(id uint64, raw []byte) (record, error) {
	var rec record
	if err := hashing.DecodeStrict(raw, &rec); err != nil {
		return rec, fmt.Errorf("fuzz run %d: %v: %w", id, err, ErrCorrupt)
	}
	if rec.ID != id {
		return rec, fmt.Errorf("fuzz run %d is stored as run %d: %w", id, rec.ID, ErrCorrupt)
	}
	return rec, nil
}

// reassemble rebuilds a record's report from the findings space (each
// finding checked by the store on read) and checks that it is the report
// the run produced, byte for byte.
func reassemble(tx store.RecordReader, rec *record) ([]byte, error) {
	bodies := make([][]byte, len(rec.Findings))
	for i, id := range rec.Findings {
		body, err := tx.Record(spaceFindings, id)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return nil, fmt.Errorf("fuzz run %d: finding %s is missing: %w", rec.ID, id, ErrCorrupt)
		case errors.Is(err, store.ErrCorrupt):
			return nil, fmt.Errorf("fuzz run %d: finding %s: %w: %w", rec.ID, id, ErrCorrupt, err)
		case err != nil:
			return nil, fmt.Errorf("fuzz run %d: %w", rec.ID, err)
		}
		bodies[i] = bytes.Clone(body)
	}
	full, err := assemble(rec.Report, bodies, rec.Findings)
	if err != nil {
		return nil, fmt.Errorf("fuzz run %d: report: %v: %w", rec.ID, err, ErrCorrupt)
	}
	if got := hashing.SumSHA256(full); got != *rec.ResultDigest {
		return nil, fmt.Errorf("fuzz run %d: report hashes to %s, recorded %s: %w", rec.ID, got, rec.ResultDigest, ErrCorrupt)
	}
	return full, nil
}

// list reads the newest records first, at most limit, without reports.
func list(ctx context.Context, st Backend, limit int) ([]record, error) {
	var out []record
	err := st.View(ctx, func(tx store.Tx) error {
		return tx.Scan(nameRuns, func(k, v []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			if len(k) != 8 {
				return fmt.Errorf("fuzz runs: key %x is not a run id: %w", k, ErrCorrupt)
			}
			rec, err := decodeRecord(binary.BigEndian.Uint64(k), v)
			if err != nil {
				return err
			}
			rec.Report = nil // lists carry headers only
			out = append(out, rec)
			return nil
		})
	})
	slices.Reverse(out)
	if len(out) > limit {
		out = out[:limit]
	}
	return out, err
}

// markInterrupted rewrites every record still "running" whose server
// stopped without finishing it — dead(rec) — as failed, once, when a
// server opens the store: on a bbolt file every running record (its lock
// guarantees no other process is running it), on a shared store those
// whose lease has passed. It writes only when there is one (a commit is
// two fsyncs), and nothing in a read-only store.
func markInterrupted(ctx context.Context, st Backend, dead func(*record) bool) (int, error) {
	var recs []record
	err := st.View(ctx, func(tx store.Tx) error {
		return tx.Scan(nameRuns, func(k, v []byte) error {
			if len(k) != 8 {
				return nil
			}
			rec, err := decodeRecord(binary.BigEndian.Uint64(k), v)
			if err != nil {
				return nil // reading it reports the corruption
			}
			if rec.State == StateRunning && dead(&rec) {
				recs = append(recs, rec)
			}
			return nil
		})
	})
	n := 0
	if err == nil && len(recs) > 0 {
		err = st.Update(ctx, func(tx store.Tx) error {
			n = 0
			for _, rec := range recs {
				// Read again in this transaction: on a shared store its
				// owner may have renewed or ended it since.
				cur, err := getRecord(tx, rec.ID)
				switch {
				case errors.Is(err, ErrNotFound) || errors.Is(err, ErrCorrupt):
					continue // dropped since, or reading it reports it
				case err != nil:
					return err
				case cur.State != StateRunning || !dead(&cur):
					continue
				}
				interrupted(&cur)
				if err := putRecord(tx, &cur); err != nil {
					return err
				}
				n++
			}
			return nil
		})
	}
	switch {
	case errors.Is(err, store.ErrReadOnly):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("fuzz runs: mark interrupted runs: %w", err)
	}
	return n, nil
}

// detailInterrupted says why a run has no result after a restart (a
// bbolt file: its one server ran it); detailLeasePassed why a run on a
// shared store has none: its owner, a worker or a replica, stopped
// renewing its lease.
const (
	detailInterrupted = "interrupted: the server stopped while the run was running; its partial results were lost"
	detailLeasePassed = "interrupted: the process running it stopped renewing its lease (it was killed, or lost the store); its partial results were lost"
)

// interrupted turns a record left running by a dead server or owner into
// a failed one.
func interrupted(rec *record) {
	detail := detailInterrupted
	switch {
	case rec.Owner == "" && rec.Detail == detailQueued:
		// No worker adopted it, and the server watching the queue for
		// it stopped too.
		detail = detailNoWorker
	case rec.Owner != "":
		detail = detailLeasePassed
	}
	rec.State, rec.Detail = StateFailed, detail
	rec.Lease, rec.CancelRequested = nil, false
}

// Verify re-checks every stored run and finding: each finding's bytes
// hash to its id, each run's record decodes under its key, and each run's
// report reassembles to its recorded digest. It returns how many runs and
// findings it checked and every problem; the error wraps ErrCorrupt when
// there is one.
func Verify(ctx context.Context, st store.Viewer) (int, []string, error) {
	var problems []string
	n := 0
	err := st.View(ctx, func(tx store.Tx) error {
		var err error
		n, problems, err = store.Verify(ctx, tx, spaceFindings, nil)
		for i, p := range problems {
			problems[i] = "finding " + p
		}
		if err != nil && !errors.Is(err, store.ErrCorrupt) {
			return err
		}
		return tx.Scan(nameRuns, func(k, v []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			n++
			if len(k) != 8 {
				problems = append(problems, fmt.Sprintf("run key %x is not a run id", k))
				return nil
			}
			rec, err := decodeRecord(binary.BigEndian.Uint64(k), v)
			if err == nil && rec.ResultDigest != nil {
				_, err = reassemble(tx, &rec)
			}
			if err != nil {
				problems = append(problems, err.Error())
			}
			return nil
		})
	})
	if err != nil {
		return n, problems, fmt.Errorf("fuzz runs: verify: %w", err)
	}
	if len(problems) > 0 {
		return n, problems, fmt.Errorf("fuzz runs: %d problem(s): %w", len(problems), ErrCorrupt)
	}
	return n, problems, nil
}
