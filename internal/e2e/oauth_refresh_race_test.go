package e2e

// A token refresh that a tool's deletion or reset overtakes. On the
// embedded database a refresh holds no row lock (the process's mutex is the
// lock), so the tool can be deleted or reset while the provider is still
// answering the refresh; the refresh's save then finds the row changed.
// The call must answer for the tool as it is now, not blame the provider.

import (
	"fmt"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestOAuthRefreshOvertakenByDeleteOrReset: a call whose token refresh is
// under way when the tool is deleted answers 404 not_found, and one whose
// tool is reset meanwhile answers 409 tool_not_configured with the tool's
// first step. Both used to answer 502 tool_unreachable, "the tool's OAuth
// provider could not refresh its access token … Retry shortly", though the
// provider had refreshed it and no retry could succeed. The tokens that
// refresh was issued are stored nowhere, and the delete or reset revoked
// only the ones it read (a refresh token the provider had just spent), so
// the refresh revokes them at the provider's revocation endpoint: they
// used to be left live there.
func TestOAuthRefreshOvertakenByDeleteOrReset(t *testing.T) {
	p := oaStartProvider(t)
	_, env := oaGitHub(t, p)
	p.firstTTL, p.nextTTL = time.Second, time.Hour
	// Each refresh_token grant is granted by the provider, and its answer
	// held until the test lets it through.
	tokenURL, entered, release := oacHeldAnswerProxy(t, p.URL+"/token")
	env["QUIVER_OAUTH_GITHUB_TOKEN_URL"] = tokenURL
	rv := orvStart(t, p, true)
	env["QUIVER_OAUTH_GITHUB_REVOCATION_URL"] = rv.URL + "/revoke"
	srv := testserver.Start(t, testserver.Options{Env: env})

	// overtaken connects a tool, starts a call that must refresh its token
	// first, runs change while the refresh's answer is held, and returns
	// the call's answer once the tokens that refresh was issued have been
	// revoked at the provider, refresh token first.
	overtaken := func(t *testing.T, change func(id int64)) (int64, *testserver.Response) {
		t.Helper()
		id, step := oaCreate(t, srv, srv.Key, "github-mcp")
		if status, body := oaCallback(t, srv, oaAuthorize(t, oaAuthURL(t, step))); status != 200 {
			t.Fatalf("callback: %d %s", status, body)
		}
		oaPastHalfLife(p)
		done := make(chan *testserver.Response, 1)
		go func() { done <- oaCall(t, srv, id, "read_count") }()
		var granted oacHeldAnswer
		select {
		case granted = <-entered:
		case <-time.After(10 * time.Second):
			t.Fatal("the call did not refresh its token")
		}
		if granted.RefreshToken == "" || granted.AccessToken == "" {
			t.Fatalf("the provider's refresh answer held no tokens: %+v", granted)
		}
		change(id)
		release <- struct{}{}
		r := <-done
		// revoked is where among the revocation requests token's is (with
		// its hint and the client's authentication), or -1.
		revoked := func(token, hint string) int {
			for i, q := range rv.requests() {
				if q.token == token && q.hint == hint && q.clientOK {
					return i
				}
			}
			return -1
		}
		testserver.Eventually(t, 10*time.Second, "the rotated refresh token's revocation", func() bool {
			return revoked(granted.RefreshToken, "refresh_token") >= 0
		})
		testserver.Eventually(t, 10*time.Second, "the refreshed access token's revocation", func() bool {
			return revoked(granted.AccessToken, "access_token") >= 0
		})
		if revoked(granted.AccessToken, "access_token") < revoked(granted.RefreshToken, "refresh_token") {
			t.Fatalf("the refreshed access token was revoked before the rotated refresh token: %+v", rv.requests())
		}
		p.mu.Lock()
		live := p.refresh[granted.RefreshToken]
		p.mu.Unlock()
		if live {
			t.Fatal("the rotated refresh token is still live at the provider")
		}
		return id, r
	}

	t.Run("deleted", func(t *testing.T) {
		_, r := overtaken(t, func(id int64) {
			if r := srv.Do("DELETE", fmt.Sprintf("/api/v1/agents/custom-tools/%d/", id), nil); r.Status != 204 {
				t.Fatalf("delete: %d %s", r.Status, r.Body)
			}
		})
		if r.Status != 404 || r.JSON()["error"] != "not_found" {
			t.Fatalf("call whose tool was deleted during its refresh: %d %s, want 404 not_found", r.Status, r.Body)
		}
	})

	t.Run("reset", func(t *testing.T) {
		id, r := overtaken(t, func(id int64) {
			if r := srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/reset-config/", id), nil); r.Status != 200 {
				t.Fatalf("reset: %d %s", r.Status, r.Body)
			}
		})
		next, _ := r.JSON()["next_configuration_step"].(map[string]any)
		if r.Status != 409 || r.JSON()["error"] != "tool_not_configured" || next["type"] != "oauth" {
			t.Fatalf("call whose tool was reset during its refresh: %d %s, want 409 tool_not_configured with the oauth step", r.Status, r.Body)
		}
		if oaConfigured(t, srv, srv.Key, id) {
			t.Fatal("the refresh undid the reset")
		}
	})
	oaNoSecrets(t, "server logs", srv.LogText(), p.issued())
}
