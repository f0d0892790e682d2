package agent

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/groundgate/groundgate/discover"
	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/ground"
	"github.com/groundgate/groundgate/registry"
	"github.com/groundgate/groundgate/registry/registrytest"
	"github.com/groundgate/groundgate/sampledata"
	"github.com/groundgate/groundgate/server"
)

// builtinCatalog is the built-in registry as a client sees it: the body
// GET /v1/registry serves for a new database, through JSON into an Export.
func builtinCatalog(t testing.TB) *Catalog {
	t.Helper()
	s := registrytest.Seeded(t, filepath.Join(t.TempDir(), "cat.db"), registry.Options{})
	b, err := json.Marshal(s.Current().Export())
	if err != nil {
		t.Fatal(err)
	}
	var exp Export
	if err := json.Unmarshal(b, &exp); err != nil {
		t.Fatal(err)
	}
	return NewCatalog(&exp)
}

// mustPrompts parses the bundled prompt set.
func mustPrompts(t testing.TB) *PromptSet {
	t.Helper()
	set, err := ParsePrompts(Prompts30())
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func promptByID(t testing.TB, id string) Prompt {
	t.Helper()
	for _, p := range mustPrompts(t).Prompts {
		if p.ID == id {
			return p
		}
	}
	t.Fatalf("no prompt %s", id)
	return Prompt{}
}

// startServer runs the real API (registry, discovery, Γ and, when
// withExecutor, the executor over the bundled sample data) on a loopback
// port. Without the executor, POST /v1/executions answers 404 as a server
// that lacks the route would.
func startServer(t testing.TB, withExecutor bool) *httptest.Server {
	t.Helper()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	store := registrytest.Seeded(t, filepath.Join(t.TempDir(), "gg.db"), registry.Options{Logger: log})
	disc, err := discover.New(ctx, store, store.Engine(), discover.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { disc.Close() })
	gate, err := ground.New(store, disc, store.Engine(), ground.WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	arts, err := execution.OpenArtifacts(store.Engine())
	if err != nil {
		t.Fatal(err)
	}
	exec, err := execution.New(store, arts, store.Engine(), sampledata.FS(), execution.Options{Logger: log, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	h := server.New(server.Deps{Registry: store, Discoverer: disc, Gate: gate, Executor: exec}, server.Config{Logger: log}).Handler()
	if !withExecutor {
		inner := h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/v1/executions") {
				w.Header().Set("Content-Type", "application/problem+json")
				w.WriteHeader(http.StatusNotFound)
				io.WriteString(w, `{"type":"urn:groundgate:problem:not-found","title":"Not Found","status":404,"detail":"no route"}`)
				return
			}
			inner.ServeHTTP(w, r)
		})
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func mustClient(t testing.TB, base string) *Client {
	t.Helper()
	c, err := NewClient(base, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
