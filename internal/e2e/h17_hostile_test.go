package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// h17Check holds one answer to the contract: never 500, documented in the
// OpenAPI document for its operation, and every error in the envelope with
// a code of API.md's table answered with its status.
func h17Check(t *testing.T, spec *fdSpec, method, tmpl, sent string, r *testserver.Response) map[string]any {
	t.Helper()
	if r.Status >= 500 && r.Status != 502 && r.Status != 503 && r.Status != 504 {
		t.Errorf("%s %s: %d %s", method, sent, r.Status, fdClip(r.Body))
	}
	spec.check(t, method, tmpl, r)
	if r.Status < 400 {
		var m map[string]any
		_ = json.Unmarshal(r.Body, &m)
		return m
	}
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Errorf("%s %s: %d body not JSON: %s", method, sent, r.Status, fdClip(r.Body))
		return nil
	}
	code, _ := m["error"].(string)
	ok := false
	for _, s := range fzCodeStatus[code] {
		ok = ok || s == r.Status
	}
	if !ok {
		t.Errorf("%s %s: %d with code %q: %s", method, sent, r.Status, code, fdClip(r.Body))
	}
	return m
}

var h17Bodies = []string{
	`null`, `true`, `false`, `0`, `-1`, `1e999`, `"x"`, `""`, `[]`, `[{}]`, `{}`,
	`{"a":1}{"b":2}`, `{"a":1,"a":2}`, "\ufeff{}", ` {} `, `{"x":` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}`,
	`{"x":123456789012345678901234567890}`, `{"x":-0}`, `{"x":1e400}`,
}

// TestH17HostileInputs sends hand-picked hostile inputs to every REST
// route: odd path IDs, odd list parameters, bodies of every JSON type at
// top level, and every field of POST/PATCH agents, POST custom-tools and
// every catalog entry's first configuration step given values of every
// JSON type, huge numbers and unicode edge cases. Every answer is one the
// OpenAPI document declares for the route, never a 500, every error is in
// the envelope with a code of API.md's table, and a refused PATCH or
// provide-config leaves the resource as it was.
func TestH17HostileInputs(t *testing.T) {
	c := fdStart(t, testserver.Options{Env: map[string]string{"QUIVER_LOG_LEVEL": "error"}})
	spec := fdLoadSpec(t)
	do := func(method, tmpl, path string, body any) map[string]any {
		t.Helper()
		return h17Check(t, spec, method, tmpl, fmt.Sprintf("%s %v", path, body), c.do(method, path, body))
	}
	// kept sends a write and, when it is refused, requires get to read back
	// as before.
	kept := func(method, tmpl, path, get string, body any) map[string]any {
		t.Helper()
		before := c.do("GET", get, nil).Body
		r := c.do(method, path, body)
		m := h17Check(t, spec, method, tmpl, fmt.Sprintf("%s %v", path, body), r)
		if r.Status >= 400 {
			if after := c.do("GET", get, nil).Body; string(after) != string(before) {
				t.Errorf("refused %s %s %v changed %s:\nbefore %s\nafter  %s", method, path, body, get, before, after)
			}
		}
		return m
	}
	tool := c.createTool("http-request")
	agent := c.createAgent(map[string]any{"name": "a", "goal": "g", "tools": []int64{}, "status": "draft"})
	ids := []string{"0", "-1", "9223372036854775808", "9223372036854775807", "18446744073709551616", "0" + fmt.Sprint(tool), "+" + fmt.Sprint(tool),
		"1e3", "%20" + fmt.Sprint(tool), fmt.Sprint(tool) + "%20", "%2F", "1%2F2", "0x1", "1.0", "%00", "abc", "%E2%80%8B1", "-0", "١"}
	for _, id := range ids {
		do("GET", "/api/v1/agents/custom-tools/{id}/", "/api/v1/agents/custom-tools/"+id+"/", nil)
		do("GET", "/api/v1/agents/{id}/", "/api/v1/agents/"+id+"/", nil)
		do("PATCH", "/api/v1/agents/{id}/", "/api/v1/agents/"+id+"/", `{"name":"x"}`)
		do("DELETE", "/api/v1/agents/{id}/", "/api/v1/agents/"+id+"/", nil)
		do("DELETE", "/api/v1/agents/custom-tools/{id}/", "/api/v1/agents/custom-tools/"+id+"/", nil)
		do("POST", "/api/v1/agents/custom-tools/{id}/provide-config/", "/api/v1/agents/custom-tools/"+id+"/provide-config/", `{"user_response":{}}`)
		do("POST", "/api/v1/agents/custom-tools/{id}/reset-config/", "/api/v1/agents/custom-tools/"+id+"/reset-config/", nil)
		do("GET", "/api/v1/agents/custom-tools/{id}/actions/", "/api/v1/agents/custom-tools/"+id+"/actions/", nil)
		do("GET", "/api/v1/agents/custom-tools/calls/", "/api/v1/agents/custom-tools/calls/?tool="+id, nil)
	}
	for _, q := range []string{"limit=0", "limit=-1", "limit=201", "limit=200", "limit=1e2", "limit=+5", "limit=05", "limit=%205", "limit=", "limit=1&limit=2",
		"cursor=", "cursor=x", "cursor=%00", "cursor=" + url.QueryEscape(strings.Repeat("A", 5000)), "cursor=MTA", "cursor=LTE", "cursor=OTIyMzM3MjAzNjg1NDc3NTgwOA",
		"category=", "category=search&category=web", "category=%00", "category=SEARCH", "tool=", "tool=tavily", "tool=1&tool=2", "tool=%F0%9F%98%80"} {
		do("GET", "/api/v1/agents/", "/api/v1/agents/?"+q, nil)
		do("GET", "/api/v1/agents/custom-tools/", "/api/v1/agents/custom-tools/?"+q, nil)
		do("GET", "/api/v1/agents/tools/available/", "/api/v1/agents/tools/available/?"+q, nil)
		do("GET", "/api/v1/agents/custom-tools/calls/", "/api/v1/agents/custom-tools/calls/?"+q, nil)
	}
	ap := fmt.Sprintf("/api/v1/agents/%d/", agent)
	values := []string{`null`, `true`, `1`, `-1`, `1.5`, `1e400`, `123456789012345678901234567890`, `""`, `"x"`, `[]`, `[null]`, `[1.0]`, `[1e0]`, `["1"]`, `{}`,
		`[` + fmt.Sprint(tool) + `,` + fmt.Sprint(tool) + `]`, `[9223372036854775807]`, `[-9223372036854775808]`, `[9223372036854775808]`, `"\u0000"`, `"\ud800"`, `"a\u202eb"`, `" "`, `"\t"`,
		`"` + strings.Repeat("é", 300) + `"`, `"ACTIVE"`, `"active "`}
	for _, f := range []string{"name", "goal", "tools", "status"} {
		for _, v := range values {
			b := `{"` + f + `":` + v + `}`
			kept("PATCH", "/api/v1/agents/{id}/", ap, ap, b)
			full := map[string]string{"name": `"n"`, "goal": `"g"`, "tools": `[]`, "status": `"draft"`}
			full[f] = v
			fb := fmt.Sprintf(`{"name":%s,"goal":%s,"tools":%s,"status":%s}`, full["name"], full["goal"], full["tools"], full["status"])
			do("POST", "/api/v1/agents/", "/api/v1/agents/", fb)
		}
	}
	for _, b := range h17Bodies {
		kept("PATCH", "/api/v1/agents/{id}/", ap, ap, b)
		do("POST", "/api/v1/agents/", "/api/v1/agents/", b)
		do("POST", "/api/v1/agents/custom-tools/", "/api/v1/agents/custom-tools/", b)
		do("POST", "/api/v1/agents/custom-tools/call/", "/api/v1/agents/custom-tools/call/", b)
		kept("POST", "/api/v1/agents/custom-tools/{id}/provide-config/", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", tool),
			fmt.Sprintf("/api/v1/agents/custom-tools/%d/", tool), b)
	}
	for _, f := range []string{"mcp_tool", "name"} {
		for _, v := range values {
			full := map[string]string{"mcp_tool": `"tavily"`, "name": `"n"`}
			full[f] = v
			b := fmt.Sprintf(`{"mcp_tool":%s,"name":%s}`, full["mcp_tool"], full["name"])
			do("POST", "/api/v1/agents/custom-tools/", "/api/v1/agents/custom-tools/", b)
		}
	}
	// Every catalog entry: wrong types for every field of its first step.
	cat := c.ok(200, "GET", "/api/v1/agents/tools/available/", nil)
	for _, e := range fdList(t, cat, "tools") {
		name := e["name"].(string)
		r := c.do("POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": name})
		m := h17Check(t, spec, "POST", "/api/v1/agents/custom-tools/", name, r)
		if r.Status != 201 {
			continue
		}
		id := int64(m["id"].(float64))
		step, _ := m["next_configuration_step"].(map[string]any)
		fields, _ := step["fields"].([]any)
		for _, fv := range fields {
			fname := fv.(map[string]any)["name"].(string)
			for _, v := range values {
				b := `{"user_response":{"` + fname + `":` + v + `}}`
				p := fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id)
				if m := kept("POST", "/api/v1/agents/custom-tools/{id}/provide-config/", p, fmt.Sprintf("/api/v1/agents/custom-tools/%d/", id), b); m != nil && m["id"] != nil {
					c.do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/reset-config/", id), nil)
				}
			}
		}
	}
}
