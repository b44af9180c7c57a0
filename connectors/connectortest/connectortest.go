// Package connectortest holds the test helpers the connector packages share:
// reading a call error's kind, servers that fail in the ways a tool's
// server can (nobody listening, never answering, cut off mid-answer), and a
// slow link to a server. It is for tests only; no connector may import it.
package connectortest

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/egress"
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

// SlowLink returns the address of a TCP proxy to target that delays every
// byte, and every close, by delay each way, as a link with that one-way
// latency does: what one side sends or closes, the other side sees delay
// later. A server's close of an idle connection is thus on its way for a
// while, during which a client can still write a request into it.
func SlowLink(t testing.TB, target string, delay time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, s)
			mu.Unlock()
			go delayed(c.(*net.TCPConn), s.(*net.TCPConn), delay)
			go delayed(s.(*net.TCPConn), c.(*net.TCPConn), delay)
		}
	}()
	return ln.Addr().String()
}

// delayed copies from src to dst, each chunk and the end of the stream
// delay after src gave it. A clean end (FIN) is passed on as one (a
// half-close); a failed read or write (a reset) closes both at once.
func delayed(src, dst *net.TCPConn, delay time.Duration) {
	type chunk struct {
		due  time.Time
		data []byte // nil: the end of the stream
		err  error
	}
	q := make(chan chunk, 256)
	go func() {
		defer close(q)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				q <- chunk{due: time.Now().Add(delay), data: buf[:n]}
			}
			if err != nil {
				q <- chunk{due: time.Now().Add(delay), err: err}
				return
			}
		}
	}()
	broken := false
	for c := range q { // to the end, so that the reader is never stuck
		if broken {
			continue
		}
		time.Sleep(time.Until(c.due))
		switch {
		case c.data != nil:
			if _, err := dst.Write(c.data); err != nil {
				src.Close()
				dst.Close()
				broken = true
			}
		case errors.Is(c.err, io.EOF):
			dst.CloseWrite()
		default:
			src.Close()
			dst.Close()
		}
	}
}

// PublicDial returns a dial function for a connector's transport under the
// egress guard in its tests: "public.test" (any port) is dialled to addr
// without the guard, the stand-in for a public server, since every test
// server is on loopback, which the guard refuses; everything else goes
// through the guard, as in production. inside, if not nil, counts the dials
// that got past the guard to anything else.
func PublicDial(addr string, inside *atomic.Int32) func(ctx context.Context, network, a string) (net.Conn, error) {
	guarded := egress.Dialer(egress.Options{})
	return func(ctx context.Context, network, a string) (net.Conn, error) {
		if strings.HasPrefix(a, "public.test:") {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}
		conn, err := guarded.DialContext(ctx, network, a)
		if err == nil && inside != nil {
			inside.Add(1)
		}
		return conn, err
	}
}
