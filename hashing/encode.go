package hashing

import (
	"cmp"
	"encoding"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// The one-pass canonical encoder. It writes what
// jcs.Transform(json.Marshal(v)) writes, without the intermediate JSON:
// encoding/json's rules decide what is written (struct tags, embedding,
// omitempty/omitzero, `,string`, marshalers, map keys, []byte as base64),
// RFC 8785's decide how (member order, numbers, string escapes). Where the
// two-step path would fail, or the value is nested deeper than
// maxEncodeLevel (encoding/json's cycle detection starts there), the
// encoder gives up and Canonical falls back to the two-step path, which
// reports the error exactly as before.

var errFallback = errors.New("left to the two-step path")

// maxEncodeLevel bounds the nesting the encoder walks itself.
const maxEncodeLevel = 1000

// encStates recycles encoder scratch space (the output buffer, map key
// stacks, the fragment parser's tape) between calls, as encoding/json
// recycles its encodeState: every request hashes several values, and
// growing fresh buffers each time was most of the encoder's cost. A pooled
// encState carries no value from one call to the next (release clears
// what could).
var encStates = sync.Pool{New: func() any { return new(encState) }}

// maxPooledBuf keeps one huge value from pinning its buffer in the pool.
const maxPooledBuf = 1 << 20

type encState struct {
	buf   []byte // output, reused
	level int    // nesting of values walked (fallback beyond maxEncodeLevel)
	depth int    // open JSON arrays and objects (jcs's depth, for fragments)
	raw   rawJCS
	keys  []byte     // map keys being sorted, back to back
	ents  []mapEntry // map entries being sorted, a stack across nested maps
	// strKey receives the keys of map[string]… maps. It is only used
	// while one map's keys are collected, before any value is encoded, so
	// nested maps can share it.
	strKey reflect.Value
}

type mapEntry struct {
	start, end int // key text in encState.keys
	val        int // index of the value
	v          reflect.Value
}

func (e *encState) encode(b []byte, v any) ([]byte, error) {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() {
		return append(b, "null"...), nil
	}
	e.level, e.depth = 0, 0
	return planFor(rv.Type())(e, b, rv)
}

// release returns e to the pool with b (its output) as the next buffer.
func (e *encState) release(b []byte) {
	if cap(b) > maxPooledBuf {
		return
	}
	e.buf = b[:0]
	clear(e.ents[:cap(e.ents)]) // reflect.Values would keep maps alive
	e.keys, e.ents = e.keys[:0], e.ents[:0]
	if e.strKey.IsValid() {
		e.strKey.SetString("")
	}
	e.raw.src = nil
	encStates.Put(e)
}

// encFn appends the canonical form of v to b.
type encFn func(e *encState, b []byte, v reflect.Value) ([]byte, error)

// plans caches one encoder per type. It is state shared by all callers,
// but harmless: a plan is derived from the type alone, never changes once
// built, and building it twice yields the same plan — the same reasoning,
// and the same structure, as encoding/json's own encoder cache.
var plans sync.Map // reflect.Type → encFn

func planFor(t reflect.Type) encFn {
	if f, ok := plans.Load(t); ok {
		return f.(encFn)
	}
	// A recursive type meets itself while its plan is being built: store
	// an indirection first, as encoding/json does.
	build := sync.OnceValue(func() encFn { return newPlan(t, true, false) })
	f, loaded := plans.LoadOrStore(t, encFn(func(e *encState, b []byte, v reflect.Value) ([]byte, error) {
		return build()(e, b, v)
	}))
	if loaded {
		return f.(encFn)
	}
	fn := build()
	plans.Store(t, fn)
	return fn
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	numberType        = reflect.TypeFor[json.Number]()
	rawMessageType    = reflect.TypeFor[json.RawMessage]()
	digestType        = reflect.TypeFor[Digest]()
	stringType        = reflect.TypeFor[string]()
	digestPtrType     = reflect.TypeFor[*Digest]()
	isZeroerType      = reflect.TypeFor[interface{ IsZero() bool }]()
)

// newPlan mirrors encoding/json's newTypeEncoder; quoted is the `,string`
// option, which only the bool, number and string kinds honour.
func newPlan(t reflect.Type, allowAddr, quoted bool) encFn {
	// Fast paths for the types the server hashes most; each writes what
	// the general path below would.
	switch t {
	case digestType:
		return encodeDigest
	case digestPtrType:
		return encodeDigestPtr
	case rawMessageType:
		return encodeRawMessage
	}
	if t.Kind() != reflect.Pointer && allowAddr && reflect.PointerTo(t).Implements(marshalerType) {
		return condAddr(encodeAddrMarshaler, newPlan(t, false, quoted))
	}
	if t.Implements(marshalerType) {
		return encodeMarshaler
	}
	if t.Kind() != reflect.Pointer && allowAddr && reflect.PointerTo(t).Implements(textMarshalerType) {
		return condAddr(encodeAddrText, newPlan(t, false, quoted))
	}
	if t.Implements(textMarshalerType) {
		return encodeText
	}
	switch t.Kind() {
	case reflect.Bool:
		if quoted {
			return encodeBoolQuoted
		}
		return encodeBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if quoted {
			return encodeIntQuoted
		}
		return encodeInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if quoted {
			return encodeUintQuoted
		}
		return encodeUint
	case reflect.Float32, reflect.Float64:
		bits := t.Bits()
		if quoted {
			return func(_ *encState, b []byte, v reflect.Value) ([]byte, error) {
				return encodeFloatQuoted(b, v.Float(), bits)
			}
		}
		if bits == 32 {
			return encodeFloat32
		}
		return encodeFloat64
	case reflect.String:
		if t == numberType {
			if quoted {
				return encodeNumberQuoted
			}
			return encodeNumber
		}
		if quoted {
			return encodeStringQuoted
		}
		return encodeString
	case reflect.Interface:
		return encodeInterface
	case reflect.Struct:
		return newStructPlan(t)
	case reflect.Map:
		return newMapPlan(t)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			p := reflect.PointerTo(t.Elem())
			if !p.Implements(marshalerType) && !p.Implements(textMarshalerType) {
				return encodeBytes
			}
		}
		elem := planFor(t.Elem())
		return func(e *encState, b []byte, v reflect.Value) ([]byte, error) {
			if v.IsNil() {
				return append(b, "null"...), nil
			}
			return encodeArray(e, b, v, elem)
		}
	case reflect.Array:
		elem := planFor(t.Elem())
		return func(e *encState, b []byte, v reflect.Value) ([]byte, error) {
			return encodeArray(e, b, v, elem)
		}
	case reflect.Pointer:
		// `,string` reaches through one unnamed pointer (the field's).
		var elem encFn
		if quoted {
			elem = newPlan(t.Elem(), true, true)
		} else {
			elem = planFor(t.Elem())
		}
		return func(e *encState, b []byte, v reflect.Value) ([]byte, error) {
			if v.IsNil() {
				return append(b, "null"...), nil
			}
			if e.level++; e.level > maxEncodeLevel {
				return b, errFallback
			}
			b, err := elem(e, b, v.Elem())
			e.level--
			return b, err
		}
	default: // chan, func, complex, unsafe.Pointer: json.Marshal refuses them
		return encodeUnsupported
	}
}

func encodeUnsupported(_ *encState, b []byte, _ reflect.Value) ([]byte, error) {
	return b, errFallback
}

func condAddr(addr, other encFn) encFn {
	return func(e *encState, b []byte, v reflect.Value) ([]byte, error) {
		if v.CanAddr() {
			return addr(e, b, v)
		}
		return other(e, b, v)
	}
}

func encodeBool(_ *encState, b []byte, v reflect.Value) ([]byte, error) {
	return strconv.AppendBool(b, v.Bool()), nil
}

func encodeBoolQuoted(_ *encState, b []byte, v reflect.Value) ([]byte, error) {
	b = append(b, '"')
	b = strconv.AppendBool(b, v.Bool())
	return append(b, '"'), nil
}

func encodeInt(_ *encState, b []byte, v reflect.Value) ([]byte, error) {
	return appendInt64(b, v.Int()), nil
}

// A `,string` number is a JSON string: its digits are kept as written.
func encodeIntQuoted(_ *encState, b []byte, v reflect.Value) ([]byte, error) {
	b = append(b, '"')
	b = strconv.AppendInt(b, v.Int(), 10)
	return append(b, '"'), nil
}

func encodeUint(_ *encState, b []byte, v reflect.Value) ([]byte, error) {
	return appendUint64(b, v.Uint()), nil
}

func encodeUintQuoted(_ *encState, b []byte, v reflect.Value) ([]byte, error) {
	b = append(b, '"')
	b = strconv.AppendUint(b, v.Uint(), 10)
	return append(b, '"'), nil
}

func encodeFloat64(_ *encState, b []byte, v reflect.Value) ([]byte, error) {
	b, err := appendNumber(b, v.Float())
	if err != nil {
		return b, errFallback
	}
	return b, nil
}

// encoding/json writes a float32 with the shortest digits that identify
// the float32; jcs then reads those digits as a double.
func encodeFloat32(_ *encState, b []byte, v reflect.Value) ([]byte, error) {
	f := v.Float()
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, errFallback
	}
	var buf [32]byte
	f, err := strconv.ParseFloat(string(strconv.AppendFloat(buf[:0], f, 'e', -1, 32)), 64)
	if err != nil {
		return b, errFallback
	}
	return appendNumber(b, f)
}

// encodeFloatQuoted writes encoding/json's own float text inside a string
// (`,string`): it stays as encoding/json spells it, -0 included.
func encodeFloatQuoted(b []byte, f float64, bits int) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, errFallback
	}
	b = append(b, '"')
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return append(b, '"'), nil
}

func encodeString(_ *encState, b []byte, v reflect.Value) ([]byte, error) {
	return appendString(b, v.String()), nil
}

// A `,string` string is the JSON text of the string, as a string:
// encoding/json's escapes of the inner text (\u003c, \ufffd, …) are
// characters of the outer one, so the inner text is made exactly as
// encoding/json makes it.
func encodeStringQuoted(_ *encState, b []byte, v reflect.Value) ([]byte, error) {
	inner, err := json.Marshal(v.String())
	if err != nil {
		return b, errFallback
	}
	return appendString(b, inner), nil
}

func numberText(v reflect.Value) (string, error) {
	s := v.String()
	if s == "" {
		s = "0" // encoding/json writes the zero Number as 0
	}
	if !validNumber(s) {
		return "", errFallback
	}
	return s, nil
}

func encodeNumber(_ *encState, b []byte, v reflect.Value) ([]byte, error) {
	s, err := numberText(v)
	if err != nil {
		return b, err
	}
	if b, err = appendNumberText(b, s); err != nil {
		return b, errFallback
	}
	return b, nil
}

func encodeNumberQuoted(_ *encState, b []byte, v reflect.Value) ([]byte, error) {
	s, err := numberText(v)
	if err != nil {
		return b, err
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), nil
}

func encodeBytes(_ *encState, b []byte, v reflect.Value) ([]byte, error) {
	if v.IsNil() {
		return append(b, "null"...), nil
	}
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, v.Bytes())
	return append(b, '"'), nil
}

func encodeInterface(e *encState, b []byte, v reflect.Value) ([]byte, error) {
	if v.IsNil() {
		return append(b, "null"...), nil
	}
	if e.level++; e.level > maxEncodeLevel {
		return b, errFallback
	}
	elem := v.Elem()
	b, err := planFor(elem.Type())(e, b, elem)
	e.level--
	return b, err
}

func encodeArray(e *encState, b []byte, v reflect.Value, elem encFn) ([]byte, error) {
	if e.level++; e.level > maxEncodeLevel {
		return b, errFallback
	}
	e.depth++
	b = append(b, '[')
	n := v.Len()
	var err error
	for i := 0; i < n; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = elem(e, b, v.Index(i)); err != nil {
			return b, err
		}
	}
	e.depth--
	e.level--
	return append(b, ']'), nil
}

// fragment appends the canonical form of JSON text a marshaler wrote. The
// two-step path validates it (encoding/json) and canonicalises it with the
// rest (jcs); rawJCS refuses what either would.
func (e *encState) fragment(b, raw []byte) ([]byte, error) {
	b, err := e.raw.canonical(b, raw, e.depth)
	if err != nil {
		return b, errFallback
	}
	return b, nil
}

func encodeMarshaler(e *encState, b []byte, v reflect.Value) ([]byte, error) {
	if v.Kind() == reflect.Pointer && v.IsNil() {
		return append(b, "null"...), nil
	}
	m, ok := reflect.TypeAssert[json.Marshaler](v)
	if !ok {
		return append(b, "null"...), nil
	}
	raw, err := m.MarshalJSON()
	if err != nil {
		return b, errFallback
	}
	return e.fragment(b, raw)
}

func encodeAddrMarshaler(e *encState, b []byte, v reflect.Value) ([]byte, error) {
	va := v.Addr()
	if va.IsNil() {
		return append(b, "null"...), nil
	}
	m, _ := reflect.TypeAssert[json.Marshaler](va)
	raw, err := m.MarshalJSON()
	if err != nil {
		return b, errFallback
	}
	return e.fragment(b, raw)
}

func encodeText(_ *encState, b []byte, v reflect.Value) ([]byte, error) {
	if v.Kind() == reflect.Pointer && v.IsNil() {
		return append(b, "null"...), nil
	}
	m, ok := reflect.TypeAssert[encoding.TextMarshaler](v)
	if !ok {
		return append(b, "null"...), nil
	}
	text, err := m.MarshalText()
	if err != nil {
		return b, errFallback
	}
	return appendString(b, text), nil
}

func encodeAddrText(_ *encState, b []byte, v reflect.Value) ([]byte, error) {
	va := v.Addr()
	if va.IsNil() {
		return append(b, "null"...), nil
	}
	m, _ := reflect.TypeAssert[encoding.TextMarshaler](va)
	text, err := m.MarshalText()
	if err != nil {
		return b, errFallback
	}
	return appendString(b, text), nil
}

// appendDigest writes d as Digest.MarshalText would, without allocating.
func appendDigest(b []byte, d Digest) ([]byte, error) {
	if d.IsZero() {
		return b, errFallback // MarshalText refuses it
	}
	b = append(b, '"')
	b = d.appendText(b)
	return append(b, '"'), nil
}

func encodeDigest(_ *encState, b []byte, v reflect.Value) ([]byte, error) {
	d, _ := reflect.TypeAssert[Digest](v)
	return appendDigest(b, d)
}

func encodeDigestPtr(_ *encState, b []byte, v reflect.Value) ([]byte, error) {
	if v.IsNil() {
		return append(b, "null"...), nil
	}
	d, _ := reflect.TypeAssert[*Digest](v)
	return appendDigest(b, *d)
}

func encodeRawMessage(e *encState, b []byte, v reflect.Value) ([]byte, error) {
	if v.IsNil() {
		return append(b, "null"...), nil // RawMessage.MarshalJSON's nil
	}
	return e.fragment(b, v.Bytes())
}

// Structs.

type fieldPlan struct {
	key       string // `"name":`, canonical
	name      string
	index     []int
	tag       bool
	omitEmpty bool
	omitZero  bool
	isZero    func(reflect.Value) bool
	enc       encFn
}

func newStructPlan(t reflect.Type) encFn {
	fields := typeFields(t)
	// Members are written in JCS order, fixed by the names alone, so the
	// order is settled once here instead of sorting every value.
	slices.SortFunc(fields, func(a, b fieldPlan) int { return compareUTF16(a.name, b.name) })
	return func(e *encState, b []byte, v reflect.Value) ([]byte, error) {
		if e.level++; e.level > maxEncodeLevel {
			return b, errFallback
		}
		e.depth++
		b = append(b, '{')
		first := true
		var err error
	fields:
		for i := range fields {
			f := &fields[i]
			var fv reflect.Value
			if len(f.index) == 1 {
				fv = v.Field(f.index[0])
			} else {
				fv = v
				for _, x := range f.index {
					if fv.Kind() == reflect.Pointer {
						if fv.IsNil() {
							continue fields
						}
						fv = fv.Elem()
					}
					fv = fv.Field(x)
				}
			}
			if f.omitEmpty && isEmptyValue(fv) ||
				f.omitZero && (f.isZero == nil && fv.IsZero() || f.isZero != nil && f.isZero(fv)) {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(b, f.key...)
			if b, err = f.enc(e, b, fv); err != nil {
				return b, err
			}
		}
		e.depth--
		e.level--
		return append(b, '}'), nil
	}
}

func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64,
		reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// typeFields lists the JSON fields of struct type t by encoding/json's
// rules: exported fields and the fields of embedded structs, breadth
// first; a shallower field hides a deeper one of the same name, a tagged
// one an untagged one at the same depth, and otherwise names that collide
// at the same depth are all dropped.
func typeFields(t reflect.Type) []fieldPlan {
	type queued struct {
		typ   reflect.Type
		index []int
	}
	current, next := []queued{}, []queued{{typ: t}}
	var count, nextCount map[reflect.Type]int
	visited := map[reflect.Type]bool{}
	var fields []fieldPlan
	for len(next) > 0 {
		current, next = next, current[:0]
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, f := range current {
			if visited[f.typ] {
				continue
			}
			visited[f.typ] = true
			for i := 0; i < f.typ.NumField(); i++ {
				sf := f.typ.Field(i)
				if sf.Anonymous {
					et := sf.Type
					if et.Kind() == reflect.Pointer {
						et = et.Elem()
					}
					if !sf.IsExported() && et.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !isValidTag(name) {
					name = ""
				}
				index := make([]int, len(f.index)+1)
				copy(index, f.index)
				index[len(f.index)] = i

				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				quoted := false
				if hasOption(opts, "string") {
					switch ft.Kind() {
					case reflect.Bool,
						reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
						reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
						reflect.Float32, reflect.Float64,
						reflect.String:
						quoted = true
					}
				}
				if name != "" || !sf.Anonymous || ft.Kind() != reflect.Struct {
					tagged := name != ""
					if name == "" {
						name = sf.Name
					}
					fp := fieldPlan{
						name:      name,
						key:       string(appendString(nil, name)) + ":",
						index:     index,
						tag:       tagged,
						omitEmpty: hasOption(opts, "omitempty"),
						omitZero:  hasOption(opts, "omitzero"),
					}
					if fp.omitZero {
						fp.isZero = isZeroFunc(sf.Type)
					}
					if quoted {
						fp.enc = newPlan(sf.Type, true, true)
					} else {
						fp.enc = planFor(sf.Type)
					}
					fields = append(fields, fp)
					if count[f.typ] > 1 {
						// Two instances of the embedded type at this
						// depth: the duplicate annihilates the field below.
						fields = append(fields, fields[len(fields)-1])
					}
					continue
				}
				nextCount[ft]++
				if nextCount[ft] == 1 {
					next = append(next, queued{typ: ft, index: index})
				}
			}
		}
	}
	slices.SortFunc(fields, func(a, b fieldPlan) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := cmp.Compare(len(a.index), len(b.index)); c != 0 {
			return c
		}
		if a.tag != b.tag {
			if a.tag {
				return -1
			}
			return 1
		}
		return slices.Compare(a.index, b.index)
	})
	out := fields[:0]
	for advance, i := 0, 0; i < len(fields); i += advance {
		fi := fields[i]
		for advance = 1; i+advance < len(fields); advance++ {
			if fields[i+advance].name != fi.name {
				break
			}
		}
		if advance == 1 {
			out = append(out, fi)
			continue
		}
		// Sorted by depth, then tag: the first dominates unless the
		// second ties with it.
		if len(fields[i].index) == len(fields[i+1].index) && fields[i].tag == fields[i+1].tag {
			continue
		}
		out = append(out, fi)
	}
	return out
}

func hasOption(opts, name string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == name {
			return true
		}
	}
	return false
}

func isValidTag(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// isZeroFunc is encoding/json's omitzero test for a field of type t: the
// type's IsZero method when it has one, else reflect's zero value.
func isZeroFunc(t reflect.Type) func(reflect.Value) bool {
	switch {
	case t.Kind() == reflect.Interface && t.Implements(isZeroerType):
		return func(v reflect.Value) bool {
			return v.IsNil() ||
				(v.Elem().Kind() == reflect.Pointer && v.Elem().IsNil()) ||
				v.Interface().(interface{ IsZero() bool }).IsZero()
		}
	case t.Kind() == reflect.Pointer && t.Implements(isZeroerType):
		return func(v reflect.Value) bool {
			return v.IsNil() || v.Interface().(interface{ IsZero() bool }).IsZero()
		}
	case t.Implements(isZeroerType):
		return func(v reflect.Value) bool {
			return v.Interface().(interface{ IsZero() bool }).IsZero()
		}
	case reflect.PointerTo(t).Implements(isZeroerType):
		return func(v reflect.Value) bool {
			if !v.CanAddr() {
				v2 := reflect.New(v.Type()).Elem()
				v2.Set(v)
				v = v2
			}
			return v.Addr().Interface().(interface{ IsZero() bool }).IsZero()
		}
	}
	return nil
}

// Maps.

type keyMode uint8

const (
	keyString keyMode = iota
	keyDigest
	keyText
	keyInt
	keyUint
)

func newMapPlan(t reflect.Type) encFn {
	kt := t.Key()
	var mode keyMode
	switch {
	case kt.Kind() == reflect.String:
		mode = keyString // the kind wins over a MarshalText method
	case kt == digestType:
		mode = keyDigest
	case kt.Implements(textMarshalerType):
		mode = keyText
	case kt.Kind() >= reflect.Int && kt.Kind() <= reflect.Int64:
		mode = keyInt
	case kt.Kind() >= reflect.Uint && kt.Kind() <= reflect.Uintptr:
		mode = keyUint
	default:
		return encodeUnsupported
	}
	elem := planFor(t.Elem())
	// Values are copied out of the map into one slice rather than one
	// allocation each — unless the element type encodes differently when
	// addressable (a pointer-receiver marshaler), as map values are not.
	var valSlice reflect.Type
	if !addrSensitive(t.Elem()) {
		valSlice = reflect.SliceOf(t.Elem())
	}
	return func(e *encState, b []byte, v reflect.Value) ([]byte, error) {
		if v.IsNil() {
			return append(b, "null"...), nil
		}
		n := v.Len()
		if n == 0 {
			return append(b, "{}"...), nil
		}
		if e.level++; e.level > maxEncodeLevel {
			return b, errFallback
		}
		var vals reflect.Value
		if valSlice != nil {
			vals = reflect.MakeSlice(valSlice, n, n)
		}
		var kv reflect.Value
		switch {
		case kt == stringType:
			if !e.strKey.IsValid() {
				e.strKey = reflect.New(stringType).Elem()
			}
			kv = e.strKey
		case mode == keyString || mode == keyDigest:
			kv = reflect.New(kt).Elem()
		}
		keyBase, entBase := len(e.keys), len(e.ents)
		it := v.MapRange()
		for i := 0; it.Next(); i++ {
			start := len(e.keys)
			switch mode {
			case keyString:
				kv.SetIterKey(it)
				s := kv.String()
				if utf8.ValidString(s) {
					e.keys = append(e.keys, s...)
				} else {
					e.keys = validUTF8(e.keys, s)
				}
			case keyDigest:
				kv.SetIterKey(it)
				d, _ := reflect.TypeAssert[Digest](kv)
				if d.IsZero() {
					return b, errFallback
				}
				e.keys = d.appendText(e.keys)
			case keyText:
				k := it.Key()
				if k.Kind() != reflect.Pointer || !k.IsNil() {
					tm, ok := reflect.TypeAssert[encoding.TextMarshaler](k)
					if !ok {
						return b, errFallback // a nil interface key
					}
					text, err := tm.MarshalText()
					if err != nil {
						return b, errFallback
					}
					e.keys = validUTF8(e.keys, text)
				}
			case keyInt:
				e.keys = strconv.AppendInt(e.keys, it.Key().Int(), 10)
			case keyUint:
				e.keys = strconv.AppendUint(e.keys, it.Key().Uint(), 10)
			}
			ent := mapEntry{start: start, end: len(e.keys), val: i}
			if valSlice != nil {
				vals.Index(i).SetIterValue(it)
			} else {
				ent.v = it.Value()
			}
			e.ents = append(e.ents, ent)
		}
		ents := e.ents[entBase:]
		keys := e.keys
		slices.SortFunc(ents, func(x, y mapEntry) int {
			return compareUTF16(keys[x.start:x.end], keys[y.start:y.end])
		})
		for i := 1; i < len(ents); i++ {
			if string(keys[ents[i-1].start:ents[i-1].end]) == string(keys[ents[i].start:ents[i].end]) {
				// Two keys with one text (say "\xff" and "\xfe", both
				// U+FFFD): jcs refuses the duplicate.
				return b, errFallback
			}
		}
		e.depth++
		b = append(b, '{')
		var err error
		for i := range ents {
			// e.ents may grow (and move) under nested maps: index it.
			ent := e.ents[entBase+i]
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, e.keys[ent.start:ent.end])
			b = append(b, ':')
			val := ent.v
			if valSlice != nil {
				val = vals.Index(ent.val)
			}
			if b, err = elem(e, b, val); err != nil {
				return b, err
			}
		}
		e.keys, e.ents = e.keys[:keyBase], e.ents[:entBase]
		e.depth--
		e.level--
		return append(b, '}'), nil
	}
}

// addrSensitive reports whether a value of type t may encode differently
// when addressable than when not: a marshaler that only the pointer type
// has, here or in a field or element stored inline.
func addrSensitive(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		return false
	}
	pt := reflect.PointerTo(t)
	if t.Implements(marshalerType) {
		return false
	}
	if pt.Implements(marshalerType) {
		return true
	}
	if t.Implements(textMarshalerType) {
		return false
	}
	if pt.Implements(textMarshalerType) {
		return true
	}
	switch t.Kind() {
	case reflect.Array:
		return addrSensitive(t.Elem())
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if addrSensitive(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
}
