package httpserver_test

import (
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/httpserver"
)

// A keep-alive connection answered in quick turns keeps the idle deadline
// it got after its first answer: moving it after every answer modified a
// runtime timer, and so woke a thread, once per call.
func TestIdleDeadlineNotMovedPerAnswer(t *testing.T) {
	t.Parallel()
	ts, dl := setupCounting(t, echo, &httpserver.Options{IdleTimeout: time.Minute})
	rc := dial(t, ts.addr)
	for range 10 {
		rc.send(get)
		rc.read("GET")
	}
	// The first request's head deadline, then one idle deadline.
	if n := dl.reads.Load(); n != 2 {
		t.Fatalf("%d read deadlines set for 10 quick requests, want 2", n)
	}
}

// deadlines counts the deadlines set on a server's connections.
type deadlines struct {
	reads, writes atomic.Int64
}

// setupCounting is setup with connections that count their deadlines.
func setupCounting(t *testing.T, h http.Handler, opts *httpserver.Options) (*testServer, *deadlines) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dl := &deadlines{}
	ts := &testServer{srv: httpserver.New(h, opts), addr: ln.Addr().String(), served: make(chan error, 1)}
	go func() { ts.served <- ts.srv.Serve(countingDeadlines{ln, dl}) }()
	t.Cleanup(func() { ts.srv.Close() })
	return ts, dl
}

type countingDeadlines struct {
	net.Listener
	dl *deadlines
}

func (l countingDeadlines) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	// Embedding *net.TCPConn keeps SyscallConn, which the server uses.
	return deadlineConn{c.(*net.TCPConn), l.dl}, nil
}

type deadlineConn struct {
	*net.TCPConn
	dl *deadlines
}

func (c deadlineConn) SetReadDeadline(d time.Time) error {
	if !d.IsZero() {
		c.dl.reads.Add(1)
	}
	return c.TCPConn.SetReadDeadline(d)
}

func (c deadlineConn) SetWriteDeadline(d time.Time) error {
	if !d.IsZero() {
		c.dl.writes.Add(1)
	}
	return c.TCPConn.SetWriteDeadline(d)
}
