package e2e

// Black-box tests of the foundation of API.md: Conventions, Errors, Catalog,
// Connected tools, Agents and Operations, on Postgres and on the embedded
// SQLite default, plus the quiver binary's commands.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testdb"
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
	})

	t.Run("operations need no key", func(t *testing.T) {
		for _, p := range []string{"/healthz", "/readyz", "/metrics", "/openapi.json"} {
			if r := testserver.Do(t, c.srv.URL, "", "GET", p, nil); r.Status != 200 {
				t.Errorf("GET %s without a key: %d %s", p, r.Status, r.Body)
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
		{c, "POST", fdPath("/api/v1/agents/custom-tools/%d/provide-config/", tool), map[string]any{"user_response": map[string]any{"TAVILY_API_KEY": "tvly-rid"}}, 409, true},
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

func fdTestCatalog(t *testing.T, c *fdClient) {
	list := fdList(t, c.ok(200, "GET", "/api/v1/agents/tools/available/", nil), "tools")
	byName := map[string]map[string]any{}
	for _, e := range list {
		for _, f := range []string{"name", "type", "title", "description", "categories", "auth"} {
			if _, ok := e[f]; !ok {
				t.Errorf("catalog entry %v lacks %s", e["name"], f)
			}
		}
		switch e["type"] {
		case "builtin", "mcp", "custom_mcp":
		default:
			t.Errorf("%v: type %v", e["name"], e["type"])
		}
		switch e["auth"] {
		case "none", "api_key", "oauth":
		default:
			t.Errorf("%v: auth %v", e["name"], e["auth"])
		}
		byName[e["name"].(string)] = e
	}
	want := map[string][2]string{
		"tavily": {"builtin", "api_key"}, "browser": {"builtin", "none"}, "http-request": {"builtin", ""},
		"custom-mcp": {"custom_mcp", ""}, "github-mcp": {"mcp", "oauth"},
	}
	for name, w := range want {
		e, ok := byName[name]
		if !ok {
			t.Errorf("catalog lacks %s", name)
			continue
		}
		if e["type"] != w[0] || (w[1] != "" && e["auth"] != w[1]) {
			t.Errorf("%s: type %v auth %v, want %v", name, e["type"], e["auth"], w)
		}
	}
	tavily := byName["tavily"]
	if tavily != nil && (tavily["title"] != "Tavily Search" || !slices.Contains(tavily["categories"].([]any), any("search"))) {
		t.Errorf("tavily entry: %v", tavily)
	}

	// ?category= filters.
	search := fdList(t, c.ok(200, "GET", "/api/v1/agents/tools/available/?category=search", nil), "tools")
	names := map[string]bool{}
	for _, e := range search {
		names[e["name"].(string)] = true
		if !slices.Contains(e["categories"].([]any), any("search")) {
			t.Errorf("?category=search lists %v with categories %v", e["name"], e["categories"])
		}
	}
	if !names["tavily"] || names["http-request"] || names["github-mcp"] || len(search) >= len(list) {
		t.Errorf("?category=search lists %v", names)
	}
	none := c.ok(200, "GET", "/api/v1/agents/tools/available/?category=no-such-category", nil)
	if arr, ok := none["tools"].([]any); !ok || len(arr) != 0 {
		t.Errorf("an unknown category: %v, want an empty array", none)
	}

	// Detail: config_steps and, for fixed actions, actions.
	tv := c.ok(200, "GET", "/api/v1/agents/tools/available/tavily/", nil)
	steps := fdList(t, tv, "config_steps")
	if len(steps) != 1 || steps[0]["type"] != "form" {
		t.Fatalf("tavily steps: %v", steps)
	}
	fields := fdList(t, steps[0], "fields")
	if len(fields) != 1 || fields[0]["name"] != "TAVILY_API_KEY" || fields[0]["secret"] != true ||
		fields[0]["required"] != true || fields[0]["pattern"] != "^tvly-" {
		t.Errorf("tavily fields: %v", fields)
	}
	acts := map[string]map[string]any{}
	for _, a := range fdList(t, tv, "actions") {
		acts[a["name"].(string)] = a
		if _, ok := a["input_schema"].(map[string]any); !ok {
			t.Errorf("tavily action %v: no input_schema object", a["name"])
		}
	}
	if acts["search"]["retryable"] != true || acts["extract"]["retryable"] != true {
		t.Errorf("tavily actions: %v", acts)
	}

	hr := c.ok(200, "GET", "/api/v1/agents/tools/available/http-request/", nil)
	hsteps := fdList(t, hr, "config_steps")
	if len(hsteps) != 2 {
		t.Fatalf("http-request steps: %v", hsteps)
	}
	retry := map[string]bool{}
	for _, a := range fdList(t, hr, "actions") {
		retry[a["name"].(string)] = a["retryable"] == true
	}
	wantRetry := map[string]bool{"get": true, "head": true, "put": true, "delete": true, "post": false, "patch": false}
	for name, r := range wantRetry {
		if got, ok := retry[name]; !ok || got != r {
			t.Errorf("http-request action %s: retryable %v (present %v), want %v", name, got, ok, r)
		}
	}

	cm := c.ok(200, "GET", "/api/v1/agents/tools/available/custom-mcp", nil)
	cmFields := map[string]map[string]any{}
	if steps := fdList(t, cm, "config_steps"); len(steps) > 0 {
		for _, f := range fdList(t, steps[0], "fields") {
			cmFields[f["name"].(string)] = f
		}
	}
	if f := cmFields["url"]; f == nil || f["required"] != true || f["secret"] != false {
		t.Errorf("custom-mcp url field: %v", f)
	}
	for _, n := range []string{"bearer_token", "headers"} {
		if f := cmFields[n]; f == nil || f["required"] != false || f["secret"] != true {
			t.Errorf("custom-mcp %s field: %v", n, f)
		}
	}

	gh := c.ok(200, "GET", "/api/v1/agents/tools/available/github-mcp/", nil)
	if s := fdList(t, gh, "config_steps"); len(s) == 0 || s[0]["type"] != "oauth" {
		t.Errorf("github-mcp steps: %v", s)
	}

	c.fail(404, "not_found", "GET", "/api/v1/agents/tools/available/no-such-tool/", nil)
	c.fail(404, "not_found", "GET", "/api/v1/agents/tools/available/no-such-tool", nil)
}

func fdTestTools(t *testing.T, c *fdClient) {
	c = c.as(c.srv.NewKey("tools"))
	before := time.Now().Add(-2 * time.Second)
	tv := c.ok(201, "POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "tavily"})
	id := fdInt(t, tv["id"])
	if tv["mcp_tool"] != "tavily" || tv["name"] != "tavily" || tv["is_configured"] != false {
		t.Errorf("created tool: %v", tv)
	}
	if cfg, ok := tv["config"].(map[string]any); !ok || len(cfg) != 0 {
		t.Errorf("a new tool's config: %v, want {}", tv["config"])
	}
	created := fdTime(t, tv["created_at"])
	fdTime(t, tv["updated_at"])
	if created.Before(before.Truncate(time.Second)) {
		t.Errorf("created_at %v is before the request", created)
	}
	step, _ := tv["next_configuration_step"].(map[string]any)
	if step == nil || step["step"] != "api_key" || fdInt(t, step["index"]) != 1 || fdInt(t, step["total"]) != 1 || step["type"] != "form" {
		t.Errorf("a new tavily's step: %v", tv["next_configuration_step"])
	}

	labelled := c.ok(201, "POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "tavily", "name": "research search"})
	if labelled["name"] != "research search" || labelled["mcp_tool"] != "tavily" {
		t.Errorf("a labelled tool: %v", labelled)
	}
	lid := fdInt(t, labelled["id"])
	if lid <= id {
		t.Errorf("IDs: %d then %d", id, lid)
	}

	got := c.ok(200, "GET", fdPath("/api/v1/agents/custom-tools/%d/", id), nil)
	delete(got, "updated_at")
	delete(tv, "updated_at")
	if fmt.Sprint(got) != fmt.Sprint(tv) {
		t.Errorf("GET differs from the created tool:\n%v\n%v", got, tv)
	}

	list := fdList(t, c.ok(200, "GET", "/api/v1/agents/custom-tools/", nil), "tools")
	if len(list) != 2 || fdInt(t, list[0]["id"]) != id || fdInt(t, list[1]["id"]) != lid {
		t.Errorf("list (newest last): %v", list)
	}

	// Refused creations.
	fdWantFields(t, c.do("POST", "/api/v1/agents/custom-tools/", map[string]any{}), "validation_error", "mcp_tool")
	fdWantFields(t, c.do("POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": 5}), "validation_error", "mcp_tool")
	fdWantFields(t, c.do("POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "tavily", "name": 5}), "validation_error", "name")
	fdWantFields(t, c.do("POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "tavily", "name": strings.Repeat("n", 201)}), "validation_error", "name")
	c.fail(404, "not_found", "POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "no-such-tool"})

	// Delete; IDs are never reused.
	c.ok(204, "DELETE", fdPath("/api/v1/agents/custom-tools/%d/", lid), nil)
	c.fail(404, "not_found", "GET", fdPath("/api/v1/agents/custom-tools/%d/", lid), nil)
	c.fail(404, "not_found", "DELETE", fdPath("/api/v1/agents/custom-tools/%d/", lid), nil)
	c.fail(404, "not_found", "POST", fdPath("/api/v1/agents/custom-tools/%d/provide-config/", lid), map[string]any{"user_response": map[string]any{}})
	c.fail(404, "not_found", "POST", fdPath("/api/v1/agents/custom-tools/%d/reset-config/", lid), nil)
	c.fail(404, "not_found", "GET", fdPath("/api/v1/agents/custom-tools/%d/actions/", lid), nil)
	next := c.createTool("tavily")
	if next <= lid {
		t.Errorf("after deleting %d the next tool got ID %d: IDs must never be reused", lid, next)
	}
	for _, bad := range []string{"0", "-1", "abc", "1.5", "99999999999999999999"} {
		c.fail(404, "not_found", "GET", "/api/v1/agents/custom-tools/"+bad+"/", nil)
	}
}

// fdNoSecret fails if any body shows the raw secret.
func fdNoSecret(t *testing.T, secret string, bodies ...[]byte) {
	t.Helper()
	for _, b := range bodies {
		if bytes.Contains(b, []byte(secret)) {
			t.Fatalf("a response shows the raw secret %q: %s", secret, b)
		}
	}
}

func fdTestTavilyConfig(t *testing.T, c *fdClient) {
	id := c.createTool("tavily")
	provide := fdPath("/api/v1/agents/custom-tools/%d/provide-config/", id)
	get := fdPath("/api/v1/agents/custom-tools/%d/", id)
	initial := c.do("GET", get, nil).Body

	unchanged := func() {
		t.Helper()
		now := c.do("GET", get, nil).Body
		if !bytes.Equal(now, initial) {
			t.Fatalf("a refused step changed the tool:\n%s\n%s", initial, now)
		}
	}
	fdWantFields(t, c.do("POST", provide, map[string]any{}), "validation_error", "user_response")
	fdWantFields(t, c.do("POST", provide, map[string]any{"user_response": "tvly-x"}), "validation_error", "user_response")
	fdWantFields(t, c.do("POST", provide, map[string]any{"user_response": map[string]any{}}), "validation_error", "TAVILY_API_KEY")
	unchanged()
	fdWantFields(t, c.do("POST", provide, map[string]any{"user_response": map[string]any{"TAVILY_API_KEY": nil}}), "validation_error", "TAVILY_API_KEY")
	fdWantFields(t, c.do("POST", provide, map[string]any{"user_response": map[string]any{"TAVILY_API_KEY": ""}}), "validation_error", "TAVILY_API_KEY")
	fdWantFields(t, c.do("POST", provide, map[string]any{"user_response": map[string]any{"TAVILY_API_KEY": "sk-not-tavily"}}), "validation_error", "TAVILY_API_KEY")
	unchanged()
	fdWantFields(t, c.do("POST", provide, `{"user_response": {"TAVILY_API_KEY": 12345}}`), "validation_error", "TAVILY_API_KEY")
	fdWantFields(t, c.do("POST", provide, `{"user_response": {"TAVILY_API_KEY": ["tvly-x"]}}`), "validation_error", "TAVILY_API_KEY")
	unchanged()

	const secret = "tvly-RAWSECRET0123456789"
	r := c.do("POST", provide, map[string]any{"user_response": map[string]any{"TAVILY_API_KEY": secret, "unrelated": 5}, "extra": true})
	if r.Status != 200 {
		t.Fatalf("a valid key: %d %s", r.Status, r.Body)
	}
	done := fdObject(t, r)
	if done["is_configured"] != true || done["next_configuration_step"] != nil {
		t.Fatalf("after the only step: %v", done)
	}
	if _, present := done["next_configuration_step"]; !present {
		t.Error("next_configuration_step must be present (null), not omitted")
	}
	cfg, _ := done["config"].(map[string]any)
	if cfg["TAVILY_API_KEY"] != "tvly-****" {
		t.Errorf("config shows %v, want tvly-****", cfg)
	}
	if _, ok := cfg["unrelated"]; ok {
		t.Errorf("an unknown answer was stored: %v", cfg)
	}
	bodies := [][]byte{r.Body, c.do("GET", get, nil).Body, c.do("GET", "/api/v1/agents/custom-tools/", nil).Body,
		c.do("GET", fdPath("/api/v1/agents/custom-tools/%d/actions/", id), nil).Body}
	fdNoSecret(t, secret, bodies...)
	fdNoSecret(t, "RAWSECRET", bodies...)
	for _, b := range bodies[1:2] {
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		if m["config"].(map[string]any)["TAVILY_API_KEY"] != "tvly-****" {
			t.Errorf("GET shows %v", m["config"])
		}
	}
	again := c.fail(409, "already_configured", "POST", provide, map[string]any{"user_response": map[string]any{"TAVILY_API_KEY": "tvly-other"}})
	fdNoSecret(t, secret, []byte(fmt.Sprint(again)))

	// Reset: back at step 1, configuration cleared.
	rr := c.do("POST", fdPath("/api/v1/agents/custom-tools/%d/reset-config/", id), nil)
	reset := fdObject(t, rr)
	if rr.Status != 200 || reset["is_configured"] != false {
		t.Fatalf("reset: %d %s", rr.Status, rr.Body)
	}
	if s, _ := reset["next_configuration_step"].(map[string]any); s == nil || fdInt(t, s["index"]) != 1 || s["step"] != "api_key" {
		t.Errorf("after reset the step is %v", reset["next_configuration_step"])
	}
	if cfg, _ := reset["config"].(map[string]any); len(cfg) != 0 {
		t.Errorf("after reset the config is %v, want {}", reset["config"])
	}
	fdNoSecret(t, secret, rr.Body, c.do("GET", get, nil).Body)
	c.fail(409, "tool_not_configured", "GET", fdPath("/api/v1/agents/custom-tools/%d/actions/", id), nil)
	c.ok(200, "POST", provide, map[string]any{"user_response": map[string]any{"TAVILY_API_KEY": "tvly-second"}})
}

func fdTestHTTPRequestConfig(t *testing.T, c *fdClient) {
	id := c.createTool("http-request")
	provide := fdPath("/api/v1/agents/custom-tools/%d/provide-config/", id)
	get := fdPath("/api/v1/agents/custom-tools/%d/", id)
	step := func(m map[string]any) map[string]any {
		t.Helper()
		s, _ := m["next_configuration_step"].(map[string]any)
		if s == nil {
			t.Fatalf("no next step in %v", m)
		}
		return s
	}
	s1 := step(c.ok(200, "GET", get, nil))
	if s1["step"] != "base_url" || fdInt(t, s1["index"]) != 1 || fdInt(t, s1["total"]) != 2 {
		t.Fatalf("step 1: %v", s1)
	}
	fdWantFields(t, c.do("POST", provide, map[string]any{"user_response": map[string]any{}}), "validation_error", "base_url")
	fdWantFields(t, c.do("POST", provide, map[string]any{"user_response": map[string]any{"base_url": "not a url"}}), "validation_error", "base_url")
	fdWantFields(t, c.do("POST", provide, map[string]any{"user_response": map[string]any{"base_url": "ftp://files.example.com"}}), "validation_error", "base_url")
	fdWantFields(t, c.do("POST", provide, map[string]any{"user_response": map[string]any{"base_url": 443}}), "validation_error", "base_url")
	// Answers of a later step do not count at this one.
	fdWantFields(t, c.do("POST", provide, map[string]any{"user_response": map[string]any{"auth_type": "none"}}), "validation_error", "base_url")
	if s := step(c.ok(200, "GET", get, nil)); s["step"] != "base_url" {
		t.Fatalf("refused answers moved the tool to %v", s)
	}

	m := c.ok(200, "POST", provide, map[string]any{"user_response": map[string]any{"base_url": "https://api.example.com/v1"}})
	s2 := step(m)
	if m["is_configured"] != false || s2["step"] != "auth" || fdInt(t, s2["index"]) != 2 || fdInt(t, s2["total"]) != 2 {
		t.Fatalf("step 2: %v", m)
	}
	names := map[string]map[string]any{}
	for _, f := range fdList(t, s2, "fields") {
		names[f["name"].(string)] = f
	}
	if names["auth_type"] == nil || names["token"] == nil || names["header_name"] == nil || names["token"]["secret"] != true {
		t.Errorf("step 2 fields: %v", names)
	}
	if opts, _ := names["auth_type"]["options"].([]any); len(opts) != 3 {
		t.Errorf("auth_type options: %v", names["auth_type"])
	}
	if m["config"].(map[string]any)["base_url"] != "https://api.example.com/v1" {
		t.Errorf("config after step 1: %v", m["config"])
	}
	at2 := c.do("GET", get, nil).Body

	fdWantFields(t, c.do("POST", provide, map[string]any{"user_response": map[string]any{"auth_type": "magic"}}), "validation_error", "auth_type")
	fdWantFields(t, c.do("POST", provide, map[string]any{"user_response": map[string]any{"auth_type": true}}), "validation_error", "auth_type")
	fdWantFields(t, c.do("POST", provide, map[string]any{"user_response": map[string]any{"auth_type": "header", "token": "t", "header_name": "Bad Header:"}}), "validation_error", "header_name")
	fdWantFields(t, c.do("POST", provide, map[string]any{"user_response": map[string]any{"auth_type": "bearer", "token": 42}}), "validation_error", "token")
	if now := c.do("GET", get, nil).Body; !bytes.Equal(now, at2) {
		t.Fatalf("refused step-2 answers changed the tool:\n%s\n%s", at2, now)
	}

	const secret = "hr-RAWTOKEN-9876543210"
	r := c.do("POST", provide, map[string]any{"user_response": map[string]any{"auth_type": "header", "token": secret, "header_name": "X-Api-Key"}})
	done := fdObject(t, r)
	if r.Status != 200 || done["is_configured"] != true || done["next_configuration_step"] != nil {
		t.Fatalf("step 2 accepted: %d %s", r.Status, r.Body)
	}
	cfg := done["config"].(map[string]any)
	if cfg["base_url"] != "https://api.example.com/v1" || cfg["auth_type"] != "header" || cfg["header_name"] != "X-Api-Key" {
		t.Errorf("config: %v", cfg)
	}
	if tok, _ := cfg["token"].(string); !strings.Contains(tok, "****") {
		t.Errorf("token shows %q, want it masked", cfg["token"])
	}
	fdNoSecret(t, secret, r.Body, c.do("GET", get, nil).Body, c.do("GET", "/api/v1/agents/custom-tools/", nil).Body)
	fdNoSecret(t, "RAWTOKEN", r.Body, c.do("GET", get, nil).Body)

	reset := c.ok(200, "POST", fdPath("/api/v1/agents/custom-tools/%d/reset-config/", id), nil)
	if s := step(reset); s["step"] != "base_url" || fdInt(t, s["index"]) != 1 {
		t.Errorf("after reset: %v", s)
	}
	if cfg, _ := reset["config"].(map[string]any); len(cfg) != 0 {
		t.Errorf("after reset the config is %v, want {}", cfg)
	}
}

func fdTestOAuthAndStepless(t *testing.T, c *fdClient) {
	gh := c.ok(201, "POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "github-mcp"})
	s, _ := gh["next_configuration_step"].(map[string]any)
	if gh["is_configured"] != false || s == nil || s["type"] != "oauth" {
		t.Fatalf("github-mcp: %v", gh)
	}
	if s["error"] != "oauth_provider_not_configured" {
		t.Errorf("github-mcp oauth step error %v, want oauth_provider_not_configured", s["error"])
	}
	if u, ok := s["authorization_url"]; ok && u != "" {
		t.Errorf("an oauth step whose provider is not set up offers authorization_url %v", u)
	}
	if d, _ := s["description"].(string); !strings.Contains(d, "QUIVER_OAUTH_GITHUB_CLIENT_ID") {
		t.Errorf("the step does not say what an operator must set: %q", d)
	}
	if _, ok := s["fields"]; ok {
		t.Errorf("an oauth step carries fields: %v", s)
	}
	id := fdInt(t, gh["id"])
	fdWantError(t, c.do("POST", fdPath("/api/v1/agents/custom-tools/%d/provide-config/", id), map[string]any{"user_response": map[string]any{"code": "x"}}), 422, "validation_error")
	c.fail(409, "tool_not_configured", "GET", fdPath("/api/v1/agents/custom-tools/%d/actions/", id), nil)

	// browser has no steps: configured on creation.
	br := c.ok(201, "POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "browser"})
	if br["is_configured"] != true || br["next_configuration_step"] != nil {
		t.Errorf("browser: %v", br)
	}
	if _, present := br["next_configuration_step"]; !present {
		t.Error("next_configuration_step must be present (null), not omitted")
	}
	c.fail(409, "already_configured", "POST", fdPath("/api/v1/agents/custom-tools/%d/provide-config/", fdInt(t, br["id"])), map[string]any{"user_response": map[string]any{}})
}

func fdTestCustomMCPForm(t *testing.T, c *fdClient) {
	id := c.createTool("custom-mcp")
	provide := fdPath("/api/v1/agents/custom-tools/%d/provide-config/", id)
	fdWantFields(t, c.do("POST", provide, map[string]any{"user_response": map[string]any{}}), "validation_error", "url")
	fdWantFields(t, c.do("POST", provide, map[string]any{"user_response": map[string]any{"url": "ftp://example.com/mcp"}}), "validation_error", "url")
	fdWantFields(t, c.do("POST", provide, map[string]any{"user_response": map[string]any{"url": "https://example.com/mcp", "headers": "X-A: b"}}), "validation_error", "headers")
	fdWantFields(t, c.do("POST", provide, map[string]any{"user_response": map[string]any{"url": "https://example.com/mcp", "bearer_token": 7}}), "validation_error", "bearer_token")
	m := c.ok(200, "GET", fdPath("/api/v1/agents/custom-tools/%d/", id), nil)
	if m["is_configured"] != false || m["type"] != "custom_mcp" {
		t.Errorf("custom-mcp after refused answers: %v", m)
	}
}

func fdTestAgents(t *testing.T, c *fdClient) {
	c = c.as(c.srv.NewKey("agents"))
	unconfigured := c.createTool("tavily")
	second := c.createTool("browser")

	a := c.ok(201, "POST", "/api/v1/agents/", map[string]any{"name": "Researcher"})
	if a["name"] != "Researcher" || a["goal"] != "" || a["status"] != "draft" {
		t.Errorf("defaults: %v", a)
	}
	if tools, ok := a["tools"].([]any); !ok || len(tools) != 0 {
		t.Errorf("tools default: %v, want []", a["tools"])
	}
	created, updated := fdTime(t, a["created_at"]), fdTime(t, a["updated_at"])
	if updated.Before(created) {
		t.Errorf("updated_at %v before created_at %v", updated, created)
	}
	aid := fdInt(t, a["id"])

	full := c.ok(201, "POST", "/api/v1/agents/", map[string]any{"name": "Full", "goal": "Find papers", "status": "active",
		"tools": []int64{unconfigured, second}})
	fid := fdInt(t, full["id"])
	if full["status"] != "active" || full["goal"] != "Find papers" || !slices.Equal(fdInts(t, full["tools"]), []int64{unconfigured, second}) {
		t.Errorf("full agent: %v", full)
	}
	if got := c.ok(200, "GET", fdPath("/api/v1/agents/%d/", fid), nil); fmt.Sprint(got) != fmt.Sprint(full) {
		t.Errorf("GET differs from create:\n%v\n%v", got, full)
	}

	count := func() int {
		return len(fdList(t, c.ok(200, "GET", "/api/v1/agents/?limit=200", nil), "agents"))
	}
	n := count()
	c.ok(201, "POST", "/api/v1/agents/", map[string]any{"name": strings.Repeat("n", 200), "goal": strings.Repeat("g", 10_000)})
	if got := count(); got != n+1 {
		t.Fatalf("after a create: %d agents, had %d", got, n)
	}
	n++
	fdWantFields(t, c.do("POST", "/api/v1/agents/", map[string]any{"goal": "no name"}), "validation_error", "name")
	fdWantFields(t, c.do("POST", "/api/v1/agents/", map[string]any{"name": "   "}), "validation_error", "name")
	fdWantFields(t, c.do("POST", "/api/v1/agents/", map[string]any{"name": "x", "status": "running"}), "validation_error", "status")
	fdWantFields(t, c.do("POST", "/api/v1/agents/", map[string]any{"name": "x", "status": "Active"}), "validation_error", "status")
	fdWantFields(t, c.do("POST", "/api/v1/agents/", map[string]any{"name": 5}), "validation_error", "name")
	fdWantFields(t, c.do("POST", "/api/v1/agents/", map[string]any{"name": "x", "goal": []int{1}}), "validation_error", "goal")
	fdWantFields(t, c.do("POST", "/api/v1/agents/", map[string]any{"name": "x", "tools": "1,2"}), "validation_error", "tools")
	fdWantFields(t, c.do("POST", "/api/v1/agents/", `{"name": "x", "tools": [1.5]}`), "validation_error", "tools")
	fdWantFields(t, c.do("POST", "/api/v1/agents/", map[string]any{"name": "x", "tools": []string{"1"}}), "validation_error", "tools")
	fdWantFields(t, c.do("POST", "/api/v1/agents/", map[string]any{"name": strings.Repeat("n", 201)}), "validation_error", "name")
	fdWantFields(t, c.do("POST", "/api/v1/agents/", map[string]any{"name": "x", "goal": strings.Repeat("g", 10_001)}), "validation_error", "goal")
	fdWantFields(t, c.do("POST", "/api/v1/agents/", map[string]any{"name": "x", "tools": []int64{second, second}}), "validation_error", "tools")
	ghost := second + 1_000_000
	f := fdWantFields(t, c.do("POST", "/api/v1/agents/", map[string]any{"name": "x", "tools": []int64{unconfigured, ghost, ghost + 1}}), "validation_error", "tools")
	for _, id := range []int64{ghost, ghost + 1} {
		if !strings.Contains(f["tools"].(string), strconv.FormatInt(id, 10)) {
			t.Errorf("fields.tools %q does not name %d", f["tools"], id)
		}
	}
	if strings.Contains(f["tools"].(string), strconv.FormatInt(unconfigured, 10)+",") {
		t.Errorf("fields.tools %q names a valid tool", f["tools"])
	}
	if got := count(); got != n {
		t.Fatalf("a refused create made an agent: %d agents, had %d", got, n)
	}

	// PATCH: given fields only; tools replaces the list whole.
	path := fdPath("/api/v1/agents/%d/", fid)
	p := c.ok(200, "PATCH", path, map[string]any{"tools": []int64{second}})
	if !slices.Equal(fdInts(t, p["tools"]), []int64{second}) || p["name"] != "Full" || p["goal"] != "Find papers" || p["status"] != "active" {
		t.Errorf("PATCH tools: %v", p)
	}
	if p["created_at"] != full["created_at"] {
		t.Errorf("PATCH changed created_at: %v → %v", full["created_at"], p["created_at"])
	}
	p = c.ok(200, "PATCH", path, map[string]any{"name": "Renamed", "status": "paused"})
	if !slices.Equal(fdInts(t, p["tools"]), []int64{second}) || p["name"] != "Renamed" || p["status"] != "paused" || p["goal"] != "Find papers" {
		t.Errorf("PATCH name: %v", p)
	}
	p = c.ok(200, "PATCH", path, map[string]any{"tools": []int64{second, unconfigured}})
	if !slices.Equal(fdInts(t, p["tools"]), []int64{second, unconfigured}) {
		t.Errorf("PATCH keeps the order given: %v", p["tools"])
	}
	p = c.ok(200, "PATCH", path, map[string]any{"tools": []int64{}})
	if tools, _ := p["tools"].([]any); tools == nil || len(tools) != 0 {
		t.Errorf("PATCH tools []: %v", p["tools"])
	}
	p = c.ok(200, "PATCH", path, map[string]any{"tools": []int64{unconfigured}})
	same := c.ok(200, "PATCH", path, map[string]any{})
	delete(same, "updated_at")
	delete(p, "updated_at")
	if fmt.Sprint(same) != fmt.Sprint(p) {
		t.Errorf("an empty PATCH changed the agent:\n%v\n%v", p, same)
	}
	before := c.do("GET", path, nil).Body
	fdWantFields(t, c.do("PATCH", path, map[string]any{"tools": []int64{second, ghost}, "name": "should not stick"}), "validation_error", "tools")
	fdWantFields(t, c.do("PATCH", path, map[string]any{"status": "archived", "name": "should not stick"}), "validation_error", "status")
	fdWantFields(t, c.do("PATCH", path, map[string]any{"name": ""}), "validation_error", "name")
	fdWantFields(t, c.do("PATCH", path, map[string]any{"tools": 5}), "validation_error", "tools")
	if now := c.do("GET", path, nil).Body; !bytes.Equal(now, before) {
		t.Errorf("a refused PATCH changed the agent:\n%s\n%s", before, now)
	}
	c.fail(404, "not_found", "PATCH", fdPath("/api/v1/agents/%d/", fid+1_000_000), map[string]any{"name": "x"})

	// Delete; IDs are never reused.
	c.ok(204, "DELETE", fdPath("/api/v1/agents/%d/", fid), nil)
	c.fail(404, "not_found", "GET", fdPath("/api/v1/agents/%d/", fid), nil)
	c.fail(404, "not_found", "DELETE", fdPath("/api/v1/agents/%d/", fid), nil)
	c.fail(404, "not_found", "PATCH", fdPath("/api/v1/agents/%d/", fid), map[string]any{"name": "x"})
	if next := c.createAgent(map[string]any{"name": "next"}); next <= fid || next <= aid {
		t.Errorf("after deleting %d the next agent got ID %d: IDs must never be reused", fid, next)
	}
	for _, bad := range []string{"0", "-3", "abc", "99999999999999999999"} {
		c.fail(404, "not_found", "GET", "/api/v1/agents/"+bad+"/", nil)
	}
}

func fdTestDetach(t *testing.T, c *fdClient) {
	keep := c.createTool("browser")
	gone := c.createTool("tavily")
	a1 := c.createAgent(map[string]any{"name": "one", "tools": []int64{gone, keep}})
	a2 := c.createAgent(map[string]any{"name": "two", "tools": []int64{keep, gone}})
	a3 := c.createAgent(map[string]any{"name": "three", "tools": []int64{gone}})
	c.ok(204, "DELETE", fdPath("/api/v1/agents/custom-tools/%d/", gone), nil)
	for id, want := range map[int64][]int64{a1: {keep}, a2: {keep}, a3: {}} {
		got := fdInts(t, c.ok(200, "GET", fdPath("/api/v1/agents/%d/", id), nil)["tools"])
		if !slices.Equal(got, want) {
			t.Errorf("agent %d tools %v after deleting tool %d, want %v", id, got, gone, want)
		}
	}
	for _, a := range fdList(t, c.ok(200, "GET", "/api/v1/agents/?limit=200", nil), "agents") {
		if slices.Contains(fdInts(t, a["tools"]), gone) {
			t.Errorf("agent %v still lists deleted tool %d", a["id"], gone)
		}
	}
	fdWantFields(t, c.do("PATCH", fdPath("/api/v1/agents/%d/", a1), map[string]any{"tools": []int64{gone}}), "validation_error", "tools")
}

// fdWalk follows next_cursor from the first page and returns the IDs.
func fdWalk(t *testing.T, c *fdClient, base, field string, limit int) (ids []int64, pages int) {
	t.Helper()
	cursor := ""
	for pages = 1; pages < 1000; pages++ {
		p := fmt.Sprintf("%s?limit=%d", base, limit)
		if cursor != "" {
			p += "&cursor=" + cursor
		}
		m := c.ok(200, "GET", p, nil)
		items := fdList(t, m, field)
		if len(items) > limit {
			t.Fatalf("page of %d items with limit %d", len(items), limit)
		}
		for _, it := range items {
			ids = append(ids, fdInt(t, it["id"]))
		}
		nc, present := m["next_cursor"]
		if !present {
			t.Fatalf("%s: no next_cursor field: %v", p, m)
		}
		if nc == nil {
			return ids, pages
		}
		s, ok := nc.(string)
		if !ok || s == "" {
			t.Fatalf("next_cursor %v is not a string or null", nc)
		}
		if len(items) == 0 {
			t.Fatalf("%s: an empty page with a next_cursor", p)
		}
		cursor = s
	}
	t.Fatal("pagination does not end")
	return nil, 0
}

func fdTestPagination(t *testing.T, c *fdClient) {
	c = c.as(c.srv.NewKey("pagination"))
	var tools []int64
	for i := 0; i < 7; i++ {
		tools = append(tools, c.createTool("browser"))
	}
	for _, limit := range []int{1, 2, 3, 6, 7, 8, 200} {
		ids, pages := fdWalk(t, c, "/api/v1/agents/custom-tools/", "tools", limit)
		if !slices.Equal(ids, tools) {
			t.Errorf("limit %d: walked %v, want %v (every tool once, newest last)", limit, ids, tools)
		}
		if want := (7 + limit - 1) / limit; pages != want {
			t.Errorf("limit %d: %d pages, want %d (next_cursor null on the page with the last tool)", limit, pages, want)
		}
	}
	// An empty list.
	empty := c.as(c.srv.NewKey("pagination-empty"))
	for _, p := range []string{"/api/v1/agents/custom-tools/", "/api/v1/agents/", "/api/v1/agents/custom-tools/calls/"} {
		m := empty.ok(200, "GET", p, nil)
		if m["next_cursor"] != nil {
			t.Errorf("%s empty: next_cursor %v", p, m["next_cursor"])
		}
		for k, v := range m {
			if k != "next_cursor" {
				if arr, ok := v.([]any); !ok || len(arr) != 0 {
					t.Errorf("%s empty: %s = %v, want []", p, k, v)
				}
			}
		}
	}

	// A cursor survives deletes and sees later creates, newest last.
	m := c.ok(200, "GET", "/api/v1/agents/custom-tools/?limit=3", nil)
	cur := m["next_cursor"].(string)
	c.ok(204, "DELETE", fdPath("/api/v1/agents/custom-tools/%d/", tools[2]), nil)
	c.ok(204, "DELETE", fdPath("/api/v1/agents/custom-tools/%d/", tools[4]), nil)
	newest := c.createTool("browser")
	var rest []int64
	for cur != "" {
		m := c.ok(200, "GET", "/api/v1/agents/custom-tools/?limit=3&cursor="+cur, nil)
		for _, it := range fdList(t, m, "tools") {
			rest = append(rest, fdInt(t, it["id"]))
		}
		cur, _ = m["next_cursor"].(string)
	}
	if want := []int64{tools[3], tools[5], tools[6], newest}; !slices.Equal(rest, want) {
		t.Errorf("after deletes and a create, the rest is %v, want %v", rest, want)
	}

	// Agents: the default limit is 50.
	var agents []int64
	for i := 0; i < 51; i++ {
		agents = append(agents, c.createAgent(map[string]any{"name": fmt.Sprintf("a%02d", i)}))
	}
	first := c.ok(200, "GET", "/api/v1/agents/", nil)
	page := fdList(t, first, "agents")
	if len(page) != 50 || first["next_cursor"] == nil {
		t.Fatalf("default page: %d agents, next_cursor %v; want 50 and a cursor", len(page), first["next_cursor"])
	}
	second := c.ok(200, "GET", "/api/v1/agents/?cursor="+first["next_cursor"].(string), nil)
	if p := fdList(t, second, "agents"); len(p) != 1 || fdInt(t, p[0]["id"]) != agents[50] || second["next_cursor"] != nil {
		t.Errorf("second default page: %v", second)
	}
	ids, _ := fdWalk(t, c, "/api/v1/agents/", "agents", 7)
	if !slices.Equal(ids, agents) {
		t.Errorf("agents walked %v, want %v", ids, agents)
	}

	// Bad parameters.
	for _, base := range []string{"/api/v1/agents/custom-tools/", "/api/v1/agents/", "/api/v1/agents/custom-tools/calls/"} {
		for _, bad := range []string{"0", "201", "x", "-1", "1.5", "1e2", "99999999999999999999"} {
			fdWantFields(t, c.do("GET", base+"?limit="+bad, nil), "validation_error", "limit")
		}
		for _, ok := range []string{"1", "200"} {
			c.ok(200, "GET", base+"?limit="+ok, nil)
		}
		for _, bad := range []string{"garbage", "AAAA", "%00", "eyJpZCI6MX0"} {
			fdWantFields(t, c.do("GET", base+"?cursor="+bad, nil), "validation_error", "cursor")
		}
	}
	// A cursor is not a forgeable ID: one from another list of another
	// account does not leak that account's rows.
	other := c.as(c.srv.NewKey("pagination-other"))
	for i := 0; i < 3; i++ {
		other.createTool("browser")
	}
	om := other.ok(200, "GET", "/api/v1/agents/custom-tools/?limit=1", nil)
	if oc, _ := om["next_cursor"].(string); oc != "" {
		r := c.do("GET", "/api/v1/agents/custom-tools/?cursor="+oc, nil)
		if r.Status == 200 {
			for _, it := range fdList(t, fdObject(t, r), "tools") {
				if !slices.Contains(append(tools, newest), fdInt(t, it["id"])) {
					t.Errorf("another account's cursor showed tool %v", it["id"])
				}
			}
		}
	}
}

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

// fdEnv is the process environment without any Quiver configuration of the
// test's own, plus env.
func fdEnv(env map[string]string) []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "QUIVER_") || name == "DATABASE_URL" || name == "REDIS_URL" {
			continue
		}
		out = append(out, kv)
	}
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// fdRun runs the quiver binary to completion.
func fdRun(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, fdBinary(t), args...)
	cmd.Env = fdEnv(env)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("quiver %v did not finish: %s", args, e.String())
	}
	return o.String(), e.String(), err
}

// fdLastLine is the last non-empty line of s.
func fdLastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

var fdKeyRE = regexp.MustCompile(`^qv_[A-Za-z0-9]+$`)

// fdKeysCreate runs `quiver keys create` and returns the key.
func fdKeysCreate(t *testing.T, env map[string]string, account string) string {
	t.Helper()
	out, errOut, err := fdRun(t, env, "keys", "create", "--account", account)
	if err != nil {
		t.Fatalf("keys create: %v\n%s", err, errOut)
	}
	key := fdLastLine(out)
	if !fdKeyRE.MatchString(key) {
		t.Fatalf("the last line of keys create is %q, want the key alone; stdout:\n%s", key, out)
	}
	return key
}

// fdServe runs `quiver serve` until the test ends and returns its base URL
// and everything it printed before listening.
func fdServe(t *testing.T, env map[string]string) (base, banner string) {
	t.Helper()
	env["QUIVER_ADDR"] = "127.0.0.1:0"
	cmd := exec.Command(fdBinary(t), "serve")
	cmd.Env = fdEnv(env)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	addr := make(chan string, 1)
	var printed strings.Builder
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if a, ok := strings.CutPrefix(line, "Quiver listening on "); ok {
				addr <- a
			} else {
				printed.WriteString(line + "\n")
			}
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("quiver serve did not stop cleanly on SIGINT: %v\n%s", err, errOut.String())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("quiver serve did not stop within 30s of SIGINT")
		}
	})
	select {
	case a := <-addr:
		return "http://" + a, printed.String()
	case err := <-exited:
		t.Fatalf("quiver serve exited: %v\n%s", err, errOut.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("quiver serve did not listen within 60s:\n%s", errOut.String())
	}
	return "", ""
}

func TestFoundationCLI(t *testing.T) {
	fdBinary(t)

	t.Run("catalog check", func(t *testing.T) {
		out, errOut, err := fdRun(t, nil, "catalog", "check")
		if err != nil || !strings.Contains(out, "catalog ok") {
			t.Fatalf("catalog check: %v\n%s%s", err, out, errOut)
		}
	})

	t.Run("unknown command", func(t *testing.T) {
		if _, _, err := fdRun(t, map[string]string{"QUIVER_DATA_DIR": t.TempDir()}, "frobnicate"); err == nil {
			t.Fatal("an unknown command exited 0")
		}
		if _, errOut, err := fdRun(t, map[string]string{"QUIVER_DATA_DIR": t.TempDir()}, "keys", "create"); err == nil {
			t.Fatalf("keys create without --account exited 0: %s", errOut)
		}
	})

	t.Run("keys create against a served data dir", func(t *testing.T) {
		env := map[string]string{"QUIVER_DATA_DIR": t.TempDir()}
		k1 := fdKeysCreate(t, env, "x")
		k2 := fdKeysCreate(t, env, "x")
		if k1 == k2 {
			t.Fatal("two keys create runs printed the same key")
		}
		base, banner := fdServe(t, env)
		if strings.Contains(banner, "qv_") {
			t.Errorf("serve printed a new key although an account exists:\n%s", banner)
		}
		r := testserver.Do(t, base, k1, "POST", "/api/v1/agents/", map[string]any{"name": "from the CLI key"})
		if r.Status != 201 {
			t.Fatalf("the created key does not work: %d %s", r.Status, r.Body)
		}
		agent := fdInt(t, fdObject(t, r)["id"])
		// Both keys are account x's.
		if r := testserver.Do(t, base, k2, "GET", fdPath("/api/v1/agents/%d/", agent), nil); r.Status != 200 {
			t.Fatalf("the second key of account x: %d %s", r.Status, r.Body)
		}
		// A key made while the server runs works at once, for its own account.
		k3 := fdKeysCreate(t, env, "y")
		if r := testserver.Do(t, base, k3, "GET", "/api/v1/agents/", nil); r.Status != 200 {
			t.Fatalf("a key made while serving: %d %s", r.Status, r.Body)
		}
		if r := testserver.Do(t, base, k3, "GET", fdPath("/api/v1/agents/%d/", agent), nil); r.Status != 404 {
			t.Fatalf("account y sees account x's agent: %d %s", r.Status, r.Body)
		}
		if r := testserver.Do(t, base, "", "GET", "/api/v1/agents/", nil); r.Status != 401 {
			t.Fatalf("no key: %d", r.Status)
		}
	})

	t.Run("first serve prints a key", func(t *testing.T) {
		env := map[string]string{"QUIVER_DATA_DIR": t.TempDir()}
		base, banner := fdServe(t, env)
		key := fdLastLine(banner)
		if !fdKeyRE.MatchString(key) {
			t.Fatalf("the first serve printed no key on its last line before listening:\n%s", banner)
		}
		if r := testserver.Do(t, base, key, "GET", "/api/v1/agents/", nil); r.Status != 200 {
			t.Fatalf("the printed key: %d %s", r.Status, r.Body)
		}
	})

	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run("migrate "+backend, func(t *testing.T) {
			env := map[string]string{"QUIVER_DATA_DIR": t.TempDir()}
			if backend == "postgres" {
				env["DATABASE_URL"] = testdb.Postgres(t, "cli")
				env["QUIVER_SECRET_KEY"] = testserver.TestSecretKey
			}
			status := func() []string {
				t.Helper()
				out, errOut, err := fdRun(t, env, "migrate", "status")
				if err != nil {
					t.Fatalf("migrate status: %v\n%s", err, errOut)
				}
				return strings.Split(strings.TrimSpace(out), "\n")
			}
			for _, l := range status() {
				if !strings.HasSuffix(l, "pending") {
					t.Errorf("before any migration: %q", l)
				}
			}
			out, errOut, err := fdRun(t, env, "migrate", "up")
			if err != nil || !strings.Contains(out, "applied ") {
				t.Fatalf("migrate up: %v\n%s%s", err, out, errOut)
			}
			all := status()
			for _, l := range all {
				if !strings.HasSuffix(l, "applied") {
					t.Errorf("after up: %q", l)
				}
			}
			out, errOut, err = fdRun(t, env, "migrate", "down")
			if err != nil || !strings.HasPrefix(out, "reverted ") {
				t.Fatalf("migrate down: %v\n%s%s", err, out, errOut)
			}
			after := status()
			if len(after) != len(all) || !strings.HasSuffix(after[len(after)-1], "pending") {
				t.Errorf("after down: %v", after)
			}
			for _, l := range after[:len(after)-1] {
				if !strings.HasSuffix(l, "applied") {
					t.Errorf("down reverted more than the last migration: %v", after)
				}
			}
			reverted := strings.Fields(strings.TrimPrefix(out, "reverted "))[0]
			out, errOut, err = fdRun(t, env, "migrate", "up")
			if err != nil || !strings.Contains(out, reverted) {
				t.Fatalf("migrate up after down: %v\n%s%s (want %s applied again)", err, out, errOut, reverted)
			}
			if out, _, err := fdRun(t, env, "migrate", "up"); err != nil || !strings.Contains(out, "up to date") {
				t.Errorf("migrate up when up to date: %v %s", err, out)
			}
			if _, _, err := fdRun(t, env, "migrate", "sideways"); err == nil {
				t.Error("migrate sideways exited 0")
			}
			// The migrated database serves.
			key := fdKeysCreate(t, env, "migrated")
			base, _ := fdServe(t, env)
			if r := testserver.Do(t, base, key, "POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "tavily"}); r.Status != 201 {
				t.Fatalf("after up, down, up: %d %s", r.Status, r.Body)
			}
		})
	}

	t.Run("bad configuration names the variable", func(t *testing.T) {
		for name, value := range map[string]string{
			"QUIVER_CALL_TIMEOUT":         "soon",
			"QUIVER_IDEMPOTENCY_TTL":      "-1h",
			"QUIVER_EGRESS_ALLOW_PRIVATE": "maybe",
			"DATABASE_URL":                "mysql://db/quiver",
			"QUIVER_PUBLIC_URL":           "not a url",
		} {
			env := map[string]string{"QUIVER_DATA_DIR": t.TempDir(), "QUIVER_ADDR": "127.0.0.1:0", name: value}
			_, errOut, err := fdRun(t, env, "serve")
			if err == nil {
				t.Errorf("serve with %s=%s exited 0", name, value)
				continue
			}
			if !strings.Contains(errOut, name) {
				t.Errorf("serve with %s=%s: the error does not name the variable:\n%s", name, value, errOut)
			}
			if strings.Contains(errOut, "goroutine ") {
				t.Errorf("serve with %s=%s panicked:\n%s", name, value, errOut)
			}
		}
	})
}
