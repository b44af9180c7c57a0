package e2e

// A token refresh that a tool's deletion or reset overtakes. On the
// embedded database a refresh holds no row lock (the process's mutex is the
// lock), so the tool can be deleted or reset while the provider is still
// answering the refresh; the refresh's save then finds the row changed.
// The call must answer for the tool as it is now, not blame the provider.

import (
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestOAuthRefreshOvertakenByDeleteOrReset: a call whose token refresh is
// under way when the tool is deleted answers 404 not_found, and one whose
// tool is reset meanwhile answers 409 tool_not_configured with the tool's
// first step. Both used to answer 502 tool_unreachable, "the tool's OAuth
// provider could not refresh its access token … Retry shortly", though the
// provider had refreshed it and no retry could succeed.
func TestOAuthRefreshOvertakenByDeleteOrReset(t *testing.T) {
	p := oaStartProvider(t)
	_, env := oaGitHub(t, p)
	p.firstTTL, p.nextTTL = time.Second, time.Hour
	// Each refresh_token grant is held until the test lets it through.
	tokenURL, entered, release := heldProxy(t, p.URL+"/token", func(body []byte) bool {
		form, err := url.ParseQuery(string(body))
		return err == nil && form.Get("grant_type") == "refresh_token"
	})
	env["QUIVER_OAUTH_GITHUB_TOKEN_URL"] = tokenURL
	srv := testserver.Start(t, testserver.Options{Env: env})

	// overtaken connects a tool, starts a call that must refresh its token
	// first, runs change while the provider holds the refresh, and returns
	// the call's answer.
	overtaken := func(t *testing.T, change func(id int64)) (int64, *testserver.Response) {
		t.Helper()
		id, step := oaCreate(t, srv, srv.Key, "github-mcp")
		if status, body := oaCallback(t, srv, oaAuthorize(t, oaAuthURL(t, step))); status != 200 {
			t.Fatalf("callback: %d %s", status, body)
		}
		oaPastHalfLife(p)
		done := make(chan *testserver.Response, 1)
		go func() { done <- oaCall(t, srv, id, "read_count") }()
		select {
		case <-entered:
		case <-time.After(10 * time.Second):
			t.Fatal("the call did not refresh its token")
		}
		change(id)
		release <- struct{}{}
		return id, <-done
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
