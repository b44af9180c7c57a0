package e2e

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/oauth"
	"github.com/quiverhq/quiver/internal/store"
	"github.com/quiverhq/quiver/internal/testserver"
)

// TestOAuthStepReadsShowOneLink: reads of a tool at its OAuth step (its GET,
// the list of tools, as a client polls while a person authorizes) show the
// link of a state they showed before, while it is unused, made for the
// tool's configuration as it is now, and has at least half of
// oauth.DefaultStateTTL left; only then do they store a new one. Before,
// each read stored a new oauth_states row and showed a new link.
func TestOAuthStepReadsShowOneLink(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			p := oaStartProvider(t)
			_, env := oaGitHub(t, p)
			srv := testserver.Start(t, testserver.Options{Postgres: dialect == "postgres", Env: env})
			id, step := oaCreate(t, srv, srv.Key, "github-mcp")
			get := func() string { t.Helper(); return oaAuthURL(t, oaStep(t, srv, srv.Key, id)) }
			states := func() int64 {
				t.Helper()
				n, err := srv.App.Store.CountOAuthStates(t.Context(), id)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}

			first := oaAuthURL(t, step)
			if a, b := get(), get(); a != first || b != first {
				t.Fatalf("the step read three times showed\n%s\n%s\n%s\nwant one link", first, a, b)
			}
			if l := oaListedURL(t, srv, id); l != first {
				t.Fatalf("the list of tools shows %s, the tool %s", l, first)
			}
			if n := states(); n != 1 {
				t.Fatalf("%d authorization states after four reads of the step, want 1", n)
			}

			// Consumed by a callback (declined here, so the tool stays at its
			// step): never shown again.
			p.mu.Lock()
			p.deny = true
			p.mu.Unlock()
			q := oaAuthorize(t, first)
			p.mu.Lock()
			p.deny = false
			p.mu.Unlock()
			if status, body := oaCallback(t, srv, q); status != 403 {
				t.Fatalf("declined callback: %d %s", status, body)
			}
			second := get()
			if second == first || get() != second {
				t.Fatalf("after its state was consumed the step shows %s (first %s), then %s", second, first, get())
			}

			// Six minutes left of ten: still shown. Four and a half: a
			// person who opens it might not finish, so a new one.
			oaSetStateExpiry(t, srv, id, 6*time.Minute)
			if u := get(); u != second {
				t.Fatalf("a state with 6 of 10 minutes left was not shown again: %s, want %s", u, second)
			}
			oaSetStateExpiry(t, srv, id, oauth.DefaultStateTTL/2-30*time.Second)
			third := get()
			if third == second || get() != third {
				t.Fatalf("a state near its expiry was shown again: %s", third)
			}
			if n := states(); n != 3 {
				t.Fatalf("%d states, want 3 (the consumed one, the one near expiry, the new one)", n)
			}

			// A reset bumps the tool's version: a state of the configuration
			// before is not shown, even one stored after the reset deleted
			// the tool's states (as a read racing the reset on another
			// replica would).
			var old []store.OAuthState
			if err := srv.App.Store.DB().Where("tool_id = ? AND used_at IS NULL", id).Find(&old).Error; err != nil || len(old) == 0 {
				t.Fatalf("states before the reset: %d, %v", len(old), err)
			}
			for i := range old {
				// Later than any state the reset's answer makes: the freshest.
				old[i].ExpiresAt = time.Now().UTC().Add(oauth.DefaultStateTTL + time.Minute)
			}
			r := srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/reset-config/", id), nil)
			if r.Status != 200 {
				t.Fatalf("reset: %d %s", r.Status, r.Body)
			}
			if err := srv.App.Store.DB().Create(&old).Error; err != nil {
				t.Fatal(err)
			}
			fourth := get()
			for _, before := range []string{first, second, third} {
				if oaState(t, fourth) == oaState(t, before) {
					t.Fatalf("after the reset the step shows the state of a link from before it: %s", fourth)
				}
			}
			if u := oaAuthURL(t, r.JSON()["next_configuration_step"].(map[string]any)); u != fourth || get() != fourth {
				t.Fatalf("after the reset: %s, then %s", u, fourth)
			}
			// Nor does such a link, followed, connect the tool as it is now.
			if status, body := oaCallback(t, srv, oaAuthorize(t, third)); status != 409 || !strings.Contains(body, "out of date") || oaConfigured(t, srv, srv.Key, id) {
				t.Fatalf("callback of a link from before the reset: %d %s", status, body)
			}

			// The link shown again completes the flow: same state, and the
			// PKCE challenge of the verifier stored with it.
			if status, body := oaCallback(t, srv, oaAuthorize(t, fourth)); status != 200 || !oaConfigured(t, srv, srv.Key, id) {
				t.Fatalf("callback of the link shown twice: %d %s", status, body)
			}
			if r := oaCall(t, srv, id, "read_count"); r.Status != 200 {
				t.Fatalf("call after connecting: %d %s", r.Status, r.Body)
			}
		})
	}
}

// oaListedURL is the authorization URL the list of tools shows for id.
func oaListedURL(t *testing.T, srv *testserver.Server, id int64) string {
	t.Helper()
	r := srv.Do("GET", "/api/v1/agents/custom-tools/", nil)
	if r.Status != 200 {
		t.Fatalf("list: %d %s", r.Status, r.Body)
	}
	tools, _ := r.JSON()["tools"].([]any)
	for _, x := range tools {
		m, _ := x.(map[string]any)
		if m["id"] == float64(id) {
			step, _ := m["next_configuration_step"].(map[string]any)
			return oaAuthURL(t, step)
		}
	}
	t.Fatalf("tool %d not listed: %s", id, r.Body)
	return ""
}

// oaState is the state an authorization URL carries.
func oaState(t *testing.T, authURL string) string {
	t.Helper()
	u, err := url.Parse(authURL)
	if err != nil || u.Query().Get("state") == "" {
		t.Fatalf("authorization URL %q: %v", authURL, err)
	}
	return u.Query().Get("state")
}

// oaSetStateExpiry makes the tool's unused states expire left from now:
// time passing, without the wait.
func oaSetStateExpiry(t *testing.T, srv *testserver.Server, id int64, left time.Duration) {
	t.Helper()
	err := srv.App.Store.DB().Model(&store.OAuthState{}).Where("tool_id = ? AND used_at IS NULL", id).
		Update("expires_at", time.Now().UTC().Add(left)).Error
	if err != nil {
		t.Fatal(err)
	}
}

// oaNewLink is the tool's step read after its shown links were aged past
// half their lifetime (still good for a callback): a link of a new state.
func oaNewLink(t *testing.T, srv *testserver.Server, id int64) string {
	t.Helper()
	oaSetStateExpiry(t, srv, id, oauth.DefaultStateTTL/2-time.Minute)
	u := oaAuthURL(t, oaStep(t, srv, srv.Key, id))
	oaState(t, u)
	return u
}
