package discover

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/registry/registrytest"
)

// toolEntry is a tool of upstream "air" with a description and parameters.
func toolEntry(name, desc, schema string) registry.Entry {
	return registry.Entry{
		Name: "air." + name, Kind: registry.KindTool,
		Disc: registry.Discovery{Description: desc},
		Tool: &registry.ToolLayers{
			Sem:  registry.ToolSemantic{Effect: registry.EffectWrite, Destructive: true, OpenWorld: true},
			Alg:  registry.ToolAlgebraic{InputSchema: json.RawMessage(schema), OutputSchema: json.RawMessage(`null`)},
			Impl: registry.ToolImplementation{Upstream: "air", Tool: name},
		},
	}
}

var airTools = []registry.Entry{
	toolEntry("cancel_reservation", "Cancel the whole reservation.", `{"type":"object","properties":{"reservation_id":{"type":"string","description":"The reservation ID, such as 'ZFA04Y'."}}}`),
	toolEntry("get_reservation_details", "Get the details of a reservation.", `{"type":"object","properties":{"reservation_id":{"type":"string","description":"The reservation id."}}}`),
	toolEntry("update_reservation_baggages", "Update the baggage information of a reservation.", `{"type":"object","properties":{"total_baggages":{"type":"integer","description":"The updated total number of baggage items included in the reservation."},"payment_id":{"type":"string","description":"The payment id stored in user profile."}}}`),
	toolEntry("search_direct_flight", "Search direct flights between two cities on a specific date.", `{"type":"object","properties":{"origin":{"type":"string","description":"The origin city airport in three letters."},"destination":{"type":"string","description":"The destination city airport."},"date":{"type":"string","description":"The date of the flight."}}}`),
}

func toolNames(r Result) []string {
	var out []string
	for _, m := range r.Matches {
		if m.Kind == registry.KindTool {
			out = append(out, m.Name)
		}
	}
	return out
}

// The relevance tier end to end: tools found from a person's words, the
// digests it read recorded, the result re-derived byte for byte, the same
// after a restart, and an entry added found by the next request.
func TestRelevanceTier(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "gg.db")
	s := registrytest.Seeded(t, path, registry.Options{})
	if _, _, err := s.Apply(ctx, airTools); err != nil {
		t.Fatal(err)
	}
	d := mustNew(t, s)
	for _, c := range []struct {
		prompt string
		want   []string // first match first
		none   bool
	}{
		{prompt: "I need to cancel my reservation, it was booked by mistake", want: []string{"air.cancel_reservation"}},
		{prompt: "my reservation needs two more checked baggage items", want: []string{"air.update_reservation_baggages"}},
		{prompt: "are there direct flights from New York to Seattle on May 20", want: []string{"air.search_direct_flight"}},
		{prompt: "tell me a joke about penguins", none: true},
		{prompt: "trend", none: true}, // one word: the tier does not read it
	} {
		r, err := d.Discover(ctx, Query{Prompt: c.prompt})
		if err != nil {
			t.Fatal(err)
		}
		got := toolNames(r)
		if c.none {
			if len(got) != 0 {
				t.Errorf("%q: matched %v, want none", c.prompt, got)
			}
			continue
		}
		if len(got) == 0 || got[0] != c.want[0] {
			t.Errorf("%q: matched %v, want %v first", c.prompt, got, c.want)
			continue
		}
		if r.Relevance == nil || r.Relevance.Scoring == "" || r.Relevance.Vectors == "" || r.Relevance.Index == "" {
			t.Errorf("%q: relevance record %+v", c.prompt, r.Relevance)
		}
		for _, m := range r.Matches {
			if m.Mode == ModeRelevance && (m.Confidence <= 0 || m.Confidence >= ConfidenceKeyword) {
				t.Errorf("%q: %s confidence %v, want in (0, 0.5)", c.prompt, m.Name, m.Confidence)
			}
		}
		again, err := d.Rederive(ctx, r.Terms, r.Version)
		if err != nil {
			t.Fatal(err)
		}
		if again.ID != r.ID {
			t.Errorf("%q: Rederive gave %s, want %s", c.prompt, again.ID, r.ID)
		}
		if got, err := d.Lookup(ctx, r.ID); err != nil || got.Relevance == nil || !sameRelevance(got.Relevance, r.Relevance) {
			t.Errorf("%q: stored evidence %+v, %v", c.prompt, got.Relevance, err)
		}
	}

	// A restart (a new Discoverer, indexes built afresh) gives the same bytes.
	prompt := Query{Prompt: "I need to cancel my reservation, it was booked by mistake"}
	first := mustDiscover(t, d, prompt)
	d2 := mustNew(t, s)
	if got := mustDiscover(t, d2, prompt); got.ID != first.ID {
		t.Errorf("after a restart: %s, want %s", got.ID, first.ID)
	}

	// Incremental: a tool added is found by the next request, and the
	// index digest the result records changes with it.
	prompt = Query{Prompt: "send a certificate to the user as a gesture of goodwill"}
	before := mustDiscover(t, d, prompt)
	if slices.Contains(toolNames(before), "air.send_certificate") {
		t.Fatal("found before it was added")
	}
	if _, _, err := s.Apply(ctx, []registry.Entry{toolEntry("send_certificate", "Send a certificate to a user. Be careful!", `{"type":"object","properties":{"user_id":{"type":"string","description":"The ID of the user to book the reservation, such as 'sara_doe_496'."},"amount":{"type":"number","description":"Certificate amount to send."}}}`)}); err != nil {
		t.Fatal(err)
	}
	after := mustDiscover(t, d, prompt)
	if got := toolNames(after); len(got) == 0 || got[0] != "air.send_certificate" {
		t.Errorf("after adding send_certificate: %v", got)
	}
	if after.Relevance == nil || before.Relevance == nil || after.Relevance.Index == before.Relevance.Index {
		t.Errorf("index digest did not change: %+v → %+v", before.Relevance, after.Relevance)
	}
	// The incrementally updated index and one built afresh agree.
	d3 := mustNew(t, s)
	if got := mustDiscover(t, d3, prompt); got.ID != after.ID {
		t.Errorf("rebuilt index: %s, incremental %s", got.ID, after.ID)
	}
}

func sameRelevance(a, b *Relevance) bool {
	return a.Scoring == b.Scoring && a.Vectors == b.Vectors && a.Index == b.Index && slices.Equal(a.Terms, b.Terms)
}

// The relevance index is kept beside the text index when the Discoverer
// closes, read back by the next start (same results), and rebuilt when the
// file is damaged or of another version.
func TestRelevanceKeptOnDisk(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "gg.db")
	s := registrytest.Seeded(t, path, registry.Options{})
	if _, _, err := s.Apply(ctx, airTools); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "index")
	var logs strings.Builder
	open := func() *Discoverer {
		logs.Reset()
		log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		d, err := New(ctx, s, s.Engine(), Options{TextIndexDir: dir, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	q := Query{Prompt: "I need to cancel my reservation, it was booked by mistake"}
	file := filepath.Join(dir, relevanceFile)
	// start opens a Discoverer, discovers q and checks its result and
	// whether the relevance index was read from the file.
	var want Result
	start := func(stage string, fromDisk bool) *Discoverer {
		t.Helper()
		d := open()
		got := mustDiscover(t, d, q)
		if want.ID.IsZero() {
			want = got
		}
		if got.ID != want.ID {
			t.Errorf("%s: %s, want %s", stage, got.ID, want.ID)
		}
		if read := strings.Contains(logs.String(), "relevance index read from disk"); read != fromDisk {
			t.Errorf("%s: read from disk %v, want %v:\n%s", stage, read, fromDisk, logs.String())
		}
		return d
	}

	start("first start", false).Close()
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("not kept: %v", err)
	}
	start("restart", true).Close()

	// Damaged: rebuilt, the same result, and kept anew.
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)/2] ^= 1
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	start("damaged", false).Close()
	if !strings.Contains(logs.String(), "unreadable; rebuilding") {
		t.Errorf("damage not noticed:\n%s", logs.String())
	}
	d := start("after a rebuild", true)

	// Another version: not read; the next request still finds what it
	// holds.
	if _, _, err := s.Apply(ctx, []registry.Entry{toolEntry("send_certificate", "Send a certificate to a user.", `{"type":"object"}`)}); err != nil {
		t.Fatal(err)
	}
	d.Close()
	d = open()
	defer d.Close()
	if got := mustDiscover(t, d, q); !slices.Contains(toolNames(got), "air.cancel_reservation") {
		t.Errorf("after a change: %v", toolNames(got))
	}
	if strings.Contains(logs.String(), "relevance index read from disk") {
		t.Errorf("a stale index was read:\n%s", logs.String())
	}
}
