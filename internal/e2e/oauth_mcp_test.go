package e2e

// OAuth connectors end to end, against a local OAuth 2.0 authorization
// server that implements the real protocol (authorization endpoint, token
// endpoint with PKCE, short-lived access tokens, rotating refresh tokens
// that die once used, RFC 8414 metadata, RFC 7591 registration) and MCP
// servers that accept only the access tokens it issued.

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

func TestOAuthDiscoveredMCPServer(t *testing.T) {
	p, counter := oaDiscoveredServer(t, true)
	srv := testserver.Start(t, testserver.Options{})

	id, _ := oaCreate(t, srv, srv.Key, "custom-mcp")
	r := srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id),
		map[string]any{"user_response": map[string]any{"url": counter.URL}})
	if r.Status != 200 {
		t.Fatalf("provide-config: %d %s", r.Status, r.Body)
	}
	tool := r.JSON()
	step, _ := tool["next_configuration_step"].(map[string]any)
	authURL := oaAuthURL(t, step)
	if step["index"] != float64(2) || step["total"] != float64(2) {
		t.Fatalf("step = %v", step)
	}
	if !strings.HasPrefix(authURL, p.URL+"/authorize?") || p.registrations.Load() != 1 {
		t.Fatalf("authorization_url %s, registrations %d", authURL, p.registrations.Load())
	}
	if u, _ := url.Parse(authURL); u.Query().Get("resource") != counter.URL {
		t.Fatalf("resource = %q", u.Query().Get("resource"))
	}
	if cfg, _ := tool["config"].(map[string]any); len(cfg) != 1 || cfg["url"] != counter.URL {
		t.Fatalf("config shows %v", cfg)
	}

	if status, body := oaCallback(t, srv, oaAuthorize(t, authURL)); status != 200 {
		t.Fatalf("callback: %d %s", status, body)
	}
	if !oaConfigured(t, srv, srv.Key, id) {
		t.Fatal("not configured after the exchange")
	}
	r = oaCall(t, srv, id, "read_count")
	if r.Status != 200 {
		t.Fatalf("call: %d %s", r.Status, r.Body)
	}
	got := srv.Do("GET", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", id), nil)
	secrets := p.issued()
	oaNoSecrets(t, "tool view", string(got.Body), secrets)
	oaNoSecrets(t, "call", string(r.Body), secrets)
	oaNoSecrets(t, "server logs", srv.LogText(), secrets)

	// Reset forgets the discovered provider with the rest.
	r = srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/reset-config/", id), nil)
	if step, _ := r.JSON()["next_configuration_step"].(map[string]any); r.Status != 200 || step["type"] != "form" || step["total"] != float64(1) {
		t.Fatalf("reset: %d %s", r.Status, r.Body)
	}
}

// A token the server refuses while Quiver lists the tool's actions (before
// anything is dispatched) gets the same single refresh and one more try.
func TestOAuthRefusedTokenWhileListingActions(t *testing.T) {
	p, _, srv, id := oaConnected(t, time.Hour, time.Hour)
	before := p.refreshes.Load()
	p.revokeAccess() // nothing has listed the tool's actions yet
	if r := oaCall(t, srv, id, "read_count"); r.Status != 200 {
		t.Fatalf("call with a refused token: %d %s", r.Status, r.Body)
	}
	if n := p.refreshes.Load() - before; n != 1 {
		t.Fatalf("refreshes = %d, want 1", n)
	}
}

// TestOAuthRefusedTokenWhileListingForAnAgent: the same refresh when the
// tool's actions are listed for an agent over MCP. The agent endpoint used
// to list without it: a token the provider ended before its expiry left
// the tool out of the agent's tools/list (and its actions unknown) until a
// REST request happened to refresh the token.
func TestOAuthRefusedTokenWhileListingForAnAgent(t *testing.T) {
	p, _, srv, id := oaConnected(t, time.Hour, time.Hour)
	r := srv.Do("POST", "/api/v1/agents/", map[string]any{"name": "a", "tools": []int64{id}})
	if r.Status != 201 {
		t.Fatalf("agent: %d %s", r.Status, r.Body)
	}
	endpoint := fmt.Sprintf("/api/v1/agents/%d/mcp", int64(r.JSON()["id"].(float64)))
	before := p.refreshes.Load()
	p.revokeAccess() // nothing has listed the tool's actions yet
	mcpHeaders := []string{"Accept", "application/json, text/event-stream"}
	r = srv.Do("POST", endpoint, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, mcpHeaders...)
	if r.Status != 200 || !strings.Contains(string(r.Body), `__read_count"`) {
		t.Fatalf("tools/list with a refused token: %d %s", r.Status, r.Body)
	}
	if n := p.refreshes.Load() - before; n != 1 {
		t.Fatalf("refreshes = %d, want 1", n)
	}
	r = srv.Do("POST", endpoint, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"github-mcp__read_count","arguments":{}}}`, mcpHeaders...)
	if r.Status != 200 || strings.Contains(string(r.Body), `"isError":true`) || strings.Contains(string(r.Body), `"error":{`) {
		t.Fatalf("tools/call: %d %s", r.Status, r.Body)
	}
}

// A key in the URL's query of a server that asks for OAuth, and whose
// metadata names no resource, stays sealed: the resource Quiver falls back
// to is the URL without its query, so neither the authorization link nor
// the stored provider holds the key, and the flow still completes.
func TestOAuthDiscoveredServerWithKeyInURL(t *testing.T) {
	const key = "k3y-in-an-oauth-url-0123"
	_, counter := oaDiscoveredServer(t, false) // its metadata names no resource
	srv := testserver.Start(t, testserver.Options{Postgres: true})
	id, _ := oaCreate(t, srv, srv.Key, "custom-mcp")
	r := srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id),
		map[string]any{"user_response": map[string]any{"url": counter.URL + "?apiKey=" + key}})
	if r.Status != 200 {
		t.Fatalf("provide-config: %d %s", r.Status, r.Body)
	}
	step, _ := r.JSON()["next_configuration_step"].(map[string]any)
	authURL := oaAuthURL(t, step)
	if u, _ := url.Parse(authURL); u.Query().Get("resource") != counter.URL {
		t.Errorf("resource = %q, want the server's URL without its query", u.Query().Get("resource"))
	}
	config, _ := storedTool(t, srv.DatabaseURL, id)
	call, view := oaAuthorizeAndCall(t, srv, id, authURL)
	oaNoSecrets(t, "provide-config, view, call and logs", string(r.Body)+string(view.Body)+string(call.Body)+srv.LogText(), []string{key})
	oaNoSecrets(t, "the plain config column", config, []string{key})
}

// A key in the URL's path of a server that asks for OAuth is the resource
// Quiver names to the authorization server (its metadata naming none), so
// the authorization link shown to the tool's owner carries it; the stored
// provider keeps it sealed, and once the tool is connected no view, call
// or log line shows it.
func TestOAuthDiscoveredServerWithKeyInPath(t *testing.T) {
	const key = "Zk3q9v0aTr51xW8yQeSECRET"
	_, counter := oaDiscoveredServer(t, false) // its metadata names no resource
	// A gateway that takes the key as a path segment: /api/mcp/s/<key>/mcp
	// reaches the server's /mcp.
	target, _ := url.Parse(strings.TrimSuffix(counter.URL, "/mcp"))
	gateway := httptest.NewServer(http.StripPrefix("/api/mcp/s/"+key, httputil.NewSingleHostReverseProxy(target)))
	t.Cleanup(gateway.Close)
	serverURL := gateway.URL + "/api/mcp/s/" + key + "/mcp"

	srv := testserver.Start(t, testserver.Options{Postgres: true})
	id, _ := oaCreate(t, srv, srv.Key, "custom-mcp")
	r := srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id),
		map[string]any{"user_response": map[string]any{"url": serverURL}})
	if r.Status != 200 {
		t.Fatalf("provide-config: %d %s", r.Status, r.Body)
	}
	step, _ := r.JSON()["next_configuration_step"].(map[string]any)
	authURL := oaAuthURL(t, step)
	if u, _ := url.Parse(authURL); u.Query().Get("resource") != serverURL {
		t.Errorf("resource = %q, want the server's URL", u.Query().Get("resource"))
	}
	config, _ := storedTool(t, srv.DatabaseURL, id)
	oaNoSecrets(t, "the plain config column", config, []string{key})
	call, view := oaAuthorizeAndCall(t, srv, id, authURL)
	list := srv.Do("GET", "/api/v1/agents/custom-tools/", nil)
	oaNoSecrets(t, "view, list, call and logs", string(view.Body)+string(list.Body)+string(call.Body)+srv.LogText(), []string{key})
	config, _ = storedTool(t, srv.DatabaseURL, id)
	oaNoSecrets(t, "the plain config column once connected", config, []string{key})
}

// A refresh of a discovered provider's token names the resource, as the
// authorization and the code exchange do: the MCP authorization spec asks
// for it on every token request, and a provider that binds tokens to it
// would otherwise refresh a token the server refuses.
func TestOAuthDiscoveredRefreshNamesTheResource(t *testing.T) {
	p, counter := oaDiscoveredServer(t, true)
	srv := testserver.Start(t, testserver.Options{})
	id, _ := oaCreate(t, srv, srv.Key, "custom-mcp")
	r := srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id),
		map[string]any{"user_response": map[string]any{"url": counter.URL}})
	step, _ := r.JSON()["next_configuration_step"].(map[string]any)
	if status, body := oaCallback(t, srv, oaAuthorize(t, oaAuthURL(t, step))); status != 200 {
		t.Fatalf("callback: %d %s", status, body)
	}
	p.revokeAccess() // the server refuses the token: one refresh
	if r := oaCall(t, srv, id, "read_count"); r.Status != 200 {
		t.Fatalf("call with a refused token: %d %s", r.Status, r.Body)
	}
	p.mu.Lock()
	got := append([]string(nil), p.refreshResources...)
	p.mu.Unlock()
	if len(got) != 1 || got[0] != counter.URL {
		t.Errorf("refreshes named the resources %q, want one naming %s", got, counter.URL)
	}
}

// oaDiscoveredServer starts the local OAuth provider and a Counter MCP
// server that answers 401 pointing at the provider's protected-resource
// metadata, which names the server as its resource when named is set.
func oaDiscoveredServer(t *testing.T, named bool) (*oaProvider, *mcptest.Server) {
	t.Helper()
	p := oaStartProvider(t)
	counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{
		ResourceMetadata: p.URL + "/.well-known/oauth-protected-resource", Authorize: p.valid})
	if named {
		p.mcpURL = counter.URL
	}
	return p, counter
}

// oaAuthorizeAndCall completes the tool's OAuth step at authURL, calls its
// read_count, which must answer 200, and returns that call and the tool's
// view.
func oaAuthorizeAndCall(t *testing.T, srv *testserver.Server, id int64, authURL string) (call, view *testserver.Response) {
	t.Helper()
	if status, body := oaCallback(t, srv, oaAuthorize(t, authURL)); status != 200 {
		t.Fatalf("callback: %d %s", status, body)
	}
	call = oaCall(t, srv, id, "read_count")
	if call.Status != 200 {
		t.Fatalf("call: %d %s", call.Status, call.Body)
	}
	return call, srv.Do("GET", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", id), nil)
}
