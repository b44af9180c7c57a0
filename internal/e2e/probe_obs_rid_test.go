package e2e

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

// TestProbeObsRequestIDs: a sane client X-Request-Id (1–128 printable
// ASCII) is kept on the answer and in the log line, whatever the route
// (probes, 401, 413, OAuth callback, agent MCP); any other (control
// characters, a tab, UTF-8, too long) is replaced by a fresh one. JSON
// logging escapes a kept one, so it cannot add fields to a line.
func TestProbeObsRequestIDs(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
	id := mqConnect(t, srv, "counter", map[string]any{"url": counter.URL})
	r := srv.Do("POST", "/api/v1/agents/", map[string]any{"name": "a", "tools": []int64{id}})
	agentID := int64(r.JSON()["id"].(float64))
	callReq := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"counter__read_count","arguments":{}}}`
	raw := func(req string) *http.Response {
		conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprint(conn, req)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, tc := range []struct{ name, req, want string }{
		{"healthz", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: rid-ok-1\r\n\r\n", "rid-ok-1"},
		{"metrics", "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Request-Id: rid-ok-2\r\n\r\n", "rid-ok-2"},
		{"401", "GET /api/v1/agents/ HTTP/1.1\r\nHost: x\r\nX-Request-Id: rid-ok-3\r\n\r\n", "rid-ok-3"},
		{"oauth cb", "GET /api/v1/oauth/callback?code=a&state=b HTTP/1.1\r\nHost: x\r\nX-Request-Id: rid-ok-4\r\n\r\n", "rid-ok-4"},
		{"ctl", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: rid-bad\x01x\r\n\r\n", ""},
		{"tab", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: rid\tbad\r\n\r\n", ""},
		{"utf8", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: rid-é\r\n\r\n", ""},
		{"quote", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: rid\"},\"level\":\"ERROR\r\n\r\n", `rid"},"level":"ERROR`},
		{"long", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: " + strings.Repeat("r", 129) + "\r\n\r\n", ""},
		{"two", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: rid-a\r\nX-Request-Id: rid-b\r\n\r\n", "rid-a"},
		{"mcp", fmt.Sprintf("POST /api/v1/agents/%d/mcp HTTP/1.1\r\nHost: x\r\nX-API-KEY: %s\r\nX-Request-Id: rid-mcp\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 46\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", agentID, srv.Key), "rid-mcp"},
		{"mcpcall", fmt.Sprintf("POST /api/v1/agents/%d/mcp HTTP/1.1\r\nHost: x\r\nX-API-KEY: %s\r\nX-Request-Id: rid-mcpcall\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s", agentID, srv.Key, len(callReq), callReq), "rid-mcpcall"},
		{"big", "POST /api/v1/agents/ HTTP/1.1\r\nHost: x\r\nX-Request-Id: rid-big\r\nContent-Length: 99999999\r\nX-API-KEY: " + srv.Key + "\r\n\r\n", "rid-big"},
	} {
		resp := raw(tc.req)
		got := resp.Header.Values("X-Request-Id")
		switch {
		case len(got) != 1:
			t.Errorf("%s: X-Request-Id %q, want one", tc.name, got)
		case tc.want == "" && !strings.HasPrefix(got[0], "req_"):
			t.Errorf("%s: X-Request-Id %q, want a fresh one in place of the client's", tc.name, got[0])
		case tc.want != "" && got[0] != tc.want:
			t.Errorf("%s: X-Request-Id %q, want the client's %q kept", tc.name, got[0], tc.want)
		}
		if tc.want != "" && !strings.Contains(srv.LogText(), `"request_id":`+strconv.Quote(tc.want)) {
			t.Errorf("%s: no log line with the request ID %q", tc.name, tc.want)
		}
	}
}
