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

// TestServerMetadataIssuer: RFC 8414 §3.3 has a client use authorization
// server metadata only when its issuer is the one the well-known URI was
// made from. A document naming no issuer cannot show that, so it is
// refused like one naming another (a mix-up defence); one differing only
// by a trailing slash is the same issuer.
func TestServerMetadataIssuer(t *testing.T) {
	for name, c := range map[string]struct {
		issuer  func(base string) string // nil: the document has no issuer
		wantErr string
	}{
		"the same":            {issuer: func(b string) string { return b }},
		"with a slash":        {issuer: func(b string) string { return b + "/" }},
		"none":                {wantErr: "names no issuer"},
		"another":             {issuer: func(string) string { return "https://as.other.test" }, wantErr: "another issuer"},
		"another path, empty": {issuer: func(b string) string { return b + "/tenant" }, wantErr: "another issuer"},
	} {
		t.Run(name, func(t *testing.T) {
			var srv *httptest.Server
			srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/.well-known/oauth-authorization-server" {
					http.NotFound(w, r)
					return
				}
				issuer := ""
				if c.issuer != nil {
					issuer = fmt.Sprintf(`"issuer":%q,`, c.issuer(srv.URL))
				}
				fmt.Fprintf(w, `{%s"authorization_endpoint":"%s/authorize","token_endpoint":"%[2]s/token"}`, issuer, srv.URL)
			}))
			t.Cleanup(srv.Close)
			box, _ := secrets.New(bytes.Repeat([]byte{7}, 32))
			f := New(Options{PublicURL: "http://quiver.test", AllowPrivate: true, Box: box,
				Logger: slog.New(slog.NewTextHandler(&testlog.Buffer{}, nil))})
			sm, err := f.serverMetadata(context.Background(), srv.URL)
			switch {
			case c.wantErr == "" && (err != nil || sm == nil || sm.TokenEndpoint != srv.URL+"/token"):
				t.Fatalf("serverMetadata = %+v, %v; want the document", sm, err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("serverMetadata = %+v, %v; want an error saying %q", sm, err, c.wantErr)
			}
		})
	}
}

// TestDiscoverNeedsPKCEMetadata: the MCP authorization spec has a client
// refuse an authorization server whose metadata does not list
// code_challenge_methods_supported (or lists it without S256): without it
// the client cannot know the server checks PKCE, the one defence of the
// code. Nothing is registered at such a server.
func TestDiscoverNeedsPKCEMetadata(t *testing.T) {
	for name, c := range map[string]struct {
		methods string // the member's JSON, "" for none
		ok      bool
	}{
		"S256":       {methods: `["plain","S256"]`, ok: true},
		"none given": {},
		"plain only": {methods: `["plain"]`},
		"empty":      {methods: `[]`},
	} {
		t.Run(name, func(t *testing.T) {
			var registered bool
			var srv *httptest.Server
			srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/.well-known/oauth-protected-resource":
					fmt.Fprintf(w, `{"resource":"%s/mcp","authorization_servers":[%[1]q]}`, srv.URL)
				case "/.well-known/oauth-authorization-server":
					methods := ""
					if c.methods != "" {
						methods = `,"code_challenge_methods_supported":` + c.methods
					}
					fmt.Fprintf(w, `{"issuer":%q,"authorization_endpoint":"%[1]s/authorize","token_endpoint":"%[1]s/token","registration_endpoint":"%[1]s/register"%s}`, srv.URL, methods)
				case "/register":
					registered = true
					w.WriteHeader(http.StatusCreated)
					fmt.Fprint(w, `{"client_id":"c1"}`)
				default:
					http.NotFound(w, r)
				}
			}))
			t.Cleanup(srv.Close)
			box, _ := secrets.New(bytes.Repeat([]byte{7}, 32))
			f := New(Options{PublicURL: "http://quiver.test", AllowPrivate: true, Box: box,
				Logger: slog.New(slog.NewTextHandler(&testlog.Buffer{}, nil))})
			refusal := &mcp.OAuthRequiredError{ResourceMetadataURL: srv.URL + "/.well-known/oauth-protected-resource",
				Refusal: &connectors.FieldError{Field: "bearer_token", Message: "no"}}
			d, _, err := f.Discover(context.Background(), refusal, srv.URL+"/mcp")
			if c.ok != (err == nil) {
				t.Fatalf("Discover = %+v, %v; want success %v", d, err, c.ok)
			}
			if !c.ok && (!strings.Contains(err.Error(), "S256") || registered) {
				t.Errorf("error %q (registered %v): want one naming S256, before registering", err, registered)
			}
		})
	}
}
