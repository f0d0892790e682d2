package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"

	"github.com/groundgate/groundgate/hashing"
)

// MaxToolStateDepth bounds the nesting of the JSON a tool's state is built
// from: objects and arrays open at once in the arguments or the result.
const MaxToolStateDepth = 64

// ToolState builds the state a tool's clauses read (ToolSchemaVersion)
// from a call: the capability's name U.T, its arguments object (nil or
// JSON null: no arguments, {}) and, for postconditions, the
// CallToolResult (nil for preconditions: the state then has no result
// keys). JSON becomes what CEL reads: an object a map[string]any, an
// array an []any, a string, a bool, null nil (CEL's null), and a number
// an int64 when its value is an integer that fits (1, 1.0 and 1e2 alike:
// their canonical JSON is one), else a float64. The result's content is
// [] and its isError false when the upstream leaves them out (MCP's
// defaults); structured is its structuredContent, or {} when there is
// none. Outside a session the state and the facts are {} and now is
// absent (ToolStateIn fills them in a session).
//
// The caller has checked the documents; ToolState checks again (the
// project's strict syntax, objects where objects belong, the depth bound)
// and returns an error rather than a partial state.
func ToolState(tool string, arguments, result []byte) (State, error) {
	args, err := decodeObject(arguments, true)
	if err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	st := State{"tool": tool, "arguments": args, "state": map[string]any{}, "facts": map[string]any{}}
	if result == nil {
		return st, nil
	}
	res, err := decodeObject(result, false)
	if err != nil {
		return nil, fmt.Errorf("result: %w", err)
	}
	if _, ok := res["content"]; !ok {
		res["content"] = []any{}
	}
	if _, ok := res["isError"]; !ok {
		res["isError"] = false
	}
	structured := map[string]any{}
	if sc, ok := res["structuredContent"]; ok && sc != nil {
		m, ok := sc.(map[string]any)
		if !ok {
			return nil, errors.New("result: structuredContent is not a JSON object")
		}
		structured = m
	}
	st["result"], st["structured"] = res, structured
	return st, nil
}

// decodeObject decodes a JSON object; empty input or null is an empty one
// when nullOK.
func decodeObject(data []byte, nullOK bool) (map[string]any, error) {
	if t := bytes.TrimSpace(data); nullOK && (len(t) == 0 || string(t) == "null") {
		return map[string]any{}, nil
	}
	if err := hashing.CheckStrict(data); err != nil {
		return nil, err
	}
	return decodeJSON(data)
}

// celJSON converts a value encoding/json decoded (with UseNumber) to
// ToolState's types; depth is the nesting of v, from 1.
func celJSON(v any, depth int) (any, error) {
	switch x := v.(type) {
	case nil, bool, string:
		return x, nil
	case json.Number:
		return jsonNumber(string(x))
	case map[string]any:
		if depth > MaxToolStateDepth {
			return nil, fmt.Errorf("nested deeper than %d", MaxToolStateDepth)
		}
		for k, e := range x {
			c, err := celJSON(e, depth+1)
			if err != nil {
				return nil, err
			}
			x[k] = c
		}
		return x, nil
	case []any:
		if depth > MaxToolStateDepth {
			return nil, fmt.Errorf("nested deeper than %d", MaxToolStateDepth)
		}
		for i, e := range x {
			c, err := celJSON(e, depth+1)
			if err != nil {
				return nil, err
			}
			x[i] = c
		}
		return x, nil
	}
	return nil, fmt.Errorf("unexpected JSON value %T", v)
}

// jsonNumber converts a JSON number literal: an integer written as one is
// read exactly when it fits an int64; any other number is its float64,
// an int64 when that is integral and fits.
func jsonNumber(lit string) (any, error) {
	if !strings.ContainsAny(lit, ".eE") {
		if i, err := strconv.ParseInt(lit, 10, 64); err == nil {
			return i, nil
		}
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, fmt.Errorf("number %s is out of range", clip(lit))
	}
	if f == math.Trunc(f) && f >= -(1<<63) && f < 1<<63 {
		if f == 0 {
			return int64(0), nil // -0 too
		}
		return int64(f), nil
	}
	return f, nil
}

// jsonAdapter is a tool clause's CEL type adapter: it gives CEL the
// state's JSON objects as maps that iterate in key order, and its arrays
// as lists whose elements it adapts in turn. CEL's own map of a Go map
// iterates in Go's random order, so exists, all, map or filter over an
// object nested in the arguments or the result could decide differently
// from one run to the next.
type jsonAdapter struct{ base types.Adapter }

func (a jsonAdapter) NativeToValue(v any) ref.Val {
	if l, ok := v.(*lazyJSON); ok {
		x, err := l.value()
		if err != nil {
			return types.NewErr("the session's state: %v", err)
		}
		v = x
	}
	switch x := v.(type) {
	case map[string]any:
		return sortedMap{types.NewStringInterfaceMap(a, x), x}
	case []any:
		return types.NewDynamicList(a, x)
	}
	return a.base.NativeToValue(v)
}

// sortedMap is a CEL map over a JSON object whose iteration is in key
// order; everything else is CEL's own map's.
type sortedMap struct {
	traits.Mapper
	m map[string]any
}

func (s sortedMap) Iterator() traits.Iterator {
	keys := make([]string, 0, len(s.m))
	for k := range s.m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return &keyIterator{keys: keys}
}

type keyIterator struct {
	keys []string
	i    int
}

func (it *keyIterator) HasNext() ref.Val { return types.Bool(it.i < len(it.keys)) }

func (it *keyIterator) Next() ref.Val {
	if it.i >= len(it.keys) {
		return nil
	}
	it.i++
	return types.String(it.keys[it.i-1])
}

// The iterator is a ref.Val too (traits.Iterator embeds it), as CEL's own
// are; nothing compares or converts one.
func (it *keyIterator) ConvertToNative(reflect.Type) (any, error) {
	return nil, errors.New("a map iterator has no native form")
}

func (it *keyIterator) ConvertToType(ref.Type) ref.Val {
	return types.NewErr("a map iterator has no type conversion")
}

func (it *keyIterator) Equal(ref.Val) ref.Val {
	return types.NewErr("a map iterator is not comparable")
}

func (it *keyIterator) Type() ref.Type { return types.IteratorType }

func (it *keyIterator) Value() any { return nil }
