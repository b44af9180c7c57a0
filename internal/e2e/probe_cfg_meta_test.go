package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

// probeCfgASServer is an OAuth-protected MCP endpoint (/mcp, always 401
// pointing at its RFC 9728 metadata) whose own origin is its authorization
// server, with RFC 8414 metadata and an RFC 7591 registration endpoint
// that answers registration. meta, if not nil, is given the server's URL
// and returns entries that replace the metadata's own.
func probeCfgASServer(t *testing.T, registration map[string]any, meta func(base string) map[string]any) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	js := func(v any) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(v)
		}
	}
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+hs.URL+`/.well-known/oauth-protected-resource"`)
		w.WriteHeader(http.StatusUnauthorized)
	})
	mux.HandleFunc("/.well-known/oauth-protected-resource", js(map[string]any{
		"resource": hs.URL + "/mcp", "authorization_servers": []string{hs.URL}}))
	as := map[string]any{"issuer": hs.URL, "authorization_endpoint": hs.URL + "/authorize", "token_endpoint": hs.URL + "/token",
		"registration_endpoint": hs.URL + "/register", "code_challenge_methods_supported": []string{"S256"}}
	if meta != nil {
		for k, v := range meta(hs.URL) {
			as[k] = v
		}
	}
	mux.HandleFunc("/.well-known/oauth-authorization-server", js(as))
	mux.HandleFunc("/register", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(registration)
	})
	return hs
}

// TestProbeCfgRegisteredAuthMethod: an authorization server may register
// Quiver with another token endpoint authentication method than the one
// asked for (RFC 7591 §3.2.1). One Quiver cannot use (private_key_jwt,
// tls_client_auth, …) is refused at the configure step, on bearer_token (the 401 stands), and the
// tool stays at it. Before, the step was accepted and the oauth step handed
// out a link; the person authorized at the provider, and only then did the
// code exchange fail, Quiver having sent client_secret_basic with no secret.
func TestProbeCfgRegisteredAuthMethod(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	for _, method := range []string{"private_key_jwt", "tls_client_auth", "client_secret_jwt"} {
		hs := probeCfgASServer(t, map[string]any{"client_id": "cid", "token_endpoint_auth_method": method}, nil)
		id, _ := oaCreate(t, srv, srv.Key, "custom-mcp")
		path := fmt.Sprintf("/api/v1/agents/custom-tools/%d/", id)
		r := srv.Do("POST", path+"provide-config/", map[string]any{"user_response": map[string]any{"url": hs.URL + "/mcp"}})
		fdWantFields(t, r, "validation_error", "bearer_token")
		if step := oaStep(t, srv, srv.Key, id); step["type"] != "form" || step["index"] != float64(1) {
			t.Fatalf("%s: a refused step moved the tool to %v", method, step)
		}
	}
	// The methods Quiver uses are accepted as before.
	for _, reg := range []map[string]any{
		{"client_id": "cid", "client_secret": "s", "token_endpoint_auth_method": "client_secret_post"},
		{"client_id": "cid", "token_endpoint_auth_method": "none"},
		{"client_id": "cid", "client_secret": "s"},
	} {
		hs := probeCfgASServer(t, reg, nil)
		id, _ := oaCreate(t, srv, srv.Key, "custom-mcp")
		r := srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id),
			map[string]any{"user_response": map[string]any{"url": hs.URL + "/mcp"}})
		if r.Status != 200 {
			t.Fatalf("registration %v: %d %s", reg, r.Status, r.Body)
		}
		oaAuthURL(t, oaStep(t, srv, srv.Key, id))
	}
}

// TestAuthorizationEndpointWithPresetParams: an authorization endpoint whose
// own query holds a parameter of the authorization request (?state=…)
// would have it sent twice (RFC 6749 §3.1 allows a parameter once): the
// provider may take its own and the callback refuse it, after the person
// authorized. Such metadata is refused at the configure step, on bearer_token, and
// the tool stays at it; an endpoint with parameters of its own keeps them.
func TestAuthorizationEndpointWithPresetParams(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	endpoint := func(query string) func(string) map[string]any {
		return func(base string) map[string]any {
			return map[string]any{"authorization_endpoint": base + "/authorize?" + query}
		}
	}
	for _, q := range []string{"state=evil", "tenant=a&redirect_uri=https://elsewhere.example/cb", "scope=all"} {
		hs := probeCfgASServer(t, map[string]any{"client_id": "cid"}, endpoint(q))
		id, _ := oaCreate(t, srv, srv.Key, "custom-mcp")
		r := srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id),
			map[string]any{"user_response": map[string]any{"url": hs.URL + "/mcp"}})
		fdWantFields(t, r, "validation_error", "bearer_token")
		if step := oaStep(t, srv, srv.Key, id); step["type"] != "form" {
			t.Fatalf("?%s: a refused step moved the tool to %v", q, step)
		}
	}
	hs := probeCfgASServer(t, map[string]any{"client_id": "cid"}, endpoint("tenant=a"))
	id, _ := oaCreate(t, srv, srv.Key, "custom-mcp")
	r := srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id),
		map[string]any{"user_response": map[string]any{"url": hs.URL + "/mcp"}})
	if r.Status != 200 {
		t.Fatalf("an endpoint with a parameter of its own: %d %s", r.Status, r.Body)
	}
	link, err := url.Parse(oaAuthURL(t, oaStep(t, srv, srv.Key, id)))
	if err != nil {
		t.Fatal(err)
	}
	if q := link.Query(); q.Get("tenant") != "a" || len(q["state"]) != 1 {
		t.Fatalf("authorization link %s: want tenant=a kept and one state", link)
	}
}

// TestAuthorizationServerMetadataProblemNamed: of the places an
// authorization server's metadata may be (RFC 8414, then OpenID), the
// configure step's message names the one that is there and unreadable, not
// the 404 of the last one tried; when it is nowhere, it lists where it looked.
func TestAuthorizationServerMetadataProblemNamed(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	for _, tc := range []struct {
		html bool
		want string
	}{
		{true, "/.well-known/oauth-authorization-server: not valid JSON"},
		{false, "/.well-known/oauth-authorization-server, "},
	} {
		mux := http.NewServeMux()
		hs := httptest.NewServer(mux)
		t.Cleanup(hs.Close)
		mux.HandleFunc("/mcp", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+hs.URL+`/.well-known/oauth-protected-resource"`)
			w.WriteHeader(http.StatusUnauthorized)
		})
		mux.HandleFunc("/.well-known/oauth-protected-resource", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"resource": hs.URL + "/mcp", "authorization_servers": []string{hs.URL}})
		})
		if tc.html {
			mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				_, _ = w.Write([]byte("<html>sign in</html>"))
			})
		}
		id, _ := oaCreate(t, srv, srv.Key, "custom-mcp")
		r := srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id),
			map[string]any{"user_response": map[string]any{"url": hs.URL + "/mcp"}})
		fdWantFields(t, r, "validation_error", "bearer_token")
		if msg, _ := r.JSON()["fields"].(map[string]any)["bearer_token"].(string); !strings.Contains(msg, tc.want) {
			t.Errorf("html %t: fields.bearer_token %q, want it to hold %q", tc.html, msg, tc.want)
		}
	}
}
