package e2e

import (
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestRoutesAndBodies: a route path matched, for another method, by a
// sibling with a parameter is 405 with the route's own methods in Allow,
// not a 404 for an ID named "call"; a member given as null or twice is a
// typed error, not silently dropped or overwritten.
func TestRoutesAndBodies(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	for _, tc := range []struct {
		method, path, allow string
	}{
		{"GET", "/api/v1/agents/custom-tools/call/", "POST"},
		{"DELETE", "/api/v1/agents/custom-tools/call", "POST"},
		{"DELETE", "/api/v1/agents/custom-tools/", "GET, HEAD, POST"},
		{"PATCH", "/api/v1/agents/custom-tools", "GET, HEAD, POST"},
		{"DELETE", "/api/v1/agents/custom-tools/calls/", "GET, HEAD"},
		{"PUT", "/api/v1/agents/custom-tools/calls", "GET, HEAD"},
		{"PUT", "/api/v1/agents/custom-tools/call/", "POST"},
	} {
		r := srv.Do(tc.method, tc.path, nil)
		if r.Status != 405 || r.JSON()["error"] != "bad_request" || r.Header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d %s, Allow %q; want 405 with Allow %q", tc.method, tc.path, r.Status, r.Body, r.Header.Get("Allow"), tc.allow)
		}
	}

	r := srv.Do("POST", "/api/v1/agents/", map[string]any{"name": "a", "goal": "g"})
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	path := fdPath("/api/v1/agents/%d/", int64(r.JSON()["id"].(float64)))
	for _, field := range []string{"name", "goal", "status", "tools"} {
		r := srv.Do("PATCH", path, map[string]any{field: nil})
		fields, _ := r.JSON()["fields"].(map[string]any)
		if r.Status != 422 || r.JSON()["error"] != "validation_error" || fields[field] == nil {
			t.Errorf("PATCH %s: null: %d %s, want 422 naming it", field, r.Status, r.Body)
		}
	}
	if r := srv.Do("GET", path, nil); r.JSON()["goal"] != "g" {
		t.Errorf("the agent changed: %s", r.Body)
	}
	r = srv.Do("POST", "/api/v1/agents/custom-tools/", `{"mcp_tool":"browser","mcp_tool":"tavily"}`)
	if r.Status != 400 || r.JSON()["error"] != "invalid_json" {
		t.Errorf("a member given twice: %d %s, want 400 invalid_json", r.Status, r.Body)
	}
}

// TestIDsHaveOneSpelling: +1 and 01 name nothing, and a call-log tool
// filter that cannot be a tool ID is refused rather than matching nothing.
func TestIDsHaveOneSpelling(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	r := srv.Do("POST", "/api/v1/agents/", map[string]any{"name": "a"})
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	id := int64(r.JSON()["id"].(float64))
	if r := srv.Do("GET", fdPath("/api/v1/agents/%d/", id), nil); r.Status != 200 {
		t.Fatalf("get: %d %s", r.Status, r.Body)
	}
	for _, p := range []string{fdPath("/api/v1/agents/+%d/", id), fdPath("/api/v1/agents/0%d/", id)} {
		if r := srv.Do("GET", p, nil); r.Status != 404 || r.JSON()["error"] != "not_found" {
			t.Errorf("GET %s: %d %s, want 404", p, r.Status, r.Body)
		}
	}
	for _, v := range []string{"0", "-1", "+1", "01", "x"} {
		r := srv.Do("GET", "/api/v1/agents/custom-tools/calls/?tool="+v, nil)
		if fields, _ := r.JSON()["fields"].(map[string]any); r.Status != 422 || fields["tool"] == nil {
			t.Errorf("?tool=%s: %d %s, want 422 on tool", v, r.Status, r.Body)
		}
	}
}

// TestEveryBadFieldReported: one answer names every bad field, those of the
// wrong type and those of the right type but not valid alike.
func TestEveryBadFieldReported(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	for _, tc := range []struct {
		method, path string
		body         any
		want         []string
	}{
		{"POST", "/api/v1/agents/", map[string]any{"name": 5, "status": "bogus"}, []string{"name", "status"}},
		{"POST", "/api/v1/agents/", map[string]any{"goal": 5, "status": "bogus", "tools": []int64{987654}}, []string{"goal", "status", "tools", "name"}},
		{"GET", "/api/v1/agents/custom-tools/calls/?limit=abc&tool=x", nil, []string{"limit", "tool"}},
	} {
		r := srv.Do(tc.method, tc.path, tc.body)
		fields, _ := r.JSON()["fields"].(map[string]any)
		if r.Status != 422 || len(fields) != len(tc.want) {
			t.Errorf("%s %s %v: %d %s, want 422 naming %v", tc.method, tc.path, tc.body, r.Status, r.Body, tc.want)
			continue
		}
		for _, name := range tc.want {
			if fields[name] == nil {
				t.Errorf("%s %s %v: %s, want %s named", tc.method, tc.path, tc.body, r.Body, name)
			}
		}
	}
}
