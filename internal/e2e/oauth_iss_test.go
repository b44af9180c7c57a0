package e2e

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestOAuthCallbackChecksIssuer: RFC 9207's defence against a mix-up
// attack. Every discovered provider shares one callback, so an
// authorization response must come from the authorization server the
// tool's flow was started at: one whose iss names another issuer is
// refused before its code is exchanged (and so never reaches the tool's
// token endpoint), and so is one without iss from a server whose metadata
// says it always sends it (authorization_response_iss_parameter_supported).
// The tool stays at its oauth step, and a correct response connects it.
// Before, the callback ignored iss and exchanged every code.
func TestOAuthCallbackChecksIssuer(t *testing.T) {
	p, counter := oaDiscoveredServer(t, true)
	srv := testserver.Start(t, testserver.Options{})
	discover := func(advertised bool) int64 {
		t.Helper()
		p.issSupported.Store(advertised)
		id, _ := oaCreate(t, srv, srv.Key, "custom-mcp")
		r := srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id),
			map[string]any{"user_response": map[string]any{"url": counter.URL}})
		if r.Status != 200 {
			t.Fatalf("provide-config: %d %s", r.Status, r.Body)
		}
		return id
	}
	// answer is the provider's redirect for the tool's current link, with
	// iss set to iss (deleted when "").
	answer := func(id int64, iss string) url.Values {
		t.Helper()
		q := oaAuthorize(t, oaAuthURL(t, oaStep(t, srv, srv.Key, id)))
		q.Del("iss")
		if iss != "" {
			q.Set("iss", iss)
		}
		return q
	}
	refused := func(what string, id int64, q url.Values, reason string) {
		t.Helper()
		before := p.exchanges.Load()
		status, body := oaCallback(t, srv, q)
		if status != 400 || !strings.Contains(body, `data-outcome="`+reason+`"`) {
			t.Fatalf("%s: %d %s, want 400 %s", what, status, body, reason)
		}
		if n := p.exchanges.Load() - before; n != 0 {
			t.Fatalf("%s: the code was exchanged %d times", what, n)
		}
		if oaConfigured(t, srv, srv.Key, id) {
			t.Fatalf("%s: the tool was connected", what)
		}
	}
	connected := func(what string, id int64, q url.Values) {
		t.Helper()
		if status, body := oaCallback(t, srv, q); status != 200 || !oaConfigured(t, srv, srv.Key, id) {
			t.Fatalf("%s: %d %s", what, status, body)
		}
	}

	advertised, silent := discover(true), discover(false)
	p.issSupported.Store(true)
	refused("advertised, another issuer", advertised, answer(advertised, "https://attacker.example"), "issuer_mismatch")
	refused("advertised, the issuer with a slash added", advertised, answer(advertised, p.URL+"/"), "issuer_mismatch")
	refused("advertised, no iss", advertised, answer(advertised, ""), "issuer_missing")
	connected("advertised, the issuer", advertised, answer(advertised, p.URL))

	// A server that does not advertise iss may leave it out, but one it
	// sends is checked all the same.
	p.issSupported.Store(false)
	refused("not advertised, another issuer", silent, answer(silent, "https://attacker.example"), "issuer_mismatch")
	connected("not advertised, no iss", silent, answer(silent, ""))
}
