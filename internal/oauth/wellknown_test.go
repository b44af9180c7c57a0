package oauth

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/connectors/mcp"
	"github.com/quiverhq/quiver/internal/secrets"
	"github.com/quiverhq/quiver/internal/testlog"
)

func TestWellKnownResourceURIs(t *testing.T) {
	for in, want := range map[string][]string{
		"https://h.test/mcp":            {"https://h.test/.well-known/oauth-protected-resource/mcp", "https://h.test/.well-known/oauth-protected-resource"},
		"https://h.test/public/mcp/":    {"https://h.test/.well-known/oauth-protected-resource/public/mcp", "https://h.test/.well-known/oauth-protected-resource"},
		"https://h.test:8443/mcp?k=v#f": {"https://h.test:8443/.well-known/oauth-protected-resource/mcp", "https://h.test:8443/.well-known/oauth-protected-resource"},
		"http://h.test":                 {"http://h.test/.well-known/oauth-protected-resource"},
		"http://h.test/":                {"http://h.test/.well-known/oauth-protected-resource"},
		"http://h.test/a%2Fb":           {"http://h.test/.well-known/oauth-protected-resource/a%2Fb", "http://h.test/.well-known/oauth-protected-resource"},
		"ftp://h.test/mcp":              nil,
		"":                              nil,
	} {
		if got := wellKnownResourceURIs(in); !slices.Equal(got, want) {
			t.Errorf("wellKnownResourceURIs(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestDiscoverWellKnown: a 401 that names no resource metadata is
// discovered from the server's well-known URIs, path-inserted first, and
// is left to be the refusal it was (ok false) when neither serves metadata
// naming an authorization server for this server.
func TestDiscoverWellKnown(t *testing.T) {
	refusal := &mcp.OAuthRequiredError{Scope: "tools", Refusal: &connectors.FieldError{Field: "bearer_token", Message: "no"}}
	cases := map[string]struct {
		docs    map[string]string // path → resource metadata (%[1]s is the server's URL)
		found   bool
		fetched []string
	}{
		"path-inserted": {docs: map[string]string{
			"/.well-known/oauth-protected-resource/mcp": `{"resource":"%[1]s/mcp","authorization_servers":["%[1]s"]}`,
			"/.well-known/oauth-protected-resource":     `{"resource":"%[1]s","authorization_servers":["http://elsewhere.invalid"]}`,
		}, found: true, fetched: []string{"/.well-known/oauth-protected-resource/mcp"}},
		"root": {docs: map[string]string{
			"/.well-known/oauth-protected-resource": `{"resource":"%[1]s","authorization_servers":["%[1]s"]}`,
		}, found: true, fetched: []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"}},
		"neither": {fetched: []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"}},
		"another resource's": {docs: map[string]string{
			"/.well-known/oauth-protected-resource": `{"resource":"https://other.test/mcp","authorization_servers":["%[1]s"]}`,
		}, fetched: []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"}},
		"another path's on the same host": {docs: map[string]string{
			"/.well-known/oauth-protected-resource/mcp": `{"resource":"%[1]s/mc","authorization_servers":["%[1]s"]}`,
			"/.well-known/oauth-protected-resource":     `{"resource":"%[1]s/other/mcp","authorization_servers":["%[1]s"]}`,
		}, fetched: []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"}},
		"no authorization server": {docs: map[string]string{
			"/.well-known/oauth-protected-resource/mcp": `{"resource":"%[1]s/mcp","authorization_servers":[]}`,
		}, fetched: []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"}},
		"not JSON": {docs: map[string]string{
			"/.well-known/oauth-protected-resource/mcp": `<html>`,
		}, fetched: []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			var fetched []string
			var srv *httptest.Server
			srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/.well-known/oauth-authorization-server":
					fmt.Fprintf(w, `{"issuer":%q,"authorization_endpoint":"%[1]s/authorize","token_endpoint":"%[1]s/token","registration_endpoint":"%[1]s/register","code_challenge_methods_supported":["S256"]}`, srv.URL)
					return
				case "/register":
					w.WriteHeader(http.StatusCreated)
					fmt.Fprint(w, `{"client_id":"c1"}`)
					return
				}
				mu.Lock()
				fetched = append(fetched, r.URL.Path)
				mu.Unlock()
				doc, ok := c.docs[r.URL.Path]
				if !ok {
					http.NotFound(w, r)
					return
				}
				fmt.Fprintf(w, doc, srv.URL)
			}))
			t.Cleanup(srv.Close)
			box, err := secrets.New(bytes.Repeat([]byte{7}, 32))
			if err != nil {
				t.Fatal(err)
			}
			f := New(Options{PublicURL: "http://quiver.test", AllowPrivate: true, Box: box,
				Logger: slog.New(slog.NewTextHandler(&testlog.Buffer{}, nil))})
			d, ok, err := f.Discover(context.Background(), refusal, srv.URL+"/mcp?key=k")
			if ok != c.found {
				t.Fatalf("ok = %v (err %v), want %v", ok, err, c.found)
			}
			if c.found && (err != nil || d == nil || d.ClientID != "c1" || d.AuthorizationURL != srv.URL+"/authorize" || !slices.Equal(d.Scopes, []string{"tools"})) {
				t.Errorf("discovered %+v, %v", d, err)
			}
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(fetched, c.fetched) {
				t.Errorf("fetched %q, want %q", fetched, c.fetched)
			}
		})
	}
}
