package e2e

import (
	"bufio"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestAllowOnlyOn405: a caller without a key learns no route's methods, an
// unknown method on a known path and an unknown path alike; with a key, a
// 405 names exactly the route's methods, HEAD with GET.
func TestAllowOnlyOn405(t *testing.T) {
	c := fdStart(t, testserver.Options{})
	tool := c.createTool("browser")
	anon := c.as("")
	for _, tc := range []struct{ method, path string }{
		{"PUT", fdPath("/api/v1/agents/custom-tools/%d", tool)},
		{"OPTIONS", "/api/v1/agents/custom-tools/"},
		{"PUT", "/api/v1/agents/custom-tools/call/"},
		{"PUT", "/api/v1/no-such-route/"},
		{"GET", "/api/v1/agents/5/mcp"},
		{"DELETE", "/api/v1/agents/5/mcp/"},
	} {
		r := anon.do(tc.method, tc.path, nil)
		fdWantError(t, r, 401, "unauthorized")
		if a := r.Header.Values("Allow"); len(a) > 0 {
			t.Errorf("%s %s without a key: Allow %q", tc.method, tc.path, a)
		}
	}
	for _, tc := range []struct{ method, path, allow string }{
		{"PUT", fdPath("/api/v1/agents/custom-tools/%d", tool), "DELETE, GET, HEAD"},
		{"OPTIONS", "/api/v1/agents/custom-tools/", "GET, HEAD, POST"},
		{"POST", fdPath("/api/v1/agents/custom-tools/%d/actions/", tool), "GET, HEAD"},
		{"PUT", "/api/v1/agents/5/", "DELETE, GET, HEAD, PATCH"},
		{"HEAD", "/api/v1/agents/custom-tools/call", "POST"},
		{"POST", "/openapi.json", "GET, HEAD"},
		{"DELETE", "/healthz", "GET, HEAD"},
		// The agent MCP endpoint takes POST alone: GET (no event stream)
		// and DELETE (no session) are refused as every other method is.
		{"GET", "/api/v1/agents/5/mcp", "POST"},
		{"DELETE", "/api/v1/agents/5/mcp/", "POST"},
		{"HEAD", "/api/v1/agents/5/mcp", "POST"},
		{"PUT", "/api/v1/agents/5/mcp", "POST"},
	} {
		r := c.do(tc.method, tc.path, nil, "Accept", "application/json, text/event-stream")
		if r.Status != 405 || r.Header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d, Allow %q; want 405 with Allow %q", tc.method, tc.path, r.Status, r.Header.Get("Allow"), tc.allow)
		}
		if tc.method != "HEAD" && !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			t.Errorf("%s %s: Content-Type %q, want the API's error envelope", tc.method, tc.path, r.Header.Get("Content-Type"))
		}
	}
}

// TestHEADWhereGET: every GET route takes HEAD, answering the status and
// headers of the GET (Content-Length included) and no body, with the same
// 401 and 404 a GET gets.
func TestHEADWhereGET(t *testing.T) {
	c := fdStart(t, testserver.Options{})
	tool := c.createTool("browser")
	agent := c.createAgent(map[string]any{"name": "head"})
	for _, p := range []string{
		"/openapi.json",
		"/healthz",
		"/api/v1/agents/tools/available/",
		"/api/v1/agents/tools/available/tavily",
		"/api/v1/agents/custom-tools/",
		fdPath("/api/v1/agents/custom-tools/%d/", tool),
		"/api/v1/agents/custom-tools/calls",
		fdPath("/api/v1/agents/%d", agent),
		"/api/v1/agents/",
		"/api/v1/agents/987654/",
		"/api/v1/idempotency-keys/no-such-key",
	} {
		get, head := c.do("GET", p, nil), c.do("HEAD", p, nil)
		if head.Status != get.Status || len(head.Body) != 0 {
			t.Errorf("HEAD %s: %d with %d body bytes; GET: %d", p, head.Status, len(head.Body), get.Status)
			continue
		}
		for _, h := range []string{"Content-Type", "Content-Length"} {
			if head.Header.Get(h) != get.Header.Get(h) || get.Header.Get(h) == "" {
				t.Errorf("HEAD %s: %s %q, GET's %q", p, h, head.Header.Get(h), get.Header.Get(h))
			}
		}
		if head.Header.Get("X-Request-Id") == "" {
			t.Errorf("HEAD %s: no X-Request-Id", p)
		}
	}
	if r := c.do("HEAD", "/metrics", nil); r.Status != 200 || len(r.Body) != 0 {
		t.Errorf("HEAD /metrics: %d, %d body bytes", r.Status, len(r.Body))
	}
	if r := c.as("").do("HEAD", "/api/v1/agents/", nil); r.Status != 401 || len(r.Body) != 0 {
		t.Errorf("HEAD without a key: %d, %d body bytes", r.Status, len(r.Body))
	}

	// On the wire: no body follows a HEAD's headers, so the next answer on
	// the connection is read where it starts.
	conn, err := net.Dial("tcp", strings.TrimPrefix(c.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	host := strings.TrimPrefix(c.srv.URL, "http://")
	if _, err := conn.Write([]byte("HEAD /api/v1/agents/custom-tools/ HTTP/1.1\r\nHost: " + host + "\r\nX-API-KEY: " + c.key +
		"\r\n\r\nGET /healthz HTTP/1.1\r\nHost: " + host + "\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	head, err := http.ReadResponse(br, &http.Request{Method: "HEAD"})
	if err != nil || head.StatusCode != 200 {
		t.Fatalf("HEAD on the wire: %v %v", head, err)
	}
	if n, err := strconv.Atoi(head.Header.Get("Content-Length")); err != nil || n == 0 {
		t.Errorf("HEAD on the wire: Content-Length %q", head.Header.Get("Content-Length"))
	}
	next, err := http.ReadResponse(br, &http.Request{Method: "GET"})
	if err != nil || next.StatusCode != 200 {
		t.Fatalf("the answer after HEAD's: %v %v (HEAD sent a body?)", next, err)
	}
}
