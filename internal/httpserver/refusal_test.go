package httpserver_test

// The request side: bodies and what the server does with the part a
// handler leaves unread, Expect: 100-continue, the requests the server
// refuses itself, who keeps a connection alive, and what a handler finds in
// its *http.Request.

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/quiverhq/quiver/internal/api"
	"github.com/quiverhq/quiver/internal/httpserver"
)

// refusalBody is a custom Options.ErrorBody, to check the server uses it.
func refusalBody(r httpserver.Refusal) (string, []byte) {
	return "application/x-refusal", []byte(fmt.Sprintf("%d|%s", r.Status, r.Message))
}

// What net/http's server refuses before any handler runs, this one refuses
// too, with Options.ErrorBody's rendering, and closes the connection.
func TestRefusals(t *testing.T) {
	t.Parallel()
	var reached atomic.Bool
	ts := setup(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Store(true)
	}), &httpserver.Options{ErrorBody: refusalBody, MaxHeaderBytes: 1 << 10})

	cases := []struct {
		name   string
		req    string
		want   int
		unread bool // the server stops reading partway: see TestCloseWithUnreadInput
	}{
		{"no host", "GET / HTTP/1.1\r\n\r\n", 400, false},
		{"absolute-form, no host", "GET http://x/ HTTP/1.1\r\n\r\n", 400, false},
		{"absolute-form, malformed host", "GET http://x/ HTTP/1.1\r\nHost: a b\r\n\r\n", 400, false},
		{"two hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", 400, false},
		{"unsupported transfer coding", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501, false},
		{"chunked not last", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n", 400, false},
		{"malformed request line", "GET /\r\nHost: x\r\n\r\n", 400, false},
		{"not http", "HELLO\r\n\r\n", 400, false},
		{"bad header name", "GET / HTTP/1.1\r\nHost: x\r\nBad Name: v\r\n\r\n", 400, false},
		{"bad header value", "GET / HTTP/1.1\r\nHost: x\r\nX-V: a\x00b\r\n\r\n", 400, false},
		{"two content lengths", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400, false},
		{"other expectation", "POST / HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Length: 1\r\n\r\na", 417, false},
		{"http/2", "GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505, false},
		{"oversized header block", "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("b", 16<<10) + "\r\n\r\n", 431, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rc := dial(t, ts.addr)
			rc.send(tc.req)
			resp, body, err := rc.tryRead("GET")
			if err != nil {
				t.Fatalf("no refusal: %v", err)
			}
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d (%q), want %d", resp.StatusCode, body, tc.want)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/x-refusal" {
				t.Errorf("Content-Type %q, want ErrorBody's", ct)
			}
			if prefix := fmt.Sprint(tc.want, "|"); !strings.HasPrefix(body, prefix) || len(body) == len(prefix) {
				t.Errorf("body %q, want ErrorBody's with a message", body)
			}
			if !resp.Close {
				t.Error("no Connection: close")
			}
			if !tc.unread {
				rc.expectClosed()
			}
		})
	}
	t.Cleanup(func() {
		if reached.Load() {
			t.Error("a refused request reached the handler")
		}
	})
}

// A header line http.ReadRequest refuses is named in the refusal, never
// repeated (it may hold a credential), and OnRefusal's fields go out.
func TestRefusalNamesTheMalformedHeader(t *testing.T) {
	t.Parallel()
	var got httpserver.Refusal
	var mu sync.Mutex
	ts := setup(t, http.NotFoundHandler(), &httpserver.Options{
		ErrorBody: func(r httpserver.Refusal) (string, []byte) {
			mu.Lock()
			got = r
			mu.Unlock()
			return refusalBody(r)
		},
		OnRefusal: func(httpserver.Refusal) http.Header { return http.Header{"X-Request-Id": {"req_1"}} },
	})
	rc := dial(t, ts.addr)
	rc.send("GET / HTTP/1.1\r\nHost: x\r\nx-api-key: secret\x01\r\n\r\n")
	resp, body, err := rc.tryRead("GET")
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if resp.StatusCode != 400 || got.Header != "X-Api-Key" || strings.Contains(got.Message, "secret") || strings.Contains(body, "secret") {
		t.Fatalf("%d %s, refusal %+v", resp.StatusCode, body, got)
	}
	if resp.Header.Get("X-Request-Id") != "req_1" {
		t.Errorf("X-Request-Id %q", resp.Header.Get("X-Request-Id"))
	}
}

// A request-target that does not parse (a bad percent-escape, no leading
// slash, a control character) is refused like any other malformed request
// line: 400 with the API's envelope and X-Request-Id, then the connection
// closes. http.ReadRequest reports it as a *url.Error, which also satisfies
// net.Error; taken for a failed read, it once cost the client its answer.
// The server is configured as the app configures it, so the test sees what
// a client sees.
func TestRefusalBadRequestTarget(t *testing.T) {
	t.Parallel()
	var reached atomic.Bool
	ts := setup(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Store(true)
	}), &httpserver.Options{ErrorBody: api.RefusalBody, OnRefusal: func(httpserver.Refusal) http.Header { return api.RefusalHeader() }})

	for _, target := range []string{
		"/%ZZ",
		"/api/v1/agents/%ZZ",
		"foo",
		"/%",
		"/a\x7fb",
		"/agents/%ZZ?api_key=qv_secret_value", // the target is not repeated
	} {
		t.Run(fmt.Sprintf("%q", target), func(t *testing.T) {
			t.Parallel()
			rc := dial(t, ts.addr)
			rc.send("GET " + target + " HTTP/1.1\r\nHost: x\r\n\r\n")
			resp, body, err := rc.tryRead("GET")
			if err != nil {
				t.Fatalf("no refusal: %v", err)
			}
			if resp.StatusCode != http.StatusBadRequest || !resp.Close {
				t.Fatalf("status %d, close %v, want 400 and close: %s", resp.StatusCode, resp.Close, body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
			var env struct{ Error, Message string }
			if err := json.Unmarshal([]byte(body), &env); err != nil || env.Error != "bad_request" || env.Message == "" {
				t.Errorf("envelope %s (%v), want bad_request with a message", body, err)
			}
			if strings.Contains(body, "secret") {
				t.Errorf("the refusal repeats the target: %s", body)
			}
			if id := resp.Header.Get("X-Request-Id"); !strings.HasPrefix(id, "req_") {
				t.Errorf("X-Request-Id %q", id)
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

// A client that stops sending partway through its headers, the request
// line and each header line so far well-formed, gets no answer: the read
// ended, nothing was malformed. (ReadHeaderTimeout's stall is
// TestReadHeaderTimeout.)
func TestClientGoneMidRequest(t *testing.T) {
	t.Parallel()
	ts := setup(t, echo, nil)
	for _, partial := range []string{
		"GET / HTTP/1.1\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nX-Half: v",
		"GET / HT",                          // cut inside the request line
		"GET / HTTP/1.1\r\nHost: x\r\nX-Ha", // inside a header's name
	} {
		t.Run(fmt.Sprintf("%q", partial), func(t *testing.T) {
			t.Parallel()
			rc := dial(t, ts.addr)
			rc.send(partial)
			if err := rc.c.(*net.TCPConn).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			rc.expectClosed()
		})
	}
}

// Whatever net/http quotes of a request it cannot parse (the request line,
// a header line without a colon, a Content-Length) stays out of the
// refusal, which goes to the client and to the log: it may hold a
// credential.
func TestRefusalQuotesNothingOfTheRequest(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	ts := setup(t, http.NotFoundHandler(), &httpserver.Options{
		ErrorBody: refusalBody,
		OnRefusal: func(r httpserver.Refusal) http.Header {
			mu.Lock()
			got = append(got, r.Message)
			mu.Unlock()
			return nil
		},
	})
	for _, req := range []string{
		"GET /agents/?api_key=SECRET1\r\nHost: x\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nX-API-KEY qv_SECRET2\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: SECRET3\r\n\r\n",
		"GET / HTTP/SECRET4\r\nHost: x\r\n\r\n",
	} {
		rc := dial(t, ts.addr)
		rc.send(req)
		resp, body, err := rc.tryRead("GET")
		if err != nil {
			t.Fatalf("%q: no refusal: %v", req, err)
		}
		if resp.StatusCode != 400 || strings.Contains(body, "SECRET") || !strings.Contains(body, "Malformed") {
			t.Errorf("%q: %d %s", req, resp.StatusCode, body)
		}
	}
	// Two Content-Length values: net/http's reason quotes them after
	// "; got [", which goes, and not only its quoted part.
	rc := dial(t, ts.addr)
	rc.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello")
	if resp, body, err := rc.tryRead("POST"); err != nil || resp.StatusCode != 400 ||
		!strings.HasSuffix(body, "multiple Content-Length headers.") {
		t.Errorf("two Content-Length values: %v %s", err, body)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, m := range got {
		if strings.Contains(m, "SECRET") {
			t.Errorf("the refusal handed on holds the request: %q", m)
		}
	}
}

// A malformed header's refusal names the header, but no more of a long
// name than a line can use: the name may be as long as the head allows,
// and the message goes to the log as well as the answer.
func TestRefusalCutsALongHeaderName(t *testing.T) {
	t.Parallel()
	ts := setup(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), &httpserver.Options{ErrorBody: refusalBody})
	rc := dial(t, ts.addr)
	name := "X-" + strings.Repeat("n", 20<<10)
	rc.send("GET / HTTP/1.1\r\nHost: x\r\n" + name + ": a\x01b\r\n\r\n")
	resp, body, err := rc.tryRead("GET")
	if err != nil {
		t.Fatalf("no refusal: %v", err)
	}
	if resp.StatusCode != 400 || len(body) > 256 || !strings.Contains(body, "X-Nnnn") || !strings.Contains(body, "…") {
		t.Fatalf("status %d, body of %d bytes (%.120q); want 400 naming the header's start", resp.StatusCode, len(body), body)
	}
}
