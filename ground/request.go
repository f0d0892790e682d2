// Package ground is the grounding gate Γ: it admits a proposed request only
// when every capability it names was discovered from the researcher's own
// words, and the evidence for that is genuine.
//
// Γ is an ordered chain of admission checks that all write into one
// decision record. Only this package can construct a Grounded value, the
// executor's sole input: a bare Request never executes.
package ground

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/pipeline"
)

// Request is a proposed pipeline (the paper's FPR): a strategy family — or
// a pipeline of registry steps and its output step (SPEC §11) — a scoring
// metric, parameters and a data source.
type Request struct {
	// Family names the strategy; empty when the request is a pipeline.
	Family string `json:"family,omitempty"`
	// Pipeline lists the steps of a composed strategy, Output the step
	// whose P&L is scored. Absent from family requests, whose canonical
	// bytes (and so every digest of them) are what they always were.
	Pipeline []Step `json:"pipeline,omitempty"`
	Output   string `json:"output,omitempty"`
	Metric   string `json:"metric"`
	// Params maps a parameter name to a scalar or a list; lists span a
	// grid. A pipeline's parameters are its steps'; this stays empty.
	Params map[string]Param `json:"params"`
	Data   string           `json:"data"`
	// Repairs lists what the gate's repair rules changed to admit the
	// request (never given by a client); hashed with the request.
	Repairs []pipeline.Repair `json:"repairs,omitempty"`
}

// IsPipeline reports whether the request is a pipeline.
func (r Request) IsPipeline() bool { return len(r.Pipeline) > 0 }

// Limits on a request, so that a hostile proposal cannot make the server
// expand an enormous grid or hold huge strings.
const (
	MaxParams     = 32
	MaxListLen    = 64
	MaxStringLen  = 256
	MaxNameLen    = 64
	MaxGridPoints = 4096
)

// Scalar is one parameter value: a finite number or a string.
type Scalar struct {
	num   float64
	str   string
	isStr bool
}

// Number returns a numeric scalar.
func Number(v float64) Scalar { return Scalar{num: v} }

// String returns a string scalar.
func String(s string) Scalar { return Scalar{str: s, isStr: true} }

// IsString reports whether s holds a string.
func (s Scalar) IsString() bool { return s.isStr }

// Float returns the numeric value (0 for strings).
func (s Scalar) Float() float64 { return s.num }

// Text returns the string value ("" for numbers).
func (s Scalar) Text() string { return s.str }

// MarshalJSON writes a number or a string, as encoding/json writes a
// float64 or a string.
func (s Scalar) MarshalJSON() ([]byte, error) { return s.appendJSON(nil) }

// appendJSON appends what json.Marshal writes for s.num or s.str, without
// its reflection and buffers for the common values (a request's scalars
// are written into every grounding record, hashed and answered): finite
// numbers, and strings of printable ASCII that json.Marshal copies as
// they are. Anything else goes to json.Marshal itself.
func (s Scalar) appendJSON(b []byte) ([]byte, error) {
	var ok bool
	if s.isStr {
		if b, ok = hashing.AppendPlainString(b, s.str); !ok {
			enc, err := json.Marshal(s.str)
			return append(b, enc...), err
		}
		return b, nil
	}
	if b, ok = hashing.AppendPlainFloat(b, s.num); !ok {
		_, err := json.Marshal(s.num) // its error, as before
		return nil, err
	}
	return b, nil
}

func (s Scalar) String() string {
	if s.isStr {
		return fmt.Sprintf("%q", s.str)
	}
	return fmt.Sprint(s.num)
}

// Param is a request parameter: one scalar, or a list of them.
type Param struct {
	Values []Scalar
	List   bool
}

// MarshalJSON writes a scalar or a list, as it was given: what
// json.Marshal writes for p.Values or p.Values[0].
func (p Param) MarshalJSON() ([]byte, error) {
	if !p.List {
		return p.Values[0].appendJSON(nil)
	}
	if p.Values == nil {
		return []byte("null"), nil
	}
	b := make([]byte, 0, 2+8*len(p.Values))
	b = append(b, '[')
	for i, v := range p.Values {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = v.appendJSON(b); err != nil {
			return json.Marshal(p.Values) // its error, as before
		}
	}
	return append(b, ']'), nil
}

// UnmarshalJSON accepts a finite number, a string, or a non-empty list of
// them; anything else (null, booleans, objects, nested lists) is refused.
// It decodes with the project's one strict codec (hashing.DecodePart).
func (p *Param) UnmarshalJSON(b []byte) error {
	if err := hashing.DecodePart(b, p); err != nil {
		return errors.New(hashing.Reason(err))
	}
	return nil
}

// UnmarshalJSONFrom is UnmarshalJSON for encoding/json v2, the codec
// behind hashing.DecodePart: it reads the value's tokens directly.
func (p *Param) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if dec.PeekKind() != '[' {
		s, err := readScalar(dec)
		if err != nil {
			return err
		}
		*p = Param{Values: []Scalar{s}}
		return nil
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	var vals []Scalar
	var elemErr error
	n := 0
	for dec.PeekKind() != ']' {
		if n < MaxListLen && elemErr == nil {
			s, err := readScalar(dec)
			if err != nil {
				elemErr = fmt.Errorf("element %d: %w", n, err)
			}
			vals = append(vals, s)
		} else if err := dec.SkipValue(); err != nil {
			return err
		}
		n++
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	switch {
	case n == 0:
		return errors.New("an empty list spans no grid")
	case n > MaxListLen:
		return fmt.Errorf("list of %d values, at most %d", n, MaxListLen)
	case elemErr != nil:
		return elemErr
	}
	*p = Param{List: true, Values: vals}
	return nil
}

// readScalar reads one parameter value: a finite number or a string.
func readScalar(dec *jsontext.Decoder) (Scalar, error) {
	switch k := dec.PeekKind(); k {
	case '[', '{':
		if err := dec.SkipValue(); err != nil {
			return Scalar{}, err
		}
		what := "a list"
		if k == '{' {
			what = "an object"
		}
		return Scalar{}, fmt.Errorf("want a number, a string or a list of them, got %s", what)
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return Scalar{}, err
	}
	switch tok.Kind() {
	case '0':
		x, err := tok.Float()
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return Scalar{}, errors.New("not a finite number")
		}
		return Number(x), nil
	case '"':
		x := tok.String()
		if len(x) > MaxStringLen {
			return Scalar{}, fmt.Errorf("string longer than %d bytes", MaxStringLen)
		}
		return String(x), nil
	case 'n':
		return Scalar{}, errors.New("null is not a parameter value")
	default:
		return Scalar{}, errors.New("want a number, a string or a list of them, got a boolean")
	}
}

// ParamNames returns the request's parameter names, sorted.
func (r Request) ParamNames() []string { return slices.Sorted(maps.Keys(r.Params)) }

// Canonical returns the request's RFC 8785 bytes: the one form that is
// hashed, stored and executed.
func (r Request) Canonical() ([]byte, error) {
	if r.Params == nil {
		r.Params = map[string]Param{}
	}
	if r.Pipeline != nil {
		r.Pipeline = slices.Clone(r.Pipeline)
		for i := range r.Pipeline {
			if r.Pipeline[i].Params == nil {
				r.Pipeline[i].Params = map[string]Param{}
			}
		}
	}
	return hashing.Canonical(r)
}

// Hash is the request layer digest: SHA-256 of JCS(request).
func (r Request) Hash() (hashing.Digest, error) {
	b, err := r.Canonical()
	if err != nil {
		return hashing.Digest{}, err
	}
	return hashing.SumSHA256(b), nil
}

// DecodeRequest strictly decodes a request. Every problem is returned as
// an F1 failure naming the field; the request is usable only when the
// returned failures are empty.
func DecodeRequest(data []byte) (Request, []Failure) {
	r := Request{Params: map[string]Param{}}
	if len(data) == 0 {
		return r, []Failure{fail("request", F1, "", "the request is missing")}
	}
	if err := hashing.CheckStrict(data); err != nil {
		return r, []Failure{fail("request", F1, "", "not one strict JSON object: "+err.Error())}
	}
	return decodeRequestPart(data)
}

// decodeRequestPart is DecodeRequest for a request hashing.CheckStrict
// has accepted, alone or as part of a larger document.
func decodeRequestPart(data []byte) (Request, []Failure) {
	if r, ok := decodeFamilyRequest(data); ok {
		return r, nil
	}
	return decodeRequestFields(data)
}

// familyRequest is a family request's members, typed: what nearly every
// request is. Anything else, and a request with any fault, goes to
// decodeRequestFields, which reports each fault on its field.
type familyRequest struct {
	Family  string           `json:"family"`
	Metric  string           `json:"metric"`
	Params  map[string]Param `json:"params"`
	Data    string           `json:"data"`
	Unknown jsontext.Value   `json:",unknown"` // pipeline, output or a stray member
}

// decodeFamilyRequest decodes, with the same codec in one typed pass, a
// family request decodeRequestFields would accept without a failure, and
// the same Request; false for anything else (TestDecodeRequestPaths and
// FuzzDecodeRequestPaths hold the two to that).
func decodeFamilyRequest(data []byte) (Request, bool) {
	var w familyRequest
	if hashing.DecodePart(data, &w) != nil || w.Unknown != nil || len(w.Params) > MaxParams {
		return Request{}, false
	}
	for _, s := range []string{w.Family, w.Metric, w.Data} {
		if strings.TrimSpace(s) == "" || len(s) > MaxStringLen {
			return Request{}, false
		}
	}
	points := 1
	for _, p := range w.Params {
		points = min(points*len(p.Values), MaxGridPoints+1)
	}
	if points > MaxGridPoints {
		return Request{}, false
	}
	if w.Params == nil {
		w.Params = map[string]Param{}
	}
	return Request{Family: w.Family, Metric: w.Metric, Params: w.Params, Data: w.Data}, true
}

// decodeRequestFields decodes a request field by field, so that one bad
// field does not hide the others.
func decodeRequestFields(data []byte) (Request, []Failure) {
	r := Request{Params: map[string]Param{}}
	var raw map[string]jsontext.Value
	if err := hashing.DecodePart(data, &raw); err != nil {
		return r, []Failure{fail("request", F1, "", "not a JSON object: "+err.Error())}
	}
	var fails []Failure
	known := map[string]bool{"family": true, "metric": true, "params": true, "data": true, "pipeline": true, "output": true}
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		if !known[k] {
			fails = append(fails, fail("request."+clip(k), F1, "", fmt.Sprintf("unknown field %q (a request has family or pipeline and output, metric, params and data)", clip(k))))
		}
	}
	str := func(key string, dst *string) {
		v, ok := raw[key]
		if !ok {
			fails = append(fails, fail(key, F1, "", key+" is missing"))
			return
		}
		if err := hashing.DecodePart(v, dst); err != nil {
			fails = append(fails, fail(key, F1, "", key+" must be a string"))
			return
		}
		switch {
		case strings.TrimSpace(*dst) == "":
			fails = append(fails, fail(key, F1, "", key+" is empty"))
		case len(*dst) > MaxStringLen:
			fails = append(fails, fail(key, F1, "", fmt.Sprintf("%s is longer than %d bytes", key, MaxStringLen)))
		}
	}
	_, isPipeline := raw["pipeline"]
	if isPipeline {
		if _, both := raw["family"]; both {
			fails = append(fails, fail("family", F1, "", "a request names a family or a pipeline, not both"))
		}
		var pf []Failure
		r.Pipeline, r.Output, pf = decodePipeline(raw)
		fails = append(fails, pf...)
	} else {
		if _, stray := raw["output"]; stray {
			fails = append(fails, fail("output", F1, "", "output names a pipeline's output step; this request has no pipeline"))
		}
		str("family", &r.Family)
	}
	str("metric", &r.Metric)
	str("data", &r.Data)
	r.Params = map[string]Param{}
	if v, ok := raw["params"]; ok && isPipeline {
		var ps map[string]jsontext.Value
		if err := hashing.DecodePart(v, &ps); err != nil || len(ps) > 0 {
			fails = append(fails, fail("params", F1, "", "a pipeline's parameters belong to its steps (pipeline[i].params); leave params out"))
		}
	} else if ok {
		points, pf := decodeParams(v, "params", r.Params)
		fails = append(fails, pf...)
		if points > MaxGridPoints {
			fails = append(fails, fail("params", F1, "", fmt.Sprintf("the grid spans more than %d morphisms", MaxGridPoints)))
		}
	}
	return r, fails
}

// decodeParams decodes a params object (a request's, or a step's) into
// dst, reporting each malformed value as F1 on field.NAME, and returns the
// grid points its lists span (capped just above MaxGridPoints). null is no
// parameters.
func decodeParams(v jsontext.Value, field string, dst map[string]Param) (int, []Failure) {
	if string(v) == "null" {
		return 1, nil
	}
	var ps map[string]jsontext.Value
	if err := hashing.DecodePart(v, &ps); err != nil {
		return 1, []Failure{fail(field, F1, "", "params must be an object of name → value or list")}
	}
	if len(ps) > MaxParams {
		return 1, []Failure{fail(field, F1, "", fmt.Sprintf("%d parameters, at most %d", len(ps), MaxParams))}
	}
	var fails []Failure
	points := 1
	for _, name := range slices.Sorted(maps.Keys(ps)) {
		var p Param
		if err := hashing.DecodePart(ps[name], &p); err != nil {
			fails = append(fails, fail(field+"."+clip(name), F1, "", hashing.Reason(err)))
			continue
		}
		dst[name] = p
		points = min(points*len(p.Values), MaxGridPoints+1)
	}
	return points, fails
}

func clip(s string) string {
	if len(s) > MaxNameLen {
		return s[:MaxNameLen] + "…"
	}
	return s
}
