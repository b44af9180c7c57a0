package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

// TestOpenAPIDocument checks the document itself: stable formatting, the
// routes of API.md and nothing else, refs that resolve, schemas that
// compile, and the parts of the contract it must spell out.
func TestOpenAPIDocument(t *testing.T) {
	s := fdLoadSpec(t)

	t.Run("pretty-printed and stable", func(t *testing.T) {
		var compact bytes.Buffer
		if err := json.Compact(&compact, s.raw); err != nil {
			t.Fatal(err)
		}
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, compact.Bytes(), "", "  "); err != nil {
			t.Fatal(err)
		}
		pretty.WriteByte('\n')
		if !bytes.Equal(pretty.Bytes(), s.raw) {
			t.Fatal("internal/api/openapi.json is not indented with two spaces and a final newline (json.Indent of itself)")
		}
	})

	t.Run("version and security", func(t *testing.T) {
		if s.doc["openapi"] != "3.1.0" {
			t.Errorf("openapi = %v, want 3.1.0", s.doc["openapi"])
		}
		schemes, _ := s.doc["components"].(map[string]any)["securitySchemes"].(map[string]any)
		key := s.deref(schemes["ApiKey"])
		bearer := s.deref(schemes["Bearer"])
		if key["type"] != "apiKey" || key["in"] != "header" || key["name"] != "X-API-KEY" {
			t.Errorf("ApiKey scheme = %v", key)
		}
		if bearer["type"] != "http" || bearer["scheme"] != "bearer" {
			t.Errorf("Bearer scheme = %v", bearer)
		}
		for _, open := range []string{"/healthz", "/readyz", "/metrics", "/openapi.json", "/api/v1/oauth/callback"} {
			sec, ok := s.operation("GET", open)["security"].([]any)
			if !ok || len(sec) != 0 {
				t.Errorf("GET %s must declare security: [] (no API key)", open)
			}
		}
	})

	t.Run("routes", func(t *testing.T) {
		want := map[string]bool{}
		for _, r := range fdRoutes {
			want[r.method+" "+r.path] = true
			if s.operation(r.method, r.path) == nil {
				t.Errorf("document lacks %s %s", r.method, r.path)
			}
		}
		for path, item := range s.doc["paths"].(map[string]any) {
			for method := range item.(map[string]any) {
				switch method {
				case "get", "put", "post", "delete", "options", "head", "patch", "trace":
					if k := strings.ToUpper(method) + " " + path; !want[k] {
						t.Errorf("document has %s, which the server does not route", k)
					}
				}
			}
		}
	})

	t.Run("refs resolve", func(t *testing.T) {
		var walk func(v any, at string)
		walk = func(v any, at string) {
			switch x := v.(type) {
			case map[string]any:
				if ref, ok := x["$ref"].(string); ok {
					if _, err := s.pointer(ref); err != nil {
						t.Errorf("%s: %v", at, err)
					}
				}
				for k, e := range x {
					walk(e, at+"/"+k)
				}
			case []any:
				for i, e := range x {
					walk(e, at+"/"+strconv.Itoa(i))
				}
			}
		}
		walk(s.doc, "#")
	})

	t.Run("schemas compile", func(t *testing.T) {
		comps := s.doc["components"].(map[string]any)["schemas"].(map[string]any)
		for _, name := range []string{"AvailableTool", "CatalogEntry", "Tool", "ConfigurationStep", "Field", "Action",
			"Agent", "CallRequest", "CallResult", "CallLogEntry", "IdempotencyKeyState", "Error", "ErrorCode",
			"ToolList", "AgentList", "CallList", "CatalogList", "ActionList"} {
			if comps[name] == nil {
				t.Errorf("components.schemas lacks %s", name)
			}
		}
		for name := range comps {
			if _, err := s.compile(map[string]any{"$ref": "#/components/schemas/" + name}); err != nil {
				t.Errorf("schema %s: %v", name, err)
			}
		}
	})

	t.Run("operations", func(t *testing.T) {
		ids := map[string]string{}
		for _, r := range fdRoutes {
			op := s.operation(r.method, r.path)
			if op == nil {
				continue
			}
			id, _ := op["operationId"].(string)
			if id == "" {
				t.Errorf("%s %s: no operationId", r.method, r.path)
			} else if prev, dup := ids[id]; dup {
				t.Errorf("operationId %s used by %s and %s %s", id, prev, r.method, r.path)
			}
			ids[id] = r.method + " " + r.path
			responses, _ := op["responses"].(map[string]any)
			if len(responses) == 0 {
				t.Errorf("%s %s: no responses", r.method, r.path)
			}
			for status, resp := range responses {
				rm := s.deref(resp)
				if rm == nil {
					t.Errorf("%s %s %s: response does not resolve", r.method, r.path, status)
					continue
				}
				if h, _ := rm["headers"].(map[string]any); h["X-Request-Id"] == nil {
					t.Errorf("%s %s %s: X-Request-Id not documented", r.method, r.path, status)
				}
			}
			authed := strings.HasPrefix(r.path, "/api/v1/") && r.path != "/api/v1/oauth/callback"
			if authed && responses["401"] == nil {
				t.Errorf("%s %s: 401 not documented", r.method, r.path)
			}
			if authed && responses["500"] == nil {
				t.Errorf("%s %s: 500 not documented", r.method, r.path)
			}
		}
		for _, want := range []struct{ route, param string }{
			{"GET /api/v1/agents/custom-tools/", "limit"}, {"GET /api/v1/agents/custom-tools/", "cursor"},
			{"GET /api/v1/agents/", "limit"}, {"GET /api/v1/agents/", "cursor"},
			{"GET /api/v1/agents/custom-tools/calls/", "tool"}, {"GET /api/v1/agents/custom-tools/calls/", "limit"},
			{"GET /api/v1/agents/tools/available/", "category"},
			{"POST /api/v1/agents/custom-tools/call/", "Idempotency-Key"},
		} {
			method, path, _ := strings.Cut(want.route, " ")
			found := false
			ps, _ := s.operation(method, path)["parameters"].([]any)
			for _, p := range ps {
				found = found || s.deref(p)["name"] == want.param
			}
			if !found {
				t.Errorf("%s: parameter %s not documented", want.route, want.param)
			}
		}
		call := s.operation("POST", "/api/v1/agents/custom-tools/call/")["responses"].(map[string]any)
		if h, _ := s.deref(call["200"])["headers"].(map[string]any); h["Idempotent-Replayed"] == nil {
			t.Error("the call's 200 does not document Idempotent-Replayed")
		}
		if h, _ := s.deref(call["409"])["headers"].(map[string]any); h["Retry-After"] == nil {
			t.Error("the call's 409 does not document Retry-After")
		}
	})

	t.Run("error codes", func(t *testing.T) {
		enum, _ := s.doc["components"].(map[string]any)["schemas"].(map[string]any)["ErrorCode"].(map[string]any)["enum"].([]any)
		var got []string
		for _, e := range enum {
			got = append(got, e.(string))
		}
		want := slices.Clone(fdErrorCodes)
		sort.Strings(got)
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Errorf("ErrorCode enum = %v, want %v", got, want)
		}
		errSchema := s.doc["components"].(map[string]any)["schemas"].(map[string]any)["Error"].(map[string]any)
		props := errSchema["properties"].(map[string]any)
		for _, f := range []string{"error", "message", "fields", "next_configuration_step", "request_id", "retry_after"} {
			if props[f] == nil {
				t.Errorf("Error schema lacks %s", f)
			}
		}
	})

	t.Run("validator rejects what the contract forbids", func(t *testing.T) {
		// The validator is only worth something if it fails: a configured
		// tool with a next step, a time not in UTC, an undeclared field.
		tool, err := s.compile(map[string]any{"$ref": "#/components/schemas/Tool"})
		if err != nil {
			t.Fatal(err)
		}
		good := map[string]any{"id": 1, "mcp_tool": "browser", "name": "browser", "type": "builtin",
			"is_configured": true, "next_configuration_step": nil, "config": map[string]any{},
			"created_at": "2026-11-30T05:21:00Z", "updated_at": "2026-11-30T05:21:00Z"}
		if err := tool.Validate(good); err != nil {
			t.Fatalf("a valid tool fails: %v", err)
		}
		for name, mutate := range map[string]func(m map[string]any){
			"configured with a step": func(m map[string]any) {
				m["next_configuration_step"] = map[string]any{"step": "x", "index": 1, "total": 1, "type": "oauth", "title": "", "description": ""}
			},
			"unconfigured without a step": func(m map[string]any) { m["is_configured"] = false },
			"time with an offset":         func(m map[string]any) { m["created_at"] = "2026-11-30T05:21:00+01:00" },
			"undeclared field":            func(m map[string]any) { m["secret"] = "tvly-123" },
			"string id":                   func(m map[string]any) { m["id"] = "1" },
		} {
			m := map[string]any{}
			for k, v := range good {
				m[k] = v
			}
			mutate(m)
			if tool.Validate(m) == nil {
				t.Errorf("%s: validates, should not", name)
			}
		}
	})
}

// TestOpenAPIRoutesServed sends each documented route to a real server and
// requires it to be routed: neither `404 No such route.` nor 405, with and
// without the trailing slash.
func TestOpenAPIRoutesServed(t *testing.T) {
	c := fdStart(t, testserver.Options{})
	agent := c.createAgent(map[string]any{"name": "routes"})
	for _, r := range fdRoutes {
		path := strings.NewReplacer("{name}", "tavily", "{id}", "987654", "{key}", "no-such-key").Replace(r.path)
		if strings.Contains(r.path, "/agents/{id}/") {
			path = strings.Replace(r.path, "{id}", strconv.FormatInt(agent, 10), 1)
		}
		for _, p := range []string{path, strings.TrimSuffix(path, "/") + "/", strings.TrimSuffix(path, "/")} {
			t.Run(r.method+" "+p, func(t *testing.T) {
				resp := c.do(r.method, p, map[string]any{}, "Accept", "application/json, text/event-stream")
				unrouted := resp.Status == 405 || (resp.Status == 404 && bytes.Contains(resp.Body, []byte("No such route.")))
				if unrouted && fdPendingRoutes[r.path] {
					t.Skipf("BUG: %s %s is not routed (%d %s): internal/app extraRoutes registers nothing yet", r.method, p, resp.Status, resp.Body)
				}
				if unrouted {
					t.Fatalf("%s %s is not routed: %d %s", r.method, p, resp.Status, resp.Body)
				}
				if resp.Header.Get("X-Request-Id") == "" {
					t.Fatal("no X-Request-Id")
				}
			})
		}
	}
}

// TestOpenAPIResponses drives every route through its success and error
// answers on a real server and validates each answer against the document.
func TestOpenAPIResponses(t *testing.T) {
	s := fdLoadSpec(t)
	c := fdStart(t, testserver.Options{Postgres: true})
	other := c.as(c.srv.NewKey("other-account"))
	anon := c.as("")

	// send sends a request and validates its answer; want 0 accepts any.
	send := func(cl *fdClient, want int, method, tmpl, path string, body any, headers ...string) *testserver.Response {
		t.Helper()
		r := cl.do(method, path, body, headers...)
		if want != 0 && r.Status != want {
			t.Errorf("%s %s: status %d, want %d; body %s", method, path, r.Status, want, fdClip(r.Body))
		}
		s.check(t, method, tmpl, r)
		return r
	}
	id := func(r *testserver.Response) int64 {
		var m struct{ ID int64 }
		if err := json.Unmarshal(r.Body, &m); err != nil || m.ID == 0 {
			t.Fatalf("no id in %s", r.Body)
		}
		return m.ID
	}
	big := `{"name":"` + strings.Repeat("x", 1<<20) + `"}`

	// Operations.
	send(anon, 200, "GET", "/healthz", "/healthz", nil)
	send(anon, 200, "HEAD", "/healthz", "/healthz", nil)
	send(anon, 200, "GET", "/readyz", "/readyz", nil)
	send(anon, 200, "HEAD", "/readyz", "/readyz", nil)
	send(anon, 200, "GET", "/metrics", "/metrics", nil)
	if r := send(anon, 200, "GET", "/openapi.json", "/openapi.json", nil); !bytes.Equal(r.Body, s.raw) {
		t.Error("GET /openapi.json does not serve internal/api/openapi.json byte for byte")
	}

	// Catalog.
	const catList, catOne = "/api/v1/agents/tools/available/", "/api/v1/agents/tools/available/{name}/"
	send(c, 200, "GET", catList, catList, nil)
	send(c, 200, "GET", catList, catList+"?category=search", nil)
	send(c, 200, "GET", catList, catList+"?category=nothing-here", nil)
	send(anon, 401, "GET", catList, catList, nil)
	for _, name := range []string{"tavily", "browser", "http-request", "custom-mcp", "github-mcp"} {
		send(c, 200, "GET", catOne, catList+name+"/", nil)
	}
	send(c, 404, "GET", catOne, catList+"no-such-tool/", nil)
	send(anon, 401, "GET", catOne, catList+"tavily/", nil)

	// Connected tools.
	const tools, tool = "/api/v1/agents/custom-tools/", "/api/v1/agents/custom-tools/{id}/"
	const provide, reset, actions = tool + "provide-config/", tool + "reset-config/", tool + "actions/"
	at := func(tmpl string, id int64) string { return strings.Replace(tmpl, "{id}", strconv.FormatInt(id, 10), 1) }
	tav := id(send(c, 201, "POST", tools, tools, map[string]any{"mcp_tool": "tavily", "name": "search"}))
	httpTool := id(send(c, 201, "POST", tools, tools, map[string]any{"mcp_tool": "http-request"}))
	gh := id(send(c, 201, "POST", tools, tools, map[string]any{"mcp_tool": "github-mcp"}))
	id(send(c, 201, "POST", tools, tools, map[string]any{"mcp_tool": "browser"}))
	send(c, 404, "POST", tools, tools, map[string]any{"mcp_tool": "no-such-tool"})
	send(c, 400, "POST", tools, tools, "{not json")
	send(c, 400, "POST", tools, tools, `["tavily"]`)
	send(c, 422, "POST", tools, tools, map[string]any{"name": "no catalog name"})
	send(c, 413, "POST", tools, tools, big)
	send(anon, 401, "POST", tools, tools, map[string]any{"mcp_tool": "tavily"})
	send(c, 200, "GET", tools, tools, nil)
	send(c, 200, "GET", tools, tools+"?limit=2", nil)
	send(c, 422, "GET", tools, tools+"?limit=0", nil)
	send(c, 422, "GET", tools, tools+"?cursor=bogus", nil)
	send(anon, 401, "GET", tools, tools, nil)
	send(c, 200, "GET", tool, at(tool, tav), nil)
	send(c, 200, "GET", tool, at(tool, gh), nil)
	send(c, 404, "GET", tool, at(tool, 987654), nil)
	send(other, 404, "GET", tool, at(tool, tav), nil)
	send(anon, 401, "GET", tool, at(tool, tav), nil)

	send(c, 422, "POST", provide, at(provide, tav), map[string]any{"user_response": map[string]any{"TAVILY_API_KEY": "nope"}})
	send(c, 422, "POST", provide, at(provide, tav), map[string]any{})
	send(c, 400, "POST", provide, at(provide, tav), "{")
	send(c, 413, "POST", provide, at(provide, tav), big)
	send(c, 404, "POST", provide, at(provide, 987654), map[string]any{"user_response": map[string]any{}})
	send(anon, 401, "POST", provide, at(provide, tav), map[string]any{"user_response": map[string]any{}})
	send(c, 422, "POST", provide, at(provide, gh), map[string]any{"user_response": map[string]any{}})
	send(c, 409, "GET", actions, at(actions, tav), nil)
	send(c, 200, "POST", provide, at(provide, tav), map[string]any{"user_response": map[string]any{"TAVILY_API_KEY": "tvly-openapi"}})
	send(c, 422, "POST", provide, at(provide, tav), map[string]any{"user_response": map[string]any{"TAVILY_API_KEY": "tvly-openapi"}})
	send(c, 200, "POST", provide, at(provide, httpTool), map[string]any{"user_response": map[string]any{"base_url": "https://api.example.com"}})
	send(c, 200, "GET", tool, at(tool, httpTool), nil)
	send(c, 200, "GET", actions, at(actions, tav), nil)
	send(c, 404, "GET", actions, at(actions, 987654), nil)
	send(anon, 401, "GET", actions, at(actions, tav), nil)
	send(c, 200, "POST", reset, at(reset, httpTool), nil)
	send(c, 404, "POST", reset, at(reset, 987654), nil)
	send(anon, 401, "POST", reset, at(reset, httpTool), nil)

	// A custom MCP server: actions, calls, replays and the call log.
	mcpSrv := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
	counter := id(send(c, 201, "POST", tools, tools, map[string]any{"mcp_tool": "custom-mcp", "name": "counter"}))
	send(c, 422, "POST", provide, at(provide, counter), map[string]any{"user_response": map[string]any{"url": "ftp://x"}})
	send(c, 200, "POST", provide, at(provide, counter), map[string]any{"user_response": map[string]any{"url": mcpSrv.URL}})
	send(c, 200, "GET", actions, at(actions, counter), nil)
	dead := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
	deadTool := id(send(c, 201, "POST", tools, tools, map[string]any{"mcp_tool": "custom-mcp", "name": "dead"}))
	send(c, 200, "POST", provide, at(provide, deadTool), map[string]any{"user_response": map[string]any{"url": dead.URL}})
	dead.Close()
	send(c, 502, "GET", actions, at(actions, deadTool), nil)

	const call, callLog, keyState = "/api/v1/agents/custom-tools/call/", "/api/v1/agents/custom-tools/calls/", "/api/v1/idempotency-keys/{key}"
	read := map[string]any{"tool": counter, "action": "read_count", "arguments": map[string]any{}}
	inc := map[string]any{"tool": counter, "action": "increment", "arguments": map[string]any{}}
	send(c, 200, "POST", call, call, read)
	send(c, 200, "POST", call, call, map[string]any{"tool": counter, "action": "fail"})
	send(c, 400, "POST", call, call, inc)
	first := send(c, 200, "POST", call, call, inc, "Idempotency-Key", "openapi-1")
	replay := send(c, 200, "POST", call, call, inc, "Idempotency-Key", "openapi-1")
	if replay.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(first.Body, replay.Body) {
		t.Errorf("replay: header %q, bodies equal %v", replay.Header.Get("Idempotent-Replayed"), bytes.Equal(first.Body, replay.Body))
	}
	send(c, 409, "POST", call, call, read, "Idempotency-Key", "openapi-1")
	send(c, 400, "POST", call, call, inc, "Idempotency-Key", "openapi-1", "Idempotency-Key", "openapi-2")
	send(c, 400, "POST", call, call, "{")
	send(c, 400, "POST", call, call, `{"tool": 1, "tool": 2, "action": "x"}`)
	send(c, 404, "POST", call, call, map[string]any{"tool": counter, "action": "no_such_action"})
	send(c, 404, "POST", call, call, map[string]any{"tool": 987654, "action": "read_count"})
	send(c, 422, "POST", call, call, map[string]any{"action": "read_count"})
	send(c, 422, "POST", call, call, map[string]any{"tool": tav, "action": "search", "arguments": map[string]any{"query": 5}})
	send(c, 409, "POST", call, call, map[string]any{"tool": httpTool, "action": "get", "arguments": map[string]any{"path": "/"}})
	send(c, 502, "POST", call, call, map[string]any{"tool": deadTool, "action": "read_count"})
	send(c, 413, "POST", call, call, big)
	send(anon, 401, "POST", call, call, read)
	testserver.Eventually(t, 10*time.Second, "the call log to show the calls", func() bool {
		r := c.do("GET", callLog, nil)
		return r.Status == 200 && len(fdList(t, fdObject(t, r), "calls")) >= 3
	})
	send(c, 200, "GET", callLog, callLog, nil)
	send(c, 200, "GET", callLog, callLog+"?tool="+strconv.FormatInt(counter, 10)+"&limit=1", nil)
	send(c, 422, "GET", callLog, callLog+"?tool=x", nil)
	send(c, 422, "GET", callLog, callLog+"?limit=201", nil)
	send(anon, 401, "GET", callLog, callLog, nil)
	send(c, 200, "GET", keyState, "/api/v1/idempotency-keys/openapi-1", nil)
	send(c, 404, "GET", keyState, "/api/v1/idempotency-keys/"+url.PathEscape("never used/key"), nil)
	send(other, 404, "GET", keyState, "/api/v1/idempotency-keys/openapi-1", nil)
	send(anon, 401, "GET", keyState, "/api/v1/idempotency-keys/openapi-1", nil)

	// Agents.
	const agents, agent = "/api/v1/agents/", "/api/v1/agents/{id}/"
	a := id(send(c, 201, "POST", agents, agents, map[string]any{"name": "a", "goal": "g", "tools": []int64{tav, gh}, "status": "active"}))
	send(c, 422, "POST", agents, agents, map[string]any{"name": "b", "tools": []int64{987654}})
	send(c, 422, "POST", agents, agents, map[string]any{"goal": "no name"})
	send(c, 400, "POST", agents, agents, "[]")
	send(c, 413, "POST", agents, agents, big)
	send(anon, 401, "POST", agents, agents, map[string]any{"name": "a"})
	send(c, 200, "GET", agents, agents, nil)
	send(c, 200, "GET", agents, agents+"?limit=1", nil)
	send(c, 422, "GET", agents, agents+"?limit=x", nil)
	send(anon, 401, "GET", agents, agents, nil)
	send(c, 200, "GET", agent, at(agent, a), nil)
	send(c, 404, "GET", agent, at(agent, 987654), nil)
	send(anon, 401, "GET", agent, at(agent, a), nil)
	send(c, 200, "PATCH", agent, at(agent, a), map[string]any{"tools": []int64{counter}, "status": "paused"})
	send(c, 422, "PATCH", agent, at(agent, a), map[string]any{"status": "running"})
	send(c, 400, "PATCH", agent, at(agent, a), "{")
	send(c, 413, "PATCH", agent, at(agent, a), big)
	send(c, 404, "PATCH", agent, at(agent, 987654), map[string]any{"name": "x"})
	send(anon, 401, "PATCH", agent, at(agent, a), map[string]any{"name": "x"})

	// Agents over MCP, when routed.
	const agentMCP = "/api/v1/agents/{id}/mcp"
	mcpPath := at(agentMCP, a)
	accept := []string{"Accept", "application/json, text/event-stream"}
	initialize := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "fd", "version": "1"}}}
	if r := c.do("POST", mcpPath, initialize, accept...); r.Status == 404 && bytes.Contains(r.Body, []byte("No such route.")) {
		t.Logf("BUG: %s is not routed yet; its answers are not validated", agentMCP)
		s.seen["POST "+agentMCP] = []int{0}
	} else {
		send(c, 200, "POST", agentMCP, mcpPath, initialize, accept...)
		send(anon, 401, "POST", agentMCP, mcpPath, initialize, accept...)
		send(c, 404, "POST", agentMCP, at(agentMCP, 987654), initialize, accept...)
	}

	// The OAuth callback, when routed: a bad state is a small HTML page.
	const callback = "/api/v1/oauth/callback"
	if r := anon.do("GET", callback+"?code=x&state=unknown", nil); r.Status == 404 && bytes.Contains(r.Body, []byte("No such route.")) {
		t.Logf("BUG: %s is not routed yet; its answers are not validated", callback)
		s.seen["GET "+callback] = []int{0}
	} else {
		send(anon, 400, "GET", callback, callback+"?code=x&state=unknown", nil)
		send(anon, 400, "GET", callback, callback, nil)
	}

	// HEAD, on every route that takes GET: the GET's answers without a body.
	browser := id(send(c, 201, "POST", tools, tools, map[string]any{"mcp_tool": "browser"}))
	for _, r := range fdRoutes {
		if r.method != "HEAD" || r.path == "/healthz" || r.path == "/readyz" {
			continue
		}
		p := strings.NewReplacer("{name}", "tavily", "{key}", "openapi-1").Replace(r.path)
		switch {
		case r.path == actions:
			p = at(actions, browser)
		case strings.HasPrefix(r.path, tools):
			p = at(p, tav)
		case strings.HasPrefix(r.path, agents):
			p = at(p, a)
		}
		send(c, 200, "HEAD", r.path, p, nil)
	}
	send(anon, 401, "HEAD", tool, at(tool, tav), nil)
	send(c, 404, "HEAD", tool, at(tool, 987654), nil)

	// Deletes last: the IDs above are used until here.
	send(c, 204, "DELETE", agent, at(agent, a), nil)
	send(c, 404, "DELETE", agent, at(agent, a), nil)
	send(anon, 401, "DELETE", agent, at(agent, a), nil)
	send(c, 204, "DELETE", tool, at(tool, gh), nil)
	send(c, 404, "DELETE", tool, at(tool, gh), nil)
	send(other, 404, "DELETE", tool, at(tool, tav), nil)
	send(anon, 401, "DELETE", tool, at(tool, tav), nil)

	// Every documented operation was exercised.
	for _, r := range fdRoutes {
		if len(s.seen[r.method+" "+r.path]) == 0 {
			t.Errorf("%s %s was never exercised", r.method, r.path)
		}
	}
	if t.Failed() {
		return
	}
	var summary []string
	for k, v := range s.seen {
		summary = append(summary, fmt.Sprintf("%s %v", k, v))
	}
	sort.Strings(summary)
	t.Logf("validated:\n%s", strings.Join(summary, "\n"))
}
