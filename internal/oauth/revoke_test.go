package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/quiverhq/quiver/internal/secrets"
	"github.com/quiverhq/quiver/internal/store"
	"github.com/quiverhq/quiver/internal/testlog"
	"github.com/quiverhq/quiver/internal/toolconfig"
)

// TestRevokeTokens: a discovered provider's tokens are revoked refresh
// token first, each with its hint, and the client authenticates as at the
// token endpoint: HTTP Basic, in the form, or (a public client) with its ID
// alone. A provider without a revocation endpoint is sent nothing, and a
// refusal is logged by its error code, never with the token.
func TestRevokeTokens(t *testing.T) {
	type seen struct{ form, basic string }
	var mu sync.Mutex
	var got []seen
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil || r.URL.Path != "/revoke" || r.Method != http.MethodPost {
			t.Errorf("%s %s", r.Method, r.URL)
		}
		id, secret, _ := r.BasicAuth()
		mu.Lock()
		got = append(got, seen{form: r.PostForm.Encode(), basic: id + ":" + secret})
		mu.Unlock()
		w.WriteHeader(status)
		if status != http.StatusOK {
			w.Write([]byte(`{"error":"unsupported_token_type","error_description":"at_secret"}`))
		}
	}))
	t.Cleanup(srv.Close)
	box, err := secrets.New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	logs := &testlog.Buffer{}
	f := New(Options{PublicURL: "http://quiver.test", AllowPrivate: true, Box: box, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	tool := func(method, secret, revocation string, tok *toolconfig.Token) *store.Tool {
		d := &toolconfig.DiscoveredOAuth{Issuer: srv.URL, AuthorizationURL: srv.URL + "/authorize", TokenURL: srv.URL + "/token",
			ClientID: "c 1", AuthMethod: method, RevocationURL: revocation}
		if secret != "" {
			d.ClientSecret = box.Seal([]byte(secret))
		}
		cfg, _ := json.Marshal(map[string]any{toolconfig.DiscoveredKey: d})
		sealed, err := toolconfig.SealToken(box, tok)
		if err != nil {
			t.Fatal(err)
		}
		return &store.Tool{ID: 7, CatalogName: "custom-mcp", Config: string(cfg), OAuthToken: sealed}
	}
	both := &toolconfig.Token{AccessToken: "at_secret", RefreshToken: "rt_secret"}
	for _, c := range []struct {
		name           string
		method, secret string
		tok            *toolconfig.Token
		want           []seen
	}{
		{"basic", "client_secret_basic", "s3", both, []seen{
			{"token=rt_secret&token_type_hint=refresh_token", "c+1:s3"},
			{"token=at_secret&token_type_hint=access_token", "c+1:s3"}}},
		{"post", "client_secret_post", "s3", both, []seen{
			{"client_id=c+1&client_secret=s3&token=rt_secret&token_type_hint=refresh_token", ":"},
			{"client_id=c+1&client_secret=s3&token=at_secret&token_type_hint=access_token", ":"}}},
		{"public client, no refresh token", "none", "", &toolconfig.Token{AccessToken: "at_secret"}, []seen{
			{"client_id=c+1&token=at_secret&token_type_hint=access_token", ":"}}},
	} {
		got = nil
		f.RevokeTokens(context.Background(), tool(c.method, c.secret, srv.URL+"/revoke", c.tok))
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
	got = nil
	f.RevokeTokens(context.Background(), tool("client_secret_basic", "s3", "", both))
	if len(got) != 0 {
		t.Errorf("no revocation endpoint: sent %q", got)
	}
	status = http.StatusBadRequest
	f.RevokeTokens(context.Background(), tool("client_secret_basic", "s3", srv.URL+"/revoke", both))
	text := logs.String()
	if strings.Count(text, "oauth token revocation failed") != 2 || !strings.Contains(text, "unsupported_token_type (HTTP 400)") ||
		strings.Contains(text, "at_secret") || strings.Contains(text, "rt_secret") || strings.Contains(text, "s3") {
		t.Errorf("logs:\n%s", text)
	}
}

// TestDiscoveredRevocationEndpoint: the revocation endpoint an
// authorization server's metadata names is kept with the discovered
// provider; one that is not an http(s) URL is left out, not a failure.
func TestDiscoveredRevocationEndpoint(t *testing.T) {
	for endpoint, want := range map[string]string{"/revoke": "/revoke", "": "", "javascript:x": ""} {
		var srv *httptest.Server
		srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/rm":
				json.NewEncoder(w).Encode(map[string]any{"authorization_servers": []string{srv.URL}})
			case "/.well-known/oauth-authorization-server":
				md := map[string]any{"issuer": srv.URL, "authorization_endpoint": srv.URL + "/authorize",
					"token_endpoint": srv.URL + "/token", "registration_endpoint": srv.URL + "/register",
					"code_challenge_methods_supported": []string{"S256"}}
				if strings.HasPrefix(endpoint, "/") {
					md["revocation_endpoint"] = srv.URL + endpoint
				} else if endpoint != "" {
					md["revocation_endpoint"] = endpoint
				}
				json.NewEncoder(w).Encode(md)
			case "/register":
				w.WriteHeader(http.StatusCreated)
				w.Write([]byte(`{"client_id":"c1"}`))
			default:
				http.NotFound(w, r)
			}
		}))
		box, _ := secrets.New(bytes.Repeat([]byte{7}, 32))
		f := New(Options{PublicURL: "http://quiver.test", AllowPrivate: true, Box: box, Logger: slog.New(slog.NewTextHandler(&testlog.Buffer{}, nil))})
		d, err := f.discover(context.Background(), srv.URL+"/rm", "", srv.URL+"/mcp")
		if err != nil {
			t.Fatalf("%q: %v", endpoint, err)
		}
		if w := map[bool]string{true: srv.URL + want, false: ""}[want != ""]; d.RevocationURL != w {
			t.Errorf("%q: revocation URL %q, want %q", endpoint, d.RevocationURL, w)
		}
		srv.Close()
	}
}
