package hashing

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/gowebpki/jcs"
)

// Benchmarks of the canonical encoding of shapes like the ones the server
// hashes on every request (inline copies: hashing imports no project
// package). Each runs the one-pass encoder ("onepass") and, as the
// baseline in the same run, the construction it replaced
// ("twostep": jcs.Transform(json.Marshal(v))).
//
//	go test ./hashing -run '^$' -bench Canonical -benchmem

type benchMatch struct {
	Term       string  `json:"term"`
	Name       string  `json:"name"`
	Kind       string  `json:"kind"`
	Mode       string  `json:"mode"`
	Confidence float64 `json:"confidence"`
	Capability Digest  `json:"capability"`
	Disc       Digest  `json:"disc"`
	Inverts    string  `json:"inverts,omitempty"`
}

type benchDiscovery struct {
	Registry   Digest       `json:"registry"`
	Version    uint64       `json:"version"`
	Terms      []string     `json:"terms"`
	Matches    []benchMatch `json:"matches"`
	Unresolved []string     `json:"unresolved"`
	OK         bool         `json:"ok"`
}

// benchScalar and benchParam marshal like ground.Scalar and ground.Param.
type benchScalar struct {
	num   float64
	str   string
	isStr bool
}

func (s benchScalar) MarshalJSON() ([]byte, error) {
	if s.isStr {
		return json.Marshal(s.str)
	}
	return json.Marshal(s.num)
}

type benchParam struct {
	Values []benchScalar
	List   bool
}

func (p benchParam) MarshalJSON() ([]byte, error) {
	if p.List {
		return json.Marshal(p.Values)
	}
	return json.Marshal(p.Values[0])
}

// benchScore marshals like execution.Score.
type benchScore struct {
	v  float64
	ok bool
}

func (s benchScore) MarshalJSON() ([]byte, error) {
	if !s.ok {
		return []byte("null"), nil
	}
	return json.Marshal(s.v)
}

type benchRequest struct {
	Family string                `json:"family,omitempty"`
	Metric string                `json:"metric"`
	Params map[string]benchParam `json:"params"`
	Data   string                `json:"data"`
}

type benchCheck struct {
	Name     string `json:"name"`
	Passed   bool   `json:"passed"`
	Failures int    `json:"failures"`
}

type benchFailure struct {
	Field  string   `json:"field"`
	Code   string   `json:"code"`
	Codes  []string `json:"codes"`
	Value  string   `json:"value,omitempty"`
	Detail string   `json:"detail"`
	Policy string   `json:"policy,omitempty"`
	Core   []string `json:"core,omitzero"`
}

type benchGrounding struct {
	Request         benchRequest `json:"request"`
	Discovery       *Digest      `json:"discovery,omitempty"`
	RegistryVersion uint64       `json:"registry_version"`
	Registry        Digest       `json:"registry"`
	Policies        *Digest      `json:"policies,omitempty"`
	DataDigest      *Digest      `json:"data_digest,omitempty"`
	Decision        struct {
		Admitted bool           `json:"admitted"`
		Checks   []benchCheck   `json:"checks"`
		Failures []benchFailure `json:"failures"`
	} `json:"decision"`
}

type benchArtifact struct {
	Name   string `json:"name"`
	Digest Digest `json:"digest"`
	Bytes  int    `json:"bytes"`
}

type benchMorphism struct {
	Index      int                    `json:"index"`
	Hash       Digest                 `json:"hash"`
	Params     map[string]benchScalar `json:"params"`
	Plan       *Digest                `json:"plan"`
	Program    *Digest                `json:"program,omitempty"`
	Admissible bool                   `json:"admissible"`
	Rejected   []string               `json:"rejected"`
	Artifacts  []benchArtifact        `json:"artifacts"`
	Score      benchScore             `json:"score"`
}

type benchFootprint struct {
	Hash      Digest          `json:"hash"`
	Grounding Digest          `json:"grounding"`
	Request   benchRequest    `json:"request"`
	Registry  Digest          `json:"registry"`
	Morphisms []benchMorphism `json:"morphisms"`
	Selected  *Digest         `json:"selected"`
	Data      struct {
		Path    string   `json:"path"`
		Digest  Digest   `json:"digest"`
		Rows    int      `json:"rows"`
		Columns []string `json:"columns"`
		From    *string  `json:"from"`
	} `json:"data"`
}

func benchDigest(s string) Digest { return SumSHA256([]byte(s)) }

func benchShapes() []struct {
	name string
	v    any
} {
	disc := benchDiscovery{Registry: benchDigest("r"), Version: 12, Terms: []string{"momentum", "trend", "sharpe", "vol", "mean reversion", "opposite"}, Unresolved: []string{}, OK: true}
	for i, term := range disc.Terms {
		disc.Matches = append(disc.Matches, benchMatch{Term: term, Name: term + "_cap", Kind: "family", Mode: "alias", Confidence: 0.9, Capability: benchDigest(term), Disc: benchDigest(term + "d"), Inverts: map[bool]string{true: "momentum"}[i == 5]})
	}
	req := benchRequest{Family: "momentum", Metric: "sharpe", Data: "sampledata/spy.csv", Params: map[string]benchParam{
		"window":    {Values: []benchScalar{{num: 20}, {num: 60}, {num: 120}}, List: true},
		"threshold": {Values: []benchScalar{{num: 0.25}}},
		"column":    {Values: []benchScalar{{str: "close", isStr: true}}},
	}}
	g := benchGrounding{Request: req, Discovery: new(benchDigest("d")), RegistryVersion: 12, Registry: benchDigest("r"), Policies: new(benchDigest("p"))}
	g.Decision.Admitted = true
	for _, c := range []string{"evidence", "family", "metric", "params", "data", "policies"} {
		g.Decision.Checks = append(g.Decision.Checks, benchCheck{Name: c, Passed: true})
	}
	g.Decision.Failures = []benchFailure{}
	fp := benchFootprint{Hash: benchDigest("h"), Grounding: benchDigest("g"), Request: req, Registry: benchDigest("r"), Selected: new(benchDigest("m3"))}
	fp.Data.Path, fp.Data.Digest, fp.Data.Rows, fp.Data.Columns = "spy.csv", SumBLAKE3(nil), 2520, []string{"date", "close"}
	for i := range 100 {
		fp.Morphisms = append(fp.Morphisms, benchMorphism{
			Index: i, Hash: benchDigest(fmt.Sprint("m", i)),
			Params: map[string]benchScalar{"window": {num: float64(20 + i)}, "threshold": {num: 0.25}, "column": {str: "close", isStr: true}},
			Plan:   new(benchDigest(fmt.Sprint("p", i%4))), Admissible: true, Rejected: []string{},
			Artifacts: []benchArtifact{{Name: "pnl", Digest: SumBLAKE3([]byte(fmt.Sprint(i))), Bytes: 8000}, {Name: "weights", Digest: SumBLAKE3([]byte(fmt.Sprint("w", i))), Bytes: 8000}},
			Score:     benchScore{v: float64(i) / 7, ok: true},
		})
	}
	return []struct {
		name string
		v    any
	}{{"discovery", disc}, {"grounding", g}, {"footprint100", &fp}}
}

func BenchmarkCanonical(b *testing.B) {
	for _, s := range benchShapes() {
		want, err := twoStep(s.v)
		if err != nil {
			b.Fatal(err)
		}
		if got, err := Canonical(s.v); err != nil || string(got) != string(want) {
			b.Fatalf("%s: one-pass and two-step differ", s.name)
		}
		b.Run(s.name+"/onepass", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(want)))
			for b.Loop() {
				if _, err := Canonical(s.v); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(s.name+"/twostep", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(want)))
			for b.Loop() {
				if _, err := twoStep(s.v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A request body as a client sends it: what DecodeStrict checks on every
// POST before decoding.
var benchBody = []byte(`{"request": {"family": "momentum", "metric": "sharpe", "params": {"window": [20, 60, 120], "threshold": 0.25, "column": "close"}, "data": "sampledata/spy.csv"},
 "discovery_id": "sha256:6f1ed002ab5595859014ebf0951522d9f1a1b9fe8f1b5a8b1c0c7a2a0e3c7d11", "repair": "rules"}`)

func BenchmarkCanonicalizeJSON(b *testing.B) {
	b.Run("rawJCS", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := CanonicalizeJSON(benchBody); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jcs", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := jcs.Transform(benchBody); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkDecodeStrictCheck(b *testing.B) {
	b.Run("validate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var p rawJCS
			if err := p.validate(benchBody); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jcs", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := jcs.Transform(benchBody); err != nil {
				b.Fatal(err)
			}
		}
	})
}
