package e2e

// Every builtin entry of the catalog (tavily, browser, http-request), used
// end to end through the API: each configuration step a connected tool
// shows is the catalog's step (same texts and fields, numbered), and the
// connected tool's actions are the catalog's, retryable flags, schemas and
// annotations included; then one call of each kind runs.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// h9Step compares a tool's next_configuration_step with the catalog's step
// at index i of total.
func h9Step(t *testing.T, got map[string]any, want map[string]any, i, total int) {
	t.Helper()
	if fmt.Sprint(got["index"]) != fmt.Sprint(i) || fmt.Sprint(got["total"]) != fmt.Sprint(total) {
		t.Errorf("step %v is %v of %v, want %d of %d", got["step"], got["index"], got["total"], i, total)
	}
	for _, k := range []string{"step", "type", "title", "description", "fields"} {
		if a, b := h9JSON(t, got[k]), h9JSON(t, want[k]); a != b {
			t.Errorf("step %v: %s is %s, the catalog's %s", want["step"], k, a, b)
		}
	}
}

func h9JSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// h9SameActions requires the connected tool's actions to be the catalog's.
func h9SameActions(t *testing.T, c *fdClient, id int64, entry map[string]any) {
	t.Helper()
	got := fdList(t, c.ok(200, "GET", fdPath("/api/v1/agents/custom-tools/%d/actions/", id), nil), "actions")
	want := fdList(t, entry, "actions")
	if len(got) != len(want) {
		t.Fatalf("%d actions, the catalog has %d", len(got), len(want))
	}
	for i := range want {
		for _, k := range []string{"name", "description", "retryable", "input_schema", "annotations"} {
			if a, b := h9JSON(t, got[i][k]), h9JSON(t, want[i][k]); a != b {
				t.Errorf("action %v: %s is %s, the catalog's %s", want[i]["name"], k, a, b)
			}
		}
		ann, _ := want[i]["annotations"].(map[string]any)
		if r := ann["readOnlyHint"] == true || ann["idempotentHint"] == true; want[i]["retryable"] != r {
			t.Errorf("action %v: retryable %v, annotations %v", want[i]["name"], want[i]["retryable"], ann)
		}
	}
}

func TestBuiltinEntriesEndToEnd(t *testing.T) {
	tavily := startFakeTavily(t)
	var mu sync.Mutex
	var seen struct{ method, path, auth string }
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen.method, seen.path, seen.auth = r.Method, r.URL.Path, r.Header.Get("Authorization")
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"method":%q,"body":%q}`, r.Method, bytes.TrimSpace(body))
	}))
	t.Cleanup(api.Close)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, `<html><head><title>Quiver page</title></head><body><p>Hello</p><a href="/next">next</a></body></html>`)
	}))
	t.Cleanup(page.Close)
	c := fdStart(t, testserver.Options{Env: map[string]string{"QUIVER_TAVILY_BASE_URL": tavily.URL}})
	const call = "/api/v1/agents/custom-tools/call/"
	entry := func(name string) (map[string]any, []map[string]any) {
		e := c.ok(200, "GET", "/api/v1/agents/tools/available/"+name+"/", nil)
		return e, fdList(t, e, "config_steps")
	}

	t.Run("tavily", func(t *testing.T) {
		c := &fdClient{t: t, srv: c.srv, key: c.key}
		e, steps := entry("tavily")
		m := c.ok(201, "POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "tavily"})
		id := fdInt(t, m["id"])
		h9Step(t, m["next_configuration_step"].(map[string]any), steps[0], 1, 1)
		done := c.ok(200, "POST", fdPath("/api/v1/agents/custom-tools/%d/provide-config/", id),
			map[string]any{"user_response": map[string]any{"TAVILY_API_KEY": "tvly-h9"}})
		if done["is_configured"] != true || done["next_configuration_step"] != nil {
			t.Fatalf("configured: %v", done)
		}
		h9SameActions(t, c, id, e)
		r := c.ok(200, "POST", call, map[string]any{"tool": id, "action": "search", "arguments": map[string]any{"query": "h9"}})
		if r["is_error"] != false || tavily.count("h9") != 1 {
			t.Errorf("search: %v", r)
		}
		c.fail(422, "invalid_arguments", "POST", call, map[string]any{"tool": id, "action": "extract", "arguments": map[string]any{"urls": []string{}}})
		// Every topic and depth Tavily's search takes is one the schema
		// takes: finance besides general and news, fast and ultra-fast
		// besides basic and advanced.
		for _, args := range []map[string]any{
			{"query": "h9-finance", "topic": "finance"},
			{"query": "h9-fast", "search_depth": "fast"},
			{"query": "h9-ultra-fast", "search_depth": "ultra-fast"},
		} {
			r := c.ok(200, "POST", call, map[string]any{"tool": id, "action": "search", "arguments": args})
			if q := args["query"].(string); r["is_error"] != false || tavily.count(q) != 1 {
				t.Errorf("search %v: %v", args, r)
			}
		}
		c.fail(422, "invalid_arguments", "POST", call, map[string]any{"tool": id, "action": "search", "arguments": map[string]any{"query": "x", "topic": "sports"}})
	})

	t.Run("browser", func(t *testing.T) {
		c := &fdClient{t: t, srv: c.srv, key: c.key}
		e, steps := entry("browser")
		if len(steps) != 0 {
			t.Fatalf("browser steps %v", steps)
		}
		m := c.ok(201, "POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "browser"})
		if m["is_configured"] != true || m["next_configuration_step"] != nil {
			t.Fatalf("browser is configured on creation: %v", m)
		}
		id := fdInt(t, m["id"])
		h9SameActions(t, c, id, e)
		r := c.ok(200, "POST", call, map[string]any{"tool": id, "action": "fetch_page", "arguments": map[string]any{"url": page.URL}})
		res, _ := r["result"].(map[string]any)
		if r["is_error"] != false || res["title"] != "Quiver page" || fmt.Sprint(res["status"]) != "200" {
			t.Errorf("fetch_page: %v", r)
		}
	})

	t.Run("http-request", func(t *testing.T) {
		c := &fdClient{t: t, srv: c.srv, key: c.key}
		e, steps := entry("http-request")
		if len(steps) != 2 {
			t.Fatalf("http-request steps %v", steps)
		}
		m := c.ok(201, "POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "http-request"})
		id := fdInt(t, m["id"])
		provide := fdPath("/api/v1/agents/custom-tools/%d/provide-config/", id)
		h9Step(t, m["next_configuration_step"].(map[string]any), steps[0], 1, 2)
		m = c.ok(200, "POST", provide, map[string]any{"user_response": map[string]any{"base_url": api.URL + "/v1"}})
		h9Step(t, m["next_configuration_step"].(map[string]any), steps[1], 2, 2)
		m = c.ok(200, "POST", provide, map[string]any{"user_response": map[string]any{"auth_type": "bearer", "token": "h9-token"}})
		if m["is_configured"] != true {
			t.Fatalf("configured: %v", m)
		}
		h9SameActions(t, c, id, e)
		for _, action := range []string{"get", "head", "put", "delete"} {
			c.ok(200, "POST", call, map[string]any{"tool": id, "action": action, "arguments": map[string]any{"path": "/items"}})
		}
		post := map[string]any{"tool": id, "action": "post", "arguments": map[string]any{"path": "/items", "body": map[string]any{"n": 1}}}
		c.fail(400, "idempotency_key_required", "POST", call, post)
		r := c.ok(200, "POST", call, post, "Idempotency-Key", "h9-post-1")
		res, _ := r["result"].(map[string]any)
		mu.Lock()
		defer mu.Unlock()
		if fmt.Sprint(res["status"]) != "200" || seen.method != "POST" || seen.path != "/v1/items" || seen.auth != "Bearer h9-token" {
			t.Errorf("post: %v; the API saw %+v", r, seen)
		}
	})
}
