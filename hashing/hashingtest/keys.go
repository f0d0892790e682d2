// Package hashingtest makes test input for decoders of untrusted JSON:
// the other spellings of a document's keys that the one strict codec
// (hashing.DecodeStrict) must refuse.
package hashingtest

import (
	"bytes"
	"strings"
	"unicode"

	"github.com/go-json-experiment/json/jsontext"
)

// Mutation is a document with one key spelt twice or otherwise.
type Mutation struct {
	Doc []byte
	// Key is the spelling a refusal must name.
	Key string
	// Kind is "duplicate" (the key again, same value), "case-duplicate"
	// (the key again in other letter case, beside the original) or "case"
	// (the key replaced by its other-case spelling).
	Kind string
	// Top reports whether the key is a member of the top-level object.
	Top bool
}

// node is a parsed JSON value that keeps member order.
type node struct {
	raw     jsontext.Value // scalars
	object  bool
	array   bool
	names   []string
	members []*node
}

func parse(d *jsontext.Decoder) (*node, error) {
	switch d.PeekKind() {
	case '{':
		if _, err := d.ReadToken(); err != nil {
			return nil, err
		}
		n := &node{object: true}
		for d.PeekKind() != '}' {
			tok, err := d.ReadToken()
			if err != nil {
				return nil, err
			}
			name := tok.String() // before the next read voids tok
			v, err := parse(d)
			if err != nil {
				return nil, err
			}
			n.names = append(n.names, name)
			n.members = append(n.members, v)
		}
		_, err := d.ReadToken()
		return n, err
	case '[':
		if _, err := d.ReadToken(); err != nil {
			return nil, err
		}
		n := &node{array: true}
		for d.PeekKind() != ']' {
			v, err := parse(d)
			if err != nil {
				return nil, err
			}
			n.members = append(n.members, v)
		}
		_, err := d.ReadToken()
		return n, err
	}
	v, err := d.ReadValue()
	return &node{raw: bytes.Clone(v)}, err
}

// edit changes the members of one object as they are written.
type edit struct {
	target *node
	i      int
	kind   string
	name   string
}

func (n *node) write(b []byte, e edit) []byte {
	switch {
	case n.object:
		b = append(b, '{')
		first := true
		member := func(name string, v *node) {
			if !first {
				b = append(b, ',')
			}
			first = false
			b, _ = jsontext.AppendQuote(b, name)
			b = append(b, ':')
			b = v.write(b, e)
		}
		for i, name := range n.names {
			if n == e.target && i == e.i {
				switch e.kind {
				case "duplicate", "case-duplicate":
					member(name, n.members[i])
					member(e.name, n.members[i])
					continue
				case "case":
					member(e.name, n.members[i])
					continue
				}
			}
			member(name, n.members[i])
		}
		return append(b, '}')
	case n.array:
		b = append(b, '[')
		for i, v := range n.members {
			if i > 0 {
				b = append(b, ',')
			}
			b = v.write(b, e)
		}
		return append(b, ']')
	}
	return append(b, n.raw...)
}

// OtherCase is s with the case of its first cased letter swapped, or ""
// when s has no cased letter.
func OtherCase(s string) string {
	for i, r := range s {
		var o rune
		switch {
		case unicode.IsLower(r):
			o = unicode.ToUpper(r)
		case unicode.IsUpper(r):
			o = unicode.ToLower(r)
		default:
			continue
		}
		if o != r {
			return s[:i] + string(o) + s[i+len(string(r)):]
		}
	}
	return ""
}

// KeyMutations returns, for every key of every object in doc, the
// document with that key duplicated exactly, duplicated in other letter
// case, and replaced by its other-case spelling. doc must be valid JSON
// whose keys are printable ASCII.
func KeyMutations(doc []byte) []Mutation {
	root, err := parse(jsontext.NewDecoder(bytes.NewReader(doc)))
	if err != nil {
		panic("hashingtest: " + err.Error())
	}
	var out []Mutation
	var walk func(n *node, top bool)
	walk = func(n *node, top bool) {
		for i, v := range n.members {
			if n.object {
				name := n.names[i]
				out = append(out, Mutation{Doc: root.write(nil, edit{n, i, "duplicate", name}), Key: name, Kind: "duplicate", Top: top})
				if o := OtherCase(name); o != "" && !strings.ContainsAny(name, `"\`) {
					out = append(out,
						Mutation{Doc: root.write(nil, edit{n, i, "case-duplicate", o}), Key: o, Kind: "case-duplicate", Top: top},
						Mutation{Doc: root.write(nil, edit{n, i, "case", o}), Key: o, Kind: "case", Top: top})
				}
			}
			walk(v, false)
		}
	}
	walk(root, true)
	return out
}

// WithPair returns doc with two members, a and b, both null, added to
// its obj-th object (in document order, modulo the number of objects),
// or false when doc has no object.
func WithPair(doc []byte, obj int, a, b string) ([]byte, bool) {
	root, err := parse(jsontext.NewDecoder(bytes.NewReader(doc)))
	if err != nil {
		panic("hashingtest: " + err.Error())
	}
	var objects []*node
	var walk func(n *node)
	walk = func(n *node) {
		if n.object {
			objects = append(objects, n)
		}
		for _, v := range n.members {
			walk(v)
		}
	}
	walk(root)
	if len(objects) == 0 {
		return nil, false
	}
	if obj < 0 {
		obj = -obj
	}
	n := objects[obj%len(objects)]
	null := &node{raw: jsontext.Value("null")}
	n.names = append(n.names, a, b)
	n.members = append(n.members, null, null)
	return root.write(nil, edit{}), true
}
