package e2e

import (
	"context"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestReadOnlyKeyOnRoutesThatDoNotExist gives a read-only key the answer any
// key gets where no route takes the request: 404 for a path no route has,
// 405 for a method the path does not take. 403 says the key lacks a
// permission, and no key has one for a route that does not exist. Where the
// route exists and would change something, the read-only key is still 403.
func TestReadOnlyKeyOnRoutesThatDoNotExist(t *testing.T) {
	c := fdStart(t, testserver.Options{})
	agent := c.createAgent(map[string]any{"name": "ro"})
	key, _, err := c.srv.App.Accounts.CreateReadOnlyKey(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	ro := c.as(key)

	for _, k := range []*fdClient{c, ro} {
		k.fail(404, "not_found", "POST", "/api/v1/no-such-route/", map[string]any{})
		k.fail(404, "not_found", "DELETE", "/api/v1/agents/custom-tools/1/no-such-route/", nil)
		for _, r := range [][3]string{
			{"PUT", fdPath("/api/v1/agents/%d/", agent), "DELETE, GET, HEAD, PATCH"},
			{"POST", fdPath("/api/v1/agents/%d/", agent), "DELETE, GET, HEAD, PATCH"},
			{"DELETE", "/api/v1/agents/custom-tools/call/", "POST"},
			{"DELETE", "/api/v1/agents/custom-tools/calls/", "GET, HEAD"},
		} {
			resp := k.do(r[0], r[1], map[string]any{})
			fdWantError(t, resp, 405, "bad_request")
			if got := resp.Header.Get("Allow"); got != r[2] {
				t.Errorf("%s %s: Allow %q, want %q", r[0], r[1], got, r[2])
			}
		}
	}

	ro.fail(403, "forbidden", "PATCH", fdPath("/api/v1/agents/%d/", agent), map[string]any{"name": "changed"})
	ro.fail(403, "forbidden", "DELETE", fdPath("/api/v1/agents/%d/", agent), nil)
	ro.fail(403, "forbidden", "POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "browser"})
	if a := c.ok(200, "GET", fdPath("/api/v1/agents/%d/", agent), nil); a["name"] != "ro" {
		t.Errorf("a read-only key changed the agent: %v", a)
	}
}
