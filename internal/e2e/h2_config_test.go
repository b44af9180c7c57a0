package e2e

import (
	"fmt"
	"testing"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

// TestConfigURLAnswerTrimmed: a URL pasted with the space or line break
// beside it (" https://api.example.com\n") was refused as no http(s) URL,
// a message that does not point at the space. No URL begins or ends with
// white space, so it is set aside, and the URL stored is the one meant.
func TestConfigURLAnswerTrimmed(t *testing.T) {
	c := fdStart(t, testserver.Options{})
	srv := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
	for _, tc := range []struct{ catalog, field string }{{"custom-mcp", "url"}, {"http-request", "base_url"}} {
		id := c.createTool(tc.catalog)
		v := c.ok(200, "POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id),
			map[string]any{"user_response": map[string]any{tc.field: "  " + srv.URL + "\n"}})
		if got := v["config"].(map[string]any)[tc.field]; got != srv.URL {
			t.Errorf("%s: config.%s = %q, want %q", tc.catalog, tc.field, got, srv.URL)
		}
	}
}
