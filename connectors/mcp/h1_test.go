package mcp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/egress"
	"github.com/quiverhq/quiver/internal/nowait"
)

// h1Server counts the connections it accepted.
func h1Server(t *testing.T, tlsOn bool, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	if tlsOn {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv, &conns
}

func h1Client(t *testing.T, srv *httptest.Server) (*http.Client, *h1Transport) {
	t.Helper()
	var cfg *tls.Config
	if srv.TLS != nil {
		pool := x509.NewCertPool()
		pool.AddCert(srv.Certificate())
		cfg = &tls.Config{RootCAs: pool}
	}
	tr := newH1Transport((&net.Dialer{}).DialContext, cfg)
	t.Cleanup(tr.close)
	return &http.Client{Transport: tr}, tr
}

func h1Post(t *testing.T, c *http.Client, url, body string) string {
	t.Helper()
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func echoHandler(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	w.Write(b)
}

// TestH1ReusesConnections: plain and TLS, sequential requests share one
// connection, and each gets its own answer.
func TestH1ReusesConnections(t *testing.T) {
	for _, tlsOn := range []bool{false, true} {
		srv, conns := h1Server(t, tlsOn, echoHandler)
		c, _ := h1Client(t, srv)
		for i := range 5 {
			want := strings.Repeat("x", i*1000)
			if got := h1Post(t, c, srv.URL, want); got != want {
				t.Fatalf("tls=%v: answer %d has %d bytes, want %d", tlsOn, i, len(got), len(want))
			}
		}
		if n := conns.Load(); n != 1 {
			t.Fatalf("tls=%v: %d connections, want 1", tlsOn, n)
		}
	}
}

// TestH1ServerClosedIdle: a connection the server closed while it was idle
// is noticed before use, and the request goes on a new one.
func TestH1ServerClosedIdle(t *testing.T) {
	if !nowait.Available {
		t.Skip("idle connections cannot be looked at here (nowait_other.go)")
	}
	srv, conns := h1Server(t, false, echoHandler)
	c, tr := h1Client(t, srv)
	h1Post(t, c, srv.URL, "a")
	srv.CloseClientConnections()
	// Wait for the FIN to reach the pooled connection.
	key := "http://" + srv.Listener.Addr().String()
	if !eventually(t, 2*time.Second, func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return len(tr.idle[key]) == 1 && !tr.idle[key][0].sock.Quiet()
	}) {
		t.Fatal("the pooled connection never saw the server close it")
	}
	if got := h1Post(t, c, srv.URL, "b"); got != "b" {
		t.Fatalf("answer %q", got)
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
}

// TestH1NotReusedUnlessReadToTheEnd: a body closed early, or an answer
// with Connection: close, closes its connection.
func TestH1NotReusedUnlessReadToTheEnd(t *testing.T) {
	srv, conns := h1Server(t, false, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/close" {
			w.Header().Set("Connection", "close")
		}
		w.Write([]byte(strings.Repeat("y", 64<<10)))
	})
	c, tr := h1Client(t, srv)
	resp, err := c.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	io.CopyN(io.Discard, resp.Body, 10)
	resp.Body.Close()
	h1Post(t, c, srv.URL+"/close", "")
	h1Post(t, c, srv.URL+"/", "")
	if n := conns.Load(); n != 3 {
		t.Fatalf("%d connections, want 3", n)
	}
	tr.mu.Lock()
	idle := len(tr.idle["http://"+srv.Listener.Addr().String()])
	tr.mu.Unlock()
	if idle != 1 {
		t.Fatalf("%d idle connections, want 1", idle)
	}
}

// TestH1ContextEndsTheExchange: a context that ends while the server is
// silent ends the request at once, and its connection is not reused.
func TestH1ContextEndsTheExchange(t *testing.T) {
	release := make(chan struct{})
	srv, conns := h1Server(t, false, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-release
		}
		w.Write([]byte("ok"))
	})
	defer close(release)
	c, _ := h1Client(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/slow", strings.NewReader("{}"))
	start := time.Now()
	_, err := c.Do(req)
	if err == nil || !isTimeout(err) {
		t.Fatalf("error %v, want a timeout", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}
	if got := h1Post(t, c, srv.URL+"/", ""); got != "ok" {
		t.Fatalf("answer %q", got)
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
}

// TestH1FailedHandshakeIsAFailureToConnect: a TLS handshake that fails
// (here: a certificate nobody vouches for) sent nothing of the request, and
// says so, as a refused dial does.
func TestH1FailedHandshakeIsAFailureToConnect(t *testing.T) {
	srv, _ := h1Server(t, true, echoHandler)
	tr := newH1Transport((&net.Dialer{}).DialContext, nil) // the system's roots only
	t.Cleanup(tr.close)
	_, err := (&http.Client{Transport: tr}).Post(srv.URL, "application/json", strings.NewReader("{}"))
	if err == nil || !egress.IsConnectFailure(err) {
		t.Fatalf("error %v: not a failure to connect", err)
	}
}

// TestH1ClosesStaleIdleConnections: the reaper closes connections idle
// past idleTimeout; fresher ones stay.
func TestH1ClosesStaleIdleConnections(t *testing.T) {
	srv, conns := h1Server(t, false, echoHandler)
	c, tr := h1Client(t, srv)
	tr.idleTimeout = 50 * time.Millisecond
	h1Post(t, c, srv.URL, "a")
	tr.closeStale()
	tr.mu.Lock()
	n := len(tr.idle)
	tr.mu.Unlock()
	if n != 1 {
		t.Fatalf("a fresh connection was closed")
	}
	time.Sleep(60 * time.Millisecond)
	tr.closeStale()
	tr.mu.Lock()
	n = len(tr.idle)
	tr.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d origins still have idle connections", n)
	}
	h1Post(t, c, srv.URL, "b")
	if got := conns.Load(); got != 2 {
		t.Fatalf("%d connections, want 2", got)
	}
}

// TestH1ReleasedDrain: a released body gives the caller back at once
// whatever the rest does. A rest the server already sent is read without a
// deadline (no runtime timer) and keeps the connection; one held back is
// read on a goroutine of its own, under the bound from the first read that
// has to wait, and keeps the connection if it comes in time; one that does
// not come in time closes it.
func TestH1ReleasedDrain(t *testing.T) {
	if !nowait.Available {
		t.Skip("a socket cannot be read without waiting here (nowait_other.go)")
	}
	rest := make(chan struct{})
	srv, conns := h1Server(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("answer"))
		if r.URL.Path == "/whole" {
			return
		}
		w.(http.Flusher).Flush()
		select { // then the end of the chunked body
		case <-rest:
		case <-time.After(5 * time.Second):
		}
	})
	var deadlines atomic.Int64
	tr := newH1Transport(func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return deadlineCounter{c.(*net.TCPConn), &deadlines}, nil
	}, nil)
	t.Cleanup(tr.close)
	c := &http.Client{Transport: tr}
	// answer reads the first part of an answer, as a call reads its result.
	answer := func() *h1Body {
		t.Helper()
		resp, err := c.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, len("answer"))
		if _, err := io.ReadFull(resp.Body, b); err != nil || string(b) != "answer" {
			t.Fatalf("read %q, %v", b, err)
		}
		return resp.Body.(*h1Body)
	}
	// release releases body and fails if that waited.
	release := func(body *h1Body, d time.Duration) time.Time {
		t.Helper()
		start := time.Now()
		body.release(d)
		body.Close() // as the caller's deferred Close does: no effect now
		if took := time.Since(start); took > 50*time.Millisecond {
			t.Fatalf("release took %v: the caller waited for the rest", took)
		}
		return start
	}
	pooled := func() int { return idleConns(tr) }
	ended := func(body *h1Body) bool {
		body.mu.Lock()
		defer body.mu.Unlock()
		return body.done
	}

	// The rest has come: read at once, no deadline, the connection kept.
	body := answer()
	rest <- struct{}{}
	if !eventually(t, 2*time.Second, func() bool { return !body.pc.sock.Quiet() }) {
		t.Fatal("the end of the body never reached the socket")
	}
	release(body, time.Second)
	if !ended(body) || pooled() != 1 {
		t.Fatalf("a rest that had come was not read at once (ended %v, %d pooled)", ended(body), pooled())
	}
	if n := deadlines.Load(); n != 0 {
		t.Fatalf("%d read deadlines set to read what had come", n)
	}

	// The rest comes after the release, within the bound: the connection
	// goes back to the pool once it has.
	body = answer()
	release(body, 5*time.Second)
	time.Sleep(20 * time.Millisecond)
	if ended(body) {
		t.Fatal("the body ended before its rest was sent")
	}
	rest <- struct{}{}
	if !eventually(t, 2*time.Second, func() bool { return pooled() == 1 }) {
		t.Fatal("the connection never went back to the pool after the rest came")
	}
	if n := deadlines.Load(); n != 1 {
		t.Fatalf("%d read deadlines set, want the bound's 1", n)
	}

	// The rest does not come within the bound: the connection is closed.
	body = answer()
	start := release(body, 100*time.Millisecond)
	if !eventually(t, 2*time.Second, func() bool { return ended(body) }) {
		t.Fatal("the bound of 100ms never ended the drain")
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("the bound of 100ms ended the drain after %v", d)
	}
	if pooled() != 0 {
		t.Fatal("a connection whose body was cut short went back to the pool")
	}
	rest <- struct{}{}
	if got := h1Post(t, c, srv.URL+"/whole", ""); got != "answer" {
		t.Fatalf("answer %q", got)
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections, want the first one twice more, then a new one after a body cut short", n)
	}
}

// TestH1ContextAndTheDrain: a context that ended before the release closes
// the connection at once (arming the bound must not replace the past
// deadline the context set); one that ends after it, as a call's does when
// it returns, leaves the drain to its bound and the connection to the pool.
func TestH1ContextAndTheDrain(t *testing.T) {
	rest := make(chan struct{})
	srv, conns := h1Server(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("answer"))
		w.(http.Flusher).Flush()
		select {
		case <-rest:
		case <-time.After(5 * time.Second):
		}
	})
	c, tr := h1Client(t, srv)
	answer := func(ctx context.Context) *h1Body {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, len("answer"))
		if _, err := io.ReadFull(resp.Body, b); err != nil {
			t.Fatal(err)
		}
		return resp.Body.(*h1Body)
	}
	pooled := func() bool { return idleConns(tr) == 1 }

	ctx, cancel := context.WithCancel(context.Background())
	body := answer(ctx)
	body.release(5 * time.Second)
	cancel()
	rest <- struct{}{}
	if !eventually(t, 2*time.Second, pooled) {
		t.Fatal("a context that ended after the release cut the drain")
	}

	ctx, cancel = context.WithCancel(context.Background())
	body = answer(ctx)
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections, want the first one again", n)
	}
	cancel()
	if !eventually(t, 2*time.Second, func() bool { return body.pc.src.cut.Load() }) {
		t.Fatal("the context's end never reached the connection")
	}
	body.release(5 * time.Second)
	body.mu.Lock()
	done := body.done
	body.mu.Unlock()
	if !done {
		t.Fatal("a body whose context had ended was drained")
	}
	if _, err := body.pc.conn.Read(make([]byte, 1)); err == nil {
		t.Fatal("the connection of a body whose context had ended is open")
	}
	rest <- struct{}{}
}

// idleConns counts the connections in tr's pool.
func idleConns(tr *h1Transport) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	n := 0
	for _, list := range tr.idle {
		n += len(list)
	}
	return n
}

// deadlineCounter counts the read deadlines set on a connection.
type deadlineCounter struct {
	*net.TCPConn
	n *atomic.Int64
}

func (c deadlineCounter) SetReadDeadline(d time.Time) error {
	if !d.IsZero() {
		c.n.Add(1)
	}
	return c.TCPConn.SetReadDeadline(d)
}

// TestH1HonoursKeepAliveTimeout: a server that says how long it keeps an
// idle connection (Keep-Alive: timeout=N, as Node's http server does on a
// TypeScript MCP server's JSON answers) closes it about then, and a request
// written into it as it closes is lost or, worse, run with its answer lost:
// a tools/call whose outcome is unknown. A connection idle that long, less a
// margin for the way there, goes unused, and timeout=0 means not to keep it
// at all. One whose server did not say (Node's event streams, uvicorn) is
// reused for as long as those servers keep one, less the margin
// (reuseUnsaid); a longer hint is taken, up to idleTimeout.
func TestH1HonoursKeepAliveTimeout(t *testing.T) {
	for _, tc := range []struct {
		header string
		idle   time.Duration
		conns  int64
	}{
		{"", 3 * time.Second, 1},
		{"", 4500 * time.Millisecond, 2},
		{"timeout=60", 20 * time.Second, 1},
		{"timeout=60", 31 * time.Second, 2},
		{"timeout=5", 3 * time.Second, 1},
		{"timeout=5", 4500 * time.Millisecond, 2},
		{"Timeout=5, max=100", 4500 * time.Millisecond, 2},
		{"max=100, timeout=5", 4500 * time.Millisecond, 2},
		{"timeout=1", 400 * time.Millisecond, 1},
		{"timeout=1", 600 * time.Millisecond, 2},
		{"timeout=0", 0, 2},
		{"timeout=x", 4500 * time.Millisecond, 2},
		// Spellings RFC 2068's grammar allows, and a hint in a second
		// header line (a proxy's): each taken, the shortest if several.
		{"timeout = 2", 1500 * time.Millisecond, 2},
		{`timeout="2"`, 1500 * time.Millisecond, 2},
		{"max=100\ntimeout=2", 1500 * time.Millisecond, 2},
		{"timeout=10\ntimeout=2", 1500 * time.Millisecond, 2},
		{"timeout=x, timeout=2", 1500 * time.Millisecond, 2},
		{"timeout=2\ntimeout=10", 500 * time.Millisecond, 1},
	} {
		srv, conns := h1Server(t, false, func(w http.ResponseWriter, r *http.Request) {
			if tc.header != "" {
				for _, line := range strings.Split(tc.header, "\n") {
					w.Header().Add("Keep-Alive", line)
				}
			}
			echoHandler(w, r)
		})
		c, tr := h1Client(t, srv)
		h1Post(t, c, srv.URL, "a")
		tr.mu.Lock()
		for _, list := range tr.idle {
			for _, pc := range list {
				pc.since = pc.since.Add(-tc.idle) // idle that long, without waiting
			}
		}
		tr.mu.Unlock()
		if got := h1Post(t, c, srv.URL, "b"); got != "b" {
			t.Fatalf("%q: answer %q", tc.header, got)
		}
		if n := conns.Load(); n != tc.conns {
			t.Errorf("Keep-Alive %q, idle %v: %d connections, want %d", tc.header, tc.idle, n, tc.conns)
		}
	}
}
