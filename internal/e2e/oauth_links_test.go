package e2e

import (
	"net/url"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestOAuthConnectEndsOtherLinks: a tool's oauth step hands out a new
// authorization link, good for oauth.DefaultStateTTL, whenever the ones it
// showed have less than half of that left (oaNewLink). Once one of them
// connects the tool, the others are void: a second callback neither
// replaces the fresh grant nor, after that grant was revoked and the tool
// is back at its oauth step, connects it from a link handed out before
// the first connection (before, it did). A link from after the revocation
// connects it.
func TestOAuthConnectEndsOtherLinks(t *testing.T) {
	p := oaStartProvider(t)
	counter, env := oaGitHub(t, p)
	srv := testserver.Start(t, testserver.Options{Env: env})
	id, step := oaCreate(t, srv, srv.Key, "github-mcp")
	answers := []url.Values{oaAuthorize(t, oaAuthURL(t, step))}
	for range 2 {
		answers = append(answers, oaAuthorize(t, oaNewLink(t, srv, id)))
	}
	if status, body := oaCallback(t, srv, answers[0]); status != 200 {
		t.Fatalf("first link: %d %s", status, body)
	}
	exchanged := p.exchanges.Load()

	status, body := oaCallback(t, srv, answers[1])
	if status == 200 || p.exchanges.Load() != exchanged {
		t.Fatalf("second link after the connection: %d %s, %d more exchanges", status, body, p.exchanges.Load()-exchanged)
	}
	if r := oaCall(t, srv, id, "read_count"); r.Status != 200 {
		t.Fatalf("call after the second link: %d %s", r.Status, r.Body)
	}

	p.revokeGrant()
	r := oaCall(t, srv, id, "read_count")
	if r.Status != 409 || r.JSON()["error"] != "tool_not_configured" {
		t.Fatalf("call on a revoked grant: %d %s", r.Status, r.Body)
	}
	status, body = oaCallback(t, srv, answers[2])
	if status != 400 || !strings.Contains(body, "connected through another link") || oaConfigured(t, srv, srv.Key, id) {
		t.Fatalf("a link from before the connection, after the revocation: %d %s, configured %v", status, body, oaConfigured(t, srv, srv.Key, id))
	}
	next, _ := r.JSON()["next_configuration_step"].(map[string]any)
	if status, body := oaCallback(t, srv, oaAuthorize(t, oaAuthURL(t, next))); status != 200 || !oaConfigured(t, srv, srv.Key, id) {
		t.Fatalf("a link from after the revocation: %d %s", status, body)
	}
	if n := counter.Calls("read_count"); n != 1 {
		t.Fatalf("read_count ran %d times, want 1", n)
	}
}
