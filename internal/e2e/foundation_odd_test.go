package e2e

import (
	"strings"
	"testing"
)

// fdTestOddInput sends text and values that decode but cannot be kept or
// used as sent; each is refused with the field named, before anything is
// stored or looked up.
func fdTestOddInput(t *testing.T, c *fdClient) {
	t.Run("lengths count characters", func(t *testing.T) {
		c.ok(201, "POST", "/api/v1/agents/", map[string]any{"name": strings.Repeat("😀", 200), "goal": strings.Repeat("é", 10000)})
		fdWantFields(t, c.do("POST", "/api/v1/agents/", map[string]any{"name": strings.Repeat("😀", 201)}), "validation_error", "name")
		fdWantFields(t, c.do("POST", "/api/v1/agents/", map[string]any{"name": "x", "goal": strings.Repeat("é", 10001)}), "validation_error", "goal")
		c.ok(201, "POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "tavily", "name": strings.Repeat("é", 200)})
		fdWantFields(t, c.do("POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "tavily", "name": strings.Repeat("é", 201)}), "validation_error", "name")
	})

	t.Run("a lone surrogate is not text", func(t *testing.T) {
		for _, body := range []string{`{"name":"a\ud800b"}`, `{"name":"ok","goal":"\udfff"}`} {
			fdWantError(t, c.do("POST", "/api/v1/agents/", body), 400, "invalid_json")
		}
		fdWantError(t, c.do("POST", "/api/v1/agents/custom-tools/", `{"mcp_tool":"tavily","name":"\ud83d"}`), 400, "invalid_json")
		// A pair is one character, and an escaped backslash is not an escape.
		a := c.ok(201, "POST", "/api/v1/agents/", `{"name":"\ud83d\ude00 \\ud800"}`)
		if a["name"] != `😀 \ud800` {
			t.Errorf("name %q", a["name"])
		}
	})

	t.Run("a null tool ID", func(t *testing.T) {
		fdWantFields(t, c.do("POST", "/api/v1/agents/", map[string]any{"name": "x", "tools": []any{nil}}), "validation_error", "tools")
	})

	t.Run("an idempotency key no call could have used", func(t *testing.T) {
		for _, k := range []string{"%00", "%FF", "%C3%A9", "a%0Ab", "%20a"} {
			fdWantError(t, c.do("GET", "/api/v1/idempotency-keys/"+k, nil), 404, "not_found")
		}
	})

	t.Run("configuration text that is not one line", func(t *testing.T) {
		tool := c.createTool("http-request")
		path := fdPath("/api/v1/agents/custom-tools/%d/provide-config/", tool)
		for _, u := range []string{"http://example.com:99999/", "http://example.com:0/", "http://:443/", "https://exa\x01mple.com/"} {
			fdWantFields(t, c.do("POST", path, map[string]any{"user_response": map[string]any{"base_url": u}}), "validation_error", "base_url")
		}
		c.ok(200, "POST", path, map[string]any{"user_response": map[string]any{"base_url": "https://example.com:8443/v1"}})
		for _, token := range []string{"a\r\nb", "a\x01b", "a\x7fb", "a\tb"} {
			fdWantFields(t, c.do("POST", path, map[string]any{"user_response": map[string]any{"auth_type": "bearer", "token": token}}), "validation_error", "token")
		}
		if got := c.ok(200, "GET", fdPath("/api/v1/agents/custom-tools/%d/", tool), nil); got["is_configured"] != false {
			t.Errorf("configured by a refused answer: %v", got)
		}

		mcp := c.createTool("custom-mcp")
		path = fdPath("/api/v1/agents/custom-tools/%d/provide-config/", mcp)
		for field, answer := range map[string]map[string]any{
			"bearer_token": {"url": "http://127.0.0.1:1/mcp", "bearer_token": "a\x01b"},
			"headers":      {"url": "http://127.0.0.1:1/mcp", "headers": map[string]string{"X-A": "a\x7fb"}},
		} {
			fdWantFields(t, c.do("POST", path, map[string]any{"user_response": answer}), "validation_error", field)
		}
	})

	t.Run("two API keys", func(t *testing.T) {
		other := c.srv.NewKey("odd-input-other")
		fdWantError(t, c.do("GET", "/api/v1/agents/", nil, "Authorization", "Bearer "+other), 401, "unauthorized")
		// The same key twice names one account.
		c.ok(200, "GET", "/api/v1/agents/", nil, "Authorization", "Bearer "+c.key)
	})

	t.Run("one spelling per agent ID on the MCP endpoint", func(t *testing.T) {
		agent := c.createAgent(map[string]any{"name": "mcp ids"})
		for _, id := range []string{"0" + fdPath("%d", agent), "+" + fdPath("%d", agent)} {
			fdWantError(t, c.do("POST", "/api/v1/agents/"+id+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
				"Accept", "application/json, text/event-stream"), 404, "not_found")
		}
	})
}
