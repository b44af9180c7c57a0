package httpserver_test

// An attacker's and an unlucky client's ways with the connection: a body
// refused as too large.

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/httpserver"
)

// limited answers 413, as the API does, once a body is past 10 bytes.
var limited = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if _, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 10)); err != nil {
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		return
	}
	io.WriteString(w, r.URL.Path)
})

// A body answered 413 is not read on (RFC 9110 15.5.14: the server may
// close the connection), whatever its framing and however little of it is
// left: the answer goes out at once with Connection: close, and what the
// client sent after it (a pipelined request) is not answered. net/http
// stops the same way when its MaxBytesReader is hit.
func TestTooLargeBodyNotDrained(t *testing.T) {
	t.Parallel()
	ts := setup(t, limited, &httpserver.Options{BodyTimeout: 30 * time.Second})
	for name, req := range map[string]string{
		"chunked":        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n14\r\n01234567890123456789\r\n0\r\n\r\n" + get,
		"content-length": "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n01234567890123456789" + get,
		// The rest never comes: the answer does not wait for it.
		"chunked, stalled":        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n14\r\n01234567890123456789\r\n",
		"content-length, stalled": "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\n\r\n01234567890123456789",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rc := dial(t, ts.addr)
			rc.send(req)
			start := time.Now()
			resp, _ := rc.read("POST")
			if took := time.Since(start); resp.StatusCode != http.StatusRequestEntityTooLarge || !resp.Close || took > 500*time.Millisecond {
				t.Fatalf("status %d, close %v after %s; want 413 and close at once", resp.StatusCode, resp.Close, took)
			}
			if strings.HasSuffix(name, "stalled") {
				return // the server lingers for the client to close
			}
			rc.expectClosed()
		})
	}
}

// A body within the limit keeps the connection: the 413 rule is for 413s.
func TestBodyWithinLimitKeepsConnection(t *testing.T) {
	t.Parallel()
	rc := dial(t, setup(t, respond(limited), nil).addr)
	rc.send("POST /ok HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2;ext=1\r\nab\r\n0\r\nX-Trailer: t\r\n\r\n")
	if resp, body := rc.read("POST"); resp.StatusCode != http.StatusOK || body != "/ok" || resp.Close {
		t.Fatalf("status %d %q, close %v; want 200 /ok, kept", resp.StatusCode, body, resp.Close)
	}
	checkNext(t, rc)
}
