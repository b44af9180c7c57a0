package e2e

import (
	"fmt"
	"net/url"
	"regexp"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// h7LinkParams checks what every authorization link carries (RFC 6749
// §4.1.1, RFC 7636 §4.3): each parameter once, response_type code, the
// client, the redirect URI exactly as registered, a state of 256 bits, an
// S256 challenge of a 43-character verifier's digest; and returns the
// query.
func h7LinkParams(t *testing.T, link, clientID, redirect string) url.Values {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	for k, v := range q {
		if len(v) != 1 {
			t.Errorf("link %s: %s given %d times", link, k, len(v))
		}
	}
	b64 := regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)
	if q.Get("response_type") != "code" || q.Get("client_id") != clientID || q.Get("redirect_uri") != redirect ||
		!b64.MatchString(q.Get("state")) || !b64.MatchString(q.Get("code_challenge")) || q.Get("code_challenge_method") != "S256" {
		t.Errorf("link %s: %v", link, q)
	}
	return q
}

// TestOAuthLinkParameters: a catalog provider's link asks for the
// catalog's scopes and names no resource; a discovered server's link asks
// for the scopes its metadata lists and names the MCP server as the RFC
// 8707 resource; both redirect to QUIVER_PUBLIC_URL's callback exactly
// (its trailing slash dropped).
func TestOAuthLinkParameters(t *testing.T) {
	p := oaStartProvider(t)
	_, env := oaGitHub(t, p)
	env["QUIVER_PUBLIC_URL"] = "https://quiver.example/base/"
	srv := testserver.Start(t, testserver.Options{Env: env})
	const redirect = "https://quiver.example/base/api/v1/oauth/callback"

	_, step := oaCreate(t, srv, srv.Key, "github-mcp")
	q := h7LinkParams(t, oaAuthURL(t, step), "gh-client-id", redirect)
	if q.Get("scope") != "repo read:org read:user workflow" || q.Has("resource") {
		t.Errorf("github link: scope %q, resource %q", q.Get("scope"), q.Get("resource"))
	}

	dp, counter := oaDiscoveredServer(t, true)
	id, _ := oaCreate(t, srv, srv.Key, "custom-mcp")
	r := srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id),
		map[string]any{"user_response": map[string]any{"url": counter.URL}})
	if r.Status != 200 {
		t.Fatalf("provide-config: %d %s", r.Status, r.Body)
	}
	dp.mu.Lock()
	var clientID string
	for c := range dp.clients {
		clientID = c
	}
	dp.mu.Unlock()
	q = h7LinkParams(t, oaAuthURL(t, oaStep(t, srv, srv.Key, id)), clientID, redirect)
	if q.Get("scope") != "tools" || q.Get("resource") != counter.URL {
		t.Errorf("discovered link: scope %q, resource %q, want tools and %s", q.Get("scope"), q.Get("resource"), counter.URL)
	}
}
