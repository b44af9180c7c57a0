package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestMCPAgentOrigin: the streamable-HTTP transport has servers validate
// the Origin header browsers send and refuse a foreign one with 403, so
// that a page on another site (or a rebinding domain) cannot drive an
// agent's tools. Quiver's own origin (the request's host, or
// QUIVER_PUBLIC_URL's) and clients that send no Origin are unaffected.
func TestMCPAgentOrigin(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Env: map[string]string{"QUIVER_PUBLIC_URL": "https://quiver.example.com"}})
	r := srv.Do("POST", "/api/v1/agents/", map[string]any{"name": "origin", "tools": []int64{}})
	if r.Status != 201 {
		t.Fatalf("agent: %d %s", r.Status, r.Body)
	}
	endpoint := fmt.Sprintf("%s/api/v1/agents/%d/mcp", srv.URL, int64(r.JSON()["id"].(float64)))
	path := strings.TrimPrefix(endpoint, srv.URL)
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}`
	post := func(origin string) *testserver.Response {
		h := []string{"Accept", "application/json, text/event-stream", "Content-Type", "application/json"}
		if origin != "" {
			h = append(h, "Origin", origin)
		}
		return srv.Do("POST", path, initialize, h...)
	}
	for _, origin := range []string{"", srv.URL, "https://quiver.example.com", "HTTPS://Quiver.Example.com"} {
		if r := post(origin); r.Status != 200 {
			t.Errorf("Origin %q: %d %s, want 200", origin, r.Status, r.Body)
		}
	}
	for _, origin := range []string{"https://evil.example", "null", "http://quiver.example.com", "https://quiver.example.com.evil.example", "file://"} {
		r := post(origin)
		if r.Status != 403 || r.JSON()["error"] != "forbidden" {
			t.Errorf("Origin %q: %d %s, want 403 forbidden", origin, r.Status, r.Body)
		}
	}
	// The key is still checked first: no key is 401 whatever the origin.
	r = testserver.Do(t, srv.URL, "", "POST", path, initialize, "Origin", "https://evil.example")
	if r.Status != 401 {
		t.Errorf("no key, foreign origin: %d %s, want 401", r.Status, r.Body)
	}
}
