package mcp

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/nowait"
)

// closingServer is an HTTP/1.1 server that says nothing of how long it
// keeps an idle connection (as Node does on an event stream's answer) and
// closes one idle for closeAfter. A request that arrives on a connection
// idle for at least dropAfter (< closeAfter) is dropped unanswered, the
// connection closed: the request came in as the server's keep-alive timer
// fired, which on a real server is a race of a millisecond, made a window
// here. It answers each request's body back; ran counts the requests it
// answered.
type closingServer struct {
	ln                    net.Listener
	dropAfter, closeAfter time.Duration

	mu    sync.Mutex
	conns int
	ran   int
	drops int
}

func newClosingServer(t *testing.T, dropAfter, closeAfter time.Duration) *closingServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &closingServer{ln: ln, dropAfter: dropAfter, closeAfter: closeAfter}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns++
			s.mu.Unlock()
			go s.serve(c)
		}
	}()
	return s
}

func (s *closingServer) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	idleSince := time.Time{} // zero: a new connection's first request
	for {
		c.SetReadDeadline(time.Now().Add(s.closeAfter))
		if _, err := br.Peek(1); err != nil {
			return // idle for closeAfter, or closed by the client
		}
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		body, _ := io.ReadAll(req.Body)
		if !idleSince.IsZero() && time.Since(idleSince) >= s.dropAfter {
			s.mu.Lock()
			s.drops++
			s.mu.Unlock()
			return
		}
		s.mu.Lock()
		s.ran++
		s.mu.Unlock()
		resp := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: keep-alive\r\nContent-Length: " +
			strconv.Itoa(len(body)) + "\r\n\r\n" + string(body)
		if _, err := io.WriteString(c, resp); err != nil {
			return
		}
		idleSince = time.Now()
	}
}

func (s *closingServer) counts() (conns, ran, drops int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns, s.ran, s.drops
}

func (s *closingServer) post(c *http.Client, body string) (string, error) {
	resp, err := c.Post("http://"+s.ln.Addr().String()+"/mcp", "application/json", strings.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// TestH1LearnsHowLongAServerKeepsAnIdleConnection: a server that says
// nothing of its keep-alive timeout and keeps an idle connection for less
// than reuseUnsaid (Node with a short keepAliveTimeout, on an event
// stream's answer) closes a pooled connection at the moment a request is
// written into it, now and then: a tools/call lost unrun, its outcome
// unknown. Once the transport has seen that server close an idle
// connection (found closed before use, or lost that way), it reuses none
// idle that long again, less the margin it takes off a Keep-Alive timeout.
func TestH1LearnsHowLongAServerKeepsAnIdleConnection(t *testing.T) {
	const dropAfter, closeAfter = 250 * time.Millisecond, 400 * time.Millisecond
	// wait lets the pooled connection idle into the drop window.
	const wait = 300 * time.Millisecond

	t.Run("from a connection found closed", func(t *testing.T) {
		if !nowait.Available {
			t.Skip("idle connections cannot be looked at here (nowait_other.go)")
		}
		s := newClosingServer(t, dropAfter, closeAfter)
		tr := newH1Transport((&net.Dialer{}).DialContext, nil)
		t.Cleanup(tr.close)
		c := &http.Client{Transport: tr}
		if _, err := s.post(c, "a"); err != nil {
			t.Fatal(err)
		}
		// The server closes the idle connection; the next request finds
		// it closed and goes on a new one.
		time.Sleep(closeAfter + 100*time.Millisecond)
		if got, err := s.post(c, "b"); err != nil || got != "b" {
			t.Fatalf("after the server closed the idle connection: %q, %v", got, err)
		}
		// Idle into the window: written into a connection the server is
		// closing, unless the transport learnt not to reuse it.
		for i := range 3 {
			time.Sleep(wait)
			if got, err := s.post(c, "c"); err != nil || got != "c" {
				conns, ran, drops := s.counts()
				t.Fatalf("call %d idle %v: %q, %v (connections %d, ran %d, dropped %d)", i, wait, got, err, conns, ran, drops)
			}
		}
	})

	t.Run("from a request lost that way", func(t *testing.T) {
		s := newClosingServer(t, dropAfter, closeAfter)
		tr := newH1Transport((&net.Dialer{}).DialContext, nil)
		t.Cleanup(tr.close)
		c := &http.Client{Transport: tr}
		if _, err := s.post(c, "a"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(wait)
		if _, err := s.post(c, "lost"); err == nil {
			t.Fatal("a request into the drop window was answered: the test server is broken")
		}
		for i := range 3 {
			time.Sleep(wait)
			if got, err := s.post(c, "c"); err != nil || got != "c" {
				conns, ran, drops := s.counts()
				t.Fatalf("call %d idle %v after one was lost: %q, %v (connections %d, ran %d, dropped %d)", i, wait, got, err, conns, ran, drops)
			}
		}
	})

	t.Run("a bound is forgotten", func(t *testing.T) {
		var b idleBounds
		now := time.Now()
		b.saw("k", 2*time.Second, now)
		b.saw("k", 3*time.Second, now)
		if d, ok := b.limit("k", now.Add(time.Second)); !ok || d != time.Second {
			t.Fatalf("limit %v, %v; want 1s, true", d, ok)
		}
		if _, ok := b.limit("other", now); ok {
			t.Fatal("a bound for an origin never seen")
		}
		if _, ok := b.limit("k", now.Add(boundFor+time.Second)); ok {
			t.Fatal("a bound outlived boundFor")
		}
	})
}
