package e2e

import (
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testserver"
)

// A GitHub token endpoint answers a refresh it refuses as it answers one
// it grants: HTTP 200, a form-encoded body, and codes of its own rather
// than RFC 6749 §5.2's. bad_refresh_token (the refresh token is spent,
// expired or revoked) means what invalid_grant does, and
// incorrect_client_credentials what invalid_client does. Both used to be
// taken for a passing failure: a call on a tool whose GitHub refresh token
// had expired answered 502 tool_unreachable "Retry shortly", forever, and
// was never sent back to its oauth step.

// oacGitHubStyle connects github-mcp through the local provider, behind a
// token endpoint that, while its code is set, answers every refresh with
// that code as GitHub does, and waits until the connection's access token
// (which lives 2 s) has expired, so the next call must refresh it. It
// returns Quiver, the tool, the code to set, how many refreshes were
// answered so, and a keyed call of increment that checks a refused call
// ran nothing and released its key.
func oacGitHubStyle(t *testing.T) (srv *testserver.Server, id int64, code *atomic.Value, answered *atomic.Int64, call func(key string) *testserver.Response) {
	t.Helper()
	p := oaStartProvider(t)
	counter, env := oaGitHub(t, p)
	p.firstTTL, p.nextTTL = 2*time.Second, time.Hour
	code, answered = &atomic.Value{}, &atomic.Int64{}
	code.Store("")
	env["QUIVER_OAUTH_GITHUB_TOKEN_URL"] = oacTokenProxy(t, p.URL+"/token", func(w http.ResponseWriter, form url.Values) bool {
		c := code.Load().(string)
		if c == "" || form.Get("grant_type") != "refresh_token" {
			return false
		}
		answered.Add(1)
		w.Header().Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(url.Values{"error": {c}, "error_description": {"refused by the test's GitHub"}}.Encode()))
		return true
	})
	srv = testserver.Start(t, testserver.Options{Env: env})
	id, step := oaCreate(t, srv, srv.Key, "github-mcp")
	if status, body := oaCallback(t, srv, oaAuthorize(t, oaAuthURL(t, step))); status != 200 {
		t.Fatalf("callback: %d %s", status, body)
	}
	time.Sleep(p.firstTTL + 200*time.Millisecond)
	ran := 0
	call = func(key string) *testserver.Response {
		t.Helper()
		r := oaCall(t, srv, id, "increment", "Idempotency-Key", key)
		if r.Status == 200 {
			ran++
		} else if k := srv.Do("GET", "/api/v1/idempotency-keys/"+key, nil); k.Status != 404 {
			t.Errorf("key %s after a refused call: %d %s, want 404 (released)", key, k.Status, k.Body)
		}
		if n := counter.Calls("increment"); n != ran {
			t.Errorf("increment ran %d times after %d calls answered 200", n, ran)
		}
		return r
	}
	return srv, id, code, answered, call
}

// TestOAuthRefreshGitHubBadRefreshToken: a call whose access token is due
// for a refresh that GitHub answers bad_refresh_token is 409
// tool_not_configured with the tool's oauth step (an authorization URL),
// with nothing run and its key released, not 502 tool_unreachable; the
// tool is no longer configured, the next call does not ask GitHub again,
// and authorizing again connects it.
func TestOAuthRefreshGitHubBadRefreshToken(t *testing.T) {
	srv, id, code, answered, call := oacGitHubStyle(t)
	code.Store("bad_refresh_token")
	r := call("gh-1")
	next, _ := r.JSON()["next_configuration_step"].(map[string]any)
	if r.Status != 409 || r.JSON()["error"] != "tool_not_configured" || next["type"] != "oauth" || next["authorization_url"] == nil {
		t.Fatalf("refresh answered bad_refresh_token: %d %s, want 409 tool_not_configured with the oauth step", r.Status, r.Body)
	}
	if n := answered.Load(); n != 1 {
		t.Fatalf("GitHub was asked for %d refreshes, want 1", n)
	}
	if oaConfigured(t, srv, srv.Key, id) {
		t.Fatal("the tool is still configured after GitHub called its refresh token dead")
	}
	if r := call("gh-2"); r.Status != 409 || r.JSON()["error"] != "tool_not_configured" {
		t.Fatalf("second call: %d %s, want 409 tool_not_configured", r.Status, r.Body)
	}
	if n := answered.Load(); n != 1 {
		t.Fatalf("GitHub was asked %d more times after the grant was dropped", n-1)
	}
	code.Store("")
	if status, body := oaCallback(t, srv, oaAuthorize(t, oaAuthURL(t, next))); status != 200 {
		t.Fatalf("authorizing again: %d %s", status, body)
	}
	if r := call("gh-1"); r.Status != 200 {
		t.Fatalf("after authorizing again: %d %s", r.Status, r.Body)
	}
}

// TestOAuthRefreshGitHubIncorrectClientCredentials: a refresh GitHub
// answers incorrect_client_credentials refuses this server's own OAuth
// client, which no new authorization heals: on an expired access token the
// call is 502 upstream_auth_failed naming the client, not "retry shortly",
// with nothing run and its key released; the tool stays configured, and
// once GitHub takes the client again the same key goes through.
func TestOAuthRefreshGitHubIncorrectClientCredentials(t *testing.T) {
	srv, id, code, _, call := oacGitHubStyle(t)
	code.Store("incorrect_client_credentials")
	r := call("ghc-1")
	msg, _ := r.JSON()["message"].(string)
	if r.Status != 502 || r.JSON()["error"] != "upstream_auth_failed" || !strings.Contains(msg, "client") || strings.Contains(msg, "Retry shortly") {
		t.Fatalf("refresh answered incorrect_client_credentials: %d %s, want 502 upstream_auth_failed naming the client", r.Status, r.Body)
	}
	if !oaConfigured(t, srv, srv.Key, id) {
		t.Fatal("a refused client dropped the tool's grant")
	}
	code.Store("")
	if r := call("ghc-1"); r.Status != 200 {
		t.Fatalf("client accepted again: %d %s", r.Status, r.Body)
	}
}
