// Package statekey is the one implementation of the key a session's
// trusted state files a call's result under (docs/sessions.md, "The
// trusted state"): session stores results under it and contract's read()
// looks them up by it, so the two can never disagree.
package statekey

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/groundgate/groundgate/hashing"
)

// Key is the key a call's result is filed under in its tool's map: every
// argument, as NAME=VALUE, in RFC 8785 order of the names, joined by "&".
// A string VALUE is the string itself; any other value is its RFC 8785
// text (5, true, null, [1,2], {"a":1}). In names and values, "%", "&" and
// "=" are written %25, %26 and %3D, and nothing else is escaped. A call
// without arguments (none, null or {}) has the key "".
//
//	{"reservation_id": "ZFA04Y"}              reservation_id=ZFA04Y
//	{"origin": "JFK", "date": "2024-05-20"}   date=2024-05-20&origin=JFK
func Key(arguments json.RawMessage) (string, error) {
	_, k, err := Of(arguments)
	return k, err
}

// Of returns the canonical arguments ({} for none) and their Key.
func Of(arguments json.RawMessage) (json.RawMessage, string, error) {
	if t := bytes.TrimSpace(arguments); len(t) == 0 || string(t) == "null" {
		return json.RawMessage("{}"), "", nil
	}
	canon, err := hashing.CanonicalizeJSON(arguments)
	if err != nil {
		return nil, "", fmt.Errorf("arguments: %s", hashing.Reason(err))
	}
	if canon[0] != '{' {
		return nil, "", fmt.Errorf("arguments are not a JSON object")
	}
	d := jsontext.NewDecoder(bytes.NewReader(canon))
	if _, err := d.ReadToken(); err != nil {
		return nil, "", err
	}
	var b strings.Builder
	for d.PeekKind() != '}' {
		tok, err := d.ReadToken()
		if err != nil {
			return nil, "", err
		}
		name := tok.String()
		v, err := d.ReadValue()
		if err != nil {
			return nil, "", err
		}
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		escape(&b, name)
		b.WriteByte('=')
		if v.Kind() == '"' {
			s, err := jsontext.AppendUnquote(nil, v)
			if err != nil {
				return nil, "", err
			}
			escape(&b, string(s))
		} else {
			escape(&b, string(v))
		}
	}
	return canon, b.String(), nil
}

var escaper = strings.NewReplacer("%", "%25", "&", "%26", "=", "%3D")

func escape(b *strings.Builder, s string) {
	if !strings.ContainsAny(s, "%&=") {
		b.WriteString(s)
		return
	}
	_, _ = escaper.WriteString(b, s)
}
