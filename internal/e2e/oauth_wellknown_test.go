package e2e

// Discovery of an OAuth-protected MCP server whose 401 names no resource
// metadata: the MCP authorization spec has a client look for it at the
// RFC 9728 well-known URIs of the server's URL, the path-inserted form
// first, then the root. Found, the tool goes on to its oauth step as with
// resource_metadata; not found, the 401 is the credential refusal it was.

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/quiverhq/quiver/internal/mcptest"
	"github.com/quiverhq/quiver/internal/testserver"
)

const (
	owkPathInserted = "/.well-known/oauth-protected-resource/mcp"
	owkRoot         = "/.well-known/oauth-protected-resource"
)

// owkServer is an MCP server at <URL>/mcp that accepts only the local
// provider's access tokens and refuses anything else with 401 and
// challenge as its WWW-Authenticate ("" for none), naming no resource
// metadata. It serves its metadata, naming p, at the well-known paths
// docs maps to true, and at those it maps to false metadata naming an
// authorization server that is not there. asked counts requests to either
// well-known path.
type owkServer struct {
	URL   string // the MCP endpoint
	asked atomic.Int64
}

func owkStart(t *testing.T, p *oaProvider, challenge string, docs map[string]bool) *owkServer {
	t.Helper()
	counter := mcptest.Start(t, mcptest.Counter, mcptest.Options{Authorize: p.valid})
	target, _ := url.Parse(strings.TrimSuffix(counter.URL, "/mcp"))
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(resp *http.Response) error {
		if resp.StatusCode == http.StatusUnauthorized {
			resp.Header.Del("WWW-Authenticate")
			if challenge != "" {
				resp.Header.Set("WWW-Authenticate", challenge)
			}
		}
		return nil
	}
	s := &owkServer{}
	var front *httptest.Server
	front = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != owkPathInserted && r.URL.Path != owkRoot {
			proxy.ServeHTTP(w, r)
			return
		}
		s.asked.Add(1)
		good, ok := docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		as := p.URL
		if !good {
			as = "http://127.0.0.1:1"
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"resource":%q,"authorization_servers":[%q],"scopes_supported":["tools"]}`, front.URL+"/mcp", as)
	}))
	t.Cleanup(front.Close)
	s.URL = front.URL + "/mcp"
	return s
}

// TestOAuthWellKnownDiscovery: a 401 with no resource_metadata (a bare
// Bearer challenge, one with a realm, none at all) from a server whose
// metadata is at a well-known URI is the oauth step, set up from that
// metadata, and the flow completes to a call. The path-inserted form is
// tried first: there, the root's document names an authorization server
// that is not there. A token given and refused is the token's 422, and no
// metadata is looked for.
func TestOAuthWellKnownDiscovery(t *testing.T) {
	cases := map[string]struct {
		challenge string
		docs      map[string]bool
		asked     int64
	}{
		"path-inserted, bare Bearer": {challenge: "Bearer", docs: map[string]bool{owkPathInserted: true, owkRoot: false}, asked: 1},
		"root, Bearer realm":         {challenge: `Bearer realm="counter"`, docs: map[string]bool{owkRoot: true}, asked: 2},
		"root, no challenge":         {docs: map[string]bool{owkRoot: true}, asked: 2},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := oaStartProvider(t)
			mcpSrv := owkStart(t, p, c.challenge, c.docs)
			srv := testserver.Start(t, testserver.Options{})
			id, _ := oaCreate(t, srv, srv.Key, "custom-mcp")
			path := fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id)

			r := srv.Do("POST", path, map[string]any{"user_response": map[string]any{"url": mcpSrv.URL, "bearer_token": "not-a-token"}})
			if fields, _ := r.JSON()["fields"].(map[string]any); r.Status != 422 || len(fields) != 1 || fields["bearer_token"] == nil {
				t.Fatalf("a refused token: %d %s", r.Status, r.Body)
			}
			if n := mcpSrv.asked.Load(); n != 0 {
				t.Fatalf("a refused token looked for metadata %d times", n)
			}

			r = srv.Do("POST", path, map[string]any{"user_response": map[string]any{"url": mcpSrv.URL}})
			if r.Status != 200 {
				t.Fatalf("provide-config: %d %s", r.Status, r.Body)
			}
			step, _ := r.JSON()["next_configuration_step"].(map[string]any)
			if step["type"] != "oauth" || step["index"] != float64(2) || step["total"] != float64(2) {
				t.Fatalf("step = %v", step)
			}
			authURL := oaAuthURL(t, step)
			u, _ := url.Parse(authURL)
			if !strings.HasPrefix(authURL, p.URL+"/authorize?") || p.registrations.Load() != 1 ||
				u.Query().Get("resource") != mcpSrv.URL || u.Query().Get("scope") != "tools" {
				t.Fatalf("authorization_url %s, registrations %d", authURL, p.registrations.Load())
			}
			if n := mcpSrv.asked.Load(); n != c.asked {
				t.Errorf("well-known URIs asked %d times, want %d", n, c.asked)
			}
			call, _ := oaAuthorizeAndCall(t, srv, id, authURL)
			oaNoSecrets(t, "call and logs", string(call.Body)+srv.LogText(), p.issued())
		})
	}
}

// TestOAuthWellKnownNotThere: a 401 with a bare Bearer challenge from a
// server with no metadata at either well-known URI is the 422 on
// bearer_token it always was, after both were looked at; the tool stays
// at its form step.
func TestOAuthWellKnownNotThere(t *testing.T) {
	p := oaStartProvider(t)
	mcpSrv := owkStart(t, p, "Bearer", nil)
	srv := testserver.Start(t, testserver.Options{})
	id, _ := oaCreate(t, srv, srv.Key, "custom-mcp")
	r := srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id),
		map[string]any{"user_response": map[string]any{"url": mcpSrv.URL}})
	fields, _ := r.JSON()["fields"].(map[string]any)
	msg, _ := fields["bearer_token"].(string)
	if r.Status != 422 || len(fields) != 1 || !strings.HasPrefix(msg, "The server requires credentials (HTTP 401)") {
		t.Fatalf("provide-config: %d %s", r.Status, r.Body)
	}
	if n := mcpSrv.asked.Load(); n != 2 {
		t.Errorf("well-known URIs asked %d times, want 2", n)
	}
	if p.registrations.Load() != 0 {
		t.Errorf("a client was registered")
	}
	if step := oaStep(t, srv, srv.Key, id); step["type"] != "form" || step["index"] != float64(1) {
		t.Errorf("step = %v", step)
	}
}

// TestOAuthWellKnownUnusable: a 401 naming no metadata from a server whose
// well-known metadata names an authorization server Quiver cannot use (here
// one that is not there) is still the server's refusal of an anonymous
// request: 422 on bearer_token, saying why its OAuth could not be set up,
// and the tool stays at its form step. It was 422 on url, which the user
// had right.
func TestOAuthWellKnownUnusable(t *testing.T) {
	p := oaStartProvider(t)
	mcpSrv := owkStart(t, p, "Bearer", map[string]bool{owkPathInserted: false})
	srv := testserver.Start(t, testserver.Options{})
	id, _ := oaCreate(t, srv, srv.Key, "custom-mcp")
	r := srv.Do("POST", fmt.Sprintf("/api/v1/agents/custom-tools/%d/provide-config/", id),
		map[string]any{"user_response": map[string]any{"url": mcpSrv.URL}})
	msg, _ := fdWantFields(t, r, "validation_error", "bearer_token")["bearer_token"].(string)
	if !strings.HasPrefix(msg, "The server requires credentials (HTTP 401), and Quiver cannot use its OAuth provider: ") ||
		!strings.HasSuffix(msg, "; give a bearer token the server accepts.") {
		t.Errorf("fields.bearer_token = %q", msg)
	}
	if step := oaStep(t, srv, srv.Key, id); step["type"] != "form" || step["index"] != float64(1) {
		t.Errorf("step = %v", step)
	}
}
