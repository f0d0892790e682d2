package session

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/groundgate/groundgate/hashing"
)

func seedRecords(f *testing.F) {
	at := time.Date(2024, 5, 15, 15, 0, 1, 120000007, time.UTC)
	g := genesis{Nonce: "00", Version: RecordVersion}
	r := hashing.SumSHA256([]byte("read"))
	for _, v := range []any{
		header{ID: g.id(), Version: RecordVersion, Nonce: "00", Created: at, TokenSHA256: hashing.SumSHA256([]byte("t")),
			Turns: 1, State: emptyDigest},
		Turn{Prompt: "cancel ZFA04Y", Evidence: hashing.SumSHA256([]byte("e")), By: ByHost, At: at},
		CallRecord{Seq: 3, Request: hashing.SumSHA256([]byte("q")), Hash: &r, Tool: "airline.get_reservation_details", Decision: Admitted,
			Outcome: OutcomeOK, At: at, Read: &r, State: emptyDigest,
			Filed: []Filed{{Tool: "airline.get_reservation_details", Arguments: json.RawMessage(`{"reservation_id":"ZFA04Y"}`),
				Key: "reservation_id=ZFA04Y", Value: hashing.SumSHA256([]byte("{}"))}}},
	} {
		raw, err := hashing.Canonical(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
}

// FuzzDecodeRecords: a stored header, turn or call record that the
// store's decoder accepts is its own canonical form, and a header it
// accepts under a key has an id that is its genesis' digest.
func FuzzDecodeRecords(f *testing.F) {
	seedRecords(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		check := func(v any) {
			if err := decodeRecord(raw, v); err != nil {
				return
			}
			canon, err := hashing.Canonical(v)
			if err != nil || !bytes.Equal(canon, raw) {
				t.Fatalf("accepted %q, which re-encodes to %q (%v)", raw, canon, err)
			}
		}
		check(new(Turn))
		check(new(CallRecord))
		var h header
		check(&h)
		if got, err := decodeHeader(h.ID, raw); err == nil {
			if (genesis{AgentDiscovery: got.AgentDiscovery, Nonce: got.Nonce, Version: got.Version}).id() != got.ID {
				t.Fatalf("accepted a header whose id is not its genesis': %q", raw)
			}
		}
	})
}
