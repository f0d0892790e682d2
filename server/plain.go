package server

import (
	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/internal/plainjson"
)

// The two hottest bodies, POST /v1/discover's and POST /v1/ground's, are
// decoded without reflection when they are plain JSON (package plainjson)
// with only their own fields, spelt exactly: what decodeStrictBody makes
// of such a body, in a fraction of its time. Every other body, including
// each one decodeStrictBody refuses, goes to decodeStrictBody.
// TestPlainBodies and FuzzPlainBodies check that the two agree.

// plainQuery decodes a discover body {"prompt": …} or {"terms": […]}.
func plainQuery(b []byte) (discover.Query, bool) {
	var q discover.Query
	s := plainjson.New(b)
	ok := s.Object(func(key []byte) bool {
		switch string(key) {
		case "prompt":
			var ok bool
			q.Prompt, ok = s.String()
			return ok
		case "terms":
			q.Terms = []string{}
			return s.Array(func() bool {
				t, ok := s.String()
				q.Terms = append(q.Terms, t)
				return ok
			})
		}
		return false
	})
	return q, ok && s.End()
}

// plainGround decodes a ground body whose request is an object and whose
// discovery is an id (inline evidence takes the strict path).
func plainGround(b []byte) (groundRequest, bool) {
	var gr groundRequest
	s := plainjson.New(b)
	ok := s.Object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "request":
			if s.Peek() != '{' {
				return false
			}
			gr.Request, ok = s.Raw()
		case "discovery":
			if s.Peek() != '"' {
				return false
			}
			gr.Discovery, ok = s.Raw()
		case "repair":
			gr.Repair, ok = s.String()
		}
		return ok
	})
	return gr, ok && s.End()
}
