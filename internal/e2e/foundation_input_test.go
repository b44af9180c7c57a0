package e2e

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testserver"
)

func fdTestBadInput(t *testing.T, c *fdClient) {
	tool := c.createTool("tavily")
	agent := c.createAgent(map[string]any{"name": "bad input"})
	routes := [][2]string{
		{"POST", "/api/v1/agents/custom-tools/"},
		{"POST", fdPath("/api/v1/agents/custom-tools/%d/provide-config/", tool)},
		{"POST", "/api/v1/agents/"},
		{"PATCH", fdPath("/api/v1/agents/%d/", agent)},
		{"POST", "/api/v1/agents/custom-tools/call/"},
	}
	for _, r := range routes {
		for _, body := range []string{"{", `{"name": "x"`, "not json", `{"name": "x"} trailing`, "[]", `[{"name": "x"}]`,
			`"a string"`, "42", "null", "true", "", "\xff\xfe"} {
			fdWantError(t, c.do(r[0], r[1], body), 400, "invalid_json")
		}
	}
	// Unknown fields are ignored, whatever their type.
	a := c.ok(201, "POST", "/api/v1/agents/", map[string]any{"name": "unknowns", "color": "blue", "labels": map[string]any{"a": []int{1}},
		"extra": nil, "priority": 3.5, "owner": []any{true}})
	for _, k := range []string{"color", "labels", "extra", "priority", "owner"} {
		if _, ok := a[k]; ok {
			t.Errorf("unknown field %s echoed: %v", k, a)
		}
	}
	c.ok(200, "PATCH", fdPath("/api/v1/agents/%d/", agent), map[string]any{"unknown": []int{1, 2}, "another": map[string]any{}})
	c.ok(201, "POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "browser", "config": 5, "is_configured": "yes"})
	c.ok(200, "POST", fdPath("/api/v1/agents/custom-tools/%d/provide-config/", tool),
		map[string]any{"user_response": map[string]any{"TAVILY_API_KEY": "tvly-unknowns"}, "step": 99, "force": true})

	// Known fields of the wrong type are 422 naming them.
	fdWantFields(t, c.do("POST", "/api/v1/agents/", map[string]any{"name": map[string]any{"x": 1}}), "validation_error", "name")
	fdWantFields(t, c.do("POST", "/api/v1/agents/", map[string]any{"name": "x", "status": 1}), "validation_error", "status")
	fdWantFields(t, c.do("PATCH", fdPath("/api/v1/agents/%d/", agent), map[string]any{"goal": 7}), "validation_error", "goal")
	fdWantFields(t, c.do("POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": []string{"tavily"}}), "validation_error", "mcp_tool")
	for _, blank := range []string{"", "  "} { // blank is missing, not a name nothing in the catalog has
		fdWantFields(t, c.do("POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": blank}), "validation_error", "mcp_tool")
	}
	other := c.createTool("tavily")
	for _, ur := range []any{"tvly-x", []string{"tvly-x"}, 5, true} {
		fdWantFields(t, c.do("POST", fdPath("/api/v1/agents/custom-tools/%d/provide-config/", other), map[string]any{"user_response": ur}), "validation_error", "user_response")
	}
}

// fdChunked sends a body without a Content-Length.
func fdChunked(t *testing.T, c *fdClient, method, path string, body []byte) *testserver.Response {
	t.Helper()
	req, err := http.NewRequest(method, c.srv.URL+path, io.MultiReader(bytes.NewReader(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-API-KEY", c.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return &testserver.Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// fdSized returns a JSON object body of exactly n bytes.
func fdSized(n int, fields string) []byte {
	head := `{` + fields + `,"pad":"`
	tail := `"}`
	return []byte(head + strings.Repeat("p", n-len(head)-len(tail)) + tail)
}

func fdTestBodyLimit(t *testing.T, c *fdClient) {
	const limit = 1 << 20
	tool := c.createTool("tavily")
	agent := c.createAgent(map[string]any{"name": "limit"})
	routes := []struct{ method, path, fields string }{
		{"POST", "/api/v1/agents/", `"name":"big"`},
		{"PATCH", fdPath("/api/v1/agents/%d/", agent), `"goal":"g"`},
		{"POST", "/api/v1/agents/custom-tools/", `"mcp_tool":"browser"`},
		{"POST", fdPath("/api/v1/agents/custom-tools/%d/provide-config/", tool), `"user_response":{"TAVILY_API_KEY":"tvly-x"}`},
		{"POST", "/api/v1/agents/custom-tools/call/", `"tool":1,"action":"x"`},
	}
	for _, r := range routes {
		fdWantError(t, c.do(r.method, r.path, fdSized(limit+1, r.fields)), 413, "payload_too_large")
		fdWantError(t, c.do(r.method, r.path, fdSized(4*limit, r.fields)), 413, "payload_too_large")
		fdWantError(t, fdChunked(t, c, r.method, r.path, fdSized(limit+1, r.fields)), 413, "payload_too_large")
	}
	// At the limit is accepted.
	c.ok(201, "POST", "/api/v1/agents/custom-tools/", fdSized(limit, `"mcp_tool":"browser"`))
	if r := fdChunked(t, c, "POST", "/api/v1/agents/custom-tools/", fdSized(limit, `"mcp_tool":"browser"`)); r.Status != 201 {
		t.Errorf("a chunked body at the limit: %d %s", r.Status, r.Body)
	}
	// A refused body changed nothing.
	a := c.ok(200, "GET", fdPath("/api/v1/agents/%d/", agent), nil)
	if a["goal"] != "" {
		t.Errorf("a 413 PATCH changed the agent: %v", a)
	}
	if m := c.ok(200, "GET", fdPath("/api/v1/agents/custom-tools/%d/", tool), nil); m["is_configured"] != false {
		t.Errorf("a 413 provide-config configured the tool: %v", m)
	}
}

func fdTestOperations(t *testing.T, c *fdClient) {
	anon := c.as("")
	if h := anon.ok(200, "GET", "/healthz", nil); h["status"] != "ok" {
		t.Errorf("healthz: %v", h)
	}
	if h := anon.ok(200, "GET", "/healthz/", nil); h["status"] != "ok" {
		t.Errorf("healthz/: %v", h)
	}
	if h := anon.ok(200, "GET", "/readyz", nil); h["status"] != "ready" {
		t.Errorf("readyz: %v", h)
	}

	agent := c.createAgent(map[string]any{"name": "metrics"})
	c.ok(200, "GET", fdPath("/api/v1/agents/%d/", agent), nil)
	c.fail(404, "not_found", "GET", "/api/v1/agents/987654321/", nil)
	anon.do("GET", "/fd-unmatched-path-4242", nil)
	mr := anon.do("GET", "/metrics", nil)
	if mr.Status != 200 || !strings.HasPrefix(mr.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("metrics: %d %s", mr.Status, mr.Header.Get("Content-Type"))
	}
	text := string(mr.Body)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^quiver_http_requests_total\{[^}]*route="/api/v1/agents/:id"[^}]*\} [0-9]`),
		regexp.MustCompile(`(?m)^quiver_http_requests_total\{[^}]*method="POST"[^}]*route="/api/v1/agents"[^}]*status="201"[^}]*\} [0-9]`),
		regexp.MustCompile(`(?m)^quiver_http_requests_total\{[^}]*status="404"[^}]*\} [0-9]`),
	} {
		if !want.MatchString(text) {
			t.Errorf("metrics lack %s", want)
		}
	}
	for _, leak := range []string{strconv.FormatInt(agent, 10) + `"`, "987654321", "fd-unmatched-path-4242", c.key} {
		if strings.Contains(text, leak) {
			t.Errorf("metrics label by something unbounded or secret: %q", leak)
		}
	}

	or := anon.do("GET", "/openapi.json", nil)
	doc := fdObject(t, or)
	if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.1") {
		t.Errorf("openapi.json version %v", doc["openapi"])
	}
	if _, ok := doc["paths"].(map[string]any); !ok {
		t.Error("openapi.json has no paths")
	}
}

// fdTestMalformedHTTP: what the HTTP server refuses before any route sees
// it still gets the error envelope (bad_request), and then the connection
// closes.
func fdTestMalformedHTTP(t *testing.T, c *fdClient) {
	host := strings.TrimPrefix(c.srv.URL, "http://")
	for _, tc := range []struct {
		name    string
		req     string
		status  int
		code    string // bad_request when empty
		message string // when set, the envelope's message
	}{
		{"garbage", "HELLO\r\n\r\n", 400, "", ""},
		{"no Host", "GET /healthz HTTP/1.1\r\n\r\n", 400, "", ""},
		{"unknown expectation", "POST /api/v1/agents/ HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Length: 2\r\n\r\n{}", 417, "", ""},
		{"headers over 1 MiB", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 1<<20+8192) + "\r\n\r\n", 431, "", ""},
		{"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505, "", ""},
		// A control character is not allowed in any header value, so HTTP
		// parsing refuses it; for the key it is still the key's error.
		{"control character in Idempotency-Key", "POST " + mqCallPath + " HTTP/1.1\r\nHost: x\r\nIdempotency-Key: ab\x7f\r\nContent-Length: 2\r\n\r\n{}", 400, "invalid_idempotency_key",
			// The handler's own message for a bad key: one wording.
			"The Idempotency-Key must be 1 to 255 printable ASCII characters, without leading or trailing spaces."},
		{"bad escape in the target", "GET /api/v1/agents/%ZZ HTTP/1.1\r\nHost: x\r\n\r\n", 400, "", ""},
		{"target without a slash", "GET agents HTTP/1.1\r\nHost: x\r\n\r\n", 400, "", ""},
		{"control character in X-API-KEY", "GET /api/v1/agents/ HTTP/1.1\r\nHost: x\r\nX-API-KEY: qv_secret_value\x01\r\n\r\n", 400, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", host)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			go io.WriteString(conn, tc.req) // the server may answer before reading it all
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || !resp.Close {
				t.Fatalf("status %d, close %v, want %d and close: %s", resp.StatusCode, resp.Close, tc.status, body)
			}
			code := cmp.Or(tc.code, "bad_request")
			var env map[string]any
			if err := json.Unmarshal(body, &env); err != nil || env["error"] != code || env["message"] == "" {
				t.Fatalf("envelope %s (%v), want %s", body, err, code)
			}
			if tc.message != "" && env["message"] != tc.message {
				t.Errorf("message %q, want %q", env["message"], tc.message)
			}
			if resp.Header.Get("X-Request-Id") == "" {
				t.Error("no X-Request-Id")
			}
			if strings.Contains(string(body), "secret_value") {
				t.Errorf("the refusal repeats a header's value: %s", body)
			}
		})
	}
}

// fdTestNUL sends U+0000 in every kind of text the API stores or looks up:
// Postgres text cannot hold it, so each is a 422 naming the field (it was a
// 500 on Postgres), and nothing is stored.
func fdTestNUL(t *testing.T, c *fdClient) {
	const nul = "a\x00b"
	agent := c.createAgent(map[string]any{"name": "nul"})
	tavily := c.createTool("tavily")
	custom := c.createTool("custom-mcp")
	agentsBefore := len(c.ok(200, "GET", "/api/v1/agents/?limit=200", nil)["agents"].([]any))
	toolsBefore := len(c.ok(200, "GET", "/api/v1/agents/custom-tools/?limit=200", nil)["tools"].([]any))

	fdWantFields(t, c.do("POST", "/api/v1/agents/", map[string]any{"name": nul}), "validation_error", "name")
	fdWantFields(t, c.do("POST", "/api/v1/agents/", map[string]any{"name": "ok", "goal": nul}), "validation_error", "goal")
	fdWantFields(t, c.do("PATCH", fdPath("/api/v1/agents/%d/", agent), map[string]any{"name": nul}), "validation_error", "name")
	fdWantFields(t, c.do("POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "tavily", "name": nul}), "validation_error", "name")
	fdWantFields(t, c.do("POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "tav\x00ily"}), "validation_error", "mcp_tool")
	fdWantFields(t, c.do("POST", fdPath("/api/v1/agents/custom-tools/%d/provide-config/", tavily),
		map[string]any{"user_response": map[string]any{"TAVILY_API_KEY": "tvly-" + nul}}), "validation_error", "TAVILY_API_KEY")
	for _, headers := range []map[string]string{{"X-A": nul}, {"X-\x00": "v"}} {
		fdWantFields(t, c.do("POST", fdPath("/api/v1/agents/custom-tools/%d/provide-config/", custom),
			map[string]any{"user_response": map[string]any{"url": "http://127.0.0.1:1/mcp", "headers": headers}}), "validation_error", "headers")
	}
	fdWantFields(t, c.do("POST", "/api/v1/agents/custom-tools/call/", map[string]any{"tool": "tav\x00ily", "action": "search", "arguments": map[string]any{}}),
		"validation_error", "tool")

	if n := len(c.ok(200, "GET", "/api/v1/agents/?limit=200", nil)["agents"].([]any)); n != agentsBefore {
		t.Errorf("%d agents after the refusals, want %d", n, agentsBefore)
	}
	if n := len(c.ok(200, "GET", "/api/v1/agents/custom-tools/?limit=200", nil)["tools"].([]any)); n != toolsBefore {
		t.Errorf("%d tools after the refusals, want %d", n, toolsBefore)
	}
	for _, id := range []int64{tavily, custom} {
		if tool := c.ok(200, "GET", fdPath("/api/v1/agents/custom-tools/%d/", id), nil); tool["is_configured"] != false {
			t.Errorf("tool %d configured by a refused answer: %v", id, tool)
		}
	}
	if a := c.ok(200, "GET", fdPath("/api/v1/agents/%d/", agent), nil); a["name"] != "nul" {
		t.Errorf("agent renamed by a refused PATCH: %v", a)
	}
}
