package e2e

// OAuth connectors end to end, against a local OAuth 2.0 authorization
// server that implements the real protocol (authorization endpoint, token
// endpoint with PKCE, short-lived access tokens, rotating refresh tokens
// that die once used, RFC 8414 metadata, RFC 7591 registration) and MCP
// servers that accept only the access tokens it issued.

import (
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
	// refreshResources is the resource parameter of each refresh granted.
	refreshResources []string
	// refreshFails, when set, is the HTTP status refresh requests get
	// (an outage at the provider), with error server_error, after
	// refreshDelay; failedRefreshes counts them.
	refreshFails atomic.Int32
	refreshDelay atomic.Int64 // time.Duration
	// exchangeDelay holds every authorization code exchange (time.Duration).
	exchangeDelay   atomic.Int64
	failedRefreshes atomic.Int64
	// refuseAll makes the MCP servers refuse every access token, fresh
	// ones too: a grant without the scope they want.
	refuseAll atomic.Bool
	// refuseRefresh, when set (under mu), is the RFC 6749 §5.2 error code
	// every refresh request gets: invalid_client (HTTP 401),
	// invalid_scope, unauthorized_client, unsupported_grant_type (HTTP 400).
	refuseRefresh    string
	refusedRefreshes int
	// issSupported makes the provider's metadata advertise RFC 9207's
	// authorization_response_iss_parameter_supported and its authorization
	// responses carry iss. exchanges counts code exchanges.
	issSupported atomic.Bool
	exchanges    atomic.Int64
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
	if p.refuseAll.Load() {
		return false
	}
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

// refuseRefreshes makes every refresh request get the error code ("" to
// grant them again) and returns how many were refused so far.
func (p *oaProvider) refuseRefreshes(code string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuseRefresh = code
	return p.refusedRefreshes
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
	if p.issSupported.Load() {
		back.Set("iss", p.URL)
	}
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
	if r.PostForm.Get("grant_type") == "authorization_code" {
		p.exchanges.Add(1)
		time.Sleep(time.Duration(p.exchangeDelay.Load()))
	}
	if r.PostForm.Get("grant_type") == "refresh_token" && p.refreshFails.Load() != 0 {
		time.Sleep(time.Duration(p.refreshDelay.Load()))
		p.failedRefreshes.Add(1)
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
		if code := p.refuseRefresh; code != "" {
			p.refusedRefreshes++
			status := http.StatusBadRequest
			if code == "invalid_client" {
				status = http.StatusUnauthorized
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			json.NewEncoder(w).Encode(map[string]string{"error": code})
			return
		}
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
		p.refreshResources = append(p.refreshResources, r.PostForm.Get("resource"))
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
		"token_endpoint_auth_methods_supported":          []string{"client_secret_basic", "client_secret_post"},
		"authorization_response_iss_parameter_supported": p.issSupported.Load(),
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
