package e2e

// fetch_page through the API when a page's redirect cannot be followed:
// to a TLS server whose certificate is not trusted, nothing reached that
// server and what reached the first one was a GET, so the call is
// 502 tool_unreachable and its key is released (the same key runs the
// call again); to a URL with user information, the landing page is
// fetched without the credentials, and its url does not show them.

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

func TestH3BrowserRedirects(t *testing.T) {
	c := fdStart(t, testserver.Options{})
	untrusted := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	untrusted.Config.ErrorLog = log.New(io.Discard, "", 0)
	untrusted.StartTLS()
	t.Cleanup(untrusted.Close)
	var hops atomic.Int64
	var start *httptest.Server
	start = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/tls":
			hops.Add(1)
			http.Redirect(w, r, untrusted.URL+"/", http.StatusFound)
		case "/userinfo":
			http.Redirect(w, r, strings.Replace(start.URL, "http://", "http://alice:s3cret@", 1)+"/landing", http.StatusFound)
		default:
			io.WriteString(w, "<title>auth="+r.Header.Get("Authorization")+"</title>")
		}
	}))
	t.Cleanup(start.Close)
	id := c.createTool("browser")
	call := map[string]any{"tool": id, "action": "fetch_page", "arguments": map[string]any{"url": start.URL + "/tls"}}

	for i := 1; i <= 2; i++ {
		fdWantError(t, c.do("POST", callPath, call, "Idempotency-Key", "h3-tls"), 502, "tool_unreachable")
		if n := hops.Load(); n != int64(i) {
			t.Fatalf("attempt %d: the page was fetched %d times, want the released key to run the call again", i, n)
		}
	}

	r := c.do("POST", callPath, map[string]any{"tool": id, "action": "fetch_page", "arguments": map[string]any{"url": start.URL + "/userinfo"}})
	res, _ := r.JSON()["result"].(map[string]any)
	if r.Status != 200 || res["title"] != "auth=" || res["url"] != start.URL+"/landing" || strings.Contains(string(r.Body), "s3cret") {
		t.Fatalf("userinfo redirect: %d %s", r.Status, r.Body)
	}
}
