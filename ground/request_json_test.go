package ground

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/hashing"
)

// reference is what Scalar and Param marshalled to before they wrote
// their own bytes: json.Marshal of the float64 or the string, and of the
// list of them.
func reference(p Param) ([]byte, error) {
	val := func(s Scalar) any {
		if s.isStr {
			return s.str
		}
		return s.num
	}
	if !p.List {
		return json.Marshal(val(p.Values[0]))
	}
	if p.Values == nil {
		return json.Marshal([]any(nil))
	}
	l := make([]any, len(p.Values))
	for i, s := range p.Values {
		l[i] = val(s)
	}
	return json.Marshal(l)
}

func checkParamJSON(t *testing.T, p Param) {
	t.Helper()
	got, err := p.MarshalJSON()
	want, werr := reference(p)
	if (err != nil) != (werr != nil) || string(got) != string(want) {
		t.Errorf("%+v: MarshalJSON %q (%v), json.Marshal %q (%v)", p, got, err, want, werr)
	}
}

var jsonFloats = []float64{
	0, math.Copysign(0, -1), 1, -1, 0.1, -2.5, 25, 100, 1e-6, -1e-6, 9.99e-7, 1e-7, 1.5e-7, 1e-10, 5e-324,
	1e20, 1e21, -1e21, 1.2345e22, 1e100, 1.5e300, math.MaxFloat64, -math.MaxFloat64, 123456789012345678,
	0.000001234, 1 << 53, 1<<53 + 2, 3.141592653589793, 1e-100,
}

var jsonStrings = []string{
	"", "abc", "oil/wti.csv", "a<b", "a>b", "&", `"`, `\`, "\n", "\t", "\x00", "\x1f", "\x7f", "é",
	"\u2028", "\u2029", "\xff", "ok\xc3", "日本", " spaced ",
}

// Scalars and lists marshal to exactly what json.Marshal wrote for them:
// the bytes of every grounding record and response.
func TestParamJSONMatchesEncodingJSON(t *testing.T) {
	var all []Scalar
	for _, f := range jsonFloats {
		all = append(all, Number(f))
	}
	for _, s := range jsonStrings {
		all = append(all, String(s))
	}
	for _, s := range all {
		checkParamJSON(t, Param{Values: []Scalar{s}})
	}
	checkParamJSON(t, Param{List: true, Values: all})
	checkParamJSON(t, Param{List: true, Values: all[:1]})
	checkParamJSON(t, Param{List: true, Values: []Scalar{}})
	checkParamJSON(t, Param{List: true})
	// Non-finite numbers are refused, alone and in a list.
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		checkParamJSON(t, Param{Values: []Scalar{Number(f)}})
		checkParamJSON(t, Param{List: true, Values: []Scalar{Number(1), Number(f)}})
	}
}

func FuzzParamJSON(f *testing.F) {
	for i, x := range jsonFloats {
		f.Add(x, jsonStrings[i%len(jsonStrings)])
	}
	f.Fuzz(func(t *testing.T, x float64, s string) {
		checkParamJSON(t, Param{Values: []Scalar{Number(x)}})
		checkParamJSON(t, Param{Values: []Scalar{String(s)}})
		checkParamJSON(t, Param{List: true, Values: []Scalar{String(s), Number(x)}})
	})
}

// acceptedRequests are requests DecodeRequest accepts.
var acceptedRequests = []string{
	`{"family":"MOM_WZS","metric":"SRP","params":{"window":[25,50,100]},"data":"oil/wti.csv"}`,
	` {"data": "oil/wti.csv", "metric": "SRP", "family": "MOM_WZS"} `,
	"{\"family\":\"F\",\n\"metric\":\"M\",\t\"params\":{},\"data\":\"d\"}",
	`{"family":"F","metric":"M","params":{"w":25,"lev":[0.5,-1,2.25],"col":"close","cols":["a","b c"]},"data":"x/y.csv"}`,
	`{"family":"F","metric":"M","data":"d","params":{"w":1e3}}`, `{"family":"F\u0041","metric":"M","data":"d"}`,
}

// More requests, most of them refused: each is decoded the one strict way.
var strictRequests = []string{
	`null`, `[]`, `{}`, `{"family":"F","metric":"M"}`, `{"family":"F","metric":"M","data":"d","params":null}`,
	`{"family":"F","metric":"M","data":"d","extra":1}`, `{"family":"F","family":"G","metric":"M","data":"d"}`,
	`{"family":" ","metric":"M","data":"d"}`, `{"family":"F","metric":"M","data":"d","params":{"w":[]}}`,
	`{"family":"F","metric":"M","data":"d","params":{"w":1e3}}`, `{"family":"F\u0041","metric":"M","data":"d"}`,
	`{"family":"F","metric":"M","data":"d","params":{"w":true}}`, `{"family":"F","metric":"M","data":"d","params":{"w":[[1]]}}`,
	`{"family":"F","metric":"M","data":"d","params":{"w":1,"w":2}}`, `{"family":"F","metric":"M","data":"d"} x`,
	`{"pipeline":[{"name":"s","op":"MOM_WZS"}],"output":"s","metric":"M","data":"d"}`,
	`{"family":"F","metric":"M","data":"` + strings.Repeat("d", MaxStringLen+1) + `"}`,
	`{"family":"F","metric":"M","data":"d","params":{"w":[` + strings.Repeat("1,", MaxListLen) + `1]}}`,
	`{"family":"F","metric":"M","data":"d","params":{"a":[` + strings.Repeat("1,", 63) + `1],"b":[` + strings.Repeat("1,", 63) + `1],"c":[1,2]}}`,
	`{"family":"F","metric":"M","data":"d","params":{` + manyParams(MaxParams+1) + `}}`,
}

func manyParams(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%d":%d`, i, i)
	}
	return b.String()
}

// checkRequest: a request DecodeRequest accepts survives its canonical
// form (what is hashed and stored) unchanged, and has no two keys that
// differ only in case; a refused one has failures, each with a code.
func checkRequest(t *testing.T, data []byte) bool {
	t.Helper()
	r, fails := DecodeRequest(data)
	if len(fails) > 0 {
		for _, f := range fails {
			if f.Code == "" || f.Field == "" {
				t.Errorf("%s: failure without a code or field: %+v", data, f)
			}
		}
		return false
	}
	canon, err := r.Canonical()
	if err != nil {
		t.Fatalf("%s: canonical: %v", data, err)
	}
	back, fails := DecodeRequest(canon)
	if len(fails) > 0 || !reflect.DeepEqual(r, back) {
		t.Errorf("%s: canonical %s decodes to %+v %+v, want %+v", data, canon, back, fails, r)
	}
	if err := hashing.CheckStrict(data); err != nil {
		t.Errorf("%s: accepted, but CheckStrict refuses it: %v", data, err)
	}
	return true
}

func TestDecodeRequestRoundTrip(t *testing.T) {
	for _, r := range acceptedRequests {
		if !checkRequest(t, []byte(r)) {
			t.Errorf("refused: %s", r)
		}
	}
	for _, r := range strictRequests {
		checkRequest(t, []byte(r))
	}
	if !checkRequest(t, []byte(`{"family":"F","metric":"M","data":"d","params":{`+manyParams(MaxParams)+`}}`)) {
		t.Errorf("%d parameters are refused", MaxParams)
	}
}

func FuzzDecodeRequestRoundTrip(f *testing.F) {
	for _, r := range append(acceptedRequests, strictRequests...) {
		f.Add([]byte(r))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkRequest(t, data) })
}

// checkPaths: where the typed pass decodes a request, the field-by-field
// pass decodes the same Request without a failure.
func checkPaths(t *testing.T, data []byte) bool {
	t.Helper()
	if hashing.CheckStrict(data) != nil {
		return false
	}
	fast, ok := decodeFamilyRequest(data)
	if !ok {
		return false
	}
	slow, fails := decodeRequestFields(data)
	if len(fails) > 0 || !reflect.DeepEqual(fast, slow) {
		t.Errorf("%s:\ntyped  %+v\nfields %+v %+v", data, fast, slow, fails)
	}
	return true
}

func TestDecodeRequestPaths(t *testing.T) {
	for _, r := range acceptedRequests {
		if !checkPaths(t, []byte(r)) {
			t.Errorf("not decoded in one typed pass: %s", r)
		}
	}
	for _, r := range strictRequests {
		if _, fails := DecodeRequest([]byte(r)); len(fails) > 0 && checkPaths(t, []byte(r)) {
			t.Errorf("a refused request decoded in one typed pass: %.200s", r)
		}
	}
}

func FuzzDecodeRequestPaths(f *testing.F) {
	for _, r := range append(acceptedRequests, strictRequests...) {
		f.Add([]byte(r))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkPaths(t, data) })
}
