package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

// TestOAuthDiscoveredFromOneOfSeveralChallenges: a WWW-Authenticate value
// may carry several challenges (RFC 9110 §11.6.1), as from a server that
// takes DPoP and Bearer tokens: `DPoP algs="ES256", Bearer
// resource_metadata="…"`. The Bearer challenge's resource_metadata is
// found all the same: provide-config with no token is accepted, the next
// step is oauth, and completing it connects the tool. Before, the second
// challenge's scheme was read as part of its first parameter's name, no
// resource_metadata was found, and the step was refused as 422
// fields.bearer_token.
func TestOAuthDiscoveredFromOneOfSeveralChallenges(t *testing.T) {
	p := oaStartProvider(t)
	counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{Authorize: p.valid})
	target, err := url.Parse(counter.URL)
	if err != nil {
		t.Fatal(err)
	}
	path := target.Path
	target.Path, target.RawQuery = "", ""
	proxy := httputil.NewSingleHostReverseProxy(target)
	challenge := `DPoP algs="ES256 PS256", Bearer resource_metadata="` +
		p.URL + `/.well-known/oauth-protected-resource", error="invalid_token"`
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			w.Header().Set("WWW-Authenticate", challenge)
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	p.mcpURL = front.URL + path

	srv := testserver.Start(t, testserver.Options{})
	id, _ := oaCreate(t, srv, srv.Key, "custom-mcp")
	r := srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id),
		map[string]any{"user_response": map[string]any{"url": p.mcpURL}})
	if r.Status != 200 {
		t.Fatalf("provide-config with the challenges %s: %d %s, want 200 and an oauth step", challenge, r.Status, r.Body)
	}
	step, _ := r.JSON()["next_configuration_step"].(map[string]any)
	_, view := oaAuthorizeAndCall(t, srv, id, oaAuthURL(t, step))
	if view.JSON()["is_configured"] != true {
		t.Fatalf("after the callback: %s", view.Body)
	}
}
