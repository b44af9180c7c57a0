package oauth

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/quiverhq/quiver/connectors/connectortest"
	"github.com/quiverhq/quiver/internal/testlog"
)

// TestDiscoveryEgressGuard: discovery from a public MCP server, with the
// flow's own client (the egress guard, private addresses refused), never
// reaches a loopback address its metadata names or redirects to: the
// resource metadata, the authorization server's metadata and the
// registration endpoint alike. inside counts connections to the loopback
// server; "public.test" stands for a public host (connectortest.PublicDial).
func TestDiscoveryEgressGuard(t *testing.T) {
	var inside atomic.Int32
	private := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inside.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{}`)
	}))
	t.Cleanup(private.Close)
	port := private.URL[strings.LastIndex(private.URL, ":")+1:]
	cases := map[string]struct{ resource, issuer, register, redirect string }{
		"resource metadata at a private address": {resource: private.URL + "/rm"},
		"resource metadata by name":              {resource: "http://localhost:" + port + "/rm"},
		"resource metadata redirected inside":    {redirect: private.URL + "/rm"},
		"issuer at a private address":            {issuer: private.URL},
		"issuer as a mapped address":             {issuer: "http://[::ffff:127.0.0.1]:" + port},
		"registration at a private address":      {register: private.URL + "/register"},
		"registration by name":                   {register: "http://localhost:" + port + "/register"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			inside.Store(0)
			issuer := firstNonEmpty(c.issuer, "http://public.test:1")
			register := firstNonEmpty(c.register, "http://public.test:1/register")
			public := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.URL.Path == "/rm" && c.redirect != "":
					http.Redirect(w, r, c.redirect, http.StatusFound)
				case r.URL.Path == "/rm":
					fmt.Fprintf(w, `{"resource":"http://public.test:1/mcp","authorization_servers":[%q]}`, issuer)
				case strings.HasPrefix(r.URL.Path, "/.well-known/oauth-authorization-server"):
					fmt.Fprintf(w, `{"issuer":%q,"authorization_endpoint":"http://public.test:1/authorize","token_endpoint":"http://public.test:1/token","registration_endpoint":%q,"code_challenge_methods_supported":["S256"]}`, issuer, register)
				case r.URL.Path == "/register":
					w.WriteHeader(http.StatusCreated)
					fmt.Fprint(w, `{"client_id":"c1"}`)
				default:
					http.NotFound(w, r)
				}
			}))
			t.Cleanup(public.Close)
			f := New(Options{PublicURL: "http://quiver.test", Logger: slog.New(slog.NewTextHandler(&testlog.Buffer{}, nil))})
			f.opts.HTTPClient.Transport.(*http.Transport).DialContext = connectortest.PublicDial(strings.TrimPrefix(public.URL, "http://"), &inside)
			rm := firstNonEmpty(c.resource, "http://public.test:1/rm")
			if _, err := f.discover(context.Background(), rm, "", "http://public.test:1/mcp"); err == nil {
				t.Errorf("discovery succeeded")
			}
			if n := inside.Load(); n != 0 {
				t.Errorf("the private address was dialled %d times", n)
			}
		})
	}
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
