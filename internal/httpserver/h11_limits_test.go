package httpserver_test

// An attacker's and an unlucky client's ways with the connection: a body
// refused as too large, a head trickled from the accept, a request line
// too long to read, a client that half-closes, many at once, a framing
// header folded over lines.

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
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

// A connection's first request head is due ReadHeaderTimeout after the
// accept, as Options says: a client that trickles it, its first byte just
// before the deadline, does not get a second ReadHeaderTimeout.
func TestFirstHeadDueFromAccept(t *testing.T) {
	t.Parallel()
	const timeout = 600 * time.Millisecond
	ts := setup(t, echo, &httpserver.Options{ReadHeaderTimeout: timeout})
	rc := dial(t, ts.addr)
	start := time.Now()
	time.Sleep(timeout * 2 / 3)
	rc.send("G")
	go func() { // a byte every 20 ms, for far longer than the timeout
		for _, b := range []byte("ET / HTTP/1.1\r\nX-Slow: " + strings.Repeat("s", 200)) {
			time.Sleep(20 * time.Millisecond)
			if _, err := rc.c.Write([]byte{b}); err != nil {
				return
			}
		}
	}()
	rc.expectClosed()
	if d := time.Since(start); d > timeout*17/12 { // half-way to the 5/3 of a second timeout
		t.Fatalf("closed %v after the accept; want about %v", d, timeout)
	}
}

// A request line longer than the head may be is 414 (RFC 9112 3: a
// request-target longer than the server will parse), not 431, which is
// for header fields.
func TestRequestLineTooLong(t *testing.T) {
	t.Parallel()
	ts := setup(t, echo, &httpserver.Options{MaxHeaderBytes: 1 << 10})
	for name, tc := range map[string]struct {
		req  string
		want int
	}{
		"target":  {"GET /" + strings.Repeat("a", 16<<10) + " HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusRequestURITooLong},
		"headers": {"GET / HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-A: b\r\n", 2<<10) + "\r\n", http.StatusRequestHeaderFieldsTooLarge},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rc := dial(t, ts.addr)
			go io.WriteString(rc.c, tc.req) // the server stops reading partway
			resp, _ := rc.read("GET")
			if resp.StatusCode != tc.want || !resp.Close {
				t.Fatalf("status %d, close %v; want %d and close", resp.StatusCode, resp.Close, tc.want)
			}
		})
	}
}

// A client that half-closes after its requests (shutdown(SHUT_WR), as
// `nc -N` does) gets every answer, then the connection closes.
func TestHalfCloseAfterRequests(t *testing.T) {
	t.Parallel()
	rc := dial(t, setup(t, echo, nil).addr)
	rc.send("POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\none" + get)
	if err := rc.c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"one", "/"} {
		if resp, body := rc.read("GET"); resp.StatusCode != http.StatusOK || body != want {
			t.Fatalf("status %d %q, want 200 %q", resp.StatusCode, body, want)
		}
	}
	rc.expectClosed()
}

// Many connections at once, each with a request in flight, are all served.
func TestManyConnections(t *testing.T) {
	t.Parallel()
	ts := setup(t, echo, nil)
	const n = 200
	conns := make([]*rawConn, n)
	for i := range conns {
		conns[i] = dial(t, ts.addr)
		conns[i].send(fmt.Sprintf("GET /%d HTTP/1.1\r\nHost: x\r\n\r\n", i))
	}
	for i, rc := range conns {
		if resp, body := rc.read("GET"); resp.StatusCode != http.StatusOK || body != fmt.Sprintf("/%d", i) {
			t.Fatalf("connection %d: status %d %q", i, resp.StatusCode, body)
		}
	}
}

// A framing header folded over lines (obsolete line folding, RFC 9112
// 5.2) is refused, and the connection closes: net/http joins the lines and
// frames the body by them, where a front proxy that does not may frame it
// otherwise (or not at all), the way a request is smuggled. A folded Host
// and a folded Transfer-Encoding net/http refuses were refused already;
// folding elsewhere is joined, as net/http joins it.
func TestFoldedFramingHeader(t *testing.T) {
	t.Parallel()
	var reached atomic.Bool
	ts := setup(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/kept" {
			reached.Store(true)
		}
		echo(w, r)
	}), nil)
	for name, req := range map[string]string{
		"transfer-encoding": "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"content-length":    "POST / HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n\t3\r\n\r\nabc",
		"an empty fold":     "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n \r\n\r\nabc",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rc := dial(t, ts.addr)
			rc.send(req)
			resp, body := rc.read("POST")
			if resp.StatusCode != http.StatusBadRequest || !resp.Close {
				t.Fatalf("status %d %q, close %v; want 400 and close", resp.StatusCode, body, resp.Close)
			}
			rc.expectClosed()
		})
	}
	t.Run("elsewhere", func(t *testing.T) {
		t.Parallel()
		rc := dial(t, ts.addr)
		rc.send("POST /kept HTTP/1.1\r\nHost: x\r\nX-Long: a\r\n b\r\nContent-Length: 3\r\n\r\nabc")
		if resp, body := rc.read("POST"); resp.StatusCode != http.StatusOK || body != "abc" || resp.Close {
			t.Fatalf("status %d %q, close %v; want 200 abc, kept", resp.StatusCode, body, resp.Close)
		}
	})
	t.Cleanup(func() {
		if reached.Load() {
			t.Error("a request with a folded framing header reached the handler")
		}
	})
}

// An old client's CRLF after a POST's body (RFC 9112 2.2: a server SHOULD
// ignore an empty line before a request line) does not spoil the next
// request on the connection: net/http drops up to four CR or LF bytes
// after a POST, and so does this server, sent with the body or apart.
func TestBlankLineAfterPOST(t *testing.T) {
	t.Parallel()
	rc := dial(t, setup(t, respond(echo), nil).addr)
	rc.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\none\r\n" + get)
	for _, want := range []string{"one", "/"} {
		if resp, body := rc.read("GET"); resp.StatusCode != http.StatusOK || body != want {
			t.Fatalf("status %d %q, want 200 %q", resp.StatusCode, body, want)
		}
	}
	rc.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\ntwo")
	if _, body := rc.read("POST"); body != "two" {
		t.Fatalf("got %q, want two", body)
	}
	rc.send("\r\n")
	checkNext(t, rc)
}
