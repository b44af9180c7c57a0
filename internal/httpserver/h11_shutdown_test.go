package httpserver_test

import (
	"context"
	"errors"
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
	ts := setup(t, echo, &httpserver.Options{ReadHeaderTimeout: safety})
	rc := dial(t, ts.addr)
	done := make(chan error, 1)
	go func() { done <- ts.srv.Shutdown(context.Background()) }()
	if err := ts.serveResult(t); !errors.Is(err, http.ErrServerClosed) {
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
