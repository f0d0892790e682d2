package hashing

import (
	"bytes"
	"encoding"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/gowebpki/jcs"
)

// The one-pass encoder must write exactly what the two-step construction
// writes, and fail exactly where it fails.

func twoStep(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jcs.Transform(raw)
}

// checkOnePass compares appendCanonical (no fallback) with the two-step
// path on v, and Canonical with both. Only values nested beyond
// maxEncodeLevel may leave the one-pass encoder to the fallback. A
// marshaler that panics must panic on both paths (encoding/json lets a
// marshaler's panic through).
func checkOnePass(t *testing.T, label string, v any) {
	t.Helper()
	want, wantPanic, wantErr := catch(func() ([]byte, error) { return twoStep(v) })
	got, gotPanic, gotErr := catch(func() ([]byte, error) { return appendCanonical(nil, v) })
	if wantPanic != nil || gotPanic != nil {
		// Fields are visited in another order, so an error may stop the
		// one-pass encoder before it meets the panic; Canonical then takes
		// the two-step path, and panics as it always did.
		_, cPanic, _ := catch(func() ([]byte, error) { return Canonical(v) })
		if gotPanic != nil && wantPanic == nil || gotPanic == nil && gotErr == nil || cPanic == nil {
			t.Errorf("%s: panics: one-pass %v (error %v), two-step %v, Canonical %v", clip(label), gotPanic, gotErr, wantPanic, cPanic)
		}
		return
	}
	switch {
	case wantErr != nil && gotErr == nil:
		t.Errorf("%s: one-pass wrote %s, two-step failed: %v", clip(label), clip(string(got)), wantErr)
	case wantErr == nil && gotErr != nil && !strings.HasPrefix(label, "deep"):
		t.Errorf("%s: one-pass failed (%v), two-step wrote %s", clip(label), gotErr, clip(string(want)))
	case wantErr == nil && gotErr == nil && !bytes.Equal(got, want):
		t.Errorf("%s:\none-pass %s\ntwo-step %s", clip(label), got, want)
	}
	c, err := Canonical(v)
	if (err != nil) != (wantErr != nil) || !bytes.Equal(c, want) {
		t.Errorf("%s: Canonical = %s, %v; want %s, %v", clip(label), clip(string(c)), err, clip(string(want)), wantErr)
	}
	if wantErr != nil && err.Error() != fmt.Errorf("canonical: marshal: %w", wantErr).Error() &&
		err.Error() != fmt.Errorf("%w: canonical JSON: %v", ErrMalformed, wantErr).Error() {
		t.Errorf("%s: Canonical error %q is not the two-step error %q", clip(label), err, wantErr)
	}
}

func catch(f func() ([]byte, error)) (b []byte, panicked any, err error) {
	defer func() { panicked = recover() }()
	b, err = f()
	return b, nil, err
}

// Marshalers of every receiver kind and output shape.

type valMarshaler struct{ raw string }

func (m valMarshaler) MarshalJSON() ([]byte, error) {
	if m.raw == "ERR" {
		return nil, errors.New("refused")
	}
	return []byte(m.raw), nil
}

type ptrMarshaler struct{ N int }

func (m *ptrMarshaler) MarshalJSON() ([]byte, error) {
	return []byte(fmt.Sprintf(`{"z": %d, "a": "ptr"}`, m.N)), nil
}

type valText struct{ S string }

func (m valText) MarshalText() ([]byte, error) {
	if m.S == "ERR" {
		return nil, errors.New("refused")
	}
	return []byte("<" + m.S + ">"), nil
}

type ptrText struct{ S string }

func (m *ptrText) MarshalText() ([]byte, error) { return []byte("p:" + m.S), nil }

// bothMarshal: a pointer-receiver MarshalJSON and a value-receiver
// MarshalText — which one runs depends on addressability.
type bothMarshal struct{ S string }

func (m *bothMarshal) MarshalJSON() ([]byte, error) { return []byte(`"json"`), nil }
func (m bothMarshal) MarshalText() ([]byte, error)  { return []byte("text"), nil }

type stringer string

func (s stringer) String() string { return string(s) }

type textKey int

func (k textKey) MarshalText() ([]byte, error) { return []byte(fmt.Sprintf("k%03d", int(k))), nil }

type stringTextKey string

// The string kind wins over MarshalText for map keys.
func (k stringTextKey) MarshalText() ([]byte, error) { return []byte("never"), nil }

type zeroer struct{ N int }

func (z zeroer) IsZero() bool { return z.N == 7 }

type ptrZeroer struct{ N int }

func (z *ptrZeroer) IsZero() bool { return z == nil || z.N == 9 }

type Embedded struct {
	A     int    `json:"a"`
	B     string // untagged: name "B"
	Dup   int    // untagged, as is Other.Dup: both dropped
	Tg    int    `json:"Tg2"` // tagged: wins over Other.Tg2 at the same depth
	Inner *Deep  `json:",omitempty"`
	Hide  string `json:"hide"`
}

type Deep struct {
	Deepest string `json:"deepest"`
	Dup     int    `json:"dup"`
}

type Other struct {
	Dup  int
	Tg2  int
	Hide string `json:"-"`
}

type unexported struct {
	Visible string `json:"visible"`
	hidden  string
}

type Kitchen struct {
	Embedded
	Other
	*Deep
	unexported
	Top     string           `json:"hide"` // shallower: hides Embedded.Hide
	Skipped string           `json:"-"`
	Dash    string           `json:"-,"`
	Bad     string           `json:"bad\"name"` // invalid tag name: field name used
	Unicode string           `json:"ünï€😀"`
	Empty   string           `json:",omitempty"`
	ZeroInt int              `json:"zi,omitempty"`
	ZeroF   float64          `json:"zf,omitempty"`
	ZeroB   bool             `json:"zb,omitempty"`
	ZeroP   *int             `json:"zp,omitempty"`
	ZeroI   any              `json:"zany,omitempty"`
	ZeroM   map[string]int   `json:"zm,omitempty"`
	ZeroS   []int            `json:"zs,omitempty"`
	ZeroA   [0]int           `json:"za,omitempty"`
	ZeroSt  struct{}         `json:"zst,omitempty"` // structs are never empty
	OZ      zeroer           `json:"oz,omitzero"`
	OZP     ptrZeroer        `json:"ozp,omitzero"`
	OZPtr   *ptrZeroer       `json:"ozptr,omitzero"`
	OZTime  [2]int           `json:"ozarr,omitzero"`
	QInt    int              `json:"qi,string"`
	QUint   uint8            `json:"qu,string"`
	QF64    float64          `json:"qf,string"`
	QF32    float32          `json:"qf32,string"`
	QBool   bool             `json:"qb,string"`
	QStr    string           `json:"qs,string"`
	QPtr    *int             `json:"qp,string"`
	QNum    json.Number      `json:"qn,string"`
	QSlice  []int            `json:"qsl,string"` // not a scalar: option ignored
	Num     json.Number      `json:"num"`
	Raw     json.RawMessage  `json:"raw"`
	Bytes   []byte           `json:"bytes"`
	ByteArr [3]byte          `json:"bytearr"`
	F32     float32          `json:"f32"`
	Any     any              `json:"any"`
	Map     map[string]any   `json:"map"`
	IntMap  map[int64]string `json:"intmap"`
	UintMap map[uint16]bool  `json:"uintmap"`
	TextMap map[textKey]int  `json:"textmap"`
	STMap   map[stringTextKey]int
	DigMap  map[Digest]string `json:"digmap"`
	Dig     Digest            `json:"dig"`
	DigP    *Digest           `json:"digp"`
	VM      valMarshaler      `json:"vm"`
	PM      ptrMarshaler      `json:"pm"`
	PMs     []ptrMarshaler    `json:"pms"`
	PMMap   map[string]ptrMarshaler
	VT      valText     `json:"vt"`
	PT      ptrText     `json:"pt"`
	Both    bothMarshal `json:"both"`
	BothMap map[string]bothMarshal
	BothArr [1]bothMarshal
	Ptrs    []*int `json:"ptrs"`
	Nested  [][]map[string][]float64
}

func intp(n int) *int { return &n }

func kitchen() Kitchen {
	return Kitchen{
		Embedded:   Embedded{A: 1, B: "b", Dup: 2, Tg: 8, Inner: &Deep{Deepest: "x"}, Hide: "embedded"},
		Other:      Other{Dup: 3, Tg2: 9, Hide: "other"},
		Deep:       &Deep{Deepest: "promoted", Dup: 4},
		unexported: unexported{Visible: "through an unexported embedded struct", hidden: "no"},
		Top:        "top", Skipped: "skipped", Dash: "dash", Bad: "bad", Unicode: "u",
		OZ: zeroer{N: 7}, OZP: ptrZeroer{N: 9}, OZPtr: &ptrZeroer{N: 9},
		QInt: -42, QUint: 200, QF64: 1e-7, QF32: 0.1, QBool: true, QStr: "<a & \"b\"> \u2028 \xff", QPtr: intp(5),
		QNum: "1.50", QSlice: []int{1},
		Num:     "1.50e+2",
		Raw:     json.RawMessage(` { "b" : [1.0, 2e0], "a" : "\u00e9\/" } `),
		Bytes:   []byte{0, 1, 2, 250, 251, 252, 253, 254, 255},
		ByteArr: [3]byte{1, 2, 3},
		F32:     16777217,
		Any:     map[string]any{"z": []any{1.5, "s", nil, true}, "a": json.Number("1e3")},
		Map:     map[string]any{"\U0001F600": 1, "\uE000": 2, "a": 3, "é": 4, "": 5, "A": 6},
		IntMap:  map[int64]string{-5: "neg", 10: "ten", 9: "nine", math.MaxInt64: "max"},
		UintMap: map[uint16]bool{1: true, 65535: false},
		TextMap: map[textKey]int{3: 3, 1: 1, 20: 20},
		STMap:   map[stringTextKey]int{"b": 1, "a": 2},
		DigMap:  map[Digest]string{SumSHA256([]byte("a")): "a", SumBLAKE3(nil): "b"},
		Dig:     SumSHA256(nil),
		DigP:    nil,
		VM:      valMarshaler{raw: `{"y":[1,{"c":1,"b":2}],"x":0.10}`},
		PM:      ptrMarshaler{N: 1},
		PMs:     []ptrMarshaler{{N: 2}, {N: 3}},
		PMMap:   map[string]ptrMarshaler{"k": {N: 4}},
		VT:      valText{S: "html&"},
		PT:      ptrText{S: "t"},
		BothMap: map[string]bothMarshal{"m": {}},
		Ptrs:    []*int{nil, intp(1)},
		Nested:  [][]map[string][]float64{{{"b": {1, 2.5}, "a": nil}}, nil},
	}
}

// recEmbed embeds itself: typeFields must not loop.
type recEmbed struct {
	*recEmbed
	X int
}

type selfRef struct {
	Next *selfRef `json:"next"`
	N    int      `json:"n"`
}

func TestOnePassMatchesTwoStep(t *testing.T) {
	k := kitchen()
	cyclic := &selfRef{N: 1}
	cyclic.Next = cyclic
	deep := &selfRef{}
	for i := 0; i < 1500; i++ { // beyond maxEncodeLevel: Canonical falls back
		deep = &selfRef{Next: deep, N: i}
	}
	cases := []struct {
		name string
		v    any
	}{
		{"nil", nil},
		{"kitchen", k},
		{"kitchen pointer", &k}, // addressable: pointer-receiver marshalers run
		{"kitchen slice", []Kitchen{k}},
		{"kitchen map", map[string]Kitchen{"k": k}},
		{"kitchen in any", []any{k, &k}},
		{"ints", []any{0, -0, 1, -1, 1 << 53, 1<<53 + 1, 1<<53 + 2, -(1<<53 + 1), math.MaxInt64, math.MinInt64, int8(-128), int16(300), int32(-7)}},
		{"uints", []any{uint(0), uint64(1<<53 + 1), uint64(math.MaxUint64), uint64(1<<63 + 1025), uint8(255), uintptr(9)}},
		{"floats", []float64{0, math.Copysign(0, -1), 1, -1.5, 0.1, 1.0 / 3, 1e21, 1e-7, 1e-6, 9.999999999999997e-7, 123456789012345680000, 5e-324, math.MaxFloat64, -math.SmallestNonzeroFloat64, 1 << 60, 2.5e20, 1e300}},
		{"float32s", []float32{0, 0.1, 1e-7, 3.4e38, 16777217, -1.5e-45, 1e21, 33554432.5}},
		{"NaN", math.NaN()},
		{"Inf", []any{1, math.Inf(-1)}},
		{"NaN float32", float32(math.NaN())},
		{"strings", []string{"", "plain", "<a>&", "\u2028\u2029", "\x00\x01\x07\x08\t\n\x0b\x0c\r\x1f\x7f", "\"\\/", "\xff", "a\xffb\xfe", "\xed\xa0\x80", "é€😀", "\uFFFD", "\xf0\x9f\x98"}},
		{"bytes", [][]byte{nil, {}, []byte("hello"), {0xff, 0xfe}}},
		{"named byte slice", json.RawMessage(`[3,2,1]`)},
		{"raw nil", json.RawMessage(nil)},
		{"raw invalid", json.RawMessage(`{"a":}`)},
		{"raw duplicate key", json.RawMessage(`{"a":1,"a":2}`)},
		{"raw out of range", json.RawMessage(`1e400`)},
		{"raw invalid utf8", json.RawMessage("\"\xff\"")},
		{"raw lone surrogate", json.RawMessage(`"\ud800"`)},
		{"raw pointer", &k.Raw},
		{"numbers", []json.Number{"", "0", "-0", "1.0", "1E+2", "12345678901234567890", "-1.5e-7"}},
		{"number invalid", json.Number("1.")},
		{"number out of range", json.Number("-1e309")},
		{"zero digest", Digest{}},
		{"zero digest key", map[Digest]int{{}: 1}},
		{"digest pointer", &k.Dig},
		{"marshaler error", valMarshaler{raw: "ERR"}},
		{"marshaler invalid", valMarshaler{raw: `{"a"`}},
		{"marshaler empty", valMarshaler{raw: ``}},
		{"marshaler trailing", valMarshaler{raw: `1 2`}},
		{"marshaler scalar", []valMarshaler{{raw: `1.0`}, {raw: ` "x\u0041" `}, {raw: `null`}, {raw: `-0`}}},
		{"text error", valText{S: "ERR"}},
		{"text key error", map[valText]int{{S: "ERR"}: 1}},
		{"invalid utf8 keys", map[string]int{"\xff": 1, "ok": 2}},
		{"duplicate keys after U+FFFD", map[string]int{"\xff": 1, "\xfe": 2}},
		{"duplicate text keys", map[valText]int{{S: "a"}: 1, {S: "a\xff"}: 2, {S: "a\xfe"}: 3}},
		{"nil map", map[string]int(nil)},
		{"empty map", map[string]int{}},
		{"nil pointer", (*int)(nil)},
		{"nil marshaler pointer", (*ptrMarshaler)(nil)},
		{"nil text pointer", (*ptrText)(nil)},
		{"nil interface in slice", []any{nil, (*int)(nil)}},
		{"pointer receivers unaddressable", ptrMarshaler{N: 5}},
		{"pointer receivers via pointer", &ptrMarshaler{N: 5}},
		{"unsupported chan", make(chan int)},
		{"unsupported func", []any{func() {}}},
		{"unsupported complex", complex(1, 2)},
		{"unsupported map key", map[[2]int]string{{1, 2}: "x"}},
		{"unsupported map key nil", map[[2]int]string(nil)},
		{"cycle", cyclic},
		{"deep", deep},
		{"struct with only hidden", Other{Hide: "x"}},
		{"self-embedding", recEmbed{recEmbed: &recEmbed{X: 1}, X: 2}},
		{"interface keys", map[encoding.TextMarshaler]int{valText{S: "a"}: 1, textKey(2): 2}},
		{"nil interface key", map[encoding.TextMarshaler]int{nil: 1}},
		{"interface with methods", []fmt.Stringer{nil, stringer("s")}},
		{"anonymous struct", struct {
			X int `json:"x,omitempty"`
			Y struct{ Z []string }
		}{Y: struct{ Z []string }{Z: []string{"a"}}}},
	}
	for _, tc := range cases {
		checkOnePass(t, tc.name, tc.v)
	}
}

// TestOnePassKeyOrder pins the UTF-16 member order against a worked
// example, independently of jcs.
func TestOnePassKeyOrder(t *testing.T) {
	got, err := Canonical(map[string]int{"\U0001F600": 1, "\uE000": 2, "a": 3, "é": 4, "": 5, "A": 6, "aa": 7})
	if err != nil {
		t.Fatal(err)
	}
	want := "{\"\":5,\"A\":6,\"a\":3,\"aa\":7,\"\u00e9\":4,\"\U0001F600\":1,\"\uE000\":2}"
	if string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// entropy turns fuzz input into choices; exhausted, it yields zeros.
type entropy struct{ b []byte }

func (e *entropy) byte() byte {
	if len(e.b) == 0 {
		return 0
	}
	c := e.b[0]
	e.b = e.b[1:]
	return c
}

func (e *entropy) uint64() uint64 {
	var buf [8]byte
	n := copy(buf[:], e.b)
	e.b = e.b[n:]
	return binary.LittleEndian.Uint64(buf[:])
}

var fuzzStrings = []string{"", "a", "b", "A", "é", "€", "😀", "\uE000", "<&>", "\u2028", "\x00", "\n", "\"", "\\", "\xff", "\xfe", "a\xff", "\x7f", "1", "-", "Dup"}

var fuzzFloats = []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1e21, 1e-7, 1e-6, 1 << 53, 1<<53 + 2, 5e-324, math.MaxFloat64, 1.5, 100, 1e-300}

func (e *entropy) string() string {
	c := e.byte()
	if c < 200 {
		return fuzzStrings[int(c)%len(fuzzStrings)]
	}
	n := int(e.byte() % 12)
	s := make([]byte, n)
	for i := range s {
		s[i] = e.byte()
	}
	return string(s)
}

// float is rarely NaN or infinite: one of those fails the whole value.
func (e *entropy) float() float64 {
	switch c := e.byte(); {
	case c == 255:
		return math.NaN()
	case c == 254:
		return math.Inf(-1)
	case c < 128:
		return fuzzFloats[int(c)%len(fuzzFloats)]
	}
	f := math.Float64frombits(e.uint64())
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 1e308
	}
	return f
}

// fuzzRaw holds JSON texts, the invalid ones last (rarely picked).
var fuzzRaw = []string{`null`, `1.0`, `{"b":1,"a":[2,{"d":null,"c":"\u00e9"}]}`, `"x"`, `[]`, `{}`, " [ 1 , 2 ] ", `-0`, `123456789012345678901234567890`, `"\u003c\ud83d\ude00"`, `1e400`, `{"a":1,"a":2}`, `{`, `"\ud800"`}

// number is a json.Number's text, rarely an invalid or out of range one.
func (e *entropy) number() string {
	switch c := e.byte(); {
	case c == 255:
		return "1e400"
	case c == 254:
		return "0x10"
	case c < 128:
		return []string{"", "0", "-0", "1.0", "1E+2", "-12345678901234567890", "1e-7", "0.1e1"}[c%8]
	}
	return strconv.FormatFloat(e.float(), 'g', -1, 64)
}

func (e *entropy) raw() string {
	c := int(e.byte())
	if c >= 252 {
		return fuzzRaw[len(fuzzRaw)-1-(c-252)]
	}
	return fuzzRaw[c%(len(fuzzRaw)-4)]
}

// fill sets v (settable, unexported fields included) from e. Recursion
// stops at depth 6; maps and slices get up to three elements.
func fill(v reflect.Value, e *entropy, depth int) {
	if depth > 6 {
		return
	}
	switch v.Type() {
	case reflect.TypeFor[json.Number]():
		v.SetString(e.number())
		return
	case reflect.TypeFor[json.RawMessage]():
		if e.byte()%8 != 0 {
			v.SetBytes([]byte(e.raw()))
		}
		return
	case reflect.TypeFor[valMarshaler]():
		v.Set(reflect.ValueOf(valMarshaler{raw: e.raw()}))
		return
	case digestType:
		if c := e.byte(); c != 255 { // the zero digest fails the value
			v.Set(reflect.ValueOf(SumSHA256([]byte{c})))
		}
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(e.byte()%2 == 1)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(e.uint64() >> (e.byte() % 64)))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(e.uint64() >> (e.byte() % 64))
	case reflect.Float32, reflect.Float64:
		f := e.float()
		if v.Kind() == reflect.Float32 && math.Abs(f) > math.MaxFloat32 {
			f = math.MaxFloat32 // finite here, infinite as a float32
		}
		v.SetFloat(f)
	case reflect.String:
		v.SetString(e.string())
	case reflect.Pointer:
		if e.byte()%4 != 0 {
			p := reflect.New(v.Type().Elem())
			fill(p.Elem(), e, depth+1)
			v.Set(p)
		}
	case reflect.Interface:
		if v.NumMethod() != 0 {
			return
		}
		var x any
		switch e.byte() % 8 {
		case 1:
			x = e.float()
		case 2:
			x = e.string()
		case 3:
			x = e.byte()%2 == 0
		case 4:
			m := map[string]any{}
			fill(reflect.ValueOf(&m).Elem(), e, depth+1)
			x = m
		case 5:
			var s []any
			fill(reflect.ValueOf(&s).Elem(), e, depth+1)
			x = s
		case 6:
			x = json.Number(e.number())
		case 7:
			x = int64(e.uint64())
		}
		if x != nil {
			v.Set(reflect.ValueOf(x))
		}
	case reflect.Slice:
		if c := e.byte(); c%5 != 0 {
			n := int(c % 4)
			s := reflect.MakeSlice(v.Type(), n, n)
			for i := range n {
				fill(s.Index(i), e, depth+1)
			}
			v.Set(s)
		}
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), e, depth+1)
		}
	case reflect.Map:
		if c := e.byte(); c%5 != 0 {
			m := reflect.MakeMap(v.Type())
			for range int(c % 4) {
				k := reflect.New(v.Type().Key()).Elem()
				fill(k, e, depth+1)
				val := reflect.New(v.Type().Elem()).Elem()
				fill(val, e, depth+1)
				m.SetMapIndex(k, val)
			}
			v.Set(m)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Field(i)
			if !f.CanSet() {
				f = reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
			}
			fill(f, e, depth+1)
		}
	}
}

// fuzzShapes are the types FuzzCanonicalOnePass fills.
var fuzzShapes = []reflect.Type{
	reflect.TypeFor[Kitchen](),
	reflect.TypeFor[*Kitchen](),
	reflect.TypeFor[map[string]any](),
	reflect.TypeFor[[]any](),
	reflect.TypeFor[map[textKey][]valText](),
	reflect.TypeFor[[]map[string]*ptrMarshaler](),
	reflect.TypeFor[[2]bothMarshal](),
	reflect.TypeFor[map[float64]int](), // unsupported key
	reflect.TypeFor[selfRef](),
}

// fillShape builds a value of one of fuzzShapes from data.
func fillShape(data []byte) any {
	e := &entropy{b: data}
	t := fuzzShapes[int(e.byte())%len(fuzzShapes)]
	p := reflect.New(t)
	fill(p.Elem(), e, 0)
	if e.byte()%2 == 0 {
		return p.Interface() // addressable inside
	}
	return p.Elem().Interface()
}

func FuzzCanonicalOnePass(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte("kitchen sink: every field set from these bytes, and more bytes for luck"))
	f.Add(bytes.Repeat([]byte{1, 255, 7, 200, 3}, 60))
	f.Add(bytes.Repeat([]byte{2, 4, 4, 4, 129}, 40))
	f.Fuzz(func(t *testing.T, data []byte) {
		v := fillShape(data)
		checkOnePass(t, fmt.Sprintf("%#v", v), v)
		// Decoded JSON text takes the interface paths.
		var x any
		if json.Unmarshal(data, &x) == nil {
			checkOnePass(t, string(data), x)
		}
	})
}

// TestOnePassFilled runs the fuzz body over a deterministic spread of
// inputs, so that plain `go test` covers every shape with many values.
func TestOnePassFilled(t *testing.T) {
	var seed [32]byte
	for i := range 3000 {
		data := make([]byte, 0, 512)
		for len(data) < 2000 {
			binary.LittleEndian.PutUint64(seed[:], uint64(i)*0x9E3779B97F4A7C15+uint64(len(data)))
			s := SumSHA256(seed[:])
			data = append(data, s.sum[:]...)
		}
		data[0] = byte(i)
		v := fillShape(data)
		checkOnePass(t, fmt.Sprintf("case %d: %#v", i, v), v)
		if t.Failed() {
			return
		}
	}
}

// The raw canonicaliser must accept, refuse and write exactly as jcs.
func checkRaw(t *testing.T, in []byte) {
	t.Helper()
	want, wantErr := jcs.Transform(in)
	var p rawJCS
	got, gotErr := p.canonical(nil, in, 0)
	if (gotErr != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
		t.Fatalf("%q:\nrawJCS %q, %v\njcs    %q, %v", in, got, gotErr, want, wantErr)
	}
	if vErr := p.validate(in); (vErr != nil) != (wantErr != nil) {
		t.Fatalf("%q: validate = %v, jcs = %v", in, vErr, wantErr)
	}
	c, err := CanonicalizeJSON(in)
	if (err != nil) != (wantErr != nil) || !bytes.Equal(c, want) {
		t.Fatalf("%q: CanonicalizeJSON = %q, %v", in, c, err)
	}
	if err != nil && (!errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), wantErr.Error())) {
		t.Fatalf("%q: error %v does not carry jcs's %v", in, err, wantErr)
	}
}

var rawSeeds = []string{
	`{"b":2,"a":1}`, `[1.0, 1e2, -0, 0.1, 1e-7, 1e21, 123456789012345680000]`,
	`{"\u20ac":"Euro","\r":"CR","1":"One","\u00e9":"e"}`, `"\u000f\u001f/\u0041"`,
	` { "a" : [ true , false , null ] } `, `{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"a":1} x`, `1e400`,
	`{"a":NaN}`, `{`, ``, ` `, `[1,]`, `[,1]`, `{,}`, `{"a":1,}`, `[1 2]`, `tr ue`, `truefalse`, `"\ud83d\ude00"`,
	`"\ud83d"`, `"\ude00"`, `"\ude00\udc00"`, `"\ud83d\ud83d"`, `"\ud83d\u0041"`, `"\u00"`, `"\uzzzz"`, `"\x"`, "\"\x01\"", "\"\xff\"", "\"\xed\xa0\x80\"",
	"[\"\xc3\xa9\"]", `-`, `-01`, `01`, `1.`, `.5`, `1e`, `1e+`, `0.0e-0`, `-0.0`, `1E+2`, `[1}`, `{"a":1]`,
	`{"a" 1}`, `{"a"::1}`, `{a:1}`, `[[[[]]]]`, `{"":{"":{"":[]}}}`, "[1,\t2\n]\r", `null`, `"\/"`,
	`{"\ud83d\ude00":1,"\ue000":2}`, `1.7976931348623157e308`, `1.7976931348623159e308`, `4.9e-324`, `2e-324`,
	`100000000000000000000`, `999999999999999`, `9999999999999999`, `-9007199254740993`, "\xef\xbb\xbf{}",
	`[1]]`, `{"a":{"b":1,"a":2},"A":[{"y":1,"x":2}]}`, `"\u0000"`,
}

func TestRawMatchesJCS(t *testing.T) {
	for _, s := range rawSeeds {
		checkRaw(t, []byte(s))
	}
	// The nesting limit, on both sides of it.
	for _, n := range []int{maxJCSDepth, maxJCSDepth + 1} {
		checkRaw(t, []byte(strings.Repeat("[", n)+strings.Repeat("]", n)))
		checkRaw(t, []byte(strings.Repeat(`{"a":`, n)+"1"+strings.Repeat("}", n)))
	}
}

func FuzzRawJCS(f *testing.F) {
	for _, s := range rawSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkRaw(t, in)
	})
}

func TestDecodeStrictRefusesLikeJCS(t *testing.T) {
	for _, s := range rawSeeds {
		var v any
		err := DecodeStrict([]byte(s), &v)
		if _, jerr := jcs.Transform([]byte(s)); jerr != nil {
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), jerr.Error()) {
				t.Errorf("DecodeStrict(%q) = %v, want jcs's %v", s, err, jerr)
			}
		}
	}
}

func TestCompareUTF16(t *testing.T) {
	// Sorted by UTF-16 code units (RFC 8785 §3.2.3): the supplementary
	// plane sorts between U+D7FF and U+E000.
	sorted := []string{"", "\x00", "A", "a", "aa", "\u00e9", "\u20ac", "\ud7ff", "\U00010000", "\U0001F600", "\U0010FFFF", "\ue000", "\uffff"}
	for i := range sorted {
		for j := range sorted {
			got := compareUTF16(sorted[i], sorted[j])
			if (got < 0) != (i < j) || (got == 0) != (i == j) {
				t.Errorf("compareUTF16(%q, %q) = %d", sorted[i], sorted[j], got)
			}
		}
	}
}

// Plans are built and the scratch pool is shared under concurrent use
// (run with -race), and what Canonical returns is the caller's: it stays
// intact while the pool serves the next calls.
func TestCanonicalConcurrent(t *testing.T) {
	type fresh struct { // a type no other test has planned yet
		M map[string][]Kitchen `json:"m"`
		D *Digest              `json:"d"`
	}
	k := kitchen()
	vs := []any{fresh{M: map[string][]Kitchen{"a": {k}, "b": nil}, D: &k.Dig}, []int{1, 2, 3}, "short"}
	var wants [][]byte
	for _, v := range vs {
		want, err := twoStep(v)
		if err != nil {
			t.Fatal(err)
		}
		wants = append(wants, want)
	}
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			for range 50 {
				var got [][]byte
				for i, v := range vs {
					b, err := Canonical(v)
					if err != nil {
						errs <- err
						return
					}
					got = append(got, b)
					if d, err := SHA256Of(v); err != nil || d != SumSHA256(wants[i]) {
						errs <- fmt.Errorf("SHA256Of = %v, %v", d, err)
						return
					}
				}
				for i := range vs {
					if !bytes.Equal(got[i], wants[i]) {
						errs <- fmt.Errorf("got %s, want %s", clip(string(got[i])), clip(string(wants[i])))
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
