package crashtest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
)

// checker compares what a restarted server holds with the ledger. Every
// mismatch is one acknowledged write lost (or altered).
type checker struct {
	t    *testing.T
	c    *client
	l    *ledger
	lost []string
}

func (k *checker) fail(format string, args ...any) {
	k.lost = append(k.lost, fmt.Sprintf(format, args...))
}

// currentRegistry checks the current version: every name the test wrote
// holds its last acknowledged content, or a later write whose answer a
// crash swallowed; its version is no older than any acknowledged one. What
// it finds becomes the only allowed content for the next round.
func (k *checker) currentRegistry(ctx context.Context) {
	r := k.c.do(ctx, "GET", "/v1/registry", nil, false)
	if !r.ack() {
		k.fail("GET /v1/registry: %d %v %.300s", r.status, r.err, r.body)
		return
	}
	var reg struct {
		Version      uint64            `json:"version"`
		Capabilities []json.RawMessage `json:"capabilities"`
	}
	if err := json.Unmarshal(r.body, &reg); err != nil {
		k.fail("GET /v1/registry: %v", err)
		return
	}
	type current struct {
		fp   string
		norm string
	}
	cur := make(map[string]current, len(reg.Capabilities))
	for _, raw := range reg.Capabilities {
		var e map[string]any
		if err := json.Unmarshal(raw, &e); err != nil {
			k.fail("registry entry: %v", err)
			return
		}
		norm, _ := normalise(raw)
		name, _ := e["name"].(string)
		cur[name] = current{fp: fingerprint(aliasesOf(e)), norm: norm}
	}
	k.l.mu.Lock()
	defer k.l.mu.Unlock()
	for _, a := range k.l.regs {
		if a.version > reg.Version {
			k.fail("registry: PUT %s was acknowledged at version %d, the restarted server is at version %d", a.name, a.version, reg.Version)
			break
		}
	}
	for name, allowed := range k.l.allowed {
		got := cur[name] // fp "" when absent
		if !slices.Contains(allowed, got.fp) {
			k.fail("registry: %s now has aliases %q; acknowledged or in-flight writes allow only %q", name, got.fp, allowed)
			continue
		}
		if last, ok := k.l.lastAck[name]; ok && got.fp == last.fp && got.norm != last.entry {
			k.fail("registry: %s differs from its acknowledged content (version %d):\n got  %.400s\n want %.400s", name, last.version, got.norm, last.entry)
		}
		k.l.allowed[name] = []string{got.fp}
	}
}

// versions checks that each acknowledged PUT's entry is in the version the
// server said holds it, byte for byte (after normalising).
func (k *checker) versions(ctx context.Context, acks []regAck) {
	byVersion := map[uint64][]regAck{}
	for _, a := range acks {
		byVersion[a.version] = append(byVersion[a.version], a)
	}
	for v, as := range byVersion {
		if ctx.Err() != nil {
			k.fail("checking versions: %v", ctx.Err())
			return
		}
		r := k.c.do(ctx, "GET", fmt.Sprintf("/v1/registry/versions/%d", v), nil, false)
		if !r.ack() {
			k.fail("GET /v1/registry/versions/%d (acknowledged for %s): %d %v %.300s", v, as[0].name, r.status, r.err, r.body)
			continue
		}
		var snap struct {
			Version      uint64            `json:"version"`
			Capabilities []json.RawMessage `json:"capabilities"`
		}
		if err := json.Unmarshal(r.body, &snap); err != nil || snap.Version != v {
			k.fail("GET /v1/registry/versions/%d: version %d, %v", v, snap.Version, err)
			continue
		}
		byName := map[string]string{}
		for _, raw := range snap.Capabilities {
			var e struct {
				Name string `json:"name"`
			}
			_ = json.Unmarshal(raw, &e)
			byName[e.Name], _ = normalise(raw)
		}
		for _, a := range as {
			switch got, ok := byName[a.name]; {
			case !ok:
				k.fail("registry: version %d lacks %s, acknowledged in it (round %d)", v, a.name, a.round)
			case got != a.entry:
				k.fail("registry: version %d holds %s as\n %.400s\nbut the PUT acknowledged\n %.400s", v, a.name, got, a.entry)
			}
		}
	}
}

// docs checks acknowledged discoveries, groundings, executions and call
// footprints: each is
// served again exactly as acknowledged; with replay, each execution is
// re-run and must match every layer.
func (k *checker) docs(ctx context.Context, docs []docAck, replay bool) (replayed int) {
	for _, d := range docs {
		if ctx.Err() != nil {
			k.fail("checking documents: %v", ctx.Err())
			return replayed
		}
		var path string
		switch d.kind {
		case kindDiscovery:
			path = "/v1/discoveries/" + d.id
		case kindGrounding:
			path = "/v1/groundings/" + d.id
		case kindExecution:
			path = "/v1/executions/" + d.id
		case kindCall:
			path = "/v1/calls/" + d.id
		}
		r := k.c.do(ctx, "GET", path, nil, d.kind == kindCall)
		if !r.ack() {
			k.fail("%s %s (round %d): GET %s: %d %v %.300s", d.kind, d.id, d.round, path, r.status, r.err, r.body)
			continue
		}
		if got, err := normalise(r.body); err != nil || got != d.body {
			k.fail("%s %s (round %d) differs from what was acknowledged (%v):\n got  %.400s\n want %.400s", d.kind, d.id, d.round, err, got, d.body)
			continue
		}
		if d.kind != kindExecution || !replay {
			continue
		}
		rp := k.c.do(ctx, "POST", path+"/replay", nil, false)
		var rep struct {
			Match      bool   `json:"match"`
			ReplayHash string `json:"replay_hash"`
		}
		if !rp.ack() || json.Unmarshal(rp.body, &rep) != nil || !rep.Match || rep.ReplayHash != d.id {
			k.fail("execution %s (round %d): replay %d %v: %.600s", d.id, d.round, rp.status, rp.err, rp.body)
			continue
		}
		replayed++
	}
	return replayed
}
