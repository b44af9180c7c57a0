package e2e

import (
	"fmt"
	"strings"
	"sync"
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

// TestConfigConcurrentAnswers: the same answer to a tool's step sent many
// times at once (a double-clicked submit, a client retrying) advances the
// tool once; every other request is answered as the later one it was,
// from the tool as the first left it: 422 naming the field as already
// answered, never 409 request_in_progress, which no Idempotency-Key made.
func TestConfigConcurrentAnswers(t *testing.T) {
	for _, b := range fdBackends {
		t.Run(b.name, func(t *testing.T) {
			c := fdStart(t, b.opts)
			id := c.createTool("http-request")
			const n = 8
			statuses := make(chan int, n)
			var wg sync.WaitGroup
			for range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := testserver.Do(t, c.srv.URL, c.key, "POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id),
						map[string]any{"user_response": map[string]any{"base_url": "https://api.example.com"}})
					if r.Status != 200 && !strings.Contains(string(r.Body), "already answered") {
						t.Errorf("status %d: %s", r.Status, r.Body)
					}
					statuses <- r.Status
				}()
			}
			wg.Wait()
			close(statuses)
			count := map[int]int{}
			for s := range statuses {
				count[s]++
			}
			if count[200] != 1 || count[422] != n-1 {
				t.Errorf("answers by status %v, want one 200 and %d 422", count, n-1)
			}
			v := c.ok(200, "GET", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", id), nil)
			if step := v["next_configuration_step"].(map[string]any); fdInt(t, step["index"]) != 2 {
				t.Errorf("tool at step %v, want 2", step["index"])
			}
		})
	}
}

// TestConfigBlankTakesTheDefault: a blank answer to a field with a default
// (http-request's auth_type, default none) is the field left out, as a form
// sends a choice the user did not touch: it took the default when left
// out, and was refused as "is required" when sent as "".
func TestConfigBlankTakesTheDefault(t *testing.T) {
	c := fdStart(t, testserver.Options{})
	for _, blank := range []string{"", "  "} {
		id := c.createTool("http-request")
		path := fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id)
		c.ok(200, "POST", path, map[string]any{"user_response": map[string]any{"base_url": "https://api.example.com"}})
		v := c.ok(200, "POST", path, map[string]any{"user_response": map[string]any{"auth_type": blank}})
		if v["is_configured"] != true || v["config"].(map[string]any)["auth_type"] != "none" {
			t.Errorf("auth_type %q: %v, want configured with auth_type none", blank, v)
		}
	}
}
