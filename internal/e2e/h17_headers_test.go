package e2e

import (
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestH17HeaderAnswers: custom-mcp's headers answer may not name one
// header twice in different case (only one value could be sent, and which
// was chance), nor give a value with surrounding space (HTTP strips it
// before the server sees it). Either is 422 fields.headers, and the tool
// stays at its step.
func TestH17HeaderAnswers(t *testing.T) {
	echo := &h17Echo{schemas: map[string]string{"e": `{"type":"object"}`}}
	hs := httptest.NewServer(echo)
	t.Cleanup(hs.Close)
	c := fdStart(t, testserver.Options{Env: map[string]string{"QUIVER_LOG_LEVEL": "error"}})
	for _, h := range []map[string]string{{"x-api-key": "1", "X-Api-Key": "2"}, {"X-Api-Key": " k"}, {"X-Api-Key": "k "}} {
		id := c.createTool("custom-mcp")
		path := fmt.Sprintf("/api/v1/agents/custom-tools/%d/", id)
		before := c.do("GET", path, nil).Body
		r := c.do("POST", path+"provide-config/", map[string]any{"user_response": map[string]any{"url": hs.URL, "headers": h}})
		fdWantFields(t, r, "validation_error", "headers")
		if after := c.do("GET", path, nil).Body; string(after) != string(before) {
			t.Fatalf("refused answer %v changed the tool:\nbefore %s\nafter  %s", h, before, after)
		}
	}
	id := c.createTool("custom-mcp")
	c.ok(200, "POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id),
		map[string]any{"user_response": map[string]any{"url": hs.URL, "headers": map[string]string{"X-Api-Key": "k", "X-Other": "a b"}}})
}
