package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestProbeEgressReservedIPv6: IPv6 ranges that are never a public server
// (IANA: not globally reachable) are refused as the IPv4 ones are, before
// anything is dialled: documentation 3fff::/20, benchmarking 2001:2::/48,
// discard-only 100::/64, SRv6 segment IDs 5f00::/16, and IPv4-translated
// ::ffff:0:a.b.c.d, which a SIIT translator forwards to the IPv4 address it
// embeds (here 127.0.0.1 and 169.254.169.254). Before, each was allowed
// and dialled: fetch_page was 502 tool_unreachable (no route to host), and
// http-request took it as a base_url. Now fetch_page is 422 on url, and
// configuring base_url is 422 on base_url.
func TestProbeEgressReservedIPv6(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{Env: map[string]string{"QUIVER_EGRESS_ALLOW_PRIVATE": "false"}})
	r := srv.Do("POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "browser"})
	browser := int64(r.JSON()["id"].(float64))
	for _, host := range []string{"[3fff::1]", "[2001:2::1]", "[100::1]", "[5f00::1]", "[::ffff:0:7f00:1]:8080", "[::ffff:0:a9fe:a9fe]"} {
		u := "http://" + host + "/"
		r := srv.Do("POST", mqCallPath, map[string]any{"tool": browser, "action": "fetch_page", "arguments": map[string]any{"url": u}})
		fields, _ := r.JSON()["fields"].(map[string]any)
		if r.Status != 422 || fields["url"] == nil {
			t.Errorf("fetch_page %s: %d %s, want 422 on url", u, r.Status, r.Body)
		}
		r = srv.Do("POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "http-request"})
		id := int64(r.JSON()["id"].(float64))
		r = srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id),
			map[string]any{"user_response": map[string]any{"base_url": u}})
		fields, _ = r.JSON()["fields"].(map[string]any)
		if msg, _ := fields["base_url"].(string); r.Status != 422 || !strings.Contains(msg, "reserved address") {
			t.Errorf("http-request base_url %s: %d %s, want 422 on base_url", u, r.Status, r.Body)
		}
	}
}
