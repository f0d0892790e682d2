package server

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
)

// The 200 bodies of POST /v1/discover and POST /v1/ground are written
// without reflection: the bytes echo's c.JSON writes (encoding/json, HTML
// escaping on, a trailing newline), field by field, for the values whose
// every string is plain (package plainjson) — which the server's own
// names, terms and digests are. Any other value, and any request for
// pretty output, goes to c.JSON as before. TestResponseJSON and
// FuzzResponseJSON compare the two on values with every field set.

// writeJSON answers 200 with v's JSON, written by fast when it can.
func writeJSON[T any](c echo.Context, v *T, fast func([]byte, *T) ([]byte, bool)) error {
	// c.JSON indents for ?pretty and in debug mode: leave those to it.
	if c.Request().URL.RawQuery == "" && !c.Echo().Debug {
		buf := bodies.Get().(*[]byte)
		b, ok := fast((*buf)[:0], v)
		if cap(b) <= maxPooledBody {
			*buf = b
			defer bodies.Put(buf)
		}
		if ok {
			// The response copies b into its buffer; b goes back to the pool.
			return c.JSONBlob(http.StatusOK, append(b, '\n'))
		}
	}
	return c.JSON(http.StatusOK, v)
}

// bodies holds writeJSON's buffers, up to maxPooledBody bytes each: one
// huge answer should not pin its buffer.
var bodies = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

const maxPooledBody = 64 << 10

// appendDigest appends d as a JSON string; false for the zero digest,
// which encoding/json refuses.
func appendDigest(b []byte, d hashing.Digest) ([]byte, bool) {
	b = append(b, '"')
	b, err := d.AppendText(b)
	return append(b, '"'), err == nil
}

// appendList appends xs as a JSON array (null when nil), each element
// written by each.
func appendList[T any](b []byte, xs []T, each func([]byte, T) ([]byte, bool)) ([]byte, bool) {
	if xs == nil {
		return append(b, "null"...), true
	}
	b = append(b, '[')
	for i, x := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = each(b, x); !ok {
			return b, false
		}
	}
	return append(b, ']'), true
}

// appendDiscovery appends what encoding/json writes for r.
func appendDiscovery(b []byte, r *discover.Result) ([]byte, bool) {
	ok := true
	dig := func(d hashing.Digest) {
		if ok {
			b, ok = appendDigest(b, d)
		}
	}
	list := func(ss []string) {
		if ok {
			b, ok = appendList(b, ss, hashing.AppendPlainString)
		}
	}
	b = append(b, `{"id":`...)
	dig(r.ID)
	b = append(b, `,"registry":`...)
	dig(r.Registry)
	b = append(b, `,"version":`...)
	b = strconv.AppendUint(b, r.Version, 10)
	b = append(b, `,"terms":`...)
	list(r.Terms)
	b = append(b, `,"matches":`...)
	if ok {
		b, ok = appendList(b, r.Matches, appendMatch)
	}
	b = append(b, `,"unresolved":`...)
	list(r.Unresolved)
	b = append(b, `,"ok":`...)
	b = strconv.AppendBool(b, r.OK)
	if rel := r.Relevance; rel != nil {
		b = append(b, `,"relevance":{"terms":`...)
		list(rel.Terms)
		for _, f := range []struct{ key, s string }{{`,"scoring":`, rel.Scoring}, {`,"vectors":`, rel.Vectors}, {`,"index":`, rel.Index}} {
			b = append(b, f.key...)
			if ok {
				b, ok = hashing.AppendPlainString(b, f.s)
			}
		}
		b = append(b, '}')
	}
	return append(b, '}'), ok
}

// appendMatch appends what encoding/json writes for m.
func appendMatch(b []byte, m discover.Match) ([]byte, bool) {
	ok := true
	str := func(s string) {
		if ok {
			b, ok = hashing.AppendPlainString(b, s)
		}
	}
	b = append(b, `{"term":`...)
	str(m.Term)
	b = append(b, `,"name":`...)
	str(m.Name)
	b = append(b, `,"kind":`...)
	str(string(m.Kind))
	b = append(b, `,"mode":`...)
	str(string(m.Mode))
	b = append(b, `,"confidence":`...)
	if ok {
		b, ok = hashing.AppendPlainFloat(b, m.Confidence)
	}
	for _, d := range []struct {
		key string
		d   hashing.Digest
	}{{`,"capability":`, m.Capability}, {`,"disc":`, m.Disc}} {
		b = append(b, d.key...)
		if ok {
			b, ok = appendDigest(b, d.d)
		}
	}
	if m.Inverts != "" {
		b = append(b, `,"inverts":`...)
		str(m.Inverts)
	}
	return append(b, '}'), ok
}

// appendCheck appends what encoding/json writes for c.
func appendCheck(b []byte, c ground.CheckResult) ([]byte, bool) {
	b = append(b, `{"name":`...)
	b, ok := hashing.AppendPlainString(b, c.Name)
	b = append(b, `,"passed":`...)
	b = strconv.AppendBool(b, c.Passed)
	b = append(b, `,"failures":`...)
	b = strconv.AppendInt(b, int64(c.Failures), 10)
	return append(b, '}'), ok
}

// appendGrounding appends what encoding/json writes for g, when g is an
// admitted family request: a pipeline, repairs or failures take
// encoding/json's path.
func appendGrounding(b []byte, g *Grounding) ([]byte, bool) {
	req, dec := &g.Request, &g.Decision
	if len(req.Pipeline) > 0 || req.Output != "" || len(req.Repairs) > 0 || len(dec.Failures) > 0 {
		return b, false
	}
	ok := true
	str := func(s string) {
		if ok {
			b, ok = hashing.AppendPlainString(b, s)
		}
	}
	optDig := func(key string, d *hashing.Digest) {
		if ok && d != nil {
			b = append(b, key...)
			b, ok = appendDigest(b, *d)
		}
	}
	b = append(b, '{')
	optDig(`"id":`, g.ID)
	if g.ID != nil {
		b = append(b, ',')
	}
	b = append(b, `"request":{`...)
	if req.Family != "" {
		b = append(b, `"family":`...)
		str(req.Family)
		b = append(b, ',')
	}
	b = append(b, `"metric":`...)
	str(req.Metric)
	b = append(b, `,"params":`...)
	if req.Params == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '{')
		for i, name := range slices.Sorted(maps.Keys(req.Params)) {
			if i > 0 {
				b = append(b, ',')
			}
			str(name)
			b = append(b, ':')
			if ok {
				b, ok = appendParam(b, req.Params[name])
			}
		}
		b = append(b, '}')
	}
	b = append(b, `,"data":`...)
	str(req.Data)
	b = append(b, '}')
	optDig(`,"discovery":`, g.Discovery)
	b = append(b, `,"registry_version":`...)
	b = strconv.AppendUint(b, g.RegistryVersion, 10)
	b = append(b, `,"registry":`...)
	if ok {
		b, ok = appendDigest(b, g.Registry)
	}
	optDig(`,"policies":`, g.Policies)
	optDig(`,"data_digest":`, g.DataDigest)
	b = append(b, `,"decision":{"admitted":`...)
	b = strconv.AppendBool(b, dec.Admitted)
	b = append(b, `,"checks":`...)
	if ok {
		b, ok = appendList(b, dec.Checks, appendCheck)
	}
	b = append(b, `,"failures":`...)
	if dec.Failures == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, "[]"...)
	}
	return append(b, "}}"...), ok
}

// appendParam appends p as encoding/json writes it: Param.MarshalJSON's
// bytes, which encoding/json would compact and HTML-escape, and which are
// both already (json.Marshal's own output, or plain JSON).
func appendParam(b []byte, p ground.Param) ([]byte, bool) {
	if !p.List && len(p.Values) == 0 {
		return b, false // MarshalJSON would panic: let encoding/json report it
	}
	raw, err := p.MarshalJSON()
	return append(b, raw...), err == nil
}
