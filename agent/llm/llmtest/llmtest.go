// Package llmtest imitates an OpenAI-compatible chat-completions endpoint
// on loopback, for tests of the clients built on package llm.
package llmtest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
)

// Answer decides a reply (status and body) from the n-th request (from 1)
// and its decoded body.
type Answer func(n int, req map[string]any) (status int, body string)

// Server is the imitation endpoint. It serves POST /v1/chat/completions
// only and records every request it answers.
type Server struct {
	// BaseURL is the API root to configure (it ends in /v1).
	BaseURL string

	answer   Answer
	mu       sync.Mutex
	requests []map[string]any
	auth     []string
}

// Start serves answer on 127.0.0.1 until the test ends.
func Start(t testing.TB, answer Answer) *Server {
	t.Helper()
	s := &Server{answer: answer}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.BaseURL = srv.URL + "/v1"
	return s
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	var req map[string]any
	b, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(b, &req); err != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	n := len(s.requests)
	s.mu.Unlock()
	status, body := s.answer(n, req)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// Requests are the decoded bodies of the requests answered so far.
func (s *Server) Requests() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Authorization is each answered request's Authorization header.
func (s *Server) Authorization() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.auth)
}

// Completion wraps content as a chat-completions answer.
func Completion(content string) string {
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-test", "object": "chat.completion",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": content}}},
	})
	return string(b)
}
