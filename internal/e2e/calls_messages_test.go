package e2e

// Black-box test of invalid_arguments messages: each names its field with
// one sentence for a person (API.md, "Errors"), never the schema
// validator's own text with Go's formatting in it (map[], +Inf, [a b]).

import (
	"fmt"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

func TestArgumentMessages(t *testing.T) {
	c := fdStart(t, testserver.Options{})
	provide, get := csAtAuth(t, c, "https://api.example.com")
	c.ok(200, "POST", provide, map[string]any{"user_response": map[string]any{"auth_type": "none"}})
	httpTool := fdInt(t, c.ok(200, "GET", get, nil)["id"])
	tavily := c.createTool("tavily")
	c.ok(200, "POST", fdPath("/api/v1/agents/custom-tools/%d/provide-config/", tavily),
		map[string]any{"user_response": map[string]any{"TAVILY_API_KEY": "tvly-msg"}})

	for _, tc := range []struct {
		name string
		body string
		want map[string]string // field → its whole message
	}{
		{"the probe's http-request call",
			fmt.Sprintf(`{"tool":%d,"action":"get","arguments":{"path":5,"headers":{"a":1},"query":{"a":{}}}}`, httpTool),
			map[string]string{
				"path":    "must be a string, not a number",
				"headers": "headers.a must be a string, not a number",
				"query":   "query.a must be a string, number, boolean or array, not an object",
			}},
		{"a list item of the wrong type",
			fmt.Sprintf(`{"tool":%d,"action":"get","arguments":{"path":"/","query":{"tag":["a",{}]}}}`, httpTool),
			map[string]string{"query": "query.tag[1] must be a string, number or boolean, not an object"}},
		{"an enum", fmt.Sprintf(`{"tool":%d,"action":"search","arguments":{"query":"q","search_depth":"ultra"}}`, tavily),
			map[string]string{"search_depth": "must be one of ultra-fast, fast, basic, advanced"}},
		{"a number too large for a float", fmt.Sprintf(`{"tool":%d,"action":"search","arguments":{"query":"q","max_results":1e400}}`, tavily),
			map[string]string{"max_results": "must be a finite number"}},
		{"a bound", fmt.Sprintf(`{"tool":%d,"action":"search","arguments":{"query":"q","max_results":21}}`, tavily),
			map[string]string{"max_results": "must be at most 20"}},
		{"a fraction", fmt.Sprintf(`{"tool":%d,"action":"search","arguments":{"query":"q","max_results":2.5}}`, tavily),
			map[string]string{"max_results": "must be an integer, not a fraction"}},
		{"null and a short string", fmt.Sprintf(`{"tool":%d,"action":"search","arguments":{"query":"","topic":null}}`, tavily),
			map[string]string{"query": "must be at least 1 character long", "topic": "must be a string, not null"}},
		{"a missing argument", fmt.Sprintf(`{"tool":%d,"action":"search","arguments":{}}`, tavily),
			map[string]string{"query": "is required"}},
		{"an empty list", fmt.Sprintf(`{"tool":%d,"action":"extract","arguments":{"urls":[]}}`, tavily),
			map[string]string{"urls": "must have at least 1 item"}},
		{"a list item", fmt.Sprintf(`{"tool":%d,"action":"extract","arguments":{"urls":["https://a.example",1]}}`, tavily),
			map[string]string{"urls": "urls[1] must be a string, not a number"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := fdWantError(t, c.do("POST", "/api/v1/agents/custom-tools/call/", tc.body), 422, "invalid_arguments")
			f := fdFields(t, m)
			if len(f) != len(tc.want) {
				t.Errorf("fields %v, want %v", f, tc.want)
			}
			for name, want := range tc.want {
				if got, _ := f[name].(string); got != want {
					t.Errorf("fields.%s = %q, want %q", name, got, want)
				}
			}
			for name, msg := range f {
				s, _ := msg.(string)
				for _, leak := range []string{"map[", "Inf", "validating", "reflect", "%!", "[basic", `has type "`} {
					if strings.Contains(s, leak) {
						t.Errorf("fields.%s = %q shows the validator's %q", name, s, leak)
					}
				}
			}
		})
	}
}
