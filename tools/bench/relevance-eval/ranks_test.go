package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/groundgate/groundgate/discover/relevance"
	"github.com/groundgate/groundgate/wordvec"
)

// rankFixture is the word vectors and three documents of two groups.
func rankFixture(t *testing.T) (*relevance.Vectors, []relevance.Document) {
	t.Helper()
	tab, err := wordvec.Load()
	if err != nil {
		t.Fatal(err)
	}
	return relevance.NewVectors(tab), []relevance.Document{
		{Name: "weather__forecast", Title: "weather: forecast", Description: "The weather forecast for a city.", Group: "weather"},
		{Name: "weather__alerts", Title: "weather: alerts", Description: "Severe weather alerts.", Group: "weather"},
		{Name: "mail__send", Title: "mail: send", Description: "Send an e-mail message to a recipient.", Group: "mail"},
	}
}

// writeRanks writes every document, then each request under the served
// and offered conditions with its candidates best first: what
// tools/bench/encoder-spike reads.
func TestWriteRanks(t *testing.T) {
	vec, docs := rankFixture(t)
	reqs := []request{
		{ID: "a", Prompt: "what is the weather forecast for Paris", Gold: []string{"weather__forecast"}, Candidates: []string{"weather__forecast", "weather__alerts"}, dev: true},
		{ID: "b", Prompt: "send an e-mail to my boss", Gold: []string{"mail__send"}, Candidates: []string{"mail__send"}},
	}
	var buf bytes.Buffer
	if err := writeRanks(&buf, vec, relevance.DefaultConfig(), docs, reqs, docs[2:], reqs[1:]); err != nil {
		t.Fatal(err)
	}
	var nDocs int
	rows := map[string]rankRow{}
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		var d docRow
		if err := json.Unmarshal(sc.Bytes(), &d); err == nil && d.Doc.Name != "" {
			nDocs++
			continue
		}
		var r rankRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		rows[r.Data+"/"+r.Condition+"/"+r.ID] = r
	}
	if nDocs != 4 {
		t.Errorf("%d documents written, want 4", nDocs)
	}
	if len(rows) != 7 {
		t.Fatalf("%d request rows, want 7 (τ 1, then 2 × served, offered, unserved): %v", len(rows), rows)
	}
	a := rows["stabletoolbench/served/a"]
	if a.Half != "dev" || len(a.Ranked) == 0 || a.Ranked[0].Name != "weather__forecast" || a.Ranked[0].Score <= 0 {
		t.Errorf("served a: %+v", a)
	}
	for i := 1; i < len(a.Ranked); i++ {
		if a.Ranked[i].Score > a.Ranked[i-1].Score {
			t.Errorf("served a: not best first: %+v", a.Ranked)
		}
	}
	o := rows["stabletoolbench/offered-served/a"]
	if !slices.Equal(o.Registry, []string{"weather__forecast", "weather__alerts", "mail__send"}) || !slices.Equal(o.Gold, []string{"weather__forecast"}) {
		t.Errorf("offered a: %+v", o)
	}
	u := rows["stabletoolbench/offered-unserved/a"]
	if !slices.Equal(u.Registry, []string{"mail__send"}) || u.Gold != nil || u.Half != "dev" {
		t.Errorf("offered unserved a: %+v", u)
	}
	if b := rows["tau-airline/served/b"]; b.Half != "test" || len(b.Ranked) != 1 || b.Ranked[0].Name != "mail__send" {
		t.Errorf("τ b: %+v", b)
	}
}

// writeCandidates writes the same rows as writeRanks, each with its
// candidates' features in the same order (what tools/bench/relevance-eval-rerank
// reads).
func TestWriteCandidates(t *testing.T) {
	vec, docs := rankFixture(t)
	docs = slices.Delete(docs, 1, 2) // no alerts
	reqs := []request{{ID: "a", Prompt: "Send an e-mail. Then tell me the weather forecast for Paris.", Gold: []string{"mail__send", "weather__forecast"}, Candidates: []string{"weather__forecast", "mail__send"}, dev: true}}
	var plain, feats bytes.Buffer
	cfg := relevance.DefaultConfig()
	if err := writeRanks(&plain, vec, cfg, docs, reqs, docs, reqs); err != nil {
		t.Fatal(err)
	}
	if err := writeCandidates(&feats, vec, cfg, docs, reqs, docs, reqs); err != nil {
		t.Fatal(err)
	}
	pl, fl := bytes.Split(bytes.TrimSpace(plain.Bytes()), []byte("\n")), bytes.Split(bytes.TrimSpace(feats.Bytes()), []byte("\n"))
	if len(pl) != len(fl) {
		t.Fatalf("%d lines with features, %d without", len(fl), len(pl))
	}
	rows := 0
	for i := range pl {
		var p, f rankRow
		if err := json.Unmarshal(pl[i], &p); err != nil || p.Condition == "" {
			continue // a document
		}
		if err := json.Unmarshal(fl[i], &f); err != nil {
			t.Fatal(err)
		}
		rows++
		if p.Candidates != nil || len(f.Candidates) != len(f.Ranked) || !slices.Equal(p.Matches, f.Matches) {
			t.Errorf("%s/%s: candidates %v beside ranked %v", f.Data, f.Condition, f.Candidates, f.Ranked)
		}
		for j, c := range f.Candidates {
			if c.Name != f.Ranked[j].Name || min(c.Features[relevance.FeatFull], 1_000_000) < f.Ranked[j].Score {
				t.Errorf("%s/%s: candidate %d %+v, ranked %+v", f.Data, f.Condition, j, c, f.Ranked[j])
			}
		}
	}
	if rows != 4 {
		t.Errorf("%d request rows, want 4", rows)
	}
}
