package hashing

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// This file is the project's one decoder of untrusted JSON: request
// bodies, MCP arguments, files the CLI reads and records read back from
// storage all go through DecodeStrict (or DecodePart for a part of a
// document DecodeStrict has checked). One object has one spelling:
//
//   - member names match the Go field's JSON name exactly (encoding/json
//     v2 semantics, github.com/go-json-experiment/json), never
//     case-insensitively as encoding/json v1 does;
//   - no object, at any depth, holds a key twice, nor two keys that differ
//     only in case ({"prompt": …, "Prompt": …}): a proxy that reads one and
//     a server that obeys the other would disagree about the same bytes;
//   - members a struct does not declare are refused by name;
//   - trailing data, invalid UTF-8, numbers outside float64 range and
//     nesting deeper than RFC 8785's parser allows are refused.
//
// The syntax, duplicate and number checks are rawJCS's (jcs.go), the same
// parser that canonicalises, so what is decoded is exactly what is hashed.

// strictOptions are encoding/json v2's defaults (exact names, duplicate
// names refused, valid UTF-8) with unknown members refused as well.
var strictOptions = json.JoinOptions(
	json.RejectUnknownMembers(true),
	json.MatchCaseInsensitiveNames(false),
	jsontext.AllowDuplicateNames(false),
	jsontext.AllowInvalidUTF8(false),
)

var checkers = sync.Pool{New: func() any { return new(rawJCS) }}

// DecodeStrict decodes one JSON document into v under the rules above.
// Every refusal wraps ErrMalformed and names what it refused: the key, the
// field or the position.
func DecodeStrict(data []byte, v any) error {
	if err := CheckStrict(data); err != nil {
		return err
	}
	return DecodePart(data, v)
}

// CheckStrict checks a document as DecodeStrict does before decoding it:
// syntax, duplicate keys (exact or differing only in case), number range,
// depth and trailing data.
func CheckStrict(data []byte) error {
	p := checkers.Get().(*rawJCS)
	p.strict = true
	err := p.validate(data)
	dup, other := p.dup, p.other // set for errFoldKey
	p.dup, p.other = "", ""
	if cap(p.nodes) <= 1<<14 {
		checkers.Put(p)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errFoldKey):
		return fmt.Errorf("%w: duplicate key %q: it differs from %q only in case, and one object has one spelling", ErrMalformed, dup, other)
	}
	// jcs words every other refusal (syntax, exact duplicates as
	// `Duplicate key: "k"`, range, depth) as clients have always read it.
	if _, jerr := jcsVerdict(data); jerr != nil {
		return jerr
	}
	return fmt.Errorf("%w: %v", ErrMalformed, err)
}

// DecodePart decodes a part of a document that DecodeStrict has already
// checked as a whole (a json.RawMessage field of it) with the same exact
// names and refusal of unknown members. The whole-document checks are not
// repeated per part.
func DecodePart(data []byte, v any) error {
	if err := json.Unmarshal(data, v, strictOptions); err != nil {
		return &DecodeError{Reason: describe(err)}
	}
	return nil
}

// DecodeFields decodes the members of a document that v declares,
// skipping the others: a record's one field read without the rest, or an
// outside API's answer that carries more than is read. The document is
// checked as DecodeStrict checks it, and names still match exactly.
func DecodeFields(data []byte, v any) error {
	if err := CheckStrict(data); err != nil {
		return err
	}
	if err := json.Unmarshal(data, v, fieldOptions); err != nil {
		return &DecodeError{Reason: describe(err)}
	}
	return nil
}

var fieldOptions = json.JoinOptions(strictOptions, json.RejectUnknownMembers(false))

// DecodePartFields is to DecodeFields what DecodePart is to DecodeStrict:
// it decodes the members of data that v declares, skipping the others,
// with exact names, leaving the whole-document checks (CheckStrict) to
// the caller, who has made those it needs (an upstream's answer checked
// at its top level, whose other members are checked where they are used).
func DecodePartFields(data []byte, v any) error {
	if err := json.Unmarshal(data, v, fieldOptions); err != nil {
		return &DecodeError{Reason: describe(err)}
	}
	return nil
}

// DecodeError is DecodePart's refusal. It is ErrMalformed; Reason is the
// refusal without that prefix, for a caller that reports it per field.
type DecodeError struct {
	Reason string
}

func (e *DecodeError) Error() string        { return ErrMalformed.Error() + ": " + e.Reason }
func (e *DecodeError) Is(target error) bool { return target == ErrMalformed }

// Reason is err's refusal without the "malformed: " prefix when err is a
// DecodeError, else err's text.
func Reason(err error) string {
	var de *DecodeError
	if errors.As(err, &de) {
		return de.Reason
	}
	return err.Error()
}

// describe words a decoding error for a client: the member it refused, or
// where in the document and what was expected there. An error returned by
// a type's own UnmarshalJSON method is its own message, as encoding/json
// v1 returned it.
func describe(err error) string {
	var se *json.SemanticError
	if !errors.As(err, &se) {
		var sx *jsontext.SyntacticError
		if errors.As(err, &sx) {
			return strings.TrimPrefix(sx.Error(), "jsontext: ")
		}
		return strings.TrimPrefix(err.Error(), "json: ")
	}
	at := ""
	if se.JSONPointer != "" {
		at = fmt.Sprintf(" at %s", se.JSONPointer)
	}
	switch {
	case se.Err == json.ErrUnknownName:
		name := se.JSONPointer.LastToken()
		parent := se.JSONPointer.Parent()
		if parent == "" {
			return fmt.Sprintf("unknown field %q", name)
		}
		return fmt.Sprintf("unknown field %q at %s", name, parent)
	case se.Err != nil && fromMethod(se.GoType):
		return se.Err.Error()
	}
	// encoding/json v1's words, with the member's JSON pointer.
	want := "value"
	if se.GoType != nil {
		want = se.GoType.String()
	}
	msg := fmt.Sprintf("cannot unmarshal %s%s into Go value of type %s", kindName(se.JSONKind), at, want)
	if se.Err != nil {
		msg += ": " + se.Err.Error()
	}
	return msg
}

// fromMethod reports whether t decodes itself (an UnmarshalJSON or
// UnmarshalJSONFrom method), so that an error about it is the method's.
func fromMethod(t reflect.Type) bool {
	if t == nil {
		return false
	}
	for _, u := range []reflect.Type{t, reflect.PointerTo(t)} {
		if u.Implements(unmarshalerV1) || u.Implements(unmarshalerV2) {
			return true
		}
	}
	return false
}

var (
	unmarshalerV1 = reflect.TypeFor[json.Unmarshaler]()
	unmarshalerV2 = reflect.TypeFor[json.UnmarshalerFrom]()
)

func kindName(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 'f', 't':
		return "bool"
	case '"':
		return "string"
	case '0':
		return "number"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return "JSON value"
}
