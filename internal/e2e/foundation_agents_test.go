package e2e

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

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
	a4 := c.createAgent(map[string]any{"name": "four", "tools": []int64{keep}})
	updated := func(id int64) time.Time {
		return fdTime(t, c.ok(200, "GET", fdPath("/api/v1/agents/%d/", id), nil)["updated_at"])
	}
	before1, before4 := updated(a1), updated(a4)
	time.Sleep(1100 * time.Millisecond) // updated_at shows whole seconds
	c.ok(204, "DELETE", fdPath("/api/v1/agents/custom-tools/%d/", gone), nil)
	c.ok(200, "PATCH", fdPath("/api/v1/agents/%d/", a4), map[string]any{}) // changes nothing, so updated_at stays
	c.ok(200, "PATCH", fdPath("/api/v1/agents/%d/", a4), map[string]any{"name": " four ", "status": "draft", "tools": []int64{keep}})
	if !updated(a1).After(before1) || !updated(a4).Equal(before4) {
		t.Errorf("updated_at after the detach: agent one %v (was %v), agent four %v (was %v); want one later, four unchanged (its PATCHes gave the values it had)",
			updated(a1), before1, updated(a4), before4)
	}
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
