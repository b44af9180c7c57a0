package e2e

// OAuth connectors end to end, against a local OAuth 2.0 authorization
// server that implements the real protocol (authorization endpoint, token
// endpoint with PKCE, short-lived access tokens, rotating refresh tokens
// that die once used, RFC 8414 metadata, RFC 7591 registration) and MCP
// servers that accept only the access tokens it issued.

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

// oaProvider is a local OAuth 2.0 authorization server.
type oaProvider struct {
	*httptest.Server
	mu       sync.Mutex
	clients  map[string]string // client_id → secret
	codes    map[string]*oaCode
	access   map[string]time.Time // access token → expiry
	refresh  map[string]bool      // live refresh tokens
	secrets  []string             // every token and client secret issued
	deny     bool
	firstTTL time.Duration // lifetime of access tokens from a code
	nextTTL  time.Duration // lifetime of access tokens from a refresh
	mcpURL   string        // the protected resource, for its metadata

	refreshes     atomic.Int64
	registrations atomic.Int64
	// refreshFails, when set, is the HTTP status refresh requests get
	// (an outage at the provider), with error server_error.
	refreshFails atomic.Int32
}

type oaCode struct {
	clientID, redirect, challenge string
}

func oaStartProvider(t *testing.T) *oaProvider {
	p := &oaProvider{clients: map[string]string{}, codes: map[string]*oaCode{}, access: map[string]time.Time{},
		refresh: map[string]bool{}, firstTTL: time.Hour, nextTTL: time.Hour}
	mux := http.NewServeMux()
	mux.HandleFunc("/authorize", p.authorize)
	mux.HandleFunc("/token", p.token)
	mux.HandleFunc("/register", p.register)
	mux.HandleFunc("/.well-known/oauth-authorization-server", p.serverMetadata)
	mux.HandleFunc("/.well-known/oauth-protected-resource", p.resourceMetadata)
	p.Server = httptest.NewServer(mux)
	t.Cleanup(p.Close)
	return p
}

func oaRandom(prefix string) string {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

func (p *oaProvider) addClient(id, secret string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clients[id] = secret
	p.secrets = append(p.secrets, secret)
}

// valid reports whether an access token is live: the MCP servers' check.
func (p *oaProvider) valid(token string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	exp, ok := p.access[token]
	return ok && time.Now().Before(exp)
}

// revokeAccess kills every access token; refresh tokens stay good.
func (p *oaProvider) revokeAccess() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.access = map[string]time.Time{}
}

// revokeGrant kills every token: the user revoked the app.
func (p *oaProvider) revokeGrant() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.access, p.refresh = map[string]time.Time{}, map[string]bool{}
}

func (p *oaProvider) issued() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.secrets...)
}

func (p *oaProvider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p.mu.Lock()
	_, known := p.clients[q.Get("client_id")]
	deny := p.deny
	p.mu.Unlock()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if !known || err != nil || q.Get("response_type") != "code" || q.Get("state") == "" ||
		q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256" {
		http.Error(w, "bad authorization request", http.StatusBadRequest)
		return
	}
	back := url.Values{"state": {q.Get("state")}}
	if deny {
		back.Set("error", "access_denied")
	} else {
		code := oaRandom("code_")
		p.mu.Lock()
		p.codes[code] = &oaCode{clientID: q.Get("client_id"), redirect: q.Get("redirect_uri"), challenge: q.Get("code_challenge")}
		p.mu.Unlock()
		back.Set("code", code)
	}
	redirect.RawQuery = back.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

func oaTokenError(w http.ResponseWriter, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	json.NewEncoder(w).Encode(map[string]string{"error": code})
}

func (p *oaProvider) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.Method != http.MethodPost {
		oaTokenError(w, "invalid_request")
		return
	}
	id, secret, ok := r.BasicAuth()
	if ok {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if want, known := p.clients[id]; !known || want != secret {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		json.NewEncoder(w).Encode(map[string]string{"error": "invalid_client"})
		return
	}
	ttl := p.firstTTL
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		c := p.codes[r.PostForm.Get("code")]
		delete(p.codes, r.PostForm.Get("code")) // one attempt per code
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if c == nil || c.clientID != id || c.redirect != r.PostForm.Get("redirect_uri") ||
			base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge {
			oaTokenError(w, "invalid_grant")
			return
		}
	case "refresh_token":
		if status := int(p.refreshFails.Load()); status != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			json.NewEncoder(w).Encode(map[string]string{"error": "server_error"})
			return
		}
		rt := r.PostForm.Get("refresh_token")
		if !p.refresh[rt] {
			oaTokenError(w, "invalid_grant")
			return
		}
		delete(p.refresh, rt) // rotating: a refresh token works once
		p.refreshes.Add(1)
		ttl = p.nextTTL
	default:
		oaTokenError(w, "unsupported_grant_type")
		return
	}
	at, rt := oaRandom("at_"), oaRandom("rt_")
	p.access[at] = time.Now().Add(ttl)
	p.refresh[rt] = true
	p.secrets = append(p.secrets, at, rt)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"access_token": at, "token_type": "Bearer",
		"expires_in": int(ttl.Seconds()), "refresh_token": rt})
}

func (p *oaProvider) register(w http.ResponseWriter, r *http.Request) {
	var req struct {
		RedirectURIs []string `json:"redirect_uris"`
	}
	if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&req) != nil || len(req.RedirectURIs) == 0 {
		http.Error(w, `{"error":"invalid_client_metadata"}`, http.StatusBadRequest)
		return
	}
	id, secret := oaRandom("client_"), oaRandom("secret_")
	p.addClient(id, secret)
	p.registrations.Add(1)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(map[string]any{"client_id": id, "client_secret": secret,
		"token_endpoint_auth_method": "client_secret_basic", "redirect_uris": req.RedirectURIs})
}

func (p *oaProvider) serverMetadata(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"issuer": p.URL, "authorization_endpoint": p.URL + "/authorize", "token_endpoint": p.URL + "/token",
		"registration_endpoint": p.URL + "/register", "code_challenge_methods_supported": []string{"S256"},
		"response_types_supported": []string{"code"}, "grant_types_supported": []string{"authorization_code", "refresh_token"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
	})
}

func (p *oaProvider) resourceMetadata(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"resource": p.mcpURL, "authorization_servers": []string{p.URL},
		"scopes_supported": []string{"tools"}})
}

// oaNoRedirect follows nothing: the test sees the provider's redirect.
var oaNoRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// oaAuthorize opens an authorization URL as a browser would and returns
// the query the provider redirects back to Quiver with.
func oaAuthorize(t *testing.T, authURL string) url.Values {
	t.Helper()
	resp, err := oaNoRedirect.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("authorize: HTTP %d", resp.StatusCode)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.Path != "/api/v1/oauth/callback" {
		t.Fatalf("authorize redirected to %q", resp.Header.Get("Location"))
	}
	return loc.Query()
}

// oaCallback calls Quiver's callback with the provider's answer.
func oaCallback(t *testing.T, srv *testserver.Server, q url.Values) (int, string) {
	t.Helper()
	resp, err := http.Get(srv.URL + "/api/v1/oauth/callback?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("callback Content-Type %q", ct)
	}
	return resp.StatusCode, string(b)
}

// oaStep returns a tool's next_configuration_step.
func oaStep(t *testing.T, srv *testserver.Server, key string, id int64) map[string]any {
	t.Helper()
	r := testserver.Do(t, srv.URL, key, "GET", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", id), nil)
	if r.Status != 200 {
		t.Fatalf("GET tool %d: %d %s", id, r.Status, r.Body)
	}
	step, _ := r.JSON()["next_configuration_step"].(map[string]any)
	return step
}

func oaCreate(t *testing.T, srv *testserver.Server, key, catalogName string) (int64, map[string]any) {
	t.Helper()
	r := testserver.Do(t, srv.URL, key, "POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": catalogName})
	if r.Status != 201 {
		t.Fatalf("create %s: %d %s", catalogName, r.Status, r.Body)
	}
	m := r.JSON()
	step, _ := m["next_configuration_step"].(map[string]any)
	return int64(m["id"].(float64)), step
}

func oaAuthURL(t *testing.T, step map[string]any) string {
	t.Helper()
	if step == nil || step["type"] != "oauth" {
		t.Fatalf("want an oauth step, got %v", step)
	}
	u, _ := step["authorization_url"].(string)
	if u == "" {
		t.Fatalf("oauth step without authorization_url: %v", step)
	}
	return u
}

func oaConfigured(t *testing.T, srv *testserver.Server, key string, id int64) bool {
	t.Helper()
	r := testserver.Do(t, srv.URL, key, "GET", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", id), nil)
	return r.JSON()["is_configured"] == true
}

func oaCall(t *testing.T, srv *testserver.Server, id int64, action string, headers ...string) *testserver.Response {
	t.Helper()
	return srv.Do("POST", "/api/v1/agents/custom-tools/call/", map[string]any{"tool": id, "action": action, "arguments": map[string]any{}}, headers...)
}

// oaNoSecrets fails if any issued token or client secret shows in text.
func oaNoSecrets(t *testing.T, what, text string, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		if s != "" && strings.Contains(text, s) {
			t.Errorf("%s contains a token or secret (%.8s…)", what, s)
		}
	}
}

// oaGitHub sets up github-mcp against the local provider and a Counter MCP
// server that accepts the provider's access tokens.
func oaGitHub(t *testing.T, p *oaProvider) (*mcptest.Server, map[string]string) {
	counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{Authorize: p.valid})
	p.addClient("gh-client-id", "gh-client-secret-value")
	return counter, map[string]string{
		"QUIVER_OAUTH_GITHUB_CLIENT_ID":     "gh-client-id",
		"QUIVER_OAUTH_GITHUB_CLIENT_SECRET": "gh-client-secret-value",
		"QUIVER_OAUTH_GITHUB_AUTH_URL":      p.URL + "/authorize",
		"QUIVER_OAUTH_GITHUB_TOKEN_URL":     p.URL + "/token",
		"QUIVER_MCP_URL_GITHUB_MCP":         counter.URL,
	}
}

func TestOAuthConnectFlow(t *testing.T) {
	p := oaStartProvider(t)
	_, env := oaGitHub(t, p)
	srv := testserver.Start(t, testserver.Options{Env: env})

	id, step := oaCreate(t, srv, srv.Key, "github-mcp")
	authURL := oaAuthURL(t, step)
	u, _ := url.Parse(authURL)
	if !strings.HasPrefix(authURL, p.URL+"/authorize?") || u.Query().Get("code_challenge_method") != "S256" ||
		u.Query().Get("code_challenge") == "" || u.Query().Get("state") == "" ||
		u.Query().Get("redirect_uri") != "http://localhost:8080/api/v1/oauth/callback" {
		t.Fatalf("authorization_url = %s", authURL)
	}
	if r := oaCall(t, srv, id, "read_count"); r.Status != 409 || r.JSON()["error"] != "tool_not_configured" {
		t.Fatalf("call before connecting: %d %s", r.Status, r.Body)
	}

	q := oaAuthorize(t, authURL)
	status, body := oaCallback(t, srv, q)
	if status != 200 || !strings.Contains(body, "is connected") {
		t.Fatalf("callback: %d %s", status, body)
	}
	if !oaConfigured(t, srv, srv.Key, id) {
		t.Fatal("tool not configured after the exchange")
	}
	if r := oaCall(t, srv, id, "read_count"); r.Status != 200 {
		t.Fatalf("call after connecting: %d %s", r.Status, r.Body)
	}

	t.Run("replayed state", func(t *testing.T) {
		status, body := oaCallback(t, srv, q)
		if status != 400 || !strings.Contains(body, "already used") {
			t.Fatalf("replay: %d %s", status, body)
		}
		if !oaConfigured(t, srv, srv.Key, id) {
			t.Fatal("a replay changed the tool")
		}
	})

	t.Run("unknown state", func(t *testing.T) {
		status, _ := oaCallback(t, srv, url.Values{"code": {"x"}, "state": {"not-a-state"}})
		if status != 400 {
			t.Fatalf("unknown state: %d", status)
		}
	})

	t.Run("denied", func(t *testing.T) {
		id2, step := oaCreate(t, srv, srv.Key, "github-mcp")
		p.mu.Lock()
		p.deny = true
		p.mu.Unlock()
		q := oaAuthorize(t, oaAuthURL(t, step))
		p.mu.Lock()
		p.deny = false
		p.mu.Unlock()
		if q.Get("error") != "access_denied" {
			t.Fatalf("provider answer %v", q)
		}
		status, body := oaCallback(t, srv, q)
		if status != 403 || !strings.Contains(body, "declined") {
			t.Fatalf("denied: %d %s", status, body)
		}
		if oaConfigured(t, srv, srv.Key, id2) {
			t.Fatal("a denied authorization configured the tool")
		}
		// The tool can still be connected afterwards.
		if status, _ := oaCallback(t, srv, oaAuthorize(t, oaAuthURL(t, oaStep(t, srv, srv.Key, id2)))); status != 200 {
			t.Fatalf("connect after a denial: %d", status)
		}
	})

	t.Run("expired state", func(t *testing.T) {
		id3, step := oaCreate(t, srv, srv.Key, "github-mcp")
		q := oaAuthorize(t, oaAuthURL(t, step))
		if err := srv.App.Store.ExpireOAuthStates(t.Context(), id3); err != nil {
			t.Fatal(err)
		}
		status, body := oaCallback(t, srv, q)
		if status != 400 || !strings.Contains(body, "expired") {
			t.Fatalf("expired: %d %s", status, body)
		}
		if oaConfigured(t, srv, srv.Key, id3) {
			t.Fatal("an expired state configured the tool")
		}
	})

	t.Run("state of another tool or account", func(t *testing.T) {
		// A code obtained for one tool cannot complete another's state:
		// the PKCE verifier bound to the state does not match.
		idA, stepA := oaCreate(t, srv, srv.Key, "github-mcp")
		idB, stepB := oaCreate(t, srv, srv.Key, "github-mcp")
		qA, qB := oaAuthorize(t, oaAuthURL(t, stepA)), oaAuthorize(t, oaAuthURL(t, stepB))
		mixed := url.Values{"code": {qB.Get("code")}, "state": {qA.Get("state")}}
		if status, body := oaCallback(t, srv, mixed); status != 502 || !strings.Contains(body, "did not accept") {
			t.Fatalf("another tool's code: %d %s", status, body)
		}
		if oaConfigured(t, srv, srv.Key, idA) || oaConfigured(t, srv, srv.Key, idB) {
			t.Fatal("a mixed callback configured a tool")
		}

		other := srv.NewKey("oauth-other")
		idO, stepO := oaCreate(t, srv, other, "github-mcp")
		qO := oaAuthorize(t, oaAuthURL(t, stepO))
		qM := oaAuthorize(t, oaAuthURL(t, oaStep(t, srv, srv.Key, idA)))
		mixed = url.Values{"code": {qM.Get("code")}, "state": {qO.Get("state")}}
		if status, _ := oaCallback(t, srv, mixed); status != 502 {
			t.Fatalf("another account's state: %d", status)
		}
		if oaConfigured(t, srv, other, idO) || oaConfigured(t, srv, srv.Key, idA) {
			t.Fatal("a cross-account callback configured a tool")
		}
		// The other account cannot see the first account's tool.
		if r := testserver.Do(t, srv.URL, other, "GET", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", id), nil); r.Status != 404 {
			t.Fatalf("other account sees tool: %d", r.Status)
		}
	})

	t.Run("delete drops tokens and states", func(t *testing.T) {
		if r := srv.Do("DELETE", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", id), nil); r.Status != 204 {
			t.Fatalf("delete: %d", r.Status)
		}
		n, err := srv.App.Store.CountOAuthStates(t.Context(), id)
		if err != nil || n != 0 {
			t.Fatalf("states left: %d, %v", n, err)
		}
		var rows int64
		if err := srv.App.Store.DB().Raw("SELECT count(*) FROM tools WHERE id = ?", id).Scan(&rows).Error; err != nil || rows != 0 {
			t.Fatalf("tool rows left: %d, %v", rows, err)
		}
	})

	oaNoSecrets(t, "server logs", srv.LogText(), p.issued())
}

func TestOAuthRefreshAcrossReplicas(t *testing.T) {
	p := oaStartProvider(t)
	counter, env := oaGitHub(t, p)
	// The first access token is already inside the refresh leeway; the
	// refreshed ones live an hour.
	p.firstTTL, p.nextTTL = 30*time.Second, time.Hour
	a := testserver.Start(t, testserver.Options{Postgres: true, Env: env})
	b := testserver.Start(t, testserver.Options{DatabaseURL: a.DatabaseURL, Env: env})

	id, step := oaCreate(t, a, a.Key, "github-mcp")
	if status, body := oaCallback(t, a, oaAuthorize(t, oaAuthURL(t, step))); status != 200 {
		t.Fatalf("callback: %d %s", status, body)
	}
	var seen []string // response bodies, checked for tokens at the end

	// 20 concurrent calls over two replicas: one refresh between them.
	oaConcurrent := func(n int) {
		t.Helper()
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i := range n {
			srv := a
			if i%2 == 1 {
				srv = b
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := oaCall(t, srv, id, "read_count")
				mu.Lock()
				seen = append(seen, string(r.Body))
				mu.Unlock()
				if r.Status != 200 {
					t.Errorf("call %d: %d %s", i, r.Status, r.Body)
				}
			}()
		}
		wg.Wait()
	}
	oaConcurrent(20)
	if n := p.refreshes.Load(); n != 1 {
		t.Fatalf("refreshes after 20 concurrent calls = %d, want 1", n)
	}

	// The server now refuses the access token (401): each replica
	// refreshes at most once between them, with the rotated refresh token
	// the first refresh stored (the original one is spent), and retries.
	p.revokeAccess()
	oaConcurrent(10)
	if n := p.refreshes.Load(); n != 2 {
		t.Fatalf("refreshes after a refused token = %d, want 2", n)
	}
	if r := oaCall(t, a, id, "read_count"); r.Status != 200 {
		t.Fatalf("warm call: %d %s", r.Status, r.Body)
	}

	// The user revokes the grant: the refresh gets invalid_grant, the tool
	// goes back to its oauth step, and the call is a pre-effect rejection
	// that releases its key.
	p.revokeGrant()
	const key = "oa-revoked-1"
	r := oaCall(t, a, id, "increment", "Idempotency-Key", key)
	if r.Status != 409 || r.JSON()["error"] != "tool_not_configured" {
		t.Fatalf("call on a revoked grant: %d %s", r.Status, r.Body)
	}
	seen = append(seen, string(r.Body))
	next, _ := r.JSON()["next_configuration_step"].(map[string]any)
	authURL := oaAuthURL(t, next)
	if counter.Calls("increment") != 0 {
		t.Fatal("increment ran")
	}
	if r := a.Do("GET", "/api/v1/idempotency-keys/"+key, nil); r.Status != 404 {
		t.Fatalf("key after rejection: %d %s", r.Status, r.Body)
	}
	if oaConfigured(t, b, b.Key, id) {
		t.Fatal("tool still configured after its grant was revoked")
	}

	// Connect again; the released key runs the call.
	if status, body := oaCallback(t, b, oaAuthorize(t, authURL)); status != 200 {
		t.Fatalf("reconnect: %d %s", status, body)
	}
	r = oaCall(t, b, id, "increment", "Idempotency-Key", key)
	if r.Status != 200 || counter.Calls("increment") != 1 {
		t.Fatalf("call after reconnecting: %d %s (ran %d)", r.Status, r.Body, counter.Calls("increment"))
	}
	seen = append(seen, string(r.Body))

	secrets := p.issued()
	oaNoSecrets(t, "replica A logs", a.LogText(), secrets)
	oaNoSecrets(t, "replica B logs", b.LogText(), secrets)
	oaNoSecrets(t, "responses", strings.Join(seen, "\n"), secrets)
	for _, srv := range []*testserver.Server{a, b} {
		m := testserver.Do(t, srv.URL, "", "GET", "/metrics", nil)
		oaNoSecrets(t, "metrics", string(m.Body), secrets)
	}
}

func TestOAuthDiscoveredMCPServer(t *testing.T) {
	p := oaStartProvider(t)
	counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{
		ResourceMetadata: p.URL + "/.well-known/oauth-protected-resource", Authorize: p.valid})
	p.mcpURL = counter.URL
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
	p := oaStartProvider(t)
	_, env := oaGitHub(t, p)
	srv := testserver.Start(t, testserver.Options{Env: env})
	id, step := oaCreate(t, srv, srv.Key, "github-mcp")
	if status, body := oaCallback(t, srv, oaAuthorize(t, oaAuthURL(t, step))); status != 200 {
		t.Fatalf("callback: %d %s", status, body)
	}
	before := p.refreshes.Load()
	p.revokeAccess() // nothing has listed the tool's actions yet
	if r := oaCall(t, srv, id, "read_count"); r.Status != 200 {
		t.Fatalf("call with a refused token: %d %s", r.Status, r.Body)
	}
	if n := p.refreshes.Load() - before; n != 1 {
		t.Fatalf("refreshes = %d, want 1", n)
	}
}

// TestOAuthReadOnlyKeyCannotConnect: completing an OAuth step connects the
// tool, so a read-only key reading the step (or calling the tool) is shown
// the step without an authorization URL; a full key still gets one.
func TestOAuthReadOnlyKeyCannotConnect(t *testing.T) {
	p := oaStartProvider(t)
	_, env := oaGitHub(t, p)
	srv := testserver.Start(t, testserver.Options{Env: env})
	ro, _, err := srv.App.Accounts.CreateReadOnlyKey(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	id, _ := oaCreate(t, srv, srv.Key, "github-mcp")

	step := oaStep(t, srv, ro, id)
	if step["type"] != "oauth" || step["authorization_url"] != nil || step["error"] != "read_only_key" {
		t.Fatalf("read-only key sees %v, want the oauth step with error read_only_key and no URL", step)
	}
	r := testserver.Do(t, srv.URL, ro, "GET", "/api/v1/agents/custom-tools/", nil)
	if r.Status != 200 || strings.Contains(string(r.Body), "authorization_url") {
		t.Fatalf("read-only list: %d %s", r.Status, r.Body)
	}
	r = testserver.Do(t, srv.URL, ro, "POST", mqCallPath, map[string]any{"tool": id, "action": "read_count", "arguments": map[string]any{}})
	if r.Status != 409 || r.JSON()["error"] != "tool_not_configured" || strings.Contains(string(r.Body), "authorization_url") {
		t.Fatalf("read-only call: %d %s", r.Status, r.Body)
	}
	oaAuthURL(t, oaStep(t, srv, srv.Key, id)) // a full key gets its URL
}

// TestOAuthProactiveRefreshFailures: a token inside its refresh leeway is
// refreshed before the call. If the provider is down, the call is 502
// tool_unreachable, nothing runs, the tool stays connected and the key is
// released; once it is back, the same key goes through. If the grant was
// revoked, the call is 409 tool_not_configured with the OAuth step, and the
// key is released too. On the embedded database.
func TestOAuthProactiveRefreshFailures(t *testing.T) {
	p := oaStartProvider(t)
	counter, env := oaGitHub(t, p)
	p.firstTTL, p.nextTTL = 30*time.Second, 30*time.Second // always inside the leeway
	srv := testserver.Start(t, testserver.Options{Env: env})
	id, step := oaCreate(t, srv, srv.Key, "github-mcp")
	if status, body := oaCallback(t, srv, oaAuthorize(t, oaAuthURL(t, step))); status != 200 {
		t.Fatalf("callback: %d %s", status, body)
	}

	p.refreshFails.Store(http.StatusInternalServerError)
	r := oaCall(t, srv, id, "increment", "Idempotency-Key", "inc-1")
	if r.Status != 502 || r.JSON()["error"] != "tool_unreachable" {
		t.Fatalf("provider down: %d %s, want 502 tool_unreachable", r.Status, r.Body)
	}
	if n := counter.Calls("increment"); n != 0 || !oaConfigured(t, srv, srv.Key, id) {
		t.Fatalf("provider down: increment ran %d times, configured %v", n, oaConfigured(t, srv, srv.Key, id))
	}
	if r := srv.Do("GET", "/api/v1/idempotency-keys/inc-1", nil); r.Status != 404 {
		t.Fatalf("key after a failed refresh: %d %s, want 404 (released)", r.Status, r.Body)
	}
	p.refreshFails.Store(0)
	if r := oaCall(t, srv, id, "increment", "Idempotency-Key", "inc-1"); r.Status != 200 || counter.Calls("increment") != 1 {
		t.Fatalf("provider back: %d %s, increment ran %d times", r.Status, r.Body, counter.Calls("increment"))
	}

	p.revokeGrant()
	r = oaCall(t, srv, id, "increment", "Idempotency-Key", "inc-2")
	next, _ := r.JSON()["next_configuration_step"].(map[string]any)
	if r.Status != 409 || r.JSON()["error"] != "tool_not_configured" || next["type"] != "oauth" {
		t.Fatalf("grant revoked: %d %s, want 409 tool_not_configured with the oauth step", r.Status, r.Body)
	}
	if r := srv.Do("GET", "/api/v1/idempotency-keys/inc-2", nil); r.Status != 404 {
		t.Fatalf("key after a revoked grant: %d %s, want 404 (released)", r.Status, r.Body)
	}
	if n := counter.Calls("increment"); n != 1 {
		t.Fatalf("increment ran %d times, want 1", n)
	}
}
