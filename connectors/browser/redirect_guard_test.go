package browser

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/connectors/connectortest"
	"github.com/quiverhq/quiver/internal/egress"
)

// TestRedirectIntoThePrivateNetwork: a public page that redirects to a
// loopback, private or reserved address (literal or a name that resolves
// there) is refused (KindRejected: 422 invalid_arguments on url) and the
// address is never reached. Before, the guard's refusal of the second hop
// came back as KindOutcomeUnknown (504 tool_outcome_unknown), as though
// the page had been lost mid-answer.
//
// Every test server is on loopback, which the guard refuses, so the first
// hop goes to a name ("public.test") that this test's transport dials
// without the guard: the stand-in for a public site. Everything else is
// dialled through the guard, as in production. This cannot be set up
// through the HTTP API, where QUIVER_EGRESS_ALLOW_PRIVATE is one switch.
func TestRedirectIntoThePrivateNetwork(t *testing.T) {
	t.Parallel()
	var inside atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		inside.Add(1)
		_, _ = w.Write([]byte("<title>inside</title>"))
	}))
	t.Cleanup(target.Close)
	port := target.URL[strings.LastIndex(target.URL, ":")+1:]
	public := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/landing" {
			_, _ = w.Write([]byte("<title>landed</title>"))
			return
		}
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	}))
	t.Cleanup(public.Close)
	publicAddr := strings.TrimPrefix(public.URL, "http://")

	c := New(Options{})
	tr := egress.Transport(c.guard)
	tr.DialContext = connectortest.PublicDial(publicAddr, nil)
	c.client.Transport = tr

	for _, to := range []string{"http://127.0.0.1:" + port + "/", "http://[::1]:" + port + "/", "http://localhost:" + port + "/"} {
		args, _ := json.Marshal(map[string]string{"url": "http://public.test:1/go?to=" + to})
		_, err := c.Call(context.Background(), &connectors.Tool{}, "fetch_page", args)
		if k := connectors.KindOf(err); k != connectors.KindRejected {
			t.Errorf("redirect to %s: kind %s (%v), want %s", to, k, err, connectors.KindRejected)
		}
	}
	if n := inside.Load(); n != 0 {
		t.Errorf("the private address was reached %d times", n)
	}
	// A redirect that stays public is followed as before.
	args, _ := json.Marshal(map[string]string{"url": "http://public.test:1/go?to=/landing"})
	if _, err := c.Call(context.Background(), &connectors.Tool{}, "fetch_page", args); err != nil {
		t.Fatalf("public redirect: %v", err)
	}
}
