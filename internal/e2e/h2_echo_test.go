package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestNotFoundQuotesInputShort: a 404 for a name or ID that does not exist
// quoted the whole of what was sent, so a path or body of a megabyte came
// back as a message of a megabyte. The message quotes its start, cut with
// "…", and still names short inputs whole.
func TestNotFoundQuotesInputShort(t *testing.T) {
	c := fdStart(t, testserver.Options{})
	long := strings.Repeat("a", 20000)
	for _, tc := range []struct {
		path string
		body any
	}{
		{"/api/v1/agents/tools/available/" + long, nil},
		{"/api/v1/agents/custom-tools/" + long, nil},
		{"/api/v1/agents/" + long + "/", nil},
		{"/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": long}},
	} {
		method := "GET"
		if tc.body != nil {
			method = "POST"
		}
		m := c.fail(404, "not_found", method, tc.path, tc.body)
		msg := m["message"].(string)
		if len(msg) > 300 || !strings.Contains(msg, `"aaaa`) || !strings.Contains(msg, `…"`) {
			t.Errorf("%s %.60s: message of %d bytes: %.200s", method, tc.path, len(msg), msg)
		}
	}
	// A header name refused in a configuration answer, likewise.
	id := c.createTool("custom-mcp")
	r := c.do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id),
		map[string]any{"user_response": map[string]any{"url": "https://mcp.example.com/mcp", "headers": map[string]any{long[:1000] + ":": "v"}}})
	if msg, _ := fdWantFields(t, r, "validation_error", "headers")["headers"].(string); len(msg) > 300 || !strings.Contains(msg, `…"`) {
		t.Errorf("fields.headers of %d bytes: %.200s", len(msg), msg)
	}

	m := c.fail(404, "not_found", "GET", "/api/v1/agents/tools/available/%20tavily", nil)
	if m["message"] != `The catalog has no tool named " tavily"; did you mean "tavily"?` {
		t.Errorf("short name: %v", m["message"])
	}
}
