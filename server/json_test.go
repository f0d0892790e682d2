package server

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/hashing"
)

// echoJSON is what c.JSON writes for v (echo's DefaultJSONSerializer), or
// nil when encoding/json refuses v.
func echoJSON(v any) []byte {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		return nil
	}
	return buf.Bytes()
}

// filler sets every exported field of a value, recursively, from a seeded
// generator: a field added to a response type is set too, so a fast
// encoder that does not write it differs from encoding/json. With plain,
// every string is plain, every number finite, every digest set and every
// slice, map and pointer non-empty: the values the fast encoders must
// take. Otherwise anything goes, including what they must decline.
type filler struct {
	r     *rand.Rand
	plain bool
}

var (
	digestType = reflect.TypeFor[hashing.Digest]()
	paramType  = reflect.TypeFor[ground.Param]()
	scalarType = reflect.TypeFor[ground.Scalar]()
)

var (
	plainStrings = []string{"MOM_WZS", "sharpe ratio", "oil/wti.csv", "a", "x-y z", "{[1]}", "'single'", "~`!@#$%^*()_+=|;:,.?/"}
	otherStrings = []string{"", "a<b", "a>b", "R&D", `say "hi"`, `back\slash`, "tab\t", "\x00", "\x7f", "café", "\u2028", "\xff", "日本"}
	plainFloats  = []float64{0, 1, 0.9, 0.7, 0.5, 0.4, -2.5, 25, 1e-6, 1e-7, 1e20, 1e21, 1.5e300, 5e-324, 123456789.125}
	otherFloats  = []float64{math.NaN(), math.Inf(1), math.Inf(-1)}
)

func (f *filler) pick(plain, other []string) string {
	if !f.plain && f.r.IntN(3) == 0 {
		return other[f.r.IntN(len(other))]
	}
	return plain[f.r.IntN(len(plain))]
}

func (f *filler) float() float64 {
	if !f.plain && f.r.IntN(8) == 0 {
		return otherFloats[f.r.IntN(len(otherFloats))]
	}
	return plainFloats[f.r.IntN(len(plainFloats))]
}

func (f *filler) scalar() ground.Scalar {
	if f.r.IntN(2) == 0 {
		return ground.String(f.pick(plainStrings, otherStrings))
	}
	return ground.Number(f.float())
}

// empty: whether to leave this slice, map or pointer nil or empty.
func (f *filler) empty() bool { return !f.plain && f.r.IntN(4) == 0 }

func (f *filler) fill(v reflect.Value) {
	switch v.Type() {
	case digestType:
		if f.empty() {
			return // the zero digest: encoding/json refuses it
		}
		v.Set(reflect.ValueOf(hashing.SumSHA256([]byte{byte(f.r.IntN(256))})))
		return
	case scalarType:
		v.Set(reflect.ValueOf(f.scalar()))
		return
	case paramType:
		p := ground.Param{List: f.r.IntN(2) == 0}
		n := 1
		if p.List {
			n = f.r.IntN(4)
			if f.plain {
				n++
			}
		}
		for range n {
			p.Values = append(p.Values, f.scalar())
		}
		if p.List && !f.plain && f.r.IntN(6) == 0 {
			p.Values = nil
		}
		v.Set(reflect.ValueOf(p))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(f.pick(plainStrings, otherStrings))
	case reflect.Bool:
		v.SetBool(f.plain || f.r.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(f.r.Int64N(1000) - 100)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(f.r.Uint64N(1<<53) + 1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(f.float())
	case reflect.Interface:
		v.Set(reflect.ValueOf(f.pick(plainStrings, otherStrings)))
	case reflect.Pointer:
		if f.empty() {
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		f.fill(v.Elem())
	case reflect.Slice:
		if f.empty() {
			if f.r.IntN(2) == 0 {
				v.Set(reflect.MakeSlice(v.Type(), 0, 0))
			}
			return
		}
		n := 1 + f.r.IntN(3)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			f.fill(s.Index(i))
		}
		v.Set(s)
	case reflect.Map:
		if f.empty() {
			if f.r.IntN(2) == 0 {
				v.Set(reflect.MakeMap(v.Type()))
			}
			return
		}
		m := reflect.MakeMap(v.Type())
		for range 1 + f.r.IntN(3) {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			f.fill(k)
			f.fill(e)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				f.fill(v.Field(i))
			}
		}
	}
}

// checkFast: where fast writes v, it writes what c.JSON writes; it must
// write v when must is set.
func checkFast[T any](t *testing.T, v *T, fast func([]byte, *T) ([]byte, bool), must bool) {
	t.Helper()
	want := echoJSON(v)
	got, ok := fast(nil, v)
	switch {
	case ok && want == nil:
		t.Errorf("fast wrote %s; encoding/json refuses %+v", got, *v)
	case ok && !bytes.Equal(append(got, '\n'), want):
		t.Errorf("fast:\n%s\nencoding/json:\n%s", got, want)
	case !ok && must:
		t.Errorf("fast declined %+v; encoding/json:\n%s", *v, want)
	}
}

// checkResponses fills a discovery and a grounding from seed, both ways.
func checkResponses(t *testing.T, seed uint64) {
	for _, plain := range []bool{true, false} {
		f := &filler{r: rand.New(rand.NewPCG(seed, 15)), plain: plain}
		var d discover.Result
		f.fill(reflect.ValueOf(&d).Elem())
		checkFast(t, &d, appendDiscovery, plain)

		var g Grounding
		f.fill(reflect.ValueOf(&g).Elem())
		checkFast(t, &g, appendGrounding, false) // a pipeline, repairs, failures: declined
		if plain {
			// An admitted family request: what the fast path is for.
			g.Request.Pipeline, g.Request.Output, g.Request.Repairs = nil, "", nil
			g.Decision.Failures = []ground.Failure{}
			checkFast(t, &g, appendGrounding, true)
			g.ID, g.Discovery, g.Policies, g.DataDigest, g.Request.Family = nil, nil, nil, nil, ""
			checkFast(t, &g, appendGrounding, true)
			g.Request.Output = "out" // a pipeline's field, without a pipeline
			checkFast(t, &g, appendGrounding, false)
		}
	}
}

func TestResponseJSON(t *testing.T) {
	for seed := range uint64(500) {
		checkResponses(t, seed)
	}
}

func FuzzResponseJSON(f *testing.F) {
	f.Add(uint64(0))
	f.Add(uint64(1 << 40))
	f.Fuzz(checkResponses)
}
