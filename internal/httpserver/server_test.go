package httpserver_test

// The server is tested from the outside, over real loopback connections:
// net/http's client where a well-behaved client is the point, and raw bytes
// where the test is about what is on the wire (framing, pipelining,
// refusals, when the connection closes). This file has the helpers and the
// connection's life: keep-alive, pipelining, timeouts, panics, shutdown.
// request_test.go covers what the server makes of a request,
// response_test.go what a handler writes.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/httpserver"
	"github.com/quiverhq/quiver/internal/testlog"
)

// safety bounds every blocking read and write of a test, so a server that
// fails to answer fails the test instead of hanging it. Nothing waits for it
// when the server behaves.
const safety = 5 * time.Second

type testServer struct {
	srv      *httpserver.Server
	addr     string
	url      string
	accepted atomic.Int64
	served   chan error // what Serve returned
}

// setup serves h on a fresh loopback listener until the test ends.
func setup(t *testing.T, h http.Handler, opts *httpserver.Options) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{
		srv:    httpserver.New(h, opts),
		addr:   ln.Addr().String(),
		url:    "http://" + ln.Addr().String(),
		served: make(chan error, 1),
	}
	go func() { ts.served <- ts.srv.Serve(countingListener{ln, &ts.accepted}) }()
	t.Cleanup(func() { ts.srv.Close() })
	return ts
}

// countingListener counts accepted connections, to tell keep-alive from a
// client that quietly redialled.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// serveResult waits for Serve to return.
func (ts *testServer) serveResult(t *testing.T) error {
	t.Helper()
	return receive(t, ts.served, "Serve did not return")
}

// receive waits, within safety, for a value on ch; failing that it fails
// the test with msg.
func receive[T any](t *testing.T, ch <-chan T, msg string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(safety):
		t.Fatal(msg)
		panic("unreachable")
	}
}

// client returns a net/http client of its own, so connection reuse is the
// test's alone.
func client(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: safety}
}

// rawConn speaks HTTP/1.x by hand.
type rawConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dial(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(safety))
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, br: bufio.NewReader(c)}
}

func (rc *rawConn) send(s string) {
	rc.t.Helper()
	if _, err := io.WriteString(rc.c, s); err != nil {
		rc.t.Fatalf("write: %v", err)
	}
}

// tryRead reads one response to a request with method, and all its body.
func (rc *rawConn) tryRead(method string) (*http.Response, string, error) {
	resp, err := http.ReadResponse(rc.br, &http.Request{Method: method})
	if err != nil {
		return nil, "", err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b), err
}

func (rc *rawConn) read(method string) (*http.Response, string) {
	rc.t.Helper()
	resp, body, err := rc.tryRead(method)
	if err != nil {
		rc.t.Fatalf("reading a response: %v", err)
	}
	return resp, body
}

// expectClosed checks that the server closed the connection cleanly, with
// nothing more to say.
func (rc *rawConn) expectClosed() {
	rc.t.Helper()
	b, err := io.ReadAll(rc.br)
	if err != nil {
		rc.t.Fatalf("waiting for the server to close: %v (after %q)", err, b)
	}
	if len(b) > 0 {
		rc.t.Fatalf("after the response, %d more bytes: %q", len(b), b)
	}
}

const get = "GET / HTTP/1.1\r\nHost: example.test\r\n\r\n"

// echo answers with the request's body, or with its path when it has none.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if len(b) == 0 {
		b = []byte(r.URL.Path)
	}
	w.Write(b)
})

// checkNext sends another request on rc and checks its answer, proving the
// previous response ended exactly where it said.
func checkNext(t *testing.T, rc *rawConn) {
	t.Helper()
	rc.send("GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, body := rc.read("GET")
	if resp.StatusCode != http.StatusOK || body != "next" {
		t.Fatalf("the next response is %d %q: the previous one was framed wrong", resp.StatusCode, body)
	}
}

// getOnce serves h (through respond) and sends it one GET on a raw
// connection; it returns the connection, for checkNext, and the answer.
func getOnce(t *testing.T, h http.HandlerFunc) (*rawConn, *http.Response, string) {
	t.Helper()
	rc := dial(t, setup(t, respond(h), nil).addr)
	rc.send(get)
	resp, body := rc.read("GET")
	return rc, resp, body
}

// respond serves h for every path but /next, which answers "next".
func respond(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/next" {
			io.WriteString(w, "next")
			return
		}
		h(w, r)
	})
}

// Sequential requests from net/http's client share one connection.
func TestKeepAliveReusesConnection(t *testing.T) {
	t.Parallel()
	ts := setup(t, echo, nil)
	c := client(t)
	for i := range 5 {
		var reused bool
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
			GotConn: func(info httptrace.GotConnInfo) { reused = info.Reused },
		})
		want := strings.Repeat("x", 1+i*1000)
		req, _ := http.NewRequestWithContext(ctx, "POST", ts.url, strings.NewReader(want))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(b) != want {
			t.Fatalf("request %d: %d bytes, want %d, %v", i, len(b), len(want), err)
		}
		if reused != (i > 0) {
			t.Errorf("request %d: reused = %v", i, reused)
		}
	}
	if n := ts.accepted.Load(); n != 1 {
		t.Errorf("%d connections accepted, want 1", n)
	}
}

// Requests written back to back in one write are all answered, in order.
func TestPipelinedRequestsAnsweredInOrder(t *testing.T) {
	t.Parallel()
	ts := setup(t, echo, nil)
	rc := dial(t, ts.addr)
	rc.send("GET /one HTTP/1.1\r\nHost: x\r\n\r\n" +
		"POST /two HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\ntwo" +
		"POST /three HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nth\r\n3\r\nree\r\n0\r\n\r\n" +
		"GET /four HTTP/1.1\r\nHost: x\r\n\r\n")
	for _, want := range []string{"/one", "two", "three", "/four"} {
		if _, body := rc.read("GET"); body != want {
			t.Fatalf("got %q, want %q", body, want)
		}
	}
}

// IdleTimeout closes a keep-alive connection that sends nothing more.
func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	const idle = 100 * time.Millisecond
	ts := setup(t, echo, &httpserver.Options{IdleTimeout: idle})
	rc := dial(t, ts.addr)
	start := time.Now()
	rc.send(get)
	rc.read("GET")
	rc.expectClosed()
	if d := time.Since(start); d < idle {
		t.Fatalf("closed after %v, before the idle timeout", d)
	}
}

// ReadHeaderTimeout closes a connection whose header block stalls, with no
// response: a stall inside a line is not a malformed request.
func TestReadHeaderTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 100 * time.Millisecond
	for _, partial := range []string{"GET / HTTP/1.1\r\nHost: x\r\n", "GET / HT", "GET / HTTP/1.1\r\nHo"} {
		t.Run(fmt.Sprintf("%q", partial), func(t *testing.T) {
			t.Parallel()
			ts := setup(t, echo, &httpserver.Options{ReadHeaderTimeout: timeout})
			// A connection's first head is due ReadHeaderTimeout from its
			// accept, which comes after the dial starts.
			start := time.Now()
			rc := dial(t, ts.addr)
			rc.send(partial)
			rc.expectClosed()
			if d := time.Since(start); d < timeout {
				t.Fatalf("closed after %v, before the timeout", d)
			}
		})
	}
}

// A request that arrives whole is read without a deadline of its own;
// what follows it on the connection is still bounded: a head that stalls
// behind it by ReadHeaderTimeout, a body that stalls by BodyTimeout.
func TestStallAfterAWholeRequest(t *testing.T) {
	t.Parallel()
	const timeout = 100 * time.Millisecond
	opts := &httpserver.Options{ReadHeaderTimeout: timeout, BodyTimeout: timeout, IdleTimeout: time.Hour}
	for name, stall := range map[string]string{
		"head": "GET /two HTTP/1.1\r\nHost: x\r\n",
		"body": "POST /two HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nhalf!",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ts := setup(t, echo, opts)
			rc := dial(t, ts.addr)
			rc.send(get) // the connection's idle deadline is now IdleTimeout's
			rc.read("GET")
			start := time.Now()
			rc.send("POST /one HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\none" + stall)
			if _, body := rc.read("POST"); body != "one" {
				t.Fatalf("got %q, want %q", body, "one")
			}
			if name == "body" {
				rc.read("POST") // the handler's read fails; the answer says so
			}
			rc.expectClosed()
			if d := time.Since(start); d < timeout {
				t.Fatalf("closed after %v, before the timeout", d)
			}
		})
	}
}

// A new connection owes its first request within ReadHeaderTimeout: one
// that sends nothing is not kept for the (longer) IdleTimeout.
func TestSilentNewConnection(t *testing.T) {
	t.Parallel()
	ts := setup(t, echo, &httpserver.Options{ReadHeaderTimeout: 100 * time.Millisecond, IdleTimeout: time.Hour})
	rc := dial(t, ts.addr)
	rc.expectClosed()
}

// A panicking handler costs its connection and nothing else; the panic is
// logged unless it is http.ErrAbortHandler, which means "abort quietly".
func TestHandlerPanic(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		value     any
		wantLog   bool
		afterBody bool // panic after writing part of the response
	}{
		{"panic", "boom", true, false},
		{"panic after a write", "boom", true, true},
		{"abort handler", http.ErrAbortHandler, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var logs testlog.Buffer
			ts := setup(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/panic" {
					if tc.afterBody {
						io.WriteString(w, "partial")
					}
					panic(tc.value)
				}
				io.WriteString(w, "fine")
			}), &httpserver.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})

			rc := dial(t, ts.addr)
			rc.send("GET /panic HTTP/1.1\r\nHost: x\r\n\r\n")
			if _, _, err := rc.tryRead("GET"); err == nil {
				t.Fatal("got a response from a handler that panicked")
			}
			// The connection is gone, the server is not.
			rc2 := dial(t, ts.addr)
			rc2.send(get)
			if _, body := rc2.read("GET"); body != "fine" {
				t.Fatalf("next connection: %q", body)
			}
			// The server logs before it closes the connection, so the log
			// is complete by now.
			if logged := strings.Contains(logs.String(), "panic"); logged != tc.wantLog {
				t.Fatalf("logged = %v, want %v: %s", logged, tc.wantLog, logs.String())
			}
		})
	}
}

// blocker is a handler that holds its request until released.
type blocker struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func newBlocker(t *testing.T) *blocker {
	b := &blocker{entered: make(chan struct{}, 1), release: make(chan struct{})}
	t.Cleanup(b.free)
	return b
}

func (b *blocker) free() { b.once.Do(func() { close(b.release) }) }

func (b *blocker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/block" {
		io.WriteString(w, "quick")
		return
	}
	b.entered <- struct{}{}
	<-b.release
	io.WriteString(w, "done")
}

func (b *blocker) waitEntered(t *testing.T) {
	t.Helper()
	receive(t, b.entered, "the handler was not reached")
}

// Shutdown closes idle connections at once, lets a request in flight
// finish (its response saying Connection: close), and then returns.
func TestShutdown(t *testing.T) {
	t.Parallel()
	b := newBlocker(t)
	ts := setup(t, b, nil)

	idle := dial(t, ts.addr)
	idle.send(get)
	idle.read("GET")
	busy := dial(t, ts.addr)
	busy.send("GET /block HTTP/1.1\r\nHost: x\r\n\r\n")
	b.waitEntered(t)

	done := make(chan error, 1)
	go func() { done <- ts.srv.Shutdown(context.Background()) }()
	// Serve returning shows Shutdown has begun.
	if err := ts.serveResult(t); !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve returned %v, want http.ErrServerClosed", err)
	}
	idle.expectClosed()
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v with a request in flight", err)
	default:
	}

	b.free()
	resp, body := busy.read("GET")
	if body != "done" || !resp.Close {
		t.Fatalf("in-flight response: body %q, close %v", body, resp.Close)
	}
	busy.expectClosed()
	if err := receive(t, done, "Shutdown did not return"); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// Shutdown gives up when its context ends before the handlers do.
func TestShutdownContextExpires(t *testing.T) {
	t.Parallel()
	b := newBlocker(t)
	ts := setup(t, b, nil)
	busy := dial(t, ts.addr)
	busy.send("GET /block HTTP/1.1\r\nHost: x\r\n\r\n")
	b.waitEntered(t)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := ts.srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want context.DeadlineExceeded", err)
	}
	// The request still finishes.
	b.free()
	if _, body := busy.read("GET"); body != "done" {
		t.Fatalf("body %q", body)
	}
}

// A server shut down or closed serves no listener.
func TestServeAfterStop(t *testing.T) {
	t.Parallel()
	stops := map[string]func(*httpserver.Server) error{
		"shutdown": func(s *httpserver.Server) error { return s.Shutdown(context.Background()) },
		"close":    (*httpserver.Server).Close,
	}
	for name, stop := range stops {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := httpserver.New(echo, nil)
			if err := stop(srv); err != nil {
				t.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				t.Fatalf("Serve = %v, want http.ErrServerClosed", err)
			}
		})
	}
}

// Close does not wait: busy connections close under their handlers, and
// Serve returns http.ErrServerClosed.
func TestCloseClosesBusyConnections(t *testing.T) {
	t.Parallel()
	b := newBlocker(t)
	ts := setup(t, b, nil)
	busy := dial(t, ts.addr)
	busy.send("GET /block HTTP/1.1\r\nHost: x\r\n\r\n")
	b.waitEntered(t)
	if err := ts.srv.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := busy.tryRead("GET"); err == nil {
		t.Fatal("a response came through a closed connection")
	}
	if err := ts.serveResult(t); !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve = %v, want http.ErrServerClosed", err)
	}
}
