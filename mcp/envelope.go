package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/groundgate/groundgate/hashing"
)

// The SDK decodes JSON-RPC messages with a decoder that matches member
// names case-insensitively, so {"method": …, "Method": …} or a lone
// "Params" would mean to it what a proxy or a log reading the exact names
// does not. Every message is therefore checked by the project's one strict
// codec before the SDK sees it: no duplicate keys (exact or differing only
// in case) anywhere in it, and only JSON-RPC 2.0's member names, spelt
// exactly, at its top level. The tool arguments inside are decoded
// strictly again by the operation they reach (server.DecodeObject).

// envelope is a JSON-RPC 2.0 message's members: a request, a
// notification or a response.
type envelope struct {
	JSONRPC jsontext.Value `json:"jsonrpc"`
	ID      jsontext.Value `json:"id"`
	Method  jsontext.Value `json:"method"`
	Params  jsontext.Value `json:"params"`
	Result  jsontext.Value `json:"result"`
	Error   jsontext.Value `json:"error"`
}

// checkMessage refuses a message the SDK could read otherwise than its
// exact bytes say. A JSON array or scalar is left to the caller's own
// answers (batches, non-objects).
func checkMessage(b []byte) error {
	if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' {
		return nil
	}
	var e envelope
	if err := hashing.DecodeStrict(b, &e); err != nil {
		return err
	}
	return nil
}

// strictMessages answers a POST whose body checkMessage refuses with a
// JSON-RPC parse error (HTTP 400) naming the key; everything else goes to
// next with the body as it was.
func strictMessages(next http.Handler, limit int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
		if err == nil && int64(len(body)) <= limit {
			if cerr := checkMessage(body); cerr != nil {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil,
					"error": map[string]any{"code": -32700, "message": fmt.Sprintf("not a JSON-RPC 2.0 message: %v", cerr)}})
				_, _ = w.Write(b)
				return
			}
		}
		// Too large or unreadable: the SDK answers as it does, with what
		// was read and the rest of the stream.
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
		next.ServeHTTP(w, r)
	})
}
