package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/testserver"
)

// TestH11ChunkedBodyOverLimit: a chunked body past QUIVER_BODY_LIMIT is
// 413 at once, the rest of it not read nor waited for, and the connection
// then closes: what the client pipelined after it is not answered.
func TestH11ChunkedBodyOverLimit(t *testing.T) {
	const limit = 65536
	srv := testserver.Start(t, testserver.Options{Env: map[string]string{"QUIVER_BODY_LIMIT": fmt.Sprint(limit)}})
	addr := strings.TrimPrefix(srv.URL, "http://")
	chunk := strings.Repeat("a", limit+100)
	head := "POST /api/v1/agents/custom-tools/ HTTP/1.1\r\nHost: quiver\r\nX-API-KEY: " + srv.Key +
		"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" + fmt.Sprintf("%x\r\n%s\r\n", len(chunk), chunk)
	for name, rest := range map[string]string{
		"ended, then a pipelined request": "10\r\n" + strings.Repeat("b", 16) + "\r\n0\r\n\r\nGET /healthz HTTP/1.1\r\nHost: quiver\r\n\r\n",
		"stalled":                         "",
	} {
		t.Run(name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			go conn.Write([]byte(head + rest))
			start := time.Now()
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			b, _ := io.ReadAll(resp.Body)
			took := time.Since(start)
			if resp.StatusCode != 413 || !strings.Contains(string(b), `"payload_too_large"`) || !resp.Close || took > 500*time.Millisecond {
				t.Fatalf("%d %s, close %v, after %v; want 413 payload_too_large with Connection: close at once", resp.StatusCode, b, resp.Close, took)
			}
			if rest == "" {
				return
			}
			if more, err := io.ReadAll(br); err != nil || len(more) > 0 {
				t.Fatalf("after the 413: %q, %v; want the connection closed", more, err)
			}
		})
	}
}
