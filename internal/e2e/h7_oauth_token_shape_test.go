package e2e

// Token responses of odd shape, through the real HTTP API: the local
// provider issues the tokens (codes, PKCE, rotation), and a proxy in front
// of its token endpoint rewrites what each answer says of them.

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testserver"
)

// oaShaper sits in front of a provider's token endpoint and rewrites the
// fields of its successful answers: a value of nil deletes the field.
type oaShaper struct {
	*httptest.Server
	mu    sync.Mutex
	shape map[string]any
}

func oaStartShaper(t *testing.T, p *oaProvider) *oaShaper {
	s := &oaShaper{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req, _ := http.NewRequest(r.Method, p.URL+"/token", bytes.NewReader(body))
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		if resp.StatusCode == http.StatusOK && json.Unmarshal(b, &m) == nil {
			s.mu.Lock()
			for k, v := range s.shape {
				if v == nil {
					delete(m, k)
				} else {
					m[k] = v
				}
			}
			s.mu.Unlock()
			b, _ = json.Marshal(m)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(b)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *oaShaper) set(shape map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shape = shape
}

// h7Setup is github-mcp against the local provider, its token endpoint
// behind a shaper.
func h7Setup(t *testing.T) (*oaProvider, *oaShaper, *testserver.Server) {
	t.Helper()
	p := oaStartProvider(t)
	_, env := oaGitHub(t, p)
	s := oaStartShaper(t, p)
	env["QUIVER_OAUTH_GITHUB_TOKEN_URL"] = s.URL + "/token"
	return p, s, testserver.Start(t, testserver.Options{Env: env})
}

// TestOAuthExchangeTokenType: RFC 6749 §7.1, a client must not use an
// access token of a type it does not understand, and Quiver sends every
// token as a bearer token (RFC 6750). A token response of another type
// (mac, DPoP: proof-of-possession tokens that are worthless, or refused,
// as bearer tokens) fails the connection, and the tool stays at its oauth
// step; bearer in any case (RFC 6749 §5.1: case-insensitive), or no type
// (GitHub's answers to some requests), connects it. Before, every type was
// stored and sent as Bearer.
func TestOAuthExchangeTokenType(t *testing.T) {
	p, s, srv := h7Setup(t)
	defer func() { oaNoSecrets(t, "server logs", srv.LogText(), p.issued()) }()
	for _, tc := range []struct {
		tokenType any
		ok        bool
	}{
		{"mac", false},
		{"DPoP", false},
		{"N_A", false},
		{"bearer", true},
		{"BEARER", true},
		{nil, true},
	} {
		s.set(map[string]any{"token_type": tc.tokenType})
		id, step := oaCreate(t, srv, srv.Key, "github-mcp")
		status, body := oaCallback(t, srv, oaAuthorize(t, oaAuthURL(t, step)))
		if got := oaConfigured(t, srv, srv.Key, id); got != tc.ok {
			t.Fatalf("token_type %v: configured %v (callback %d %s), want %v", tc.tokenType, got, status, body, tc.ok)
		}
		if !tc.ok && (status != 502 || !strings.Contains(body, `data-outcome="exchange_failed"`)) {
			t.Fatalf("token_type %v: callback %d %s, want 502 exchange_failed", tc.tokenType, status, body)
		}
		if tc.ok {
			if r := oaCall(t, srv, id, "read_count"); r.Status != 200 {
				t.Fatalf("token_type %v: call %d %s", tc.tokenType, r.Status, r.Body)
			}
		}
	}
}

// TestOAuthExchangeExpiresIn: expires_in of each odd shape. A string
// ("3600", as PayPal sends) and a huge number are lifetimes; 0 and a
// negative number give none (a token said to be dead on arrival is no
// lifetime at all: it is used until its server refuses it, then
// refreshed), and each connects the tool and its call runs with no refresh
// first. Before, a negative lifetime stored a token expired on arrival: every
// call refreshed it first, spending a rotating refresh token each time, and
// ran with a token the provider had called expired.
func TestOAuthExchangeExpiresIn(t *testing.T) {
	p, s, srv := h7Setup(t)
	for _, v := range []any{"3600", 1e12, 0, -3600} {
		s.set(map[string]any{"expires_in": v})
		id, step := oaCreate(t, srv, srv.Key, "github-mcp")
		if status, body := oaCallback(t, srv, oaAuthorize(t, oaAuthURL(t, step))); status != 200 {
			t.Fatalf("expires_in %v: callback %d %s", v, status, body)
		}
		before := p.refreshes.Load()
		for range 2 {
			if r := oaCall(t, srv, id, "read_count"); r.Status != 200 {
				t.Fatalf("expires_in %v: call %d %s", v, r.Status, r.Body)
			}
		}
		if n := p.refreshes.Load() - before; n != 0 {
			t.Fatalf("expires_in %v: %d refreshes for two calls, want 0", v, n)
		}
	}
	// A lifetime that is no number at all fails the exchange.
	s.set(map[string]any{"expires_in": "soon"})
	id, step := oaCreate(t, srv, srv.Key, "github-mcp")
	if status, body := oaCallback(t, srv, oaAuthorize(t, oaAuthURL(t, step))); status != 502 || oaConfigured(t, srv, srv.Key, id) {
		t.Fatalf(`expires_in "soon": callback %d %s, want 502 and the tool not connected`, status, body)
	}
}

// TestOAuthRefreshExpiresIn: a refresh answered with a lifetime of 0 or a
// negative number gives a token with none, used by the calls after it with
// no further refresh. Before, a negative lifetime made every call refresh
// first, spending a rotating refresh token each time, and then run with a
// token its provider had just called expired.
func TestOAuthRefreshExpiresIn(t *testing.T) {
	for _, v := range []any{0, -60} {
		p, s, srv := h7Setup(t)
		s.set(map[string]any{"expires_in": 1})
		id, step := oaCreate(t, srv, srv.Key, "github-mcp")
		if status, body := oaCallback(t, srv, oaAuthorize(t, oaAuthURL(t, step))); status != 200 {
			t.Fatalf("callback %d %s", status, body)
		}
		time.Sleep(1100 * time.Millisecond) // the token expired
		s.set(map[string]any{"expires_in": v})
		before := p.refreshes.Load()
		for range 3 {
			if r := oaCall(t, srv, id, "read_count"); r.Status != 200 {
				t.Fatalf("expires_in %v: call %d %s", v, r.Status, r.Body)
			}
		}
		if n := p.refreshes.Load() - before; n != 1 {
			t.Fatalf("expires_in %v: %d refreshes for three calls, want 1", v, n)
		}
	}
}

// TestOAuthRefreshWithoutAccessToken: a refresh answered 200 with no
// access token (RFC 6749 §5.1 makes it required) is a failed refresh: the
// call that found its token expired is 502 tool_unreachable with nothing
// run and its key released, never dispatched with the expired token, and
// the tool stays connected. No token reaches the logs.
func TestOAuthRefreshWithoutAccessToken(t *testing.T) {
	p := oaStartProvider(t)
	counter, env := oaGitHub(t, p)
	s := oaStartShaper(t, p)
	env["QUIVER_OAUTH_GITHUB_TOKEN_URL"] = s.URL + "/token"
	srv := testserver.Start(t, testserver.Options{Env: env})
	s.set(map[string]any{"expires_in": 1})
	id, step := oaCreate(t, srv, srv.Key, "github-mcp")
	if status, body := oaCallback(t, srv, oaAuthorize(t, oaAuthURL(t, step))); status != 200 {
		t.Fatalf("callback %d %s", status, body)
	}
	time.Sleep(1100 * time.Millisecond) // the token expired
	s.set(map[string]any{"access_token": nil})
	r := oaCall(t, srv, id, "increment", "Idempotency-Key", "h7-no-at")
	if r.Status != 502 || r.JSON()["error"] != "tool_unreachable" {
		t.Fatalf("refresh without an access token: %d %s, want 502 tool_unreachable", r.Status, r.Body)
	}
	if n := counter.Calls("increment"); n != 0 {
		t.Fatalf("increment ran %d times", n)
	}
	if r := srv.Do("GET", "/api/v1/idempotency-keys/h7-no-at", nil); r.Status != 404 {
		t.Fatalf("key: %d %s, want 404 (released)", r.Status, r.Body)
	}
	if !oaConfigured(t, srv, srv.Key, id) {
		t.Fatal("the tool was disconnected")
	}
	oaNoSecrets(t, "server logs", srv.LogText(), p.issued())
}
