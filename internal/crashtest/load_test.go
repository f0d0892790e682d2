package crashtest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Load shape: enough writers to keep commits overlapping on two cores.
const (
	registryWorkers = 2
	pipelineWorkers = 3
	maxOpsPerWorker = 5000 // a bound; the kill ends a round long before it
	editedPerWorker = 3    // catalog entries each registry worker re-aliases

	// Registry writers pause between writes: every write is a new version,
	// and `registry verify` rereads every version, so an unpaced writer
	// would make each round slower than the last.
	registryPauseMin = 40 * time.Millisecond
	registryPauseMax = 120 * time.Millisecond
)

const (
	dataSource = "oil-spot/wti-daily.csv"
	momPrompt  = "momentum strategy scored by sharpe ratio"
)

// state is what the load carries from round to round: who owns which
// registry names (each name has one writer, so its writes are ordered) and
// the families whose creation was acknowledged.
type state struct {
	seq      atomic.Int64 // makes every written content unique
	template map[string]any
	writers  []*regWriter

	mu       sync.Mutex
	families []family
}

type family struct{ name, alias string }

type regWriter struct {
	owned []string                  // names this writer edits
	body  map[string]map[string]any // name -> entry as last written (no identity)
	base  map[string][]string       // name -> aliases every edit keeps
}

func (s *state) addFamily(f family) {
	s.mu.Lock()
	s.families = append(s.families, f)
	s.mu.Unlock()
}

func (s *state) pickFamily(rng *rand.Rand) (family, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.families) == 0 {
		return family{}, false
	}
	return s.families[rng.IntN(len(s.families))], true
}

// newState reads the catalog from the first server: MOM_WZS is the
// template for new families, and each registry writer gets a few catalog
// entries to re-alias (writer 0 gets MOM_WZS itself, which the discovery
// cycles use all the time).
func newState(ctx context.Context, c *client, l *ledger, rng *rand.Rand) (*state, error) {
	r := c.do(ctx, "GET", "/v1/registry", nil, false)
	if !r.ack() {
		return nil, fmt.Errorf("GET /v1/registry: %d %v %.300s", r.status, r.err, r.body)
	}
	var reg struct {
		Capabilities []map[string]any `json:"capabilities"`
	}
	if err := json.Unmarshal(r.body, &reg); err != nil {
		return nil, fmt.Errorf("registry body: %w", err)
	}
	byName := map[string]map[string]any{}
	var pool []string
	for _, c := range reg.Capabilities {
		name, _ := c["name"].(string)
		delete(c, "identity")
		byName[name] = c
		if name != "MOM_WZS" && name != "SRP" {
			pool = append(pool, name)
		}
	}
	tpl, ok := byName["MOM_WZS"]
	if !ok {
		return nil, fmt.Errorf("the catalog has no MOM_WZS")
	}
	sort.Strings(pool)
	rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	s := &state{template: tpl}
	for w := range registryWorkers {
		rw := &regWriter{body: map[string]map[string]any{}, base: map[string][]string{}}
		names := pool[w*editedPerWorker : (w+1)*editedPerWorker]
		if w == 0 {
			names = append([]string{"MOM_WZS"}, names[1:]...)
		}
		for _, n := range names {
			rw.owned = append(rw.owned, n)
			rw.body[n] = byName[n]
			rw.base[n] = aliasesOf(byName[n])
			l.existing(n, rw.base[n])
		}
		s.writers = append(s.writers, rw)
	}
	return s, nil
}

func aliasesOf(entry map[string]any) []string {
	disc, _ := entry["disc"].(map[string]any)
	raw, _ := disc["aliases"].([]any)
	out := make([]string, 0, len(raw))
	for _, a := range raw {
		s, _ := a.(string)
		out = append(out, s)
	}
	return out
}

// word spells n in letters after a fixed prefix, so that every alias the
// test writes is a phrase no catalog entry and no stop-word list has.
func word(n int64) string {
	b := []byte("zq")
	for {
		b = append(b, byte('a'+n%26))
		if n /= 26; n == 0 {
			return string(b)
		}
	}
}

func deepCopy(m map[string]any) map[string]any {
	b, err := json.Marshal(m)
	if err != nil {
		panic(err) // it came from JSON
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}

// signalEntry is a new capability with its own behaviour: a rolling mean
// window no other entry has, so its identity is new.
func signalEntry(name string, n int64, alias string) map[string]any {
	return map[string]any{
		"name": name, "kind": "signal",
		"sem": map[string]any{"pure": true, "deterministic": true, "commutative": false, "associative": false,
			"idempotent": false, "orientation": "none", "stateful": true},
		"alg":  map[string]any{"inputs": []string{"series"}, "outputs": []string{"series"}, "arity": 1, "reversible": false},
		"impl": map[string]any{"engine": "groundgate/v1", "ir": "pipeline", "fusable": false, "expr": fmt.Sprintf("(rmean (abs (dlog x)) %d)", 1000+n)},
		"disc": map[string]any{"description": fmt.Sprintf("Crash-test signal %d: a mean absolute log move.", n), "aliases": []string{alias}},
	}
}

// familyEntry is MOM_WZS with a target_vol default no other entry has: a
// new identity that still runs, so discover → ground → execute can use it.
func familyEntry(tpl map[string]any, name string, n int64, alias string) map[string]any {
	e := deepCopy(tpl)
	e["name"] = name
	alg := e["alg"].(map[string]any)
	for _, p := range alg["params"].([]any) {
		if pm := p.(map[string]any); pm["name"] == "target_vol" {
			pm["default"] = math.Round((0.1+float64(n+1)*1e-6)*1e9) / 1e9
		}
	}
	e["disc"] = map[string]any{"description": fmt.Sprintf("Crash-test family %d: momentum with its own volatility target.", n), "aliases": []string{alias}}
	return e
}

// loadRun is one round's load against one server.
type loadRun struct {
	t     *testing.T
	round int
	c     *client
	l     *ledger
	st    *state
}

// registryLoop writes until the server dies or ctx ends: new signals, new
// families, and alias edits of the writer's own names.
func (lr *loadRun) registryLoop(ctx context.Context, w *regWriter, rng *rand.Rand) {
	for i := range maxOpsPerWorker {
		if i > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(registryPauseMin + time.Duration(rng.Int64N(int64(registryPauseMax-registryPauseMin)))):
			}
		}
		if ctx.Err() != nil {
			return
		}
		n := lr.st.seq.Add(1)
		var (
			name    string
			entry   map[string]any
			aliases []string
			isNew   bool
			isFam   bool
		)
		switch p := rng.IntN(10); {
		case p < 4:
			name, isNew = fmt.Sprintf("CRASH_S%d", n), true
			aliases = []string{"crashsig " + word(n)}
			entry = signalEntry(name, n, aliases[0])
		case p < 6:
			name, isNew, isFam = fmt.Sprintf("CRASH_F%d", n), true, true
			aliases = []string{"crashfam " + word(n)}
			entry = familyEntry(lr.st.template, name, n, aliases[0])
		default:
			name = w.owned[rng.IntN(len(w.owned))]
			aliases = append(slices.Clone(w.base[name]), "crashedit "+word(n))
			entry = deepCopy(w.body[name])
			entry["disc"].(map[string]any)["aliases"] = aliases
		}
		body, err := json.Marshal(entry)
		if err != nil {
			lr.t.Errorf("round %d: encode %s: %v", lr.round, name, err)
			return
		}
		r := lr.c.do(ctx, "PUT", "/v1/registry/capabilities/"+name, body, true)
		if r.err != nil {
			if !refused(r.err) {
				lr.l.attempted(name, aliases) // it may have committed before the kill
			}
			return // the server is gone (or ctx ended)
		}
		want := http.StatusOK
		if isNew {
			want = http.StatusCreated
		}
		if r.status != want {
			lr.t.Errorf("round %d: PUT %s: %d, want %d: %.500s", lr.round, name, r.status, want, r.body)
			return
		}
		var res struct {
			Capability json.RawMessage `json:"capability"`
			Version    uint64          `json:"version"`
			Changed    bool            `json:"changed"`
		}
		if err := json.Unmarshal(r.body, &res); err != nil || !res.Changed || res.Version == 0 {
			lr.t.Errorf("round %d: PUT %s: answer %v: %.500s", lr.round, name, err, r.body)
			return
		}
		norm, err := normalise(res.Capability)
		if err != nil {
			lr.t.Errorf("round %d: PUT %s: %v", lr.round, name, err)
			return
		}
		lr.l.ackRegistry(regAck{round: lr.round, name: name, version: res.Version, entry: norm}, aliases)
		if isNew {
			w.owned = append(w.owned, name)
			w.base[name] = aliases
		}
		w.body[name] = entry
		if isFam {
			lr.st.addFamily(family{name: name, alias: aliases[0]})
		}
	}
}

// pipelineLoop runs discover → ground → execute cycles with small window
// grids, on MOM_WZS or on a family the registry writers created.
func (lr *loadRun) pipelineLoop(ctx context.Context, rng *rand.Rand) {
	for range maxOpsPerWorker {
		if ctx.Err() != nil {
			return
		}
		fam, prompt := "MOM_WZS", momPrompt
		if f, ok := lr.st.pickFamily(rng); ok && rng.IntN(2) == 0 {
			fam, prompt = f.name, f.alias+" scored by sharpe ratio"
		}
		q, _ := json.Marshal(map[string]any{"prompt": prompt})
		d, ok := lr.write(ctx, kindDiscovery, "POST", "/v1/discover", q, http.StatusOK, "id")
		if !ok {
			return
		}
		var disc struct {
			OK      bool `json:"ok"`
			Matches []struct {
				Name string `json:"name"`
				Kind string `json:"kind"`
			} `json:"matches"`
		}
		_ = json.Unmarshal(d.body, &disc)
		found := slices.ContainsFunc(disc.Matches, func(m struct {
			Name string `json:"name"`
			Kind string `json:"kind"`
		}) bool {
			return m.Name == fam && m.Kind == "family"
		})
		if !disc.OK || !found {
			lr.t.Errorf("round %d: %q did not discover the acknowledged family %s: %.500s", lr.round, prompt, fam, d.body)
			return
		}

		windows := []int{5 + rng.IntN(246)}
		if rng.IntN(2) == 0 {
			if w := 5 + rng.IntN(246); w != windows[0] {
				windows = append(windows, w)
			}
		}
		g, _ := json.Marshal(map[string]any{
			"request":   map[string]any{"family": fam, "metric": "SRP", "params": map[string]any{"window": windows}, "data": dataSource},
			"discovery": d.id,
		})
		gr, ok := lr.write(ctx, kindGrounding, "POST", "/v1/ground", g, http.StatusOK, "id")
		if !ok {
			return
		}
		x, _ := json.Marshal(map[string]string{"grounding": gr.id})
		if _, ok := lr.write(ctx, kindExecution, "POST", "/v1/executions", x, http.StatusCreated, "hash"); !ok {
			return
		}
	}
}

type written struct {
	id   string
	body []byte
}

// write sends one document-creating request and records it when
// acknowledged. It reports false when the loop should stop.
func (lr *loadRun) write(ctx context.Context, kind, method, path string, body []byte, want int, idField string) (written, bool) {
	r := lr.c.do(ctx, method, path, body, false)
	if r.err != nil {
		if !refused(r.err) {
			lr.l.inFlight()
		}
		return written{}, false
	}
	if r.status != want {
		lr.t.Errorf("round %d: %s %s: %d, want %d: %.500s", lr.round, method, path, r.status, want, r.body)
		return written{}, false
	}
	var idOnly map[string]json.RawMessage
	var id string
	if err := json.Unmarshal(r.body, &idOnly); err == nil {
		_ = json.Unmarshal(idOnly[idField], &id)
	}
	norm, err := normalise(r.body)
	if err != nil || id == "" {
		lr.t.Errorf("round %d: %s %s: answer without %q (%v): %.500s", lr.round, method, path, idField, err, r.body)
		return written{}, false
	}
	lr.l.ackDoc(docAck{round: lr.round, kind: kind, id: id, body: norm})
	return written{id: id, body: r.body}, true
}
