package e2e

// Every hosted MCP entry of the catalog (github-mcp, sentry, linear, slack,
// google), used end to end through the API the way a user would: read the
// entry, connect it, follow its one OAuth step to a local provider (the
// catalog's endpoints and MCP URL pointed at fakes with the documented
// QUIVER_OAUTH_<PROVIDER>_* and QUIVER_MCP_URL_<ENTRY> variables), list its
// actions with their retryable flags and schemas, and call one of each kind.
// The authorization link must ask the provider for the scopes that
// provider's hosted MCP server needs for what the entry says it does.

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

// h9Hosted is one hosted entry and what its authorization link must carry.
type h9Hosted struct {
	entry, provider, title string
	categories             []string
	// scopes is what the provider's MCP server needs for the entry's
	// description (each provider's public documentation of its server).
	scopes []string
	// scopeParam, when set, is the scope parameter itself, for a provider
	// that does not take RFC 6749's space-separated list.
	scopeParam string
	// params are extra authorization parameters the provider needs.
	params map[string]string
}

var h9HostedEntries = []h9Hosted{
	{entry: "github-mcp", provider: "github", title: "GitHub", categories: []string{"developer"},
		scopes: []string{"repo", "read:org", "read:user", "workflow"}},
	{entry: "sentry", provider: "sentry", title: "Sentry", categories: []string{"developer", "monitoring"},
		scopes: []string{"org:read", "project:read", "team:read", "event:read", "event:write"}},
	// Linear's authorization endpoint takes a comma-separated list.
	{entry: "linear", provider: "linear", title: "Linear", categories: []string{"productivity", "developer"},
		scopes: []string{"read", "write"}, scopeParam: "read,write"},
	// Slack's MCP server runs on a user token and needs a granular search
	// scope for each kind of conversation it searches (public, private,
	// DMs, group DMs), files and users, besides history, chat:write,
	// canvases:read and the users:read(.email) of its user lookups.
	{entry: "slack", provider: "slack", title: "Slack", categories: []string{"communication"},
		scopes: []string{"search:read.public", "search:read.private", "search:read.im", "search:read.mpim",
			"search:read.files", "search:read.users", "channels:history", "groups:history", "im:history",
			"mpim:history", "chat:write", "canvases:read", "users:read", "users:read.email"}},
	// BigQuery's MCP server needs the BigQuery scope and nothing else: no
	// OpenID Connect sign-in, no e-mail address.
	{entry: "google", provider: "google", title: "Google BigQuery", categories: []string{"data"},
		scopes: []string{"https://www.googleapis.com/auth/bigquery"},
		params: map[string]string{"access_type": "offline", "prompt": "consent"}},
}

// h9EnvName is the upper-case form of a name in a variable's name.
func h9EnvName(name string) string { return strings.ToUpper(strings.ReplaceAll(name, "-", "_")) }

// h9Scopes splits a scope parameter, space-separated as RFC 6749 has it
// (or comma-separated, as some providers document theirs).
func h9Scopes(s string) []string {
	out := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' })
	sort.Strings(out)
	return out
}

var h9Slug = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)

func TestHostedEntriesEndToEnd(t *testing.T) {
	p := oaStartProvider(t)
	env := map[string]string{}
	servers := map[string]*mcptest.Server{}
	for _, h := range h9HostedEntries {
		mail := mcptest.Start(t, mcptest.Mail, mcptest.Options{Authorize: p.valid})
		servers[h.entry] = mail
		id, secret := h.provider+"-client", h.provider+"-client-secret-value"
		p.addClient(id, secret)
		pv := "QUIVER_OAUTH_" + h9EnvName(h.provider)
		env[pv+"_CLIENT_ID"], env[pv+"_CLIENT_SECRET"] = id, secret
		env[pv+"_AUTH_URL"], env[pv+"_TOKEN_URL"] = p.URL+"/authorize", p.URL+"/token"
		env["QUIVER_MCP_URL_"+h9EnvName(h.entry)] = mail.URL
	}
	c := fdStart(t, testserver.Options{Env: env})

	for _, h := range h9HostedEntries {
		t.Run(h.entry, func(t *testing.T) {
			c := &fdClient{t: t, srv: c.srv, key: c.key}
			h9CheckEntry(t, c, h)
			id, step := h9Connect(t, c, h, p)

			if r := oaCall(t, c.srv, id, "order_status"); r.Status != 409 || r.JSON()["error"] != "tool_not_configured" {
				t.Fatalf("call before connecting: %d %s", r.Status, r.Body)
			}
			if status, body := oaCallback(t, c.srv, oaAuthorize(t, oaAuthURL(t, step))); status != 200 || !strings.Contains(body, "is connected") {
				t.Fatalf("callback: %d %s", status, body)
			}
			tool := c.ok(200, "GET", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", id), nil)
			if tool["is_configured"] != true || tool["next_configuration_step"] != nil {
				t.Fatalf("after connecting: %v", tool)
			}
			h9CheckActions(t, c, id)
			h9CheckCalls(t, c, id, servers[h.entry])
		})
	}
}

// h9CheckEntry reads the entry from the catalog.
func h9CheckEntry(t *testing.T, c *fdClient, h h9Hosted) {
	t.Helper()
	e := c.ok(200, "GET", "/api/v1/agents/tools/available/"+h.entry+"/", nil)
	if e["name"] != h.entry || e["type"] != "mcp" || e["auth"] != "oauth" || e["title"] != h.title {
		t.Errorf("entry: %v", e)
	}
	if d, _ := e["description"].(string); !strings.HasSuffix(d, ".") || len(d) < 40 {
		t.Errorf("description %q", d)
	}
	var cats []string
	for _, v := range e["categories"].([]any) {
		s, _ := v.(string)
		if !h9Slug.MatchString(s) {
			t.Errorf("category %q is not a lower-case slug", s)
		}
		cats = append(cats, s)
	}
	if !slices.Equal(cats, h.categories) {
		t.Errorf("categories %v, want %v", cats, h.categories)
	}
	if _, ok := e["actions"]; ok {
		t.Errorf("a hosted entry lists fixed actions: %v", e["actions"])
	}
	steps := fdList(t, e, "config_steps")
	if len(steps) != 1 || steps[0]["type"] != "oauth" || steps[0]["step"] != "oauth" || steps[0]["fields"] != nil {
		t.Fatalf("config_steps %v", steps)
	}
	if title, _ := steps[0]["title"].(string); title != "Connect "+strings.Fields(h.title)[0] {
		t.Errorf("step title %q", title)
	}
	if d, _ := steps[0]["description"].(string); d == "" {
		t.Error("step without description")
	}
	// In a listing filtered by each of its categories.
	for _, cat := range h.categories {
		found := false
		for _, x := range fdList(t, c.ok(200, "GET", "/api/v1/agents/tools/available/?category="+cat+"&limit=200", nil), "tools") {
			found = found || x["name"] == h.entry
		}
		if !found {
			t.Errorf("?category=%s does not list %s", cat, h.entry)
		}
	}
}

// h9Connect connects the entry and checks its OAuth step's link.
func h9Connect(t *testing.T, c *fdClient, h h9Hosted, p *oaProvider) (int64, map[string]any) {
	t.Helper()
	m := c.ok(201, "POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": h.entry})
	if m["mcp_tool"] != h.entry || m["name"] != h.entry || m["is_configured"] != false {
		t.Fatalf("created: %v", m)
	}
	step, _ := m["next_configuration_step"].(map[string]any)
	if step == nil || step["type"] != "oauth" || fmt.Sprint(step["index"]) != "1" || fmt.Sprint(step["total"]) != "1" {
		t.Fatalf("next_configuration_step %v", step)
	}
	u, err := url.Parse(oaAuthURL(t, step))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if got := u.Scheme + "://" + u.Host + u.Path; got != p.URL+"/authorize" {
		t.Errorf("authorization_url goes to %s", got)
	}
	if q.Get("client_id") != h.provider+"-client" || q.Get("response_type") != "code" ||
		q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("state") == "" ||
		q.Get("redirect_uri") != "http://localhost:8080/api/v1/oauth/callback" {
		t.Errorf("authorization_url query %v", q)
	}
	want := slices.Clone(h.scopes)
	sort.Strings(want)
	if got := h9Scopes(q.Get("scope")); !slices.Equal(got, want) {
		t.Errorf("scope %q asks for %v, want %v", q.Get("scope"), got, want)
	}
	if h.scopeParam != "" && q.Get("scope") != h.scopeParam {
		t.Errorf("scope %q, want %q", q.Get("scope"), h.scopeParam)
	}
	for k, v := range h.params {
		if q.Get(k) != v {
			t.Errorf("authorization_url %s=%q, want %q", k, q.Get(k), v)
		}
	}
	return fdInt(t, m["id"]), step
}

// h9CheckActions lists the connected tool's actions: the MCP server's
// tools, retryable exactly when read-only or idempotent, with their schemas.
func h9CheckActions(t *testing.T, c *fdClient, id int64) {
	t.Helper()
	actions := fdList(t, c.ok(200, "GET", fmt.Sprintf("/api/v1/agents/custom-tools/%d/actions/", id), nil), "actions")
	byName := map[string]map[string]any{}
	for _, a := range actions {
		byName[a["name"].(string)] = a
	}
	for name, retryable := range map[string]bool{
		"get_upcoming_travel": true, "order_status": true, "bills_due": true, "ask": true, "get_excerpt": true,
		"create_draft": false, "draft_reply": false, "send_draft": false,
	} {
		a, ok := byName[name]
		if !ok {
			t.Errorf("action %s missing from %d actions", name, len(actions))
			continue
		}
		if a["retryable"] != retryable {
			t.Errorf("%s retryable %v, want %t", name, a["retryable"], retryable)
		}
		if d, _ := a["description"].(string); d == "" {
			t.Errorf("%s without description", name)
		}
	}
	if len(byName) != 8 {
		t.Errorf("%d actions, want the server's 8", len(byName))
	}
	schema, _ := byName["order_status"]["input_schema"].(map[string]any)
	if schema["type"] != "object" || fmt.Sprint(schema["required"]) != "[merchant]" {
		t.Errorf("order_status input_schema %v", schema)
	}
	if ann, _ := byName["get_upcoming_travel"]["annotations"].(map[string]any); ann["readOnlyHint"] != true {
		t.Errorf("get_upcoming_travel annotations %v", ann)
	}
}

// h9CheckCalls calls a retryable action without a key and a
// non-retryable one with and without.
func h9CheckCalls(t *testing.T, c *fdClient, id int64, mail *mcptest.Server) {
	t.Helper()
	const path = "/api/v1/agents/custom-tools/call/"
	r := c.ok(200, "POST", path, map[string]any{"tool": id, "action": "order_status", "arguments": map[string]any{"merchant": "Acme"}})
	res, _ := r["result"].(map[string]any)
	if r["is_error"] != false || res == nil || res["orders"] == nil || fdInt(t, r["tool"]) != id {
		t.Errorf("order_status: %v", r)
	}
	c.fail(422, "invalid_arguments", "POST", path, map[string]any{"tool": id, "action": "order_status", "arguments": map[string]any{}})

	draft := map[string]any{"tool": id, "action": "create_draft", "arguments": map[string]any{"to": "a@example.com", "body": "hi"}}
	c.fail(400, "idempotency_key_required", "POST", path, draft)
	key := fmt.Sprintf("h9-%d-draft", id)
	first := c.ok(200, "POST", path, draft, "Idempotency-Key", key)
	again := c.do("POST", path, draft, "Idempotency-Key", key)
	if again.Status != 200 || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("retry: %d %s", again.Status, again.Body)
	}
	if res, _ := first["result"].(map[string]any); res["created"] != true {
		t.Errorf("create_draft: %v", first)
	}
	if n := mail.Calls("create_draft"); n != 1 {
		t.Errorf("create_draft ran %d times, want once", n)
	}
}
