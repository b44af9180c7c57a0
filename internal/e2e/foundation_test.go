package e2e

// Black-box tests of the foundation of API.md: Conventions, Errors, Catalog,
// Connected tools, Agents and Operations, on Postgres and on the embedded
// SQLite default, plus the quiver binary's commands.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

func TestFoundation(t *testing.T) {
	for _, b := range fdBackends {
		t.Run(b.name, func(t *testing.T) {
			c := fdStart(t, b.opts)
			for _, tc := range []struct {
				name string
				fn   func(t *testing.T, c *fdClient)
			}{
				{"auth", fdTestAuth},
				{"isolation", fdTestIsolation},
				{"trailing slash", fdTestTrailingSlash},
				{"request id and content type", fdTestRequestID},
				{"catalog", fdTestCatalog},
				{"tools", fdTestTools},
				{"tavily configuration", fdTestTavilyConfig},
				{"http-request configuration", fdTestHTTPRequestConfig},
				{"oauth and stepless tools", fdTestOAuthAndStepless},
				{"custom-mcp form", fdTestCustomMCPForm},
				{"agents", fdTestAgents},
				{"deleting a tool detaches it", fdTestDetach},
				{"pagination", fdTestPagination},
				{"bad input", fdTestBadInput},
				{"NUL characters", fdTestNUL},
				{"odd input", fdTestOddInput},
				{"malformed HTTP", fdTestMalformedHTTP},
				{"body limit", fdTestBodyLimit},
				{"operations", fdTestOperations},
			} {
				t.Run(tc.name, func(t *testing.T) { tc.fn(t, c.with(t)) })
			}
		})
	}
}

// fdPath formats a path with IDs.
func fdPath(format string, ids ...int64) string {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return fmt.Sprintf(format, args...)
}

// fdAuthedRoutes is every authenticated route with a body that would be
// refused if it were ever read: malformed JSON.
func fdAuthedRoutes(tool, agent int64) [][3]string {
	return [][3]string{
		{"GET", "/api/v1/agents/tools/available/", ""},
		{"GET", "/api/v1/agents/tools/available/tavily/", ""},
		{"GET", "/api/v1/agents/tools/available/no-such-tool/", ""},
		{"POST", "/api/v1/agents/custom-tools/", "{"},
		{"GET", "/api/v1/agents/custom-tools/", ""},
		{"GET", "/api/v1/agents/custom-tools/?limit=0", ""},
		{"GET", fdPath("/api/v1/agents/custom-tools/%d/", tool), ""},
		{"GET", "/api/v1/agents/custom-tools/999999999/", ""},
		{"GET", "/api/v1/agents/custom-tools/not-an-id/", ""},
		{"DELETE", fdPath("/api/v1/agents/custom-tools/%d/", tool), ""},
		{"DELETE", "/api/v1/agents/custom-tools/999999999/", ""},
		{"POST", fdPath("/api/v1/agents/custom-tools/%d/provide-config/", tool), "{"},
		{"POST", "/api/v1/agents/custom-tools/999999999/provide-config/", "{"},
		{"POST", fdPath("/api/v1/agents/custom-tools/%d/reset-config/", tool), ""},
		{"GET", fdPath("/api/v1/agents/custom-tools/%d/actions/", tool), ""},
		{"POST", "/api/v1/agents/custom-tools/call/", "{"},
		{"GET", "/api/v1/agents/custom-tools/calls/", ""},
		{"GET", "/api/v1/idempotency-keys/some-key", ""},
		{"POST", "/api/v1/agents/", "{"},
		{"GET", "/api/v1/agents/", ""},
		{"GET", fdPath("/api/v1/agents/%d/", agent), ""},
		{"GET", "/api/v1/agents/999999999/", ""},
		{"PATCH", fdPath("/api/v1/agents/%d/", agent), "{"},
		{"DELETE", fdPath("/api/v1/agents/%d/", agent), ""},
	}
}

func fdTestAuth(t *testing.T, c *fdClient) {
	tool := c.createTool("tavily")
	agent := c.createAgent(map[string]any{"name": "auth", "tools": []int64{tool}})
	other := c.as(c.srv.NewKey("auth-other"))
	foreignTool := other.createTool("tavily")

	// A well-formed key that no account holds.
	last := c.key[len(c.key)-1]
	swap := byte('A')
	if last == 'A' {
		swap = 'B'
	}
	unknown := c.key[:len(c.key)-1] + string(swap)
	credentials := map[string][]string{
		"no key":                 nil,
		"empty X-API-KEY":        {"X-API-KEY", ""},
		"malformed X-API-KEY":    {"X-API-KEY", "not-a-key"},
		"unknown X-API-KEY":      {"X-API-KEY", unknown},
		"key with a suffix":      {"X-API-KEY", c.key + "x"},
		"unknown bearer":         {"Authorization", "Bearer " + unknown},
		"malformed bearer":       {"Authorization", "Bearer not-a-key"},
		"empty bearer":           {"Authorization", "Bearer "},
		"key without scheme":     {"Authorization", c.key},
		"key under basic scheme": {"Authorization", "Basic " + c.key},
	}
	// The credentials that carry no key at all: an empty one, or one in a
	// scheme other than Bearer.
	noKeySent := map[string]bool{"no key": true, "empty X-API-KEY": true, "empty bearer": true,
		"key without scheme": true, "key under basic scheme": true}
	routes := fdAuthedRoutes(tool, agent)
	routes = append(routes, [3]string{"GET", fdPath("/api/v1/agents/custom-tools/%d/", foreignTool), ""})
	for name, headers := range credentials {
		t.Run(name, func(t *testing.T) {
			for _, r := range routes {
				var body any
				if r[2] != "" {
					body = r[2]
				}
				resp := testserver.Do(t, c.srv.URL, "", r[0], r[1], body, headers...)
				if resp.Status != 401 {
					t.Errorf("%s %s with %s: %d %s, want 401", r[0], r[1], name, resp.Status, resp.Body)
					continue
				}
				fdWantError(t, resp, 401, "unauthorized")
				// RFC 9110: a 401 carries a challenge; RFC 6750: an error
				// code only when credentials were sent.
				want := `Bearer realm="quiver"`
				if !noKeySent[name] {
					want += `, error="invalid_token"`
				}
				if got := resp.Header.Get("WWW-Authenticate"); got != want {
					t.Errorf("%s %s with %s: WWW-Authenticate %q, want %q", r[0], r[1], name, got, want)
				}
			}
		})
	}

	t.Run("401 before the body is read", func(t *testing.T) {
		huge := `{"name":"` + strings.Repeat("x", 2<<20) + `"}`
		for _, path := range []string{"/api/v1/agents/", "/api/v1/agents/custom-tools/", "/api/v1/agents/custom-tools/call/"} {
			fdWantError(t, testserver.Do(t, c.srv.URL, "", "POST", path, huge), 401, "unauthorized")
			fdWantError(t, testserver.Do(t, c.srv.URL, "", "POST", path, "not json at all"), 401, "unauthorized")
			fdWantError(t, testserver.Do(t, c.srv.URL, "", "POST", path, "[1,2,3]"), 401, "unauthorized")
		}
	})

	t.Run("nothing ran without a key", func(t *testing.T) {
		// The unauthenticated DELETEs above must not have deleted anything.
		c.ok(200, "GET", fdPath("/api/v1/agents/custom-tools/%d/", tool), nil)
		a := c.ok(200, "GET", fdPath("/api/v1/agents/%d/", agent), nil)
		if got := fdInts(t, a["tools"]); !slices.Equal(got, []int64{tool}) {
			t.Fatalf("agent tools %v after unauthenticated requests, want [%d]", got, tool)
		}
		other.ok(200, "GET", fdPath("/api/v1/agents/custom-tools/%d/", foreignTool), nil)
	})

	t.Run("Authorization Bearer works", func(t *testing.T) {
		r := testserver.Do(t, c.srv.URL, "", "GET", fdPath("/api/v1/agents/%d/", agent), nil, "Authorization", "Bearer "+c.key)
		if r.Status != 200 {
			t.Fatalf("Bearer key: %d %s", r.Status, r.Body)
		}
		if fdInt(t, fdObject(t, r)["id"]) != agent {
			t.Fatal("Bearer key read another agent")
		}
		r = testserver.Do(t, c.srv.URL, "", "POST", "/api/v1/agents/", map[string]any{"name": "via bearer"}, "Authorization", "Bearer "+c.key)
		if r.Status != 201 {
			t.Fatalf("Bearer key create: %d %s", r.Status, r.Body)
		}
		// The scheme's name is case-insensitive (RFC 9110 §11.1).
		for _, scheme := range []string{"bearer", "BEARER"} {
			if r := testserver.Do(t, c.srv.URL, "", "GET", fdPath("/api/v1/agents/%d/", agent), nil, "Authorization", scheme+" "+c.key); r.Status != 200 {
				t.Errorf("%s key: %d %s", scheme, r.Status, r.Body)
			}
		}
		if r := testserver.Do(t, c.srv.URL, "", "GET", fdPath("/api/v1/agents/%d/", agent), nil, "Authorization", "Basic "+c.key); r.Status != 401 {
			t.Errorf("Basic scheme: %d %s, want 401", r.Status, r.Body)
		}
	})

	t.Run("operations need no key", func(t *testing.T) {
		for _, p := range []string{"/healthz", "/readyz", "/metrics", "/openapi.json"} {
			if r := testserver.Do(t, c.srv.URL, "", "GET", p, nil); r.Status != 200 {
				t.Errorf("GET %s without a key: %d %s", p, r.Status, r.Body)
			}
		}
		// Load balancers probe with HEAD too.
		for _, p := range []string{"/healthz", "/readyz"} {
			if r := testserver.Do(t, c.srv.URL, "", "HEAD", p, nil); r.Status != 200 || len(r.Body) != 0 {
				t.Errorf("HEAD %s: %d %q", p, r.Status, r.Body)
			}
		}
	})
}

// fdNormalize replaces an ID in a body, so answers about two IDs compare.
func fdNormalize(b []byte, id int64) string {
	return strings.ReplaceAll(string(b), strconv.FormatInt(id, 10), "{id}")
}

func fdTestIsolation(t *testing.T, c *fdClient) {
	a := c
	b := c.as(c.srv.NewKey("isolation-b"))
	tool := a.createTool("tavily")
	a.ok(200, "POST", fdPath("/api/v1/agents/custom-tools/%d/provide-config/", tool),
		map[string]any{"user_response": map[string]any{"TAVILY_API_KEY": "tvly-isolation"}})
	agent := a.createAgent(map[string]any{"name": "owned by a", "tools": []int64{tool}})
	missing := tool + agent + 1_000_000

	same := func(method, format string, foreign int64, body any) {
		t.Helper()
		rf := b.do(method, fdPath(format, foreign), body)
		rm := b.do(method, fdPath(format, missing), body)
		fdWantError(t, rf, 404, "not_found")
		fdWantError(t, rm, 404, "not_found")
		if fdNormalize(rf.Body, foreign) != fdNormalize(rm.Body, missing) {
			t.Errorf("%s %s: another account's ID answers %s, a missing one %s", method, format, rf.Body, rm.Body)
		}
	}
	same("GET", "/api/v1/agents/custom-tools/%d/", tool, nil)
	same("GET", "/api/v1/agents/custom-tools/%d/actions/", tool, nil)
	same("POST", "/api/v1/agents/custom-tools/%d/provide-config/", tool, map[string]any{"user_response": map[string]any{"TAVILY_API_KEY": "tvly-b"}})
	same("POST", "/api/v1/agents/custom-tools/%d/reset-config/", tool, nil)
	same("DELETE", "/api/v1/agents/custom-tools/%d/", tool, nil)
	same("GET", "/api/v1/agents/%d/", agent, nil)
	same("PATCH", "/api/v1/agents/%d/", agent, map[string]any{"name": "taken over"})
	same("DELETE", "/api/v1/agents/%d/", agent, nil)

	// A call naming another account's tool.
	rf := b.do("POST", "/api/v1/agents/custom-tools/call/", map[string]any{"tool": tool, "action": "search", "arguments": map[string]any{"query": "x"}})
	rm := b.do("POST", "/api/v1/agents/custom-tools/call/", map[string]any{"tool": missing, "action": "search", "arguments": map[string]any{"query": "x"}})
	fdWantError(t, rf, 404, "not_found")
	fdWantError(t, rm, 404, "not_found")
	if fdNormalize(rf.Body, tool) != fdNormalize(rm.Body, missing) {
		t.Errorf("call: another account's tool answers %s, a missing one %s", rf.Body, rm.Body)
	}

	// Lists show only one's own.
	for _, tl := range fdList(t, b.ok(200, "GET", "/api/v1/agents/custom-tools/", nil), "tools") {
		if fdInt(t, tl["id"]) == tool {
			t.Error("account b lists account a's tool")
		}
	}
	for _, ag := range fdList(t, b.ok(200, "GET", "/api/v1/agents/", nil), "agents") {
		if fdInt(t, ag["id"]) == agent {
			t.Error("account b lists account a's agent")
		}
	}

	// Attaching another account's tool is refused like a missing one.
	f := fdWantFields(t, b.do("POST", "/api/v1/agents/", map[string]any{"name": "b", "tools": []int64{tool}}), "validation_error", "tools")
	if !strings.Contains(f["tools"].(string), strconv.FormatInt(tool, 10)) {
		t.Errorf("fields.tools %q does not name %d", f["tools"], tool)
	}
	bAgent := b.createAgent(map[string]any{"name": "b"})
	fdWantFields(t, b.do("PATCH", fdPath("/api/v1/agents/%d/", bAgent), map[string]any{"tools": []int64{tool}}), "validation_error", "tools")

	// Nothing of a changed.
	tv := a.ok(200, "GET", fdPath("/api/v1/agents/custom-tools/%d/", tool), nil)
	if tv["is_configured"] != true {
		t.Errorf("account b's requests changed a's tool: %v", tv)
	}
	av := a.ok(200, "GET", fdPath("/api/v1/agents/%d/", agent), nil)
	if av["name"] != "owned by a" || !slices.Equal(fdInts(t, av["tools"]), []int64{tool}) {
		t.Errorf("account b's requests changed a's agent: %v", av)
	}
}

func fdTestTrailingSlash(t *testing.T, c *fdClient) {
	tool := c.createTool("tavily")
	c.ok(200, "POST", fdPath("/api/v1/agents/custom-tools/%d/provide-config", tool),
		map[string]any{"user_response": map[string]any{"TAVILY_API_KEY": "tvly-slash"}})
	agent := c.createAgent(map[string]any{"name": "slash"})
	for _, p := range []string{
		"/api/v1/agents/tools/available",
		"/api/v1/agents/tools/available/tavily",
		"/api/v1/agents/custom-tools",
		fdPath("/api/v1/agents/custom-tools/%d", tool),
		fdPath("/api/v1/agents/custom-tools/%d/actions", tool),
		"/api/v1/agents/custom-tools/calls",
		"/api/v1/agents",
		fdPath("/api/v1/agents/%d", agent),
	} {
		without := c.do("GET", p, nil)
		with := c.do("GET", p+"/", nil)
		if without.Status != 200 || with.Status != 200 {
			t.Errorf("GET %s: %d without the slash, %d with it", p, without.Status, with.Status)
			continue
		}
		if !bytes.Equal(without.Body, with.Body) {
			t.Errorf("GET %s: bodies differ with and without the slash:\n%s\n%s", p, without.Body, with.Body)
		}
	}
	// Writes, without the slash.
	t2 := fdInt(t, c.ok(201, "POST", "/api/v1/agents/custom-tools", map[string]any{"mcp_tool": "tavily"})["id"])
	c.ok(200, "POST", fdPath("/api/v1/agents/custom-tools/%d/reset-config", tool), nil)
	c.ok(200, "PATCH", fdPath("/api/v1/agents/%d", agent), map[string]any{"goal": "no slash"})
	a2 := fdInt(t, c.ok(201, "POST", "/api/v1/agents", map[string]any{"name": "no slash"})["id"])
	c.ok(204, "DELETE", fdPath("/api/v1/agents/%d", a2), nil)
	c.ok(204, "DELETE", fdPath("/api/v1/agents/custom-tools/%d", t2), nil)
	// And with it.
	c.ok(204, "DELETE", fdPath("/api/v1/agents/%d/", agent), nil)
	c.ok(204, "DELETE", fdPath("/api/v1/agents/custom-tools/%d/", tool), nil)
}

func fdTestRequestID(t *testing.T, c *fdClient) {
	tool := c.createTool("tavily")
	anon := c.as("")
	big := `{"name":"` + strings.Repeat("x", 1<<20) + `"}`
	cases := []struct {
		cl     *fdClient
		method string
		path   string
		body   any
		status int
		json   bool
	}{
		{c, "GET", "/api/v1/agents/", nil, 200, true},
		{c, "POST", "/api/v1/agents/", map[string]any{"name": "rid"}, 201, true},
		{c, "POST", "/api/v1/agents/", "{", 400, true},
		{anon, "GET", "/api/v1/agents/", nil, 401, true},
		{c, "GET", "/api/v1/agents/999999999/", nil, 404, true},
		{c, "GET", "/api/v1/no-such-route", nil, 404, true},
		{anon, "GET", "/no-such-route", nil, 404, true},
		{c, "PUT", "/api/v1/agents/", nil, 405, true},
		{c, "POST", "/api/v1/agents/", big, 413, true},
		{c, "POST", "/api/v1/agents/", map[string]any{}, 422, true},
		{c, "POST", fdPath("/api/v1/agents/custom-tools/%d/provide-config/", tool), map[string]any{"user_response": map[string]any{"TAVILY_API_KEY": "tvly-rid"}}, 200, true},
		{c, "POST", fdPath("/api/v1/agents/custom-tools/%d/provide-config/", tool), map[string]any{"user_response": map[string]any{"TAVILY_API_KEY": "tvly-rid"}}, 422, true},
		{c, "DELETE", fdPath("/api/v1/agents/custom-tools/%d/", tool), nil, 204, false},
		{anon, "GET", "/healthz", nil, 200, true},
		{anon, "GET", "/readyz", nil, 200, true},
		{anon, "GET", "/openapi.json", nil, 200, true},
		{anon, "GET", "/metrics", nil, 200, false},
	}
	ids := map[string]bool{}
	for _, tc := range cases {
		r := tc.cl.do(tc.method, tc.path, tc.body)
		if r.Status != tc.status {
			t.Errorf("%s %s: %d, want %d; %s", tc.method, tc.path, r.Status, tc.status, r.Body)
			continue
		}
		id := r.Header.Get("X-Request-Id")
		if id == "" {
			t.Errorf("%s %s → %d: no X-Request-Id", tc.method, tc.path, r.Status)
		} else if ids[id] {
			t.Errorf("%s %s → %d: X-Request-Id %q repeated", tc.method, tc.path, r.Status, id)
		}
		ids[id] = true
		if tc.json {
			if ct := r.Header.Get("Content-Type"); ct != fdJSONType {
				t.Errorf("%s %s → %d: Content-Type %q, want %q", tc.method, tc.path, r.Status, ct, fdJSONType)
			}
			if !json.Valid(r.Body) {
				t.Errorf("%s %s → %d: body is not JSON: %s", tc.method, tc.path, r.Status, r.Body)
			}
		}
		if tc.status == 204 && len(r.Body) != 0 {
			t.Errorf("%s %s → 204 with a body: %s", tc.method, tc.path, r.Body)
		}
		if tc.status >= 400 {
			m := fdObject(t, r)
			if m["error"] == nil || m["message"] == nil {
				t.Errorf("%s %s → %d: not the error envelope: %s", tc.method, tc.path, r.Status, r.Body)
			}
		}
	}
	// A caller's own request ID is kept, so logs line up across services.
	r := c.do("GET", "/api/v1/agents/", nil, "X-Request-Id", "fd-trace-0001")
	if got := r.Header.Get("X-Request-Id"); got != "fd-trace-0001" {
		t.Errorf("incoming X-Request-Id not kept: %q", got)
	}
}
