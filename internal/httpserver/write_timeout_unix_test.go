//go:build unix

package httpserver_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/httpserver"
)

// A client that stops reading cannot hold its connection and handler
// forever: once the socket's buffers are full, a write the client does
// not take within WriteTimeout fails, and a graceful stop is not held up.
func TestWriteTimeout(t *testing.T) {
	t.Parallel()
	writeErr := make(chan error, 1)
	ts := setup(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := bytes.Repeat([]byte("x"), 1<<20)
		for range 64 { // far more than any socket buffers
			if _, err := w.Write(chunk); err != nil {
				writeErr <- err
				return
			}
		}
		writeErr <- nil
	}), &httpserver.Options{WriteTimeout: 200 * time.Millisecond})
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	c, err := d.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	// Never read. The handler's write fails once WriteTimeout passes
	// without progress.
	if err := receive(t, writeErr, "the handler's write to a client that does not read never failed"); err == nil {
		t.Fatal("64 MiB went to a client that reads nothing")
	}
	ctx, cancel := context.WithTimeout(context.Background(), safety)
	defer cancel()
	if err := ts.srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// An answer the socket takes at once is written with no write deadline
// (setting one modifies a runtime timer, which wakes a thread): only a
// write that has to wait for the client is bounded, as TestWriteTimeout
// shows.
func TestAnswerTakenAtOnceSetsNoWriteDeadline(t *testing.T) {
	t.Parallel()
	ts, dl := setupCounting(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte("x"), 10<<10))
	}), &httpserver.Options{WriteTimeout: time.Second})
	rc := dial(t, ts.addr)
	for range 5 {
		rc.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		if resp, body := rc.read("GET"); resp.StatusCode != 200 || len(body) != 10<<10 {
			t.Fatalf("%d, %d bytes", resp.StatusCode, len(body))
		}
	}
	if n := dl.writes.Load(); n != 0 {
		t.Fatalf("%d write deadlines set for answers the socket took at once", n)
	}
}
