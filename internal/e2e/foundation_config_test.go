package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

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
	// A misspelled answer is refused, not dropped; an unknown field, of the
	// answers or of the request itself, is ignored.
	fdWantFields(t, c.do("POST", provide, map[string]any{"user_response": map[string]any{"TAVILY_API_KEY": secret, "TAVILY_APIKEY": secret}}), "validation_error", "TAVILY_APIKEY")
	unchanged()
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
	again := c.fail(422, "validation_error", "POST", provide, map[string]any{"user_response": map[string]any{"TAVILY_API_KEY": "tvly-other"}})
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
	// Answers of a later step do not count at this one: they are refused.
	fdWantFields(t, c.do("POST", provide, map[string]any{"user_response": map[string]any{"auth_type": "none"}}), "validation_error", "base_url", "auth_type")
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
	e := c.fail(422, "validation_error", "POST", fdPath("/api/v1/agents/custom-tools/%d/provide-config/", fdInt(t, br["id"])), map[string]any{"user_response": map[string]any{}})
	if msg, _ := e["message"].(string); strings.Contains(msg, "reset") { // a reset changes nothing here
		t.Errorf("a tool without steps is told to reset: %q", msg)
	}
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
