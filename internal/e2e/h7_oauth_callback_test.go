package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestOAuthCallbackErrorChecksIssuer: RFC 9207 §2.4 has a client check iss
// in an error response as in a successful one. A discovered tool's
// callback carrying an error and another server's iss is refused as
// issuer_mismatch, and one without iss from a server that always sends it
// as issuer_missing, not taken for the tool's own server's answer
// ("declined", "the provider reported an error"); with the tool's own
// issuer it is the denial it says. The tool stays waiting and can be
// connected afterwards.
func TestOAuthCallbackErrorChecksIssuer(t *testing.T) {
	p, counter := oaDiscoveredServer(t, true)
	p.issSupported.Store(true)
	srv := testserver.Start(t, testserver.Options{})
	id, _ := oaCreate(t, srv, srv.Key, "custom-mcp")
	r := srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id),
		map[string]any{"user_response": map[string]any{"url": counter.URL}})
	if r.Status != 200 {
		t.Fatalf("provide-config: %d %s", r.Status, r.Body)
	}
	answer := func(errCode, iss string) url.Values {
		t.Helper()
		u, _ := url.Parse(oaAuthURL(t, oaStep(t, srv, srv.Key, id)))
		q := url.Values{"state": {u.Query().Get("state")}, "error": {errCode}}
		if iss != "" {
			q.Set("iss", iss)
		}
		return q
	}
	for _, c := range []struct {
		what, errCode, iss string
		status             int
		reason             string
	}{
		{"denied, another issuer", "access_denied", "https://attacker.example", 400, "issuer_mismatch"},
		{"an error, another issuer", "server_error", "https://attacker.example", 400, "issuer_mismatch"},
		{"denied, no iss", "access_denied", "", 400, "issuer_missing"},
		{"denied, the issuer", "access_denied", p.URL, 403, "denied"},
		{"an error, the issuer", "server_error", p.URL, 502, "provider_error"},
	} {
		status, body := oaCallback(t, srv, answer(c.errCode, c.iss))
		if status != c.status || !strings.Contains(body, `data-outcome="`+c.reason+`"`) {
			t.Fatalf("%s: %d %s, want %d %s", c.what, status, body, c.status, c.reason)
		}
		if oaConfigured(t, srv, srv.Key, id) {
			t.Fatalf("%s: the tool was connected", c.what)
		}
	}
	if status, body := oaCallback(t, srv, oaAuthorize(t, oaAuthURL(t, oaStep(t, srv, srv.Key, id)))); status != 200 || !oaConfigured(t, srv, srv.Key, id) {
		t.Fatalf("a correct answer afterwards: %d %s", status, body)
	}
}

// TestOAuthCallbackPageEscapes: the callback's page is HTML shown in a
// browser, built from what a provider's redirect carries and the tool's
// label: markup in an error code, in error_description and error_uri, and
// in the tool's label is never markup on the page; the description and URI
// are not shown at all; the page is text/html with a policy that runs no
// script and lets no other site frame it (RFC 9700 §4.9), is not cached
// and sends no referrer (its URL carries the code).
func TestOAuthCallbackPageEscapes(t *testing.T) {
	p := oaStartProvider(t)
	_, env := oaGitHub(t, p)
	srv := testserver.Start(t, testserver.Options{Env: env})
	const label = `<script>alert("label")</script><img src=x onerror=alert(1)>`
	r := srv.Do("POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "github-mcp", "name": label})
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	id := int64(r.JSON()["id"].(float64))
	state := func() string {
		u, _ := url.Parse(oaAuthURL(t, oaStep(t, srv, srv.Key, id)))
		return u.Query().Get("state")
	}
	get := func(q url.Values) (*http.Response, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + "/api/v1/oauth/callback?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	check := func(what string, resp *http.Response, body string) {
		t.Helper()
		h := resp.Header
		if ct := h.Get("Content-Type"); ct != "text/html; charset=utf-8" {
			t.Errorf("%s: Content-Type %q", what, ct)
		}
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(csp, "script-src") {
			t.Errorf("%s: Content-Security-Policy %q", what, csp)
		}
		if h.Get("Cache-Control") != "no-store" || h.Get("Referrer-Policy") != "no-referrer" || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: headers %v", what, h)
		}
		for _, bad := range []string{"<script", "<img", "desc-secret", "javascript:"} {
			if strings.Contains(body, bad) {
				t.Errorf("%s: the page shows %q: %s", what, bad, body)
			}
		}
	}
	resp, body := get(url.Values{"state": {state()}, "error": {`server_error<script>alert(1)</script>`},
		"error_description": {`desc-secret<script>alert(2)</script>`}, "error_uri": {`javascript:alert(3)`}})
	if resp.StatusCode != 502 {
		t.Fatalf("provider error: %d %s", resp.StatusCode, body)
	}
	check("provider error", resp, body)

	resp, body = get(oaAuthorize(t, oaAuthURL(t, oaStep(t, srv, srv.Key, id))))
	if resp.StatusCode != 200 || !strings.Contains(body, "&lt;script&gt;") {
		t.Fatalf("connected: %d %s", resp.StatusCode, body)
	}
	check("connected", resp, body)
}

// TestOAuthCallbackDuplicateParameters: RFC 6749 §3.1, a response
// parameter is never included more than once. A callback with two states,
// two codes or two errors is refused as not valid, its code not exchanged
// and its state not spent (so the provider's own answer still connects the
// tool); before, the first of each was taken, so a code put ahead of the
// provider's on the way reached the token endpoint.
func TestOAuthCallbackDuplicateParameters(t *testing.T) {
	p := oaStartProvider(t)
	_, env := oaGitHub(t, p)
	srv := testserver.Start(t, testserver.Options{Env: env})
	id, step := oaCreate(t, srv, srv.Key, "github-mcp")
	q := oaAuthorize(t, oaAuthURL(t, step))
	for _, c := range []struct {
		what string
		add  url.Values
	}{
		{"two codes", url.Values{"code": {"code_injected"}}},
		{"two states", url.Values{"state": {"another"}}},
		{"two errors", url.Values{"error": {"access_denied", "server_error"}}},
	} {
		dup := url.Values{}
		for k, v := range q {
			dup[k] = append([]string(nil), v...)
		}
		for k, v := range c.add {
			if k == "error" {
				dup[k] = v
				continue
			}
			dup[k] = append(v, dup[k]...)
		}
		before := p.exchanges.Load()
		status, body := oaCallback(t, srv, dup)
		if status != 400 || !strings.Contains(body, `data-outcome="duplicate_parameter"`) {
			t.Fatalf("%s: %d %s, want 400 duplicate_parameter", c.what, status, body)
		}
		if n := p.exchanges.Load() - before; n != 0 {
			t.Fatalf("%s: %d exchanges", c.what, n)
		}
	}
	if status, body := oaCallback(t, srv, q); status != 200 || !oaConfigured(t, srv, srv.Key, id) {
		t.Fatalf("the provider's own answer afterwards: %d %s", status, body)
	}
}
