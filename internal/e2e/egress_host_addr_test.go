package e2e

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync/atomic"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestEgressRefusesThisHostsAddress: a tool URL naming one of the Quiver
// host's own addresses is refused like a private one, even when the
// address is public: it would reach every service the host serves on
// 0.0.0.0 (here a server on all of them), its metrics, its database, its own
// API from inside. fetch_page is 422 on url, http-request's base_url 422
// on base_url, and the server is never reached. Where every address of
// the host is private or reserved already, the ranges refuse them too.
func TestEgressRefusesThisHostsAddress(t *testing.T) {
	list, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var own []netip.Addr
	for _, a := range list {
		if n, ok := a.(*net.IPNet); ok {
			if addr, ok := netip.AddrFromSlice(n.IP); ok && !addr.Unmap().IsLoopback() {
				own = append(own, addr.Unmap())
			}
		}
	}
	if len(own) == 0 {
		t.Skip("this machine has only loopback addresses")
	}
	var hits atomic.Int32
	ln, err := net.Listen("tcp", ":0") // every interface, as a host's services listen
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) })}
	go hs.Serve(ln)
	defer hs.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())

	srv := testserver.Start(t, testserver.Options{Env: map[string]string{"QUIVER_EGRESS_ALLOW_PRIVATE": "false"}})
	r := srv.Do("POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "browser"})
	browser := int64(r.JSON()["id"].(float64))
	for _, addr := range own {
		u := "http://" + net.JoinHostPort(addr.String(), port) + "/"
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
		if r.Status != 422 || fields["base_url"] == nil {
			t.Errorf("http-request base_url %s: %d %s, want 422 on base_url", u, r.Status, r.Body)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the host's own server was reached %d times", n)
	}
}
