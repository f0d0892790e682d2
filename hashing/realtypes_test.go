package hashing_test

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"testing"

	"github.com/groundgate/groundgate/attest"
	"github.com/groundgate/groundgate/contract"
	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
	"github.com/groundgate/groundgate/pipeline"
	"github.com/groundgate/groundgate/policy"
	"github.com/groundgate/groundgate/registry"
)

// The one-pass encoder on the types groundgate actually hashes: values
// built by hand like the server builds them, then the same types filled
// from pseudo-random bytes (unexported fields too, so marshalers such as
// execution.Score and ground.Scalar see every kind of value).

func digest(s string) hashing.Digest { return hashing.SumSHA256([]byte(s)) }

func ptr[T any](v T) *T { return &v }

func TestOnePassRealTypes(t *testing.T) {
	matches := []discover.Match{
		{Term: "momentum", Name: "momentum", Kind: registry.KindFamily, Mode: discover.ModeExact, Confidence: 1, Capability: digest("m"), Disc: digest("md")},
		{Term: "trend", Name: "momentum", Kind: registry.KindFamily, Mode: discover.ModeAlias, Confidence: 0.9, Capability: digest("m"), Disc: digest("md")},
		{Term: "sharpe", Name: "sharpe", Kind: registry.KindMetric, Mode: discover.ModeExact, Confidence: 1, Capability: digest("s"), Disc: digest("sd")},
		{Term: "vol", Name: "volatility", Kind: registry.KindOperation, Mode: discover.ModeTag, Confidence: 0.7, Capability: digest("v"), Disc: digest("vd")},
		{Term: "mean revert", Name: "mean_reversion", Kind: registry.KindFamily, Mode: discover.ModeKeyword, Confidence: 0.5, Capability: digest("r"), Disc: digest("rd")},
		{Term: "opposite", Name: "mean_reversion", Kind: registry.KindFamily, Mode: discover.ModeInversion, Confidence: 0.4, Capability: digest("r"), Disc: digest("rd"), Inverts: "momentum"},
	}
	result := discover.Result{ID: digest("id"), Registry: digest("reg"), Version: 7, Terms: []string{"momentum", "trend", "sharpe", "vol", "mean revert", "opposite"}, Matches: matches, Unresolved: []string{"é€\u2028<x>"}, OK: true}

	req := ground.Request{
		Family: "momentum", Metric: "sharpe", Data: "sampledata/spy.csv",
		Params: map[string]ground.Param{
			"window":    {Values: []ground.Scalar{ground.Number(20), ground.Number(60), ground.Number(120)}, List: true},
			"threshold": {Values: []ground.Scalar{ground.Number(0.25)}},
			"column":    {Values: []ground.Scalar{ground.String("close")}},
			"big":       {Values: []ground.Scalar{ground.Number(1e21), ground.Number(-1e-7), ground.String("\x00\xff")}, List: true},
		},
		Repairs: []pipeline.Repair{{Step: "s1", Field: "params.window", From: 3.0, To: []any{5.0, "x"}, Rule: "clamp"}},
	}
	pipe := ground.Request{
		Pipeline: []ground.Step{{ID: "s1", Capability: "sma", Params: map[string]ground.Param{"n": {Values: []ground.Scalar{ground.Number(5)}}}, Inputs: []string{"input"}}},
		Output:   "s1", Metric: "sharpe", Params: map[string]ground.Param{}, Data: "d",
	}
	record := ground.Record{
		Request: req, Discovery: ptr(digest("disc")), RegistryVersion: 7, Registry: digest("reg"), Policies: ptr(digest("pol")),
		Decision: ground.Decision{Admitted: false,
			Checks: []ground.CheckResult{{Name: "evidence", Passed: true}, {Name: "policies", Failures: 1}},
			Failures: []ground.Failure{{Field: "params.window", Code: "F11", Codes: []ground.Code{"F11", "F5"}, Detail: "refused", Policy: "max-window", Core: []string{},
				Witness: []policy.Assignment{{Const: "w", Pointer: "/params/window", Value: policy.Value{Num: 120}}, {Const: "c", Pointer: "/params/column", Value: policy.Value{Str: "close", IsStr: true}}, {Const: "b", Pointer: "/x", Value: policy.Value{IsBool: true, Bool: true}}}}}},
	}

	morphisms := make([]execution.Morphism, 100)
	for i := range morphisms {
		morphisms[i] = execution.Morphism{
			Index: i, Hash: digest(fmt.Sprint("m", i)),
			Params: map[string]execution.Value{"window": execution.Num(float64(20 + i)), "threshold": execution.Num(0.25 + float64(i)/1000), "column": execution.Str("close")},
			Plan:   ptr(digest(fmt.Sprint("p", i%4))), Admissible: i%7 != 0, Rejected: []string{}, Reasons: []execution.Reason{},
			Artifacts: []execution.Artifact{{Name: "pnl", Digest: hashing.SumBLAKE3([]byte(fmt.Sprint(i))), Bytes: 8000 + i}, {Name: "weights", Digest: hashing.SumBLAKE3([]byte(fmt.Sprint("w", i))), Bytes: 8000}},
			Score:     execution.ScoreOf(0.1 * float64(i%13) / 3),
		}
	}
	fp := execution.Footprint{
		Hash: digest("h"), Grounding: digest("g"), Request: req, RegistryVersion: 7, Registry: digest("reg"),
		Family:       &execution.CapRef{Name: "momentum", Kind: registry.KindFamily, Identity: digest("m")},
		Metric:       execution.MetricRef{CapRef: execution.CapRef{Name: "sharpe", Kind: registry.KindMetric, Identity: digest("s")}, Kernel: "sharpe", Direction: "maximize"},
		Data:         execution.DataInfo{Path: "spy.csv", Digest: hashing.SumBLAKE3(nil), Rows: 2520, Columns: []string{"date", "close"}, From: ptr("2010-01-04")},
		Risk:         execution.RiskPolicy{MaxLeverage: 2, Predicates: []string{"resolves", "leverage"}},
		Evaluation:   execution.Evaluation{Start: ptr(120), Rows: 2400},
		Morphisms:    morphisms,
		Selected:     ptr(digest("m3")),
		Plans:        map[string]execution.Plan{digest("p0").String(): {Engine: "groundgate/v1", Nodes: []execution.Node{{Op: "input"}}, Capabilities: []execution.CapRef{}, Builtins: []string{"volsize"}}},
		Capabilities: []execution.CapRef{{Name: "momentum", Kind: registry.KindFamily, Identity: digest("m")}},
		Dependencies: digest("deps"),
	}
	entry := registry.Entry{
		Name: "momentum", Kind: registry.KindFamily,
		Sem: registry.Semantic{Pure: true, Deterministic: true, Orientation: "positive", Contract: &contract.Contract{}},
		Alg: registry.Algebraic{Inputs: []string{"frame"}, Outputs: []string{"pnl"}, Arity: 1,
			Params: []registry.Param{{Name: "window", Type: "int", Default: 20.0, Min: ptr(2.0), Max: ptr(500.0)}, {Name: "column", Type: "string", Default: "close"}}},
		Impl: registry.Implementation{Engine: "groundgate/v1", IR: "elementwise", Expr: "(sign (diff x $window))"},
		Disc: registry.Discovery{Aliases: []string{"trend following"}, Description: "buys what rose"},
	}
	for _, tc := range []struct {
		name string
		v    any
	}{
		{"discovery result", result},
		{"family request", req},
		{"pipeline request", pipe},
		{"grounding record", record},
		{"footprint", &fp},
		{"footprint value", fp},
		{"morphism", morphisms[3]},
		{"scores", []execution.Score{execution.ScoreOf(1.5), {}, execution.ScoreOf(1e-7)}},
		{"registry entry", entry},
		{"identity layers", map[string]any{"sem": entry.Sem, "alg": entry.Alg, "impl": entry.Impl}},
		{"nan value", execution.Num(0 * 1e308 / 1e-308)},
	} {
		hashing.CheckOnePass(t, tc.name, tc.v)
	}
}

// hashedTypes are filled at random by TestOnePassRealTypesFilled.
var hashedTypes = []reflect.Type{
	reflect.TypeFor[discover.Result](),
	reflect.TypeFor[discover.Match](),
	reflect.TypeFor[ground.Request](),
	reflect.TypeFor[ground.Record](),
	reflect.TypeFor[ground.Failure](),
	reflect.TypeFor[execution.Footprint](),
	reflect.TypeFor[execution.Morphism](),
	reflect.TypeFor[execution.Plan](),
	reflect.TypeFor[registry.Entry](),
	reflect.TypeFor[policy.Policy](),
	reflect.TypeFor[attest.Statement](),
	reflect.TypeFor[pipeline.Repair](),
}

func TestOnePassRealTypesFilled(t *testing.T) {
	for _, typ := range hashedTypes {
		for i := range 150 {
			data := make([]byte, 0, 4096)
			for len(data) < 4000 {
				var seed [16]byte
				binary.LittleEndian.PutUint64(seed[:], uint64(i))
				binary.LittleEndian.PutUint64(seed[8:], uint64(len(data)))
				data = append(data, hashing.SumSHA256(seed[:]).Sum()...)
			}
			v := hashing.FillValue(typ, data)
			hashing.CheckOnePass(t, fmt.Sprintf("%v #%d: %#v", typ, i, v), v)
		}
		if t.Failed() {
			return
		}
	}
}
