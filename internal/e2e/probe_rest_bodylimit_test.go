package e2e

import (
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestBodyLimitOnRoutesWithoutBody holds the routes that read no body (GET,
// DELETE, reset-config) to the body limit too: a body over it is 413
// payload_too_large, declared or chunked, and the request does nothing (the
// DELETE deletes nothing, the reset resets nothing), as on every other route.
func TestBodyLimitOnRoutesWithoutBody(t *testing.T) {
	const limit = 1 << 20
	c := fdStart(t, testserver.Options{})
	tool := c.createTool("http-request")
	configure := fdPath("/api/v1/agents/custom-tools/%d/provide-config/", tool)
	c.ok(200, "POST", configure, map[string]any{"user_response": map[string]any{"base_url": "https://example.com"}})
	agent := c.createAgent(map[string]any{"name": "kept", "tools": []int64{tool}})

	routes := [][2]string{
		{"GET", "/api/v1/agents/"},
		{"GET", fdPath("/api/v1/agents/%d/", agent)},
		{"DELETE", fdPath("/api/v1/agents/%d/", agent)},
		{"GET", "/api/v1/agents/custom-tools/"},
		{"GET", fdPath("/api/v1/agents/custom-tools/%d/", tool)},
		{"DELETE", fdPath("/api/v1/agents/custom-tools/%d/", tool)},
		{"POST", fdPath("/api/v1/agents/custom-tools/%d/reset-config/", tool)},
		{"GET", fdPath("/api/v1/agents/custom-tools/%d/actions/", tool)},
		{"GET", "/api/v1/agents/tools/available/"},
		{"GET", "/api/v1/agents/tools/available/tavily/"},
		{"GET", "/api/v1/agents/custom-tools/calls/"},
		{"GET", "/api/v1/idempotency-keys/some-key"},
	}
	for _, r := range routes {
		t.Run(r[0]+" "+r[1], func(t *testing.T) {
			fdWantError(t, c.with(t).do(r[0], r[1], fdSized(limit+1, `"x":1`)), 413, "payload_too_large")
			fdWantError(t, fdChunked(t, c.with(t), r[0], r[1], fdSized(limit+1, `"x":1`)), 413, "payload_too_large")
		})
	}

	// Nothing was deleted or reset.
	a := c.ok(200, "GET", fdPath("/api/v1/agents/%d/", agent), nil)
	if got := fdInts(t, a["tools"]); len(got) != 1 || got[0] != tool {
		t.Errorf("agent's tools after refused requests: %v", a["tools"])
	}
	m := c.ok(200, "GET", fdPath("/api/v1/agents/custom-tools/%d/", tool), nil)
	if step, _ := m["next_configuration_step"].(map[string]any); step == nil || step["step"] != "auth" {
		t.Errorf("tool after a refused reset: %v", m)
	}

	// A body within the limit is still ignored where none is read.
	c.ok(200, "GET", "/api/v1/agents/", fdSized(limit, `"x":1`))
	if r := fdChunked(t, c, "GET", "/api/v1/agents/", fdSized(limit, `"x":1`)); r.Status != 200 {
		t.Errorf("a chunked body at the limit: %d %s", r.Status, r.Body)
	}
	c.ok(204, "DELETE", fdPath("/api/v1/agents/%d/", agent), fdSized(limit, `"x":1`))
}
