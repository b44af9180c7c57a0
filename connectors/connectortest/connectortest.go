// Package connectortest holds the test helpers the connector packages share:
// reading a call error's kind, and servers that fail in the ways a tool's
// server can (nobody listening, never answering, cut off mid-answer). It is
// for tests only; no connector may import it.
package connectortest

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/quiverhq/quiver/connectors"
)

// Kind returns the kind of err, failing the test unless err is a
// *connectors.Error.
func Kind(t testing.TB, err error) connectors.Kind {
	t.Helper()
	var e *connectors.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T is not a *connectors.Error: %v", err, err)
	}
	return e.Kind
}

// ClosedAddr returns host:port of a loopback port nothing listens on: a
// connection to it is refused. The port stays bound (by a socket that never
// listens) until the test ends, so no server another test starts meanwhile
// can take it and answer in its place.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
}

// HangDeadline is the deadline to give a call to a HangingServer: long
// enough that the request has reached the server before it passes, even on
// a loaded machine under the race detector (a shorter one, 150 ms, was
// sometimes spent dialing, which made the call unreachable, not unknown).
const HangDeadline = time.Second

// HangingServer accepts requests, reads their bodies and never answers them
// until the test ends.
func HangingServer(t testing.TB) *httptest.Server {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs first: cleanups are LIFO
	return srv
}

// CutServer answers every request with the raw bytes of head (the start of
// an HTTP response, or nothing) and closes the connection.
func CutServer(t testing.TB, head string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		buf.WriteString(head)
		buf.Flush()
		conn.Close()
	}))
	t.Cleanup(srv.Close)
	return srv
}
