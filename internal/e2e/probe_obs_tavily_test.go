package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestProbeObsTavilyEchoHidden: a Tavily that quotes the API key it was
// sent in its refusal (401, 400, 429) or failure (500, 503) has its words
// shown with the key masked. Before, the key was in the answer's message,
// and in a failure's tool error result.
func TestProbeObsTavilyEchoHidden(t *testing.T) {
	const key = "tvly-obsTAVILYsecret0123456789"
	status := 401
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"detail":{"error":"the key %s is not valid here"}}`, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	}))
	t.Cleanup(fake.Close)
	srv := testserver.Start(t, testserver.Options{Env: map[string]string{"QUIVER_TAVILY_BASE_URL": fake.URL}})
	r := srv.Do("POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "tavily"})
	id := int64(r.JSON()["id"].(float64))
	r = srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id),
		map[string]any{"user_response": map[string]any{"TAVILY_API_KEY": key}})
	if r.Status != 200 {
		t.Fatalf("configure: %d %s", r.Status, r.Body)
	}
	for _, status = range []int{401, 400, 429, 500, 503} {
		r := srv.Do("POST", mqCallPath, tvSearch(id, "q"))
		if (r.Status < 400) != (status >= 500) || !strings.Contains(string(r.Body), "the key **** is not valid here") || strings.Contains(string(r.Body), key[5:]) {
			t.Errorf("Tavily %d: %d %s, want its words with the key masked", status, r.Status, r.Body)
		}
	}
}
