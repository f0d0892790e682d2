package ground

import (
	"strings"

	"github.com/groundgate/groundgate/internal/plainjson"
)

// decodePlainRequest is DecodeRequest's fast path: a family request in
// plain JSON (package plainjson) that DecodeRequest would accept without
// a failure, decoded to the Request it would return. It reports false for
// everything else — a pipeline, an unknown or missing field, a null, a
// value out of bounds — which DecodeRequest then decodes, and reports on,
// as it always has. FuzzDecodeRequestPlain checks the two agree.
func decodePlainRequest(data []byte) (Request, bool) {
	r := Request{Params: map[string]Param{}}
	s := plainjson.New(data)
	var family, metric, dataSrc bool
	str := func(dst *string, seen *bool) bool {
		v, ok := s.String()
		*dst, *seen = v, true
		return ok && strings.TrimSpace(v) != "" && len(v) <= MaxStringLen
	}
	ok := s.Object(func(key []byte) bool {
		switch string(key) {
		case "family":
			return str(&r.Family, &family)
		case "metric":
			return str(&r.Metric, &metric)
		case "data":
			return str(&r.Data, &dataSrc)
		case "params": // absent, they are no parameters, as in DecodeRequest
			return decodePlainParams(s, r.Params)
		}
		return false
	})
	if !ok || !s.End() || !family || !metric || !dataSrc {
		return Request{}, false
	}
	return r, true
}

// decodePlainParams reads a params object into dst, as decodeParams and
// Param.UnmarshalJSON would, within the same bounds.
func decodePlainParams(s *plainjson.Scanner, dst map[string]Param) bool {
	points := 1
	ok := s.Object(func(key []byte) bool {
		if len(dst) == MaxParams {
			return false
		}
		var p Param
		if s.Peek() == '[' {
			p.List = true
			if !s.Array(func() bool {
				v, ok := plainScalar(s)
				p.Values = append(p.Values, v)
				return ok && len(p.Values) <= MaxListLen
			}) || len(p.Values) == 0 {
				return false
			}
		} else {
			v, ok := plainScalar(s)
			if !ok {
				return false
			}
			p.Values = []Scalar{v}
		}
		dst[string(key)] = p
		points *= len(p.Values)
		return points <= MaxGridPoints
	})
	return ok
}

// plainScalar reads a number or a string parameter value.
func plainScalar(s *plainjson.Scanner) (Scalar, bool) {
	if s.Peek() == '"' {
		v, ok := s.String()
		return String(v), ok && len(v) <= MaxStringLen
	}
	v, ok := s.Number()
	return Number(v), ok
}
