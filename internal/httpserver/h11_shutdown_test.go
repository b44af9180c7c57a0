package httpserver_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/httpserver"
)

// A connection accepted before Shutdown whose first request had not been
// read yet (in flight, or about to be sent) is not closed under it, as
// net/http does not close one in its first seconds: its request is
// answered, with Connection: close. Closing it lost the request with no
// answer, a client unable to tell it from one lost after it ran.
func TestShutdownAnswersANewConnection(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httpserver.New(echo, &httpserver.Options{ReadHeaderTimeout: safety})
	t.Cleanup(func() { srv.Close() })
	accepting := make(chan struct{}, 2)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(acceptSignal{ln, accepting}) }()
	receive(t, accepting, "Serve did not accept")
	rc := dial(t, ln.Addr().String())
	// Serve back in Accept: the connection dialled is the server's.
	receive(t, accepting, "Serve did not take the connection")
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(context.Background()) }()
	if err := receive(t, served, "Serve did not return"); !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve returned %v, want http.ErrServerClosed", err)
	}
	time.Sleep(50 * time.Millisecond) // Shutdown's first sweep of idle connections is behind
	rc.send(get)
	resp, body, err := rc.tryRead("GET")
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	if resp.StatusCode != http.StatusOK || body != "/" || !resp.Close {
		t.Fatalf("status %d %q, close %v; want 200 and Connection: close", resp.StatusCode, body, resp.Close)
	}
	rc.expectClosed()
	if err := receive(t, done, "Shutdown did not return"); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// acceptSignal tells each time Serve enters Accept.
type acceptSignal struct {
	net.Listener
	entered chan<- struct{}
}

func (l acceptSignal) Accept() (net.Conn, error) {
	select {
	case l.entered <- struct{}{}:
	default:
	}
	return l.Listener.Accept()
}

// A new connection that sends nothing holds Shutdown no longer than
// ReadHeaderTimeout, which bounds its first request.
func TestShutdownSilentNewConnection(t *testing.T) {
	t.Parallel()
	const timeout = 200 * time.Millisecond
	ts := setup(t, echo, &httpserver.Options{ReadHeaderTimeout: timeout, IdleTimeout: time.Hour})
	rc := dial(t, ts.addr)
	start := time.Now()
	if err := ts.srv.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if d := time.Since(start); d > timeout+time.Second {
		t.Fatalf("Shutdown took %v", d)
	}
	rc.expectClosed()
}
