package e2e

// The egress guard through the API, for the other spellings of a loopback
// address an attacker reaches for: IPv4-mapped and IPv4-compatible IPv6,
// 6to4 and NAT64 forms embedding 127.0.0.1, a zoned link-local address.
// Each is refused before anything is dialled, as the plain forms are
// (TestBuiltinAudit): at configuration for http-request's base_url, on the
// call for fetch_page's url.

import (
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

func TestH3EgressOtherForms(t *testing.T) {
	c := fdStart(t, testserver.Options{Env: map[string]string{"QUIVER_EGRESS_ALLOW_PRIVATE": "false"}})
	srv, hits := baHits(t)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	hosts := []string{"[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[0:0:0:0:0:ffff:127.0.0.1]", "[::127.0.0.1]",
		"[2002:7f00:1::1]", "[64:ff9b::127.0.0.1]", "[::ffff:0:127.0.0.1]", "[fe80::1%25lo]", "[::]", "0.0.0.0"}

	browser := c.createTool("browser")
	http := c.createTool("http-request")
	provide := fdPath("/api/v1/agents/custom-tools/%d/provide-config/", http)
	for _, host := range hosts {
		u := "http://" + host + ":" + port + "/"
		t.Run(host, func(t *testing.T) {
			fdWantFields(t, c.do("POST", provide, map[string]any{"user_response": map[string]any{"base_url": u}}), "validation_error", "base_url")
			fdWantFields(t, baCall(c, browser, "fetch_page", map[string]any{"url": u}), "invalid_arguments", "url")
		})
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the loopback server was reached %d times", n)
	}
}
