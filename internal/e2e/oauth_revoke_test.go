package e2e

// Revocation (RFC 7009) of a tool's OAuth tokens when it is deleted or
// reset: at a discovered authorization server that advertises
// revocation_endpoint, and at a catalog provider given a revocation URL
// (QUIVER_OAUTH_<PROVIDER>_REVOCATION_URL). It is best effort, after the
// change is committed and detached from the request: a provider that
// refuses, fails or hangs changes nothing about the answer.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

// orvRevoker stands in front of a local provider p as the authorization
// server a discovered MCP server names: its RFC 8414 metadata sends the
// authorization, the code exchange and the registration to p, and names
// its own /revoke as revocation_endpoint when advertise is set. /revoke
// (served either way) checks the client's authentication against p's
// clients, ends the token at p, and records each request.
type orvRevoker struct {
	*httptest.Server
	p         *oaProvider
	advertise bool
	// status is what /revoke answers (0: 200); with hang set it holds
	// each request until release is closed (at the test's end at the
	// latest) or the client gives up.
	status   atomic.Int32
	hang     atomic.Bool
	release  chan struct{}
	released sync.Once
	arrived  atomic.Int64
	finished atomic.Int64

	mu  sync.Mutex
	got []orvRequest
}

// orvRequest is one revocation request as /revoke saw it.
type orvRequest struct {
	token, hint string
	basic       bool // the client authenticated with HTTP Basic, else in the form
	clientOK    bool // with the ID and secret of a client of p
	live        bool // the token was one of p's live tokens of that kind
}

func orvStart(t *testing.T, p *oaProvider, advertise bool) *orvRevoker {
	t.Helper()
	rv := &orvRevoker{p: p, advertise: advertise, release: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-protected-resource", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"authorization_servers": []string{rv.URL}})
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		md := map[string]any{
			"issuer": rv.URL, "authorization_endpoint": p.URL + "/authorize", "token_endpoint": p.URL + "/token",
			"registration_endpoint": p.URL + "/register", "code_challenge_methods_supported": []string{"S256"},
			"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
		}
		if rv.advertise {
			md["revocation_endpoint"] = rv.URL + "/revoke"
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(md)
	})
	mux.HandleFunc("/revoke", rv.revoke)
	rv.Server = httptest.NewServer(mux)
	t.Cleanup(rv.Close)
	// Runs before rv.Close: a held request must end for Close to return.
	t.Cleanup(rv.releaseHeld)
	return rv
}

// releaseHeld lets the held revocation requests, and the ones to come, go.
func (rv *orvRevoker) releaseHeld() { rv.released.Do(func() { close(rv.release) }) }

func (rv *orvRevoker) revoke(w http.ResponseWriter, r *http.Request) {
	rv.arrived.Add(1)
	defer rv.finished.Add(1)
	if err := r.ParseForm(); err != nil || r.Method != http.MethodPost {
		http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
		return
	}
	req := orvRequest{token: r.PostForm.Get("token"), hint: r.PostForm.Get("token_type_hint")}
	id, secret, basic := r.BasicAuth()
	if basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	req.basic = basic
	p := rv.p
	p.mu.Lock()
	want, known := p.clients[id]
	req.clientOK = known && want == secret && secret != ""
	switch req.hint {
	case "refresh_token":
		req.live = p.refresh[req.token]
		if req.clientOK {
			delete(p.refresh, req.token)
		}
	case "access_token":
		_, req.live = p.access[req.token]
		if req.clientOK {
			delete(p.access, req.token)
		}
	}
	p.mu.Unlock()
	rv.mu.Lock()
	rv.got = append(rv.got, req)
	rv.mu.Unlock()
	if rv.hang.Load() {
		select {
		case <-rv.release:
		case <-r.Context().Done():
		}
	}
	if s := int(rv.status.Load()); s != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(s)
		fmt.Fprint(w, `{"error":"server_error"}`)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (rv *orvRevoker) requests() []orvRequest {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	return slices.Clone(rv.got)
}

// orvLive returns p's live refresh and access tokens; each test's provider
// has exactly one of each once its tool is connected.
func orvLive(t *testing.T, p *oaProvider) (refresh, access string) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.refresh) != 1 || len(p.access) != 1 {
		t.Fatalf("the provider has %d refresh and %d access tokens live, want one of each", len(p.refresh), len(p.access))
	}
	for k := range p.refresh {
		refresh = k
	}
	for k := range p.access {
		access = k
	}
	return refresh, access
}

// orvConnect connects a tool through rv's provider and returns Quiver and
// the tool's ID: "discovered" is a custom MCP server naming rv as its
// authorization server; "catalog" is github-mcp, whose provider is given
// rv's /revoke as its revocation URL.
func orvConnect(t *testing.T, rv *orvRevoker, kind string) (*testserver.Server, int64) {
	t.Helper()
	srv, id, authURL := orvAtOAuthStep(t, rv, kind)
	oaAuthorizeAndCall(t, srv, id, authURL)
	return srv, id
}

// orvAtOAuthStep is orvConnect up to the tool's oauth step: it returns the
// step's authorization URL.
func orvAtOAuthStep(t *testing.T, rv *orvRevoker, kind string) (*testserver.Server, int64, string) {
	t.Helper()
	p := rv.p
	if kind == "catalog" {
		_, env := oaGitHub(t, p)
		env["QUIVER_OAUTH_GITHUB_REVOCATION_URL"] = rv.URL + "/revoke"
		srv := testserver.Start(t, testserver.Options{Env: env})
		id, step := oaCreate(t, srv, srv.Key, "github-mcp")
		return srv, id, oaAuthURL(t, step)
	}
	counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{
		ResourceMetadata: rv.URL + "/.well-known/oauth-protected-resource", Authorize: p.valid})
	srv := testserver.Start(t, testserver.Options{})
	id, _ := oaCreate(t, srv, srv.Key, "custom-mcp")
	r := srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id),
		map[string]any{"user_response": map[string]any{"url": counter.URL}})
	if r.Status != 200 {
		t.Fatalf("provide-config: %d %s", r.Status, r.Body)
	}
	step, _ := r.JSON()["next_configuration_step"].(map[string]any)
	return srv, id, oaAuthURL(t, step)
}

// orvDisconnect deletes (204, then 404) or resets (200, at its first
// step) the tool.
func orvDisconnect(t *testing.T, srv *testserver.Server, id int64, how string) {
	t.Helper()
	path := fmt.Sprintf("/api/v1/agents/custom-tools/%d/", id)
	if how == "delete" {
		if r := srv.Do("DELETE", path, nil); r.Status != 204 {
			t.Fatalf("delete: %d %s", r.Status, r.Body)
		}
		if r := srv.Do("GET", path, nil); r.Status != 404 {
			t.Fatalf("the deleted tool: %d %s", r.Status, r.Body)
		}
		return
	}
	r := srv.Do("POST", path+"reset-config/", nil)
	if step, _ := r.JSON()["next_configuration_step"].(map[string]any); r.Status != 200 || step["index"] != float64(1) {
		t.Fatalf("reset: %d %s", r.Status, r.Body)
	}
}

// TestOAuthRevokedWhenDisconnected: deleting or resetting a connected tool
// revokes its refresh token, then its access token, at the provider, each
// with its token_type_hint and the client's authentication as at the token
// endpoint (HTTP Basic for the discovered client, which registered so; the
// form for the catalog provider, client_secret_post), and the server then
// refuses the access token.
func TestOAuthRevokedWhenDisconnected(t *testing.T) {
	for _, kind := range []string{"discovered", "catalog"} {
		for _, how := range []string{"delete", "reset"} {
			t.Run(kind+" "+how, func(t *testing.T) {
				t.Parallel()
				p := oaStartProvider(t)
				rv := orvStart(t, p, true)
				srv, id := orvConnect(t, rv, kind)
				refresh, access := orvLive(t, p)
				orvDisconnect(t, srv, id, how)
				testserver.Eventually(t, 10*time.Second, "both tokens revoked", func() bool { return rv.finished.Load() >= 2 })
				got := rv.requests()
				want := []orvRequest{
					{token: refresh, hint: "refresh_token", basic: kind == "discovered", clientOK: true, live: true},
					{token: access, hint: "access_token", basic: kind == "discovered", clientOK: true, live: true},
				}
				if !slices.Equal(got, want) {
					t.Errorf("revocation requests:\n got %+v\nwant %+v", got, want)
				}
				if p.valid(access) {
					t.Error("the access token is still live at the provider")
				}
				srv.App.Tools.WaitRevocations()
				oaNoSecrets(t, "server logs", srv.LogText(), p.issued())
			})
		}
	}
}

// TestOAuthGrantRevokedWhenToolChangedMidCallback: a tool deleted or
// reset while its callback exchanges the code keeps nothing of the grant
// the exchange was issued (the callback answers 404 or 409), so the grant
// is revoked at once, refresh token first, not left live at the provider.
func TestOAuthGrantRevokedWhenToolChangedMidCallback(t *testing.T) {
	for _, kind := range []string{"discovered", "catalog"} {
		for _, how := range []string{"delete", "reset"} {
			t.Run(kind+" "+how, func(t *testing.T) {
				t.Parallel()
				p := oaStartProvider(t)
				rv := orvStart(t, p, true)
				srv, id, authURL := orvAtOAuthStep(t, rv, kind)
				answer := oaAuthorize(t, authURL)
				p.exchangeDelay.Store(int64(time.Second)) // the exchange is held while the tool changes
				status := make(chan int, 1)
				go func() {
					s, _ := oaCallback(t, srv, answer)
					status <- s
				}()
				testserver.Eventually(t, 10*time.Second, "the code exchange to start", func() bool { return p.exchanges.Load() == 1 })
				orvDisconnect(t, srv, id, how)
				want := map[string]int{"delete": 404, "reset": 409}[how]
				if got := <-status; got != want {
					t.Fatalf("the callback: %d, want %d", got, want)
				}
				got := rv.requests()
				if len(got) != 2 || got[0].hint != "refresh_token" || got[1].hint != "access_token" ||
					!got[0].live || !got[1].live || !got[0].clientOK || !got[1].clientOK {
					t.Fatalf("revocation requests: %+v; want the new grant's refresh and access tokens", got)
				}
				p.mu.Lock()
				live := len(p.refresh) + len(p.access)
				p.mu.Unlock()
				if live != 0 {
					t.Fatalf("%d tokens still live at the provider", live)
				}
				oaNoSecrets(t, "server logs", srv.LogText(), p.issued())
			})
		}
	}
}

// TestOAuthGrantKeptWhenToolConnectedMidCallback: a callback that finds
// its tool connected by another one meanwhile (two links of one tool,
// used at once) revokes nothing: at some providers the two grants are
// one (the same user and client), and revoking the loser's would end the
// winner's. The tool works with the grant it kept.
func TestOAuthGrantKeptWhenToolConnectedMidCallback(t *testing.T) {
	p := oaStartProvider(t)
	rv := orvStart(t, p, true)
	srv, id, authURL := orvAtOAuthStep(t, rv, "discovered")
	first := oaAuthorize(t, authURL)
	p.exchangeDelay.Store(int64(time.Second)) // the first exchange is held…
	status := make(chan int, 1)
	go func() {
		s, _ := oaCallback(t, srv, first)
		status <- s
	}()
	testserver.Eventually(t, 10*time.Second, "the first code exchange to start", func() bool { return p.exchanges.Load() == 1 })
	p.exchangeDelay.Store(0) // …while a second link connects the tool
	second := oaAuthorize(t, oaAuthURL(t, oaStep(t, srv, srv.Key, id)))
	if s, body := oaCallback(t, srv, second); s != 200 {
		t.Fatalf("the second callback: %d %s", s, body)
	}
	if s := <-status; s != 409 {
		t.Fatalf("the first callback, overtaken: %d, want 409", s)
	}
	if got := rv.requests(); len(got) != 0 {
		t.Fatalf("revocation requests: %+v; want none", got)
	}
	if r := oaCall(t, srv, id, "read_count"); r.Status != 200 {
		t.Fatalf("a call with the grant kept: %d %s", r.Status, r.Body)
	}
}

// TestOAuthNotRevokedWithoutEndpoint: a provider that names no revocation
// endpoint (a discovered server whose metadata has none, a catalog provider
// without one, as GitHub) is sent nothing, not even to a /revoke it
// happens to serve, and the delete is the 204 it always was.
func TestOAuthNotRevokedWithoutEndpoint(t *testing.T) {
	for _, kind := range []string{"discovered", "catalog"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			p := oaStartProvider(t)
			rv := orvStart(t, p, false)
			var srv *testserver.Server
			var id int64
			if kind == "catalog" {
				_, env := oaGitHub(t, p)
				srv = testserver.Start(t, testserver.Options{Env: env})
				var step map[string]any
				id, step = oaCreate(t, srv, srv.Key, "github-mcp")
				oaAuthorizeAndCall(t, srv, id, oaAuthURL(t, step))
			} else {
				srv, id = orvConnect(t, rv, kind)
			}
			orvDisconnect(t, srv, id, "delete")
			srv.App.Tools.WaitRevocations()
			if n := rv.arrived.Load(); n != 0 {
				t.Errorf("%d revocation requests, want none", n)
			}
		})
	}
}

// TestOAuthRevocationFailureChangesNothing: a revocation endpoint that
// answers 500, or holds the request, leaves the delete its 204, answered
// while the revocation is still under way, and the tool gone; a failure is
// logged (with the request's ID) without a token.
func TestOAuthRevocationFailureChangesNothing(t *testing.T) {
	t.Run("500", func(t *testing.T) {
		t.Parallel()
		p := oaStartProvider(t)
		rv := orvStart(t, p, true)
		rv.status.Store(http.StatusInternalServerError)
		srv, id := orvConnect(t, rv, "discovered")
		orvDisconnect(t, srv, id, "delete")
		testserver.Eventually(t, 10*time.Second, "both revocations tried", func() bool { return rv.finished.Load() >= 2 })
		srv.App.Tools.WaitRevocations()
		logs := srv.LogText()
		var failed []string
		for _, line := range strings.Split(logs, "\n") {
			if strings.Contains(line, "oauth token revocation failed") {
				failed = append(failed, line)
			}
		}
		if len(failed) != 2 || !strings.Contains(failed[0], "HTTP 500") || !strings.Contains(failed[0], "request_id") {
			t.Errorf("failure lines: %q", failed)
		}
		oaNoSecrets(t, "server logs", logs, p.issued())
	})
	t.Run("hangs", func(t *testing.T) {
		t.Parallel()
		p := oaStartProvider(t)
		rv := orvStart(t, p, true)
		rv.hang.Store(true)
		srv, id := orvConnect(t, rv, "discovered")
		orvDisconnect(t, srv, id, "delete")
		// The delete was answered, and the tool is gone, while the
		// provider still holds the revocation (nothing has released it).
		if n := rv.finished.Load(); n != 0 {
			t.Fatalf("%d revocation requests ended before the delete was answered", n)
		}
		testserver.Eventually(t, 10*time.Second, "the revocation to arrive", func() bool { return rv.arrived.Load() >= 1 })
		rv.releaseHeld()
		srv.App.Tools.WaitRevocations()
		if n := rv.finished.Load(); n != 2 {
			t.Errorf("%d revocation requests, want 2", n)
		}
		oaNoSecrets(t, "server logs", srv.LogText(), p.issued())
	})
}
