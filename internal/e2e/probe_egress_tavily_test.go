package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestProbeEgressTavilyRedirect: QUIVER_TAVILY_BASE_URL is the operator's
// and dialled without the egress guard, so a redirect it answers must not be
// followed: the redirect's target is the answering server's choice, not the
// operator's, and the guard never sees it. Before, a 307 from "Tavily" to
// another address (here a second loopback server standing in for
// 169.254.169.254) had Quiver re-send the search there, and a 302 made it
// fetch that address and hand the caller its answer. Now the redirect is
// the answer: 502 upstream_refused naming QUIVER_TAVILY_BASE_URL, and the
// other address is never reached.
func TestProbeEgressTavilyRedirect(t *testing.T) {
	var inside atomic.Int32
	metadata := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inside.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"secret":"instance-credentials"}`)
	}))
	t.Cleanup(metadata.Close)
	status := http.StatusTemporaryRedirect
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, metadata.URL+"/latest/meta-data/", status)
	}))
	t.Cleanup(fake.Close)
	srv := testserver.Start(t, testserver.Options{Env: map[string]string{
		"QUIVER_TAVILY_BASE_URL": fake.URL, "QUIVER_EGRESS_ALLOW_PRIVATE": "false",
	}})
	r := srv.Do("POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "tavily"})
	id := int64(r.JSON()["id"].(float64))
	r = srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id),
		map[string]any{"user_response": map[string]any{"TAVILY_API_KEY": "tvly-egress0123456789"}})
	if r.Status != 200 {
		t.Fatalf("configure: %d %s", r.Status, r.Body)
	}
	for _, status = range []int{http.StatusTemporaryRedirect, http.StatusFound, http.StatusMovedPermanently, http.StatusPermanentRedirect} {
		r := srv.Do("POST", mqCallPath, tvSearch(id, "q"))
		if r.Status != http.StatusBadGateway || r.JSON()["error"] != "upstream_refused" ||
			!strings.Contains(string(r.Body), "QUIVER_TAVILY_BASE_URL") || strings.Contains(string(r.Body), "instance-credentials") {
			t.Errorf("Tavily answers %d: %d %s, want 502 upstream_refused naming QUIVER_TAVILY_BASE_URL", status, r.Status, r.Body)
		}
	}
	if n := inside.Load(); n != 0 {
		t.Errorf("the redirect's target was reached %d times", n)
	}
}
