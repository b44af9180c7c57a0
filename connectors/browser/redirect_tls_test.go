package browser_test

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/connectors/browser"
	"github.com/quiverhq/quiver/connectors/connectortest"
)

// TestFetchPageRedirectToUnconnectable: a redirect to a server no
// connection could be made to (a TLS certificate the browser does not
// trust, a TLS handshake that never ends) sent nothing there, and what
// reached the first server was a GET: the call is tool_unreachable, as it
// is when the first server is the one that cannot be connected to, not
// tool_outcome_unknown, which holds its key terminal.
func TestFetchPageRedirectToUnconnectable(t *testing.T) {
	t.Parallel()
	untrusted := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	untrusted.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are expected
	untrusted.StartTLS()
	t.Cleanup(untrusted.Close)
	mute, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mute.Close() })
	held := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := mute.Accept()
			if err != nil {
				return
			}
			held <- c // never speaks TLS
		}
	}()
	t.Cleanup(func() {
		for len(held) > 0 {
			(<-held).Close()
		}
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	c := browser.New(browser.Options{AllowPrivate: true})
	for name, to := range map[string]string{"untrusted certificate": untrusted.URL + "/", "silent TLS": "https://" + mute.Addr().String() + "/"} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := call(t, c, ctx, srv.URL+"/go?to="+url.QueryEscape(to))
		cancel()
		if k := connectortest.Kind(t, err); k != connectors.KindUnreachable {
			t.Errorf("%s: kind %s (%v), want %s", name, k, err, connectors.KindUnreachable)
		}
	}
	// The first server itself, for comparison: unreachable already.
	if _, err := call(t, c, context.Background(), untrusted.URL+"/"); connectortest.Kind(t, err) != connectors.KindUnreachable {
		t.Errorf("first hop untrusted: %v", err)
	}
}
