package httpserver_test

// What RFC 9112 has a server make of a request's head where net/http's
// server takes less care: the Host header behind an absolute-form target,
// and framing it calls suspect: a body framed two ways, or by a
// Transfer-Encoding HTTP/1.0 does not have, or by a transfer coding the
// server does not implement. Each of those is answered (or refused) and
// the connection then closes, so what follows on it is never taken for a
// request: where a front proxy framed the body the other way, that is a
// smuggled one.

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/quiverhq/quiver/internal/httpserver"
)

// pad is a header field that makes a request's head larger than the
// server's read buffer, so the head cannot arrive whole and is read in
// pieces: the other way the server reads a head.
var pad = "X-Pad: " + strings.Repeat("p", 5<<10) + "\r\n"

const next = "GET /next HTTP/1.1\r\nHost: x\r\n\r\n"

// bothWays runs f as a parallel subtest named name twice: on head, which
// arrives whole, and on head with pad, which arrives in pieces.
func bothWays(t *testing.T, name, head string, f func(t *testing.T, head string)) {
	t.Helper()
	for _, big := range []bool{false, true} {
		name, head := name, head
		if big {
			name += ", head in pieces"
			head += pad
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f(t, head)
		})
	}
}

// A request with both Transfer-Encoding and Content-Length (RFC 9112 6.1:
// the server MUST close after responding), or with a Transfer-Encoding in
// HTTP/1.0 (6.1: the framing is faulty; close after), is answered, framed
// as net/http frames it, and its connection then closes: the request
// pipelined after it gets no answer. net/http's server keeps both
// connections, and takes an HTTP/1.0 chunked body for the next request.
func TestSuspectFramingClosesConnection(t *testing.T) {
	t.Parallel()
	ts := setup(t, echo, nil)
	cases := []struct {
		name, head, body, want string
	}{
		{"chunked and content-length", "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n", "3\r\nabc\r\n0\r\n\r\n", "abc"},
		{"content-length after chunked", "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\ncontent-length: 14\r\n", "3\r\nabc\r\n0\r\n\r\n", "abc"},
		{"http/1.0 chunked", "POST /a HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n", "3\r\nabc\r\n0\r\n\r\n", "/a"},
		{"http/1.0 chunked and content-length", "POST /a HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n", "abc", "abc"},
		{"http/1.0 gzip", "POST /a HTTP/1.0\r\nConnection: keep-alive\r\ntransfer-encoding: gzip\r\nContent-Length: 3\r\n", "abc", "abc"},
	}
	for _, tc := range cases {
		bothWays(t, tc.name, tc.head, func(t *testing.T, head string) {
			rc := dial(t, ts.addr)
			rc.send(head + "\r\n" + tc.body + next)
			resp, body := rc.read("POST")
			if resp.StatusCode != http.StatusOK || body != tc.want {
				t.Fatalf("status %d, body %q; want 200 %q", resp.StatusCode, body, tc.want)
			}
			if !resp.Close {
				t.Error("no Connection: close")
			}
			rc.expectClosed()
		})
	}
}

// The framings the server keeps the connection for. A chunked request
// whose head arrives whole is also where it would show if http.ReadRequest
// ever moved a head held whole in the read buffer: the server, no longer
// knowing the head, would close.
func TestPlainFramingKeepsConnection(t *testing.T) {
	t.Parallel()
	ts := setup(t, respond(echo), nil)
	for _, req := range []string{
		"POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\nX-Content-Length: 3\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n" + pad + "\r\n3\r\nabc\r\n0\r\n\r\n",
		"POST /a HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 3\r\nX-Transfer-Encoding: chunked\r\n\r\nabc",
	} {
		rc := dial(t, ts.addr)
		rc.send(req)
		if resp, body := rc.read("POST"); body != "abc" || resp.Close {
			t.Fatalf("%.60q: body %q, close %v", req, body, resp.Close)
		}
		checkNext(t, rc)
	}
}

// A transfer coding the server does not implement gets 501 (RFC 9112 6.1);
// a Transfer-Encoding whose last coding is not chunked leaves the body's
// length unknown, and gets 400 (6.3). Either way the connection closes.
// net/http's server answers 501 to all of them.
func TestUnsupportedTransferEncoding(t *testing.T) {
	t.Parallel()
	var reached atomic.Bool
	ts := setup(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached.Store(true) }),
		&httpserver.Options{ErrorBody: refusalBody})
	cases := []struct {
		name, fields string
		want         int
	}{
		{"gzip then chunked", "Transfer-Encoding: gzip, chunked\r\n", 501},
		{"two fields", "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n", 501},
		{"unknown coding", "Transfer-Encoding: x-custom ,CHUNKED\r\n", 501},
		{"chunked then gzip", "Transfer-Encoding: chunked, gzip\r\n", 400},
		{"gzip alone", "Transfer-Encoding: gzip\r\n", 400},
		{"identity", "Transfer-Encoding: identity\r\n", 400},
		{"identity with content-length", "Transfer-Encoding: identity\r\nContent-Length: 5\r\n", 400},
		{"chunked twice", "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", 400},
		{"chunked with a parameter", "Transfer-Encoding: chunked;q=1\r\n", 400},
		{"empty", "Transfer-Encoding: \r\n", 400},
		{"not a token", "Transfer-Encoding: gzip chunked\r\n", 400},
		{"not ascii", "Transfer-Encoding: chun\u212aed\r\n", 400},
	}
	for _, tc := range cases {
		bothWays(t, tc.name, "POST / HTTP/1.1\r\nHost: x\r\n"+tc.fields, func(t *testing.T, head string) {
			rc := dial(t, ts.addr)
			rc.send(head + "\r\n0\r\n\r\n" + next)
			resp, body, err := rc.tryRead("POST")
			if err != nil {
				t.Fatalf("no refusal: %v", err)
			}
			if resp.StatusCode != tc.want || !strings.HasPrefix(body, fmt.Sprint(tc.want, "|")) {
				t.Fatalf("status %d (%q), want %d", resp.StatusCode, body, tc.want)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/x-refusal" {
				t.Errorf("Content-Type %q, want ErrorBody's", ct)
			}
			if !resp.Close {
				t.Error("no Connection: close")
			}
			if strings.Contains(body, "gzip") || strings.Contains(body, "custom") {
				t.Errorf("the refusal repeats the coding: %q", body)
			}
			rc.expectClosed()
		})
	}
	t.Cleanup(func() {
		if reached.Load() {
			t.Error("a refused request reached the handler")
		}
	})
}

// The Host header, as RFC 9112 3.2 and net/http's server take it: required
// in HTTP/1.1 even when the target is absolute-form, once, well-formed,
// possibly empty; the absolute-form target's authority wins over it; and it
// ends up in req.Host, not req.Header. http.ReadRequest drops the Host
// header once read, so the server looks at the head itself where that
// matters: an absolute-form target, and a Host that reads as empty.
func TestHostHeader(t *testing.T) {
	t.Parallel()
	ts := setup(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.Header["Host"]; ok {
			t.Errorf("Host left in req.Header: %q", r.Header["Host"])
		}
		io.WriteString(w, "host="+r.Host)
	}), nil)
	cases := []struct {
		name       string
		req        string
		wantStatus int
		wantHost   string
	}{
		{"host", "GET / HTTP/1.1\r\nHost: api.example.test:8080\r\n\r\n", 200, "api.example.test:8080"},
		{"empty host", "GET / HTTP/1.1\r\nHost:\r\n\r\n", 200, ""},
		{"empty host, spaces", "GET / HTTP/1.1\r\nhost:  \r\n\r\n", 200, ""},
		{"absolute-form wins", "GET http://example.test/ HTTP/1.1\r\nHost: other.test\r\n\r\n", 200, "example.test"},
		{"absolute-form with empty host", "GET http://example.test/ HTTP/1.1\r\nHost:\r\n\r\n", 200, "example.test"},
		{"http/1.0 without host", "GET / HTTP/1.0\r\n\r\n", 200, ""},
		{"http/1.0 absolute-form without host", "GET http://example.test/ HTTP/1.0\r\n\r\n", 200, "example.test"},
		{"no host", "GET / HTTP/1.1\r\n\r\n", 400, ""},
		{"no host, a host-like field", "GET / HTTP/1.1\r\nX-Host: a\r\nHostname: b\r\n\r\n", 400, ""},
		{"absolute-form without host", "GET http://example.test/ HTTP/1.1\r\n\r\n", 400, ""},
		{"absolute-form without host, head in pieces", "GET http://example.test/ HTTP/1.1\r\n" + pad + "\r\n", 400, ""},
		{"absolute-form with malformed host", "GET http://example.test/ HTTP/1.1\r\nHost: a b\r\n\r\n", 400, ""},
		{"absolute-form with folded host", "GET http://example.test/ HTTP/1.1\r\nHost: a\r\n b\r\n\r\n", 400, ""},
		{"absolute-form with malformed host, head in pieces", "GET http://example.test/ HTTP/1.1\r\n" + pad + "Host: a/b\r\n\r\n", 400, ""},
		{"http/1.0 absolute-form with malformed host", "GET http://example.test/ HTTP/1.0\r\nHost: a b\r\n\r\n", 400, ""},
		{"two hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, ""},
		{"absolute-form with two hosts", "GET http://example.test/ HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n", 400, ""},
		{"malformed host", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400, ""},
		{"http/1.0 malformed host", "GET / HTTP/1.0\r\nHost: a b\r\n\r\n", 400, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rc := dial(t, ts.addr)
			rc.send(tc.req)
			resp, body := rc.read("GET")
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d (%q), want %d", resp.StatusCode, body, tc.wantStatus)
			}
			if tc.wantStatus == 200 && body != "host="+tc.wantHost {
				t.Fatalf("handler saw %q, want host=%s", body, tc.wantHost)
			}
		})
	}
}
