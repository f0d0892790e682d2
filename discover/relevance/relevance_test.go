package relevance

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/groundgate/groundgate/internal/testio"
	"github.com/groundgate/groundgate/wordvec"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.txt")

var (
	vecOnce sync.Once
	vecs    *Vectors
)

func testVectors(t testing.TB) *Vectors {
	vecOnce.Do(func() {
		tb, err := wordvec.Load()
		if err != nil {
			panic(err)
		}
		vecs = NewVectors(tb)
	})
	return vecs
}

// fixture is a small registry: airline tools in τ-bench's style and a few
// web APIs in StableToolBench's.
var fixture = []Document{
	{Name: "book_reservation", Description: "Book a reservation.", Params: []Param{{"user_id", "The ID of the user to book the reservation."}, {"origin", "The IATA code for the origin city."}, {"destination", "The IATA code for the destination city."}, {"cabin", "basic_economy economy business"}}, Group: "airline"},
	{Name: "cancel_reservation", Description: "Cancel the whole reservation.", Params: []Param{{"reservation_id", "The reservation ID, such as 'ZFA04Y'."}}, Group: "airline"},
	{Name: "get_reservation_details", Description: "Get the details of a reservation.", Params: []Param{{"reservation_id", "The reservation id."}}, Group: "airline"},
	{Name: "update_reservation_baggages", Description: "Update the baggage information of a reservation.", Params: []Param{{"total_baggages", "The updated total number of baggage items included in the reservation."}}, Group: "airline"},
	{Name: "search_direct_flight", Description: "Search direct flights between two cities on a specific date.", Params: []Param{{"origin", "The origin city airport in three letters."}, {"date", "The date of the flight."}}, Group: "airline"},
	{Name: "send_certificate", Description: "Send a certificate to a user. Be careful!", Params: []Param{{"amount", "Certificate amount to send."}}, Group: "airline"},
	{Name: "Tide_Tables__Next_High_Tide", Title: "Tide Tables: Next High Tide", Description: "Returns the next high tide for a coastal station.", Params: []Param{{"stationId", "The tide station."}}},
	{Name: "ChaDri.change_drink", Title: "ChaDri: change drink", Description: "Change the drink of an order in the coffee shop.", Aliases: []string{"swap beverage"}, Tags: []string{"coffee", "order"}},
	{Name: "weatherForecastDaily", Title: "Weather: daily forecast", Description: "Daily weather forecast for a city: temperature, rain and wind.", Examples: []string{"will it rain in Paris tomorrow"}},
	{Name: "currency_converter__convert", Title: "Currency Converter: convert", Description: "Convert an amount from one currency to another at today's exchange rate."},
	{Name: "QR_Code_Generator__Generate", Title: "QR Code Generator: Generate", Description: "Generate a QR code image for a URL or text."},
	{Name: "suivi_colis__Latest", Title: "suivi colis: Latest", Description: "Get the latest status of a parcel from its tracking number.", Group: "suivi colis"},
	{Name: "suivi_colis__All", Title: "suivi colis: All", Description: "Tous les états du colis.", Group: "suivi colis"},
}

var fixturePrompts = []string{
	"I want to cancel my reservation",
	"Please book a flight from New York to Seattle in economy",
	"I need to add two checked bags to my booking",
	"When is the next high tide at the station?",
	"Can you swap my coffee for a tea?",
	"What will the weather be like tomorrow, will it rain?",
	"Convert 100 dollars to euros",
	"make a QR code for my website",
	"where is my package? tracking number CA107308006SI",
	"Tell me a joke about penguins",
	"",
	"the of and to",
	"bananas",
}

func newIndex(t testing.TB, docs []Document) *Index {
	t.Helper()
	x, err := New(testVectors(t), DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if err := x.Add(d); err != nil {
			t.Fatal(err)
		}
	}
	return x
}

func answers(t testing.TB, x *Index) string {
	t.Helper()
	var b strings.Builder
	for _, p := range fixturePrompts {
		r := x.Query(p)
		j, err := json.Marshal(struct {
			R    Result
			Rank []Match
			Lex  []Match
		}{r, x.Rank(p, 8), x.RankLexical(p, 8)})
		if err != nil {
			t.Fatal(err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

func TestLnMicro(t *testing.T) {
	for _, pq := range [][2]uint64{{1, 1}, {2, 1}, {3, 2}, {4960, 1}, {4960, 2479}, {200_002, 1}, {1 << 40, 3}, {1_000_003, 999_999}, {7, 5}} {
		got := lnMicro(pq[0], pq[1])
		want := math.Log(float64(pq[0])/float64(pq[1])) * 1e6
		if math.Abs(float64(got)-want) > 1 {
			t.Errorf("lnMicro(%d, %d) = %d, want %.2f", pq[0], pq[1], got, want)
		}
	}
	if lnMicro(1, 2) != 0 || lnMicro(1, 0) != 0 {
		t.Error("lnMicro below 1 or of /0 is not 0")
	}
}

func TestCosineWithinOneOfWordvec(t *testing.T) {
	v := testVectors(t)
	for _, p := range [][2]string{{"buy", "purchase"}, {"buy", "banana"}, {"file", "document"}, {"file", "weather"}, {"cancel", "reservation"}, {"flight", "flight"}} {
		i, _ := v.t.Index(p[0])
		j, _ := v.t.Index(p[1])
		want, _ := v.t.Cosine(p[0], p[1])
		if got := v.cosine(int32(i), int32(j)); got > want || want-got > 1 {
			t.Errorf("cosine(%s, %s) = %d, wordvec %d", p[0], p[1], got, want)
		}
	}
}

func TestWords(t *testing.T) {
	an := newAnalyzer()
	for in, want := range map[string]string{
		"get_reservation_details":               "get reservation detail",
		"ChaDri.change_drink":                   "cha dri change drink",
		"Tide_Tables__Next_High_Tide":           "tide table next high tide",
		"getUserInfo HTTPServer":                "get user info http server",
		"BulkGenerateGuids 50 GUIDs, two URLs":  "bulk generate guid guid two url",
		"Can you please help me find flights?":  "find flight",
		"Sharpe's ratios":                       "sharpe ratio",
		"ID CA107308006SI mia_li_3668 mp3 2024": "mia li mp3",
		"ＳＨＡＲＰＥ":                                "sharpe",
	} {
		var got []string
		for _, w := range an.words(in) {
			got = append(got, w.key)
		}
		if g := strings.Join(got, " "); g != want {
			t.Errorf("words(%q) = %q, want %q", in, g, want)
		}
	}
}

// TestDeterminism: the same answers, byte for byte, from an index built
// at once, from shuffled documents, and incrementally with removals and
// replacements on the way; and the same document digest.
func TestDeterminism(t *testing.T) {
	base := newIndex(t, fixture)
	want := answers(t, base)
	if again := answers(t, base); again != want {
		t.Fatal("a second run differs")
	}
	for seed := range uint64(5) {
		docs := slices.Clone(fixture)
		r := rand.New(rand.NewPCG(seed, 7))
		r.Shuffle(len(docs), func(i, j int) { docs[i], docs[j] = docs[j], docs[i] })
		x := newIndex(t, docs)
		if got := answers(t, x); got != want {
			t.Fatalf("shuffle %d: answers differ", seed)
		}
		if x.Digest() != base.Digest() {
			t.Fatalf("shuffle %d: digest differs", seed)
		}
	}
	// Incrementally: half, noise, a changed document, removals, the rest.
	x := newIndex(t, fixture[:6])
	for i := range 20 {
		_ = x.Add(Document{Name: fmt.Sprintf("noise_%d", i), Description: "Reservation flight weather coffee tide noise entry"})
	}
	changed := fixture[1]
	changed.Description = "Something else entirely."
	_ = x.Add(changed)
	for i := range 20 {
		x.Remove(fmt.Sprintf("noise_%d", i))
	}
	for _, d := range fixture[6:] {
		_ = x.Add(d)
	}
	_ = x.Add(fixture[1])
	if got := answers(t, x); got != want {
		t.Fatalf("incremental: answers differ\n%s\nwant\n%s", got, want)
	}
	if x.Digest() != base.Digest() || x.Len() != len(fixture) {
		t.Fatal("incremental: digest or length differs")
	}
}

// TestGolden pins the integer scores of the fixture (go test -update
// rewrites it). The same file must pass on every GOARCH and GOAMD64:
// tools/determinism.sh runs it on GOAMD64=v1, v3 and GOARCH=arm64 and
// compares what it printed (testio.PrintGolden).
func TestGolden(t *testing.T) {
	x := newIndex(t, fixture)
	got := x.Scoring() + "\n" + x.Digest() + "\n" + answers(t, x)
	testio.Golden(t, filepath.Join("testdata", "golden.txt"), []byte(got), *update)
}

func TestQuery(t *testing.T) {
	x := newIndex(t, fixture)
	for _, c := range []struct {
		prompt string
		want   []string // must be among the matches; nil: no match at all
	}{
		{"I want to cancel my reservation", []string{"cancel_reservation"}},
		{"When is the next high tide at the station?", []string{"Tide_Tables__Next_High_Tide"}},
		{"Convert 100 dollars to euros with the exchange rate", []string{"currency_converter__convert"}},
		{"make a QR code for my website", []string{"QR_Code_Generator__Generate"}},
		{"Tell me a joke about penguins", nil},
		{"", nil},
		{"the of and to", nil},
		{"Can you please help me?", nil},
	} {
		r := x.Query(c.prompt)
		if len(r.Matches) > 5 {
			t.Errorf("%q: %d matches", c.prompt, len(r.Matches))
		}
		if c.want == nil && len(r.Matches) > 0 {
			t.Errorf("%q: matched %v, want nothing", c.prompt, r.Matches)
		}
		for _, w := range c.want {
			if !slices.ContainsFunc(r.Matches, func(m Match) bool { return m.Name == w }) {
				t.Errorf("%q: %s not among %v", c.prompt, w, r.Matches)
			}
		}
		for _, m := range r.Matches {
			if m.ConfidenceMilli >= 500 || m.Confidence() >= 0.5 || m.ConfidenceMilli != 499*m.Score/1_000_000 {
				t.Errorf("%q: confidence %d of score %d", c.prompt, m.ConfidenceMilli, m.Score)
			}
		}
		if r.Scoring != x.Scoring() || r.Vectors != wordvec.Digest {
			t.Errorf("%q: digests %s %s", c.prompt, r.Scoring, r.Vectors)
		}
	}
}

// TestThreshold: in a registry of one upstream's tools (a request arrives
// with the tools of a few upstreams, not a marketplace's), requests for
// something else match nothing, because the best score must reach
// ThresholdMicro; v3's rule (one threshold, 0.1, for every match) matched
// some of them. Later matches need FloorMicro only: the second tool a
// request asks for scores lower than the first.
func TestThreshold(t *testing.T) {
	airline := fixture[:6]
	unserved := []string{
		"Send me the latest news about the football world cup",
		"I need the user details and order history from my online shop",
		"Get the current price of Bitcoin in US dollars",
		"Send an email to my colleague about the meeting",
		"Update the details of my user profile and my delivery address",
		"Book a table at an Italian restaurant for four",
	}
	x := newIndex(t, airline)
	for _, p := range unserved {
		if r := x.Query(p); len(r.Matches) > 0 {
			t.Errorf("%q: matched %v among the airline tools", p, r.Matches)
		}
	}
	v3 := DefaultConfig()
	v3.ThresholdMicro = v3.FloorMicro
	old, err := New(testVectors(t), v3)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range airline {
		if err := old.Add(d); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for _, p := range unserved {
		if len(old.Query(p).Matches) > 0 {
			n++
		}
	}
	if n == 0 {
		t.Error("with one threshold of 0.1 every unserved request matched nothing: the test shows nothing")
	}
	r := x.Query("I want to cancel my reservation and get the details of the other one")
	var names []string
	for _, m := range r.Matches {
		names = append(names, m.Name)
	}
	if !slices.Contains(names, "cancel_reservation") || !slices.Contains(names, "get_reservation_details") {
		t.Errorf("served request: matched %v", r.Matches)
	}
	// Explain reads what Query decides on: the best's credit over the
	// denominator is the best match's score.
	e := x.Explain("I want to cancel my reservation")
	if len(e.Credits) == 0 || e.Den == 0 || min(e.Credits[0]*1_000_000/e.Den, 1_000_000) != x.Query("I want to cancel my reservation").Matches[0].Score {
		t.Errorf("explanation %+v disagrees with the query", e)
	}
}

// TestIncremental: a document added or changed is found by the next query,
// a removed one is not.
func TestIncremental(t *testing.T) {
	x := newIndex(t, fixture)
	p := "translate this sentence into Japanese"
	if r := x.Query(p); len(r.Matches) > 0 {
		t.Fatalf("before: %v", r.Matches)
	}
	d := Document{Name: "Translator__translate", Title: "Translator: translate", Description: "Translate a sentence into another language, such as Japanese."}
	_ = x.Add(d)
	if r := x.Query(p); len(r.Matches) == 0 || r.Matches[0].Name != d.Name {
		t.Fatalf("after add: %v", r.Matches)
	}
	d.Description = "Count the words of a text."
	d.Title = "Counter: count"
	d.Name = "Translator__translate"
	_ = x.Add(d)
	if r := x.Query(p); slices.ContainsFunc(r.Matches, func(m Match) bool { return m.Name == d.Name && m.Score > 300_000 }) {
		t.Fatalf("after change: %v", r.Matches)
	}
	x.Remove(d.Name)
	if r := x.Query(p); len(r.Matches) > 0 {
		t.Fatalf("after remove: %v", r.Matches)
	}
	if err := x.Add(Document{}); err != ErrNoName {
		t.Fatalf("no name: %v", err)
	}
}

// TestGroup: a sibling of a document that covers a prompt word gets part
// of that word's credit (Config.GroupMilli), and a group left by its
// other members lends nothing.
func TestGroup(t *testing.T) {
	off := DefaultConfig()
	off.GroupMilli = 0
	y, err := New(testVectors(t), off)
	if err != nil {
		t.Fatal(err)
	}
	x := newIndex(t, fixture)
	for _, d := range fixture {
		_ = y.Add(d)
	}
	p := "suivi: latest parcel status" // "suivi" makes All a candidate
	score := func(x *Index, name string) int64 {
		for _, m := range x.Rank(p, 8) {
			if m.Name == name {
				return m.Score
			}
		}
		return 0
	}
	if a, b := score(x, "suivi_colis__All"), score(y, "suivi_colis__All"); a <= b || b == 0 {
		t.Fatalf("sibling credit: All %d with, %d without", a, b)
	}
	x.Remove("suivi_colis__Latest")
	y.Remove("suivi_colis__Latest")
	if a, b := score(x, "suivi_colis__All"), score(y, "suivi_colis__All"); a != b {
		t.Fatalf("after removing its sibling: All %d with, %d without", a, b)
	}
	x.Remove("suivi_colis__All")
	if _, ok := x.groups["suivi colis"]; ok || len(x.groups) != 1 {
		t.Fatalf("groups %v", x.groups)
	}
}

// TestPairs: adjacent words are read as a pair too, when a document holds
// the pair; a pair of words of two different aliases is not one.
func TestPairs(t *testing.T) {
	x := newIndex(t, fixture)
	r := x.Query("next high tide at the station")
	if !slices.Contains(r.Words, "high tide") || !slices.Contains(r.Words, "next high") || slices.Contains(r.Words, "tide station") {
		t.Fatalf("words %q", r.Words)
	}
	_ = x.Add(Document{Name: "pairs", Aliases: []string{"alpha", "omega"}})
	if r := x.Query("alpha omega"); slices.Contains(r.Words, "alpha omega") {
		t.Fatalf("a pair across aliases: %q", r.Words)
	}
}

// TestDiversify: a request for two things gets the second in front of
// more ways to do the first with Config.DiverseMilli (here 0.5), and not
// without it.
func TestDiversify(t *testing.T) {
	docs := []Document{
		{Name: "forecast_daily", Description: "Daily weather forecast for a city: temperature, rain, wind and humidity."},
		{Name: "forecast_hourly", Description: "Hourly weather forecast for a city: temperature, rain, wind and humidity."},
		{Name: "forecast_weekly", Description: "Weekly weather forecast for a city: temperature, rain, wind and humidity."},
		{Name: "exchange_rate", Description: "The exchange rate between two currencies."},
	}
	p := "the weather forecast for my city: temperature, rain, wind, humidity; and the exchange rate"
	pos := func(cfg Config) int {
		x, err := New(testVectors(t), cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range append(slices.Clone(fixture), docs...) {
			_ = x.Add(d)
		}
		return slices.IndexFunc(x.Rank(p, 4), func(m Match) bool { return m.Name == "exchange_rate" })
	}
	on, off := DefaultConfig(), DefaultConfig()
	on.DiverseMilli, off.DiverseMilli = 500, 0
	if on, off := pos(on), pos(off); on != 1 || off >= 0 {
		t.Fatalf("exchange_rate at %d diversified, %d not", on, off)
	}
}

// TestMatchesGrowWithWords: a short request gets at most MinMatches
// matches however many documents are near, a longer one up to MaxMatches
// (one per WordsPerMatch content words).
func TestMatchesGrowWithWords(t *testing.T) {
	var docs []Document
	for _, k := range []string{"daily", "hourly", "weekly", "monthly", "yearly", "nightly"} {
		docs = append(docs, Document{Name: "forecast_" + k, Description: "Weather forecast " + k + " for a city: temperature, rain, wind, humidity, storm, snow, sunshine, clouds, fog, hail, sleet, frost and gusts."})
	}
	cfg := DefaultConfig()
	x := newIndex(t, docs)
	off := cfg
	off.WordsPerMatch = 0
	y, err := New(testVectors(t), off)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		_ = y.Add(d)
	}
	for _, tc := range []struct {
		prompt string
		most   int
	}{
		{"weather forecast for my city", cfg.MinMatches},                                                                  // 3 words
		{"the weather forecast for my city: temperature, rain, wind and humidity", cfg.MinMatches},                        // 7 words: ⌈7/5⌉ = 2 < 3
		{"weather forecast city temperature rain wind humidity storm snow sunshine clouds fog", 3},                        // 12 words: ⌈12/5⌉
		{"weather forecast city temperature rain wind humidity storm snow sunshine clouds fog hail sleet frost gusts", 4}, // 16
	} {
		got := len(x.Query(tc.prompt).Matches)
		if got > tc.most {
			t.Errorf("%q: %d matches, at most %d", tc.prompt, got, tc.most)
		}
		if all := len(y.Query(tc.prompt).Matches); all <= tc.most || got != tc.most {
			t.Errorf("%q: %d matches, %d without the cap: the cap of %d is not what decides", tc.prompt, got, all, tc.most)
		}
	}
	c := DefaultConfig()
	c.MinMatches = c.MaxMatches + 1
	if c.Check() == nil {
		t.Error("min matches above max matches accepted")
	}
}

func TestConfig(t *testing.T) {
	if err := DefaultConfig().Check(); err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
	c.MaxMatches = 6
	if _, err := New(testVectors(t), c); err == nil {
		t.Fatal("6 matches accepted")
	}
	c = DefaultConfig()
	c.FloorMicro = c.ThresholdMicro + 1
	if _, err := New(testVectors(t), c); err == nil {
		t.Fatal("a floor above the threshold accepted")
	}
	if DefaultConfig().Digest(wordvec.Digest) == c.Digest(wordvec.Digest) {
		t.Fatal("digest ignores a constant")
	}
}

func FuzzQuery(f *testing.F) {
	for _, p := range fixturePrompts {
		f.Add(p)
	}
	f.Add("get_reservation_details\x00\xff ＳＨＡＲＰＥ's a.b.c camelCaseWord")
	x := newIndex(f, fixture)
	f.Fuzz(func(t *testing.T, p string) {
		r := x.Query(p)
		if len(r.Matches) > DefaultConfig().MaxMatches {
			t.Fatalf("%d matches", len(r.Matches))
		}
		for i, m := range r.Matches {
			if m.Score < DefaultConfig().FloorMicro || m.Score > 1_000_000 || m.ConfidenceMilli >= 500 {
				t.Fatalf("match %v", m)
			}
			if i == 0 && m.Score < DefaultConfig().ThresholdMicro {
				t.Fatalf("best match %v below the threshold", m)
			}
			if i > 0 && m.Score > r.Matches[i-1].Score {
				t.Fatal("not sorted")
			}
		}
	})
}

// TestCompact: Compact trims every term's postings to their length and
// changes no answer, and the index still takes changes afterwards.
func TestCompact(t *testing.T) {
	x := newIndex(t, fixture)
	want := answers(t, x)
	x.Compact()
	for id, tm := range x.terms {
		// No more room than a fresh copy of them has (size classes).
		if tm != nil && cap(tm.postings) > cap(slices.Clone(tm.postings)) {
			t.Errorf("term %q: %d postings in room for %d", x.dict.key(uint32(id)), len(tm.postings), cap(tm.postings))
		}
	}
	if got := answers(t, x); got != want {
		t.Fatalf("answers changed by Compact:\n%s\nwant\n%s", got, want)
	}
	d := fixture[0]
	if !x.Remove(d.Name) || x.Add(d) != nil {
		t.Fatal("remove and add after Compact")
	}
	if got := answers(t, x); got != want {
		t.Fatal("answers changed by removing and adding a document after Compact")
	}
}
