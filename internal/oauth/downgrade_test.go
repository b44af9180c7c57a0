package oauth

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/connectors/mcp"
	"github.com/quiverhq/quiver/internal/secrets"
	"github.com/quiverhq/quiver/internal/testlog"
)

// TestDiscoverRefusesDowngrade: a URL learned from a document read over
// TLS is used only over TLS. An https MCP server whose metadata sends the
// code, the client secret or the tokens to a plain-http endpoint (a
// misconfigured or tampered document) is refused at discovery, before
// anything is registered; a plain-http revocation endpoint is dropped.
func TestDiscoverRefusesDowngrade(t *testing.T) {
	plain := httptest.NewServer(http.NotFoundHandler()) // a plain-http host the documents may name
	t.Cleanup(plain.Close)
	cases := map[string]struct {
		metadataURL func(tls string) string // the 401's resource_metadata ("" for the well-known URI)
		issuer      func(tls string) string
		endpoint    string // the AS metadata field that points at plain http
		redirect    bool   // the resource metadata redirects to plain http
		wantErr     string // "" when discovery succeeds
	}{
		"token endpoint":         {endpoint: "token_endpoint", wantErr: "token endpoint"},
		"authorization endpoint": {endpoint: "authorization_endpoint", wantErr: "authorization endpoint"},
		"registration endpoint":  {endpoint: "registration_endpoint", wantErr: "registration endpoint"},
		"issuer":                 {issuer: func(string) string { return plain.URL }, wantErr: "authorization server"},
		"resource metadata":      {metadataURL: func(string) string { return plain.URL + "/.well-known/oauth-protected-resource" }, wantErr: "protected-resource metadata"},
		"redirect to plain http": {redirect: true, wantErr: "redirected from https",
			metadataURL: func(tls string) string { return tls + "/.well-known/oauth-protected-resource/mcp" }},
		"revocation endpoint only": {endpoint: "revocation_endpoint"},
		"none":                     {},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var registered bool
			var srv *httptest.Server
			srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/.well-known/oauth-protected-resource/mcp":
					if c.redirect {
						http.Redirect(w, r, plain.URL+r.URL.Path, http.StatusFound)
						return
					}
					issuer := srv.URL
					if c.issuer != nil {
						issuer = c.issuer(srv.URL)
					}
					fmt.Fprintf(w, `{"resource":"%s/mcp","authorization_servers":[%q]}`, srv.URL, issuer)
				case "/.well-known/oauth-authorization-server":
					eps := map[string]string{
						"authorization_endpoint": srv.URL + "/authorize", "token_endpoint": srv.URL + "/token",
						"registration_endpoint": srv.URL + "/register", "revocation_endpoint": srv.URL + "/revoke",
					}
					if c.endpoint != "" {
						eps[c.endpoint] = plain.URL + "/" + c.endpoint
					}
					fmt.Fprintf(w, `{"issuer":%q,"authorization_endpoint":%q,"token_endpoint":%q,"registration_endpoint":%q,"revocation_endpoint":%q,"code_challenge_methods_supported":["S256"]}`,
						srv.URL, eps["authorization_endpoint"], eps["token_endpoint"], eps["registration_endpoint"], eps["revocation_endpoint"])
				case "/register":
					registered = true
					w.WriteHeader(http.StatusCreated)
					fmt.Fprint(w, `{"client_id":"c1","client_secret":"s1"}`)
				default:
					http.NotFound(w, r)
				}
			}))
			t.Cleanup(srv.Close)
			box, err := secrets.New(bytes.Repeat([]byte{7}, 32))
			if err != nil {
				t.Fatal(err)
			}
			f := New(Options{PublicURL: "http://quiver.test", AllowPrivate: true, Box: box, HTTPClient: srv.Client(),
				Logger: slog.New(slog.NewTextHandler(&testlog.Buffer{}, nil))})
			refusal := &mcp.OAuthRequiredError{Refusal: &connectors.FieldError{Field: "bearer_token", Message: "no"}}
			if c.metadataURL != nil {
				refusal.ResourceMetadataURL = c.metadataURL(srv.URL)
			}
			d, ok, err := f.Discover(context.Background(), refusal, srv.URL+"/mcp")
			if !ok {
				t.Fatalf("ok = false (err %v), want the server taken as OAuth-protected", err)
			}
			if c.wantErr == "" {
				if err != nil || d == nil {
					t.Fatalf("Discover = %+v, %v; want success", d, err)
				}
				if c.endpoint == "revocation_endpoint" && d.RevocationURL != "" {
					t.Errorf("RevocationURL = %q, want a plain-http one left out", d.RevocationURL)
				}
				return
			}
			if err == nil {
				t.Fatalf("Discover = %+v, nil; want a refusal naming the %s", d, c.wantErr)
			}
			if !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), "https") {
				t.Errorf("error %q does not name the %s and https", err, c.wantErr)
			}
			if registered {
				t.Error("a client was registered before the downgrade was refused")
			}
		})
	}
}
