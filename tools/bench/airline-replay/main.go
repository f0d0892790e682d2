// Command airline-replay measures groundgate in front of τ-bench's airline
// tools (issue 28), from outside like a host: against a running
// `groundgate serve` (admin token in GROUNDGATE_ADMIN_TOKEN) it puts the
// upstream (examples/airline/upstream.json, airline-mcp over --db), syncs
// it with examples/airline/overlay.json, puts examples/airline/policies.json,
// then for each of the 50 tasks opens a session with the instruction and the
// task's host facts (gold-writes.json) and sends the gold actions in order
// through POST /v1/sessions/{id}/calls. A refusal whose failures all name
// a read to make first (`next`) is answered by making those reads and
// sending the call again (at most -max-rounds times): "needed a read
// first". Each write's outcome is set against gold-writes.json's reading
// of the policy. Then the 7 tasks without actions' wanted calls, and
// mutations of every gold write, one per rule the mutation breaks. Every
// task and every mutation runs on a fresh world: the upstream is put again
// with a new AIRLINE_RUN variable, which restarts airline-mcp.
//
// Latency is the client's, per write (the admitted or refused call itself,
// not the reads made for it), beside the same gold actions sent to
// airline-mcp directly over stdio (go-sdk client, a fresh process per task).
//
//	airline-replay --url http://127.0.0.1:PORT --data DIR --examples DIR --airline-mcp BIN [--json FILE]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/groundgate/groundgate/airline"
	ex "github.com/groundgate/groundgate/examples/airline"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "airline-replay:", err)
		os.Exit(1)
	}
}

type config struct {
	url, data, examples, bin, jsonOut string
	maxRounds                         int
	mutations, direct                 bool
	repeat                            int
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("airline-replay", flag.ContinueOnError)
	var c config
	fs.StringVar(&c.url, "url", "http://127.0.0.1:8080", "groundgate's base URL")
	fs.StringVar(&c.data, "data", "", "shared/data/tau-airline")
	fs.StringVar(&c.examples, "examples", "examples/airline", "examples/airline")
	fs.StringVar(&c.bin, "airline-mcp", "airline-mcp", "the airline-mcp binary (absolute path)")
	fs.StringVar(&c.jsonOut, "json", "", "also write the JSON summary here")
	fs.IntVar(&c.maxRounds, "max-rounds", 6, "reads-then-retry rounds per call")
	fs.BoolVar(&c.mutations, "mutations", true, "send the mutations")
	fs.BoolVar(&c.direct, "direct", true, "time the gold actions against airline-mcp directly")
	fs.IntVar(&c.repeat, "repeat", 5, "after a task's gold actions, send each of its writes this many times more (`n`), timed apart: the steady state of a session whose reads are made")
	if err := fs.Parse(args); err != nil {
		return err
	}
	token := os.Getenv("GROUNDGATE_ADMIN_TOKEN")
	if token == "" || c.data == "" {
		return errors.New("GROUNDGATE_ADMIN_TOKEN and --data are needed")
	}
	r, err := newReplay(c, token)
	if err != nil {
		return err
	}
	if err := r.setup(ctx); err != nil {
		return err
	}
	sum, err := r.measure(ctx)
	if err != nil {
		return err
	}
	writeTable(stdout, sum)
	if c.jsonOut != "" {
		b, _ := json.MarshalIndent(sum, "", "  ")
		if err := os.WriteFile(c.jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return sum.check()
}

// check is what the run must show (issue 28): every grounded compliant
// write admitted, every grounded non-compliant one refused naming its
// rule, the wanted calls as gold-writes.json reads them, every grounded
// mutation caught naming its rule, and no policy verdict that differs.
func (s *Summary) check() error {
	var bad []string
	if n := s.Compliant - s.F3Compliant; s.CompliantAdmitted != n {
		bad = append(bad, fmt.Sprintf("compliant writes admitted %d of %d", s.CompliantAdmitted, n))
	}
	if n := s.NonCompliant - (s.F3 - s.F3Compliant); s.NonCompliantRefused != n {
		bad = append(bad, fmt.Sprintf("non-compliant writes refused naming their rule %d of %d", s.NonCompliantRefused, n))
	}
	if s.PolicyAgrees != len(s.Writes) || len(s.FalseRefusals) > 0 || len(s.Missed) > 0 {
		bad = append(bad, fmt.Sprintf("policy verdicts as gold-writes.json %d of %d (false refusals %v, missed %v)", s.PolicyAgrees, len(s.Writes), s.FalseRefusals, s.Missed))
	}
	if s.WantedRefused != s.WantedForbidden || s.WantedAdmitted != s.WantedAllowed {
		bad = append(bad, fmt.Sprintf("wanted calls: forbidden refused %d of %d, allowed admitted %d of %d", s.WantedRefused, s.WantedForbidden, s.WantedAdmitted, s.WantedAllowed))
	}
	for _, rule := range sortedKeys(s.MutationsByRule) {
		if c := s.MutationsByRule[rule]; c[0] != c[2] {
			bad = append(bad, fmt.Sprintf("mutations of %s caught %d of %d", rule, c[0], c[2]))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("airline-replay: %s", strings.Join(bad, "; "))
	}
	return nil
}

// replay holds what the run reads and the client it talks with.
type replay struct {
	c        config
	hc       *http.Client
	token    string
	tasks    []ex.Task
	gold     ex.GoldFile
	facts    map[int]map[string]any
	verdicts map[[2]int]ex.GoldWrite
	world    *airline.World
	upstream map[string]any
	run      int
	pid      float64
	notes    []string
}

func newReplay(c config, token string) (*replay, error) {
	r := &replay{c: c, hc: &http.Client{Timeout: 60 * time.Second}, token: token, facts: map[int]map[string]any{}, verdicts: map[[2]int]ex.GoldWrite{}}
	b, err := os.ReadFile(filepath.Join(c.data, "tasks.json"))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &r.tasks); err != nil {
		return nil, err
	}
	if b, err = os.ReadFile(filepath.Join(c.examples, "gold-writes.json")); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &r.gold); err != nil {
		return nil, err
	}
	for _, f := range r.gold.Facts {
		r.facts[f.Task] = f.Facts
	}
	for _, w := range r.gold.Writes {
		r.verdicts[[2]int{w.Task, w.Index}] = w
	}
	if r.world, err = airline.Load(filepath.Join(c.data, "db")); err != nil {
		return nil, err
	}
	if b, err = os.ReadFile(filepath.Join(c.examples, "upstream.json")); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &r.upstream); err != nil {
		return nil, err
	}
	db, _ := filepath.Abs(filepath.Join(c.data, "db"))
	r.upstream["command"] = []any{c.bin, "--db", db}
	return r, nil
}

// httpError is an answer other than the one wanted.
type httpError struct {
	status int
	body   string
}

func (e *httpError) Error() string { return fmt.Sprintf("HTTP %d: %.600s", e.status, e.body) }

// do sends body (JSON) with the bearer token and decodes the answer into
// out; it returns the status.
func (r *replay) do(ctx context.Context, method, path, bearer string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.c.url+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, &httpError{resp.StatusCode, string(b)}
		}
	}
	return resp.StatusCode, nil
}

// putUpstream puts the upstream with AIRLINE_RUN=run (a new process, a
// fresh world) and waits until the new process serves.
func (r *replay) putUpstream(ctx context.Context) error {
	r.run++
	cfg := map[string]any{}
	for k, v := range r.upstream {
		cfg[k] = v
	}
	cfg["env"] = map[string]string{"AIRLINE_RUN": fmt.Sprint(r.run)}
	var out json.RawMessage
	st, err := r.do(ctx, http.MethodPut, "/v1/upstreams/airline", r.token, cfg, &out)
	if err == nil && st == http.StatusBadRequest && strings.Contains(string(out), "file_as") {
		delete(r.upstream, "file_as")
		r.notes = append(r.notes, "this server's upstream configuration has no file_as: writes' results are not filed as reads")
		r.run--
		return r.putUpstream(ctx)
	}
	if err != nil || st/100 != 2 {
		return fmt.Errorf("PUT upstream: %d %v %s", st, err, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var v struct {
			Status struct {
				Connected bool    `json:"connected"`
				PID       float64 `json:"pid"`
				Tools     []struct {
					State string `json:"state"`
				} `json:"tools"`
			} `json:"status"`
		}
		if _, err := r.do(ctx, http.MethodGet, "/v1/upstreams/airline", r.token, nil, &v); err == nil && v.Status.Connected && len(v.Status.Tools) == 14 &&
			(v.Status.PID == 0 || v.Status.PID != r.pid) {
			r.pid = v.Status.PID
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("the upstream did not connect within 30 s")
}

func (r *replay) setup(ctx context.Context) error {
	if err := r.putUpstream(ctx); err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(r.c.examples, "overlay.json"))
	if err != nil {
		return err
	}
	var overlay map[string]any
	if err := json.Unmarshal(b, &overlay); err != nil {
		return err
	}
	var plan json.RawMessage
	if st, err := r.do(ctx, http.MethodPost, "/v1/upstreams/airline/sync", r.token, map[string]any{"apply": true, "overlay": overlay}, &plan); err != nil || st != 200 {
		return fmt.Errorf("sync: %d %v %s", st, err, plan)
	}
	if b, err = os.ReadFile(filepath.Join(r.c.examples, "policies.json")); err != nil {
		return err
	}
	var ps map[string]json.RawMessage
	if err := json.Unmarshal(b, &ps); err != nil {
		return err
	}
	for _, name := range sortedKeys(ps) {
		var out json.RawMessage
		if st, err := r.do(ctx, http.MethodPut, "/v1/policies/"+name, r.token, ps[name], &out); err != nil || st/100 != 2 {
			return fmt.Errorf("PUT policy %s: %d %v %s", name, st, err, out)
		}
	}
	return nil
}

// session is an open session.
type session struct {
	ID    string `json:"id"`
	Token string `json:"token"`
	// Discovery is the first turn's evidence: its id, or the result.
	Discovery json.RawMessage `json:"discovery"`
	modes     map[string]string
}

func (r *replay) open(ctx context.Context, prompt string, facts map[string]any) (*session, error) {
	if facts == nil {
		facts = map[string]any{}
	}
	var s session
	st, err := r.do(ctx, http.MethodPost, "/v1/sessions", r.token, map[string]any{"prompt": prompt, "facts": facts}, &s)
	if err != nil || st != http.StatusCreated {
		return nil, fmt.Errorf("POST /v1/sessions: %d %v", st, err)
	}
	s.modes = map[string]string{}
	var disc struct {
		ID      string `json:"id"`
		Matches []struct {
			Name       string  `json:"name"`
			Mode       string  `json:"mode"`
			Confidence float64 `json:"confidence"`
		} `json:"matches"`
	}
	var id string
	if json.Unmarshal(s.Discovery, &id) != nil {
		_ = json.Unmarshal(s.Discovery, &disc)
		id = disc.ID
	}
	if len(disc.Matches) == 0 && id != "" {
		_, _ = r.do(ctx, http.MethodGet, "/v1/discoveries/"+id, "", nil, &disc)
	}
	best := map[string]float64{}
	for _, m := range disc.Matches {
		if c, ok := best[m.Name]; !ok || m.Confidence > c {
			best[m.Name], s.modes[m.Name] = m.Confidence, m.Mode
		}
	}
	return &s, nil
}

// failure is one of a refusal's failures.
type failure struct {
	Code   string          `json:"code"`
	Field  string          `json:"field"`
	Detail string          `json:"detail"`
	Policy string          `json:"policy"`
	Core   []string        `json:"core"`
	Reason string          `json:"reason"`
	Next   json.RawMessage `json:"next"`
}

// outcome is one call's, after the reads it needed.
type outcome struct {
	Status   int       `json:"status"`
	Failures []failure `json:"failures,omitempty"`
	IsError  bool      `json:"tool_error,omitempty"`
	Reads    int       `json:"reads_first,omitempty"`
	Rounds   int       `json:"rounds,omitempty"`
	Latency  float64   `json:"latency_ms"`
	Problem  string    `json:"problem,omitempty"`
}

func (o outcome) admitted() bool { return o.Status == http.StatusOK }

func (o outcome) has(code string) bool {
	for _, f := range o.Failures {
		if f.Code == code {
			return true
		}
	}
	return false
}

// rules are the named rules the F11 failures cite.
func (o outcome) rules() []string {
	set := map[string]bool{}
	for _, f := range o.Failures {
		if f.Code != "F11" {
			continue
		}
		for _, c := range f.Core {
			set[c] = true
		}
		if len(f.Core) == 0 {
			for _, r := range ex.Rules {
				if strings.Contains(f.Detail, r.Name) {
					set[r.Name] = true
				}
			}
		}
	}
	return sortedKeys(set)
}

// call sends the call in the session; a refusal whose failures all name
// a read (F3 aside: a call not grounded is still decided by the policies,
// for the record) is answered with the reads, then the call again.
func (r *replay) call(ctx context.Context, s *session, tool string, args json.RawMessage) outcome {
	var o outcome
	for round := 0; ; round++ {
		var resp struct {
			Result struct {
				IsError bool `json:"isError"`
			} `json:"result"`
			Failures []failure `json:"failures"`
			Detail   string    `json:"detail"`
		}
		start := time.Now()
		st, err := r.do(ctx, http.MethodPost, "/v1/sessions/"+s.ID+"/calls", s.Token, map[string]any{"tool": "airline." + tool, "arguments": args}, &resp)
		o.Latency = float64(time.Since(start).Microseconds()) / 1000
		o.Status, o.Failures, o.IsError, o.Rounds = st, resp.Failures, resp.Result.IsError, round
		if err != nil {
			o.Problem = err.Error()
			return o
		}
		if st != http.StatusUnprocessableEntity || len(resp.Failures) == 0 || round >= r.c.maxRounds {
			if st != 200 && st != 422 {
				o.Problem = resp.Detail
			}
			return o
		}
		var nexts []struct {
			Tool      string          `json:"tool"`
			Arguments json.RawMessage `json:"arguments"`
		}
		for _, f := range resp.Failures {
			var n struct {
				Tool      string          `json:"tool"`
				Arguments json.RawMessage `json:"arguments"`
			}
			if f.Code == "F3" {
				// Not grounded: still make the reads, so that the
				// policies' verdict on the call is known.
				continue
			}
			if len(f.Next) == 0 || json.Unmarshal(f.Next, &n) != nil || n.Tool == "" {
				return o
			}
			nexts = append(nexts, n)
		}
		if len(nexts) == 0 {
			return o
		}
		for _, n := range nexts {
			var out json.RawMessage
			st, err := r.do(ctx, http.MethodPost, "/v1/sessions/"+s.ID+"/calls", s.Token, map[string]any{"tool": n.Tool, "arguments": n.Arguments}, &out)
			if err != nil || st != 200 {
				o.Problem = fmt.Sprintf("the read %s%s: %d %v %.300s", n.Tool, n.Arguments, st, err, out)
				return o
			}
			o.Reads++
		}
	}
}

// WriteResult is one gold write through the gateway.
type WriteResult struct {
	Task      int      `json:"task"`
	Index     int      `json:"index"`
	Tool      string   `json:"tool"`
	Compliant bool     `json:"compliant"`
	Rule      string   `json:"rule,omitempty"`
	Also      []string `json:"also,omitempty"`
	Admitted  bool     `json:"admitted"`
	Codes     []string `json:"codes,omitempty"`
	Rules     []string `json:"rules,omitempty"`
	Grounding string   `json:"grounding"`
	outcome
}

// names is whether the refusal names a rule the call breaks (the core a
// refusal gives is minimal: one of them may be enough).
func (w WriteResult) names() bool {
	for _, r := range append([]string{w.Rule}, w.Also...) {
		if contains(w.Rules, r) {
			return true
		}
	}
	return false
}

// MutationResult is one mutation of a gold write.
type MutationResult struct {
	Task     int      `json:"task"`
	Index    int      `json:"index"`
	Tool     string   `json:"tool"`
	Mutation string   `json:"mutation"`
	Rule     string   `json:"rule"`
	Refused  bool     `json:"refused"`
	Named    bool     `json:"named"`
	F3       bool     `json:"f3,omitempty"`
	Rules    []string `json:"rules,omitempty"`
	Codes    []string `json:"codes,omitempty"`
	Problem  string   `json:"problem,omitempty"`
}

// Summary is the run's.
type Summary struct {
	Notes  []string      `json:"notes,omitempty"`
	Writes []WriteResult `json:"writes"`
	Wanted []WriteResult `json:"wanted"`
	// Gold writes: compliant ones admitted, non-compliant ones refused
	// with their rule named; F3 (the instruction did not ground the tool)
	// apart: they are the discovery's gap.
	CompliantAdmitted    int `json:"compliant_admitted"`
	Compliant            int `json:"compliant"`
	NonCompliantRefused  int `json:"non_compliant_refused_naming_rule"`
	NonCompliantRefusedA int `json:"non_compliant_refused"`
	NonCompliant         int `json:"non_compliant"`
	F3                   int `json:"f3"`
	F3Compliant          int `json:"f3_compliant"`
	// PolicyAgrees counts the writes whose F11 verdict (refused by a
	// policy or not) is gold-writes.json's, F3 or not.
	PolicyAgrees    int               `json:"policy_agrees"`
	NeededReads     int               `json:"needed_a_read_first"`
	ReadsMade       int               `json:"reads_made_first"`
	ToolErrors      int               `json:"tool_errors"`
	Grounding       map[string]int    `json:"grounding"`
	FalseRefusals   []string          `json:"false_refusals"`
	Missed          []string          `json:"missed"`
	WantedForbidden int               `json:"wanted_forbidden"`
	WantedRefused   int               `json:"wanted_refused_naming_rule"`
	WantedAllowed   int               `json:"wanted_allowed"`
	WantedAdmitted  int               `json:"wanted_allowed_admitted"`
	WantedF3        int               `json:"wanted_f3"`
	Mutations       []MutationResult  `json:"mutations"`
	MutationsByRule map[string][3]int `json:"mutations_by_rule"` // caught naming the rule, refused, total (F3 excluded)
	MutationsF3     int               `json:"mutations_f3"`
	Latency         map[string]Pcts   `json:"latency_ms"`
	Seconds         float64           `json:"seconds"`
}

// Pcts are a latency's percentiles.
type Pcts struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
}

func pcts(xs []float64) Pcts {
	if len(xs) == 0 {
		return Pcts{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	at := func(q float64) float64 {
		i := int(q*float64(len(s)-1) + 0.5)
		return float64(int(s[i]*100+0.5)) / 100
	}
	return Pcts{N: len(s), P50: at(0.5), P99: at(0.99)}
}

func codes(fs []failure) []string {
	var cs []string
	for _, f := range fs {
		cs = append(cs, f.Code)
	}
	return distinct(cs)
}

func (r *replay) measure(ctx context.Context) (*Summary, error) {
	start := time.Now()
	sum := &Summary{Grounding: map[string]int{}, MutationsByRule: map[string][3]int{}, Latency: map[string]Pcts{}, FalseRefusals: []string{}, Missed: []string{}}
	var gw, gwAdmitted, gwRefused, gwSteady, gwSteadyAdmitted, gwSteadyRefused []float64
	for _, t := range r.tasks {
		if len(t.Actions) == 0 {
			continue
		}
		if err := r.putUpstream(ctx); err != nil {
			return nil, err
		}
		s, err := r.open(ctx, t.Instruction, r.facts[t.Index])
		if err != nil {
			return nil, err
		}
		for i, a := range t.Actions {
			o := r.call(ctx, s, a.Name, a.Arguments)
			if !airline.Writes[a.Name] {
				if o.Status != 200 {
					r.notes = append(r.notes, fmt.Sprintf("task %d action %d %s: %d %v %s", t.Index, i, a.Name, o.Status, codes(o.Failures), o.Problem))
				}
				continue
			}
			v := r.verdicts[[2]int{t.Index, i}]
			w := WriteResult{Task: t.Index, Index: i, Tool: a.Name, Compliant: v.Compliant, Rule: v.Rule, Also: v.Also, Admitted: o.admitted(),
				Codes: codes(o.Failures), Rules: o.rules(), Grounding: s.modes["airline."+a.Name], outcome: o}
			if w.Grounding == "" {
				w.Grounding = "none"
			}
			sum.Writes = append(sum.Writes, w)
			r.score(sum, w)
			gw = append(gw, o.Latency)
			if o.admitted() {
				gwAdmitted = append(gwAdmitted, o.Latency)
			} else {
				gwRefused = append(gwRefused, o.Latency)
			}
		}
		// The steady state: the same writes again, the session's reads
		// made (each decided and, when admitted, forwarded: a repeated
		// write may now be refused or answer a tool error).
		for range r.c.repeat {
			for _, a := range t.Actions {
				if !airline.Writes[a.Name] {
					continue
				}
				o := r.call(ctx, s, a.Name, a.Arguments)
				gwSteady = append(gwSteady, o.Latency)
				if o.admitted() {
					gwSteadyAdmitted = append(gwSteadyAdmitted, o.Latency)
				} else {
					gwSteadyRefused = append(gwSteadyRefused, o.Latency)
				}
			}
		}
	}
	for _, wc := range r.gold.Wanted {
		if err := r.putUpstream(ctx); err != nil {
			return nil, err
		}
		s, err := r.open(ctx, r.tasks[wc.Task].Instruction, r.facts[wc.Task])
		if err != nil {
			return nil, err
		}
		o := r.call(ctx, s, wc.Tool, wc.Arguments)
		w := WriteResult{Task: wc.Task, Index: -1, Tool: wc.Tool, Compliant: !wc.Forbidden, Rule: wc.Rule, Also: wc.Also, Admitted: o.admitted(),
			Codes: codes(o.Failures), Rules: o.rules(), Grounding: s.modes["airline."+wc.Tool], outcome: o}
		if w.Grounding == "" {
			w.Grounding = "none"
		}
		sum.Wanted = append(sum.Wanted, w)
		switch {
		case o.has("F3"):
			sum.WantedF3++
		case wc.Forbidden:
			sum.WantedForbidden++
			if !o.admitted() && w.names() {
				sum.WantedRefused++
			}
		default:
			sum.WantedAllowed++
			if o.admitted() {
				sum.WantedAdmitted++
			}
		}
	}
	if r.c.mutations {
		if err := r.mutate(ctx, sum); err != nil {
			return nil, err
		}
	}
	sum.Latency["gateway_write"] = pcts(gw)
	sum.Latency["gateway_write_admitted"] = pcts(gwAdmitted)
	sum.Latency["gateway_write_refused"] = pcts(gwRefused)
	if len(gwSteady) > 0 {
		sum.Latency["gateway_write_steady"] = pcts(gwSteady)
		sum.Latency["gateway_write_steady_admitted"] = pcts(gwSteadyAdmitted)
		sum.Latency["gateway_write_steady_refused"] = pcts(gwSteadyRefused)
	}
	if r.c.direct {
		d, steady, err := r.directLatency(ctx)
		if err != nil {
			return nil, err
		}
		sum.Latency["direct_write"] = pcts(d)
		if len(steady) > 0 {
			sum.Latency["direct_write_steady"] = pcts(steady)
		}
	}
	sum.Notes = r.notes
	sum.Seconds = float64(int(time.Since(start).Seconds()*10)) / 10
	return sum, nil
}

func (r *replay) score(sum *Summary, w WriteResult) {
	sum.Grounding[w.Grounding]++
	if w.Reads > 0 {
		sum.NeededReads++
		sum.ReadsMade += w.Reads
	}
	if w.IsError {
		sum.ToolErrors++
	}
	policyRefused := len(w.Rules) > 0
	if policyRefused != !w.Compliant || (!w.Compliant && !w.names()) {
		if w.Compliant && policyRefused {
			sum.FalseRefusals = append(sum.FalseRefusals, fmt.Sprintf("%d/%d %s: %v", w.Task, w.Index, w.Tool, w.Rules))
		} else if !w.Compliant && !policyRefused {
			sum.Missed = append(sum.Missed, fmt.Sprintf("%d/%d %s: %s", w.Task, w.Index, w.Tool, w.Rule))
		}
	} else {
		sum.PolicyAgrees++
	}
	if w.Compliant {
		sum.Compliant++
	} else {
		sum.NonCompliant++
	}
	if contains(w.Codes, "F3") {
		sum.F3++
		if w.Compliant {
			sum.F3Compliant++
		}
		return
	}
	if w.Compliant && w.Admitted {
		sum.CompliantAdmitted++
	}
	if !w.Compliant && !w.Admitted {
		sum.NonCompliantRefusedA++
		if w.names() {
			sum.NonCompliantRefused++
		}
	}
}

// directLatency sends every task's gold actions to airline-mcp directly
// (a fresh process per task) and times the writes.
func (r *replay) directLatency(ctx context.Context) (lat, steady []float64, err error) {
	db, _ := filepath.Abs(filepath.Join(r.c.data, "db"))
	for _, t := range r.tasks {
		if len(t.Actions) == 0 {
			continue
		}
		cl := mcp.NewClient(&mcp.Implementation{Name: "airline-replay", Version: "1"}, nil)
		cs, err := cl.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(r.c.bin, "--db", db), TerminateDuration: time.Second}, nil)
		if err != nil {
			return nil, nil, err
		}
		send := func(a ex.Action) (float64, error) {
			var args map[string]any
			_ = json.Unmarshal(a.Arguments, &args)
			start := time.Now()
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: a.Name, Arguments: args}); err != nil {
				return 0, err
			}
			return float64(time.Since(start).Microseconds()) / 1000, nil
		}
		for _, a := range t.Actions {
			ms, err := send(a)
			if err != nil {
				cs.Close()
				return nil, nil, err
			}
			if airline.Writes[a.Name] {
				lat = append(lat, ms)
			}
		}
		for range r.c.repeat {
			for _, a := range t.Actions {
				if !airline.Writes[a.Name] {
					continue
				}
				ms, err := send(a)
				if err != nil {
					cs.Close()
					return nil, nil, err
				}
				steady = append(steady, ms)
			}
		}
		cs.Close()
	}
	return lat, steady, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func distinct(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func writeTable(w io.Writer, s *Summary) {
	fmt.Fprintf(w, "gold writes: %d (%d compliant, %d not)\n", len(s.Writes), s.Compliant, s.NonCompliant)
	fmt.Fprintf(w, "  F3 (the instruction did not ground the tool): %d (%d of them compliant)\n", s.F3, s.F3Compliant)
	fmt.Fprintf(w, "  compliant admitted:               %d / %d (not F3)\n", s.CompliantAdmitted, s.Compliant-s.F3Compliant)
	fmt.Fprintf(w, "  non-compliant refused naming rule: %d / %d (not F3; %d refused)\n", s.NonCompliantRefused, s.NonCompliant-(s.F3-s.F3Compliant), s.NonCompliantRefusedA)
	fmt.Fprintf(w, "  policy verdict as gold-writes.json (F3 or not): %d / %d\n", s.PolicyAgrees, len(s.Writes))
	fmt.Fprintf(w, "  needed a read first: %d writes (%d reads); tool errors: %d\n", s.NeededReads, s.ReadsMade, s.ToolErrors)
	fmt.Fprintf(w, "  grounding: %v\n", s.Grounding)
	fmt.Fprintf(w, "  false refusals: %v\n  missed: %v\n", s.FalseRefusals, s.Missed)
	for _, x := range s.Writes {
		verdict := "compliant"
		if !x.Compliant {
			verdict = "breaks " + x.Rule
		}
		fmt.Fprintf(w, "    %2d/%-2d %-30s %-8s %-10s %v %v reads=%d %.1fms  (%s)\n", x.Task, x.Index, x.Tool, map[bool]string{true: "admitted", false: "refused"}[x.Admitted], x.Grounding, x.Codes, x.Rules, x.Reads, x.Latency, verdict)
	}
	fmt.Fprintf(w, "wanted calls of the tasks without actions: forbidden refused naming the rule %d / %d, allowed admitted %d / %d, F3 %d\n",
		s.WantedRefused, s.WantedForbidden, s.WantedAdmitted, s.WantedAllowed, s.WantedF3)
	for _, x := range s.Wanted {
		fmt.Fprintf(w, "    %2d %-30s %-8s %-10s %v %v reads=%d\n", x.Task, x.Tool, map[bool]string{true: "admitted", false: "refused"}[x.Admitted], x.Grounding, x.Codes, x.Rules, x.Reads)
	}
	if len(s.Mutations) > 0 {
		fmt.Fprintf(w, "mutations: %d (%d F3, apart)\n", len(s.Mutations), s.MutationsF3)
		for _, rule := range sortedKeys(s.MutationsByRule) {
			c := s.MutationsByRule[rule]
			fmt.Fprintf(w, "    %-85s caught %3d / %3d (refused %d)\n", rule, c[0], c[2], c[1])
		}
		for _, m := range s.Mutations {
			if !m.F3 && !m.Named {
				fmt.Fprintf(w, "    not caught: %d/%d %s %s: %v %v %s\n", m.Task, m.Index, m.Tool, m.Mutation, m.Codes, m.Rules, m.Problem)
			}
		}
	}
	for _, k := range sortedKeys(s.Latency) {
		p := s.Latency[k]
		fmt.Fprintf(w, "latency %-24s n=%3d p50 %7.2f ms p99 %7.2f ms\n", k, p.N, p.P50, p.P99)
	}
	for _, n := range s.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	fmt.Fprintf(w, "%.1f s\n", s.Seconds)
}
