package e2e

// A Tavily 5xx reached Tavily's server and came back: API.md makes it an
// outcome, a tool error kept and replayed like any other. The search is
// retryable, so a caller that wants Tavily asked again retries without
// the key (or with a new one); one that retries with the same key gets the
// answer it got, and Tavily is not asked again.

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

func TestH3Tavily5xxIsAKeptOutcome(t *testing.T) {
	var asked atomic.Int64
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if asked.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"detail":{"error":"overloaded"}}`)
			return
		}
		io.WriteString(w, `{"query":"q","results":[]}`)
	}))
	t.Cleanup(fake.Close)
	srv := testserver.Start(t, testserver.Options{Env: map[string]string{"QUIVER_TAVILY_BASE_URL": fake.URL}})
	r := srv.Do("POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "tavily"})
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	id := int64(r.JSON()["id"].(float64))
	if r = srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id),
		map[string]any{"user_response": map[string]any{"TAVILY_API_KEY": "tvly-h3"}}); r.Status != 200 {
		t.Fatalf("configure: %d %s", r.Status, r.Body)
	}

	first := srv.Do("POST", callPath, tvSearch(id, "q"), "Idempotency-Key", "h3-5xx")
	res, _ := first.JSON()["result"].(map[string]any)
	if first.Status != 200 || first.JSON()["is_error"] != true || res["status"] != float64(503) {
		t.Fatalf("5xx: %d %s, want 200 with a tool error carrying status 503", first.Status, first.Body)
	}
	again := srv.Do("POST", callPath, tvSearch(id, "q"), "Idempotency-Key", "h3-5xx")
	if again.Status != 200 || string(again.Body) != string(first.Body) || again.Header.Get("Idempotent-Replayed") != "true" || asked.Load() != 1 {
		t.Fatalf("same key: %d %v %s (Tavily asked %d times), want the 5xx replayed", again.Status, again.Header, again.Body, asked.Load())
	}
	fresh := srv.Do("POST", callPath, tvSearch(id, "q"))
	if fresh.Status != 200 || fresh.JSON()["is_error"] != false || asked.Load() != 2 {
		t.Fatalf("no key: %d %s (Tavily asked %d times), want the search run again", fresh.Status, fresh.Body, asked.Load())
	}
}
