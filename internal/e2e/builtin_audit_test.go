package e2e

// Black-box tests of the builtin tools' edges (API.md, "Builtin tools", and
// the last paragraph of "Custom MCP servers" on outbound requests): a
// base_url the egress guard would refuse, or one carrying credentials, is
// refused at its configuration step rather than accepted and failing (or
// showing) later; the http-request input schema takes the query values the
// connector sends; a header that would defeat the client's decompression is
// refused; the browser refuses a literal private address as a bad argument
// and does not tell a redirect's target where it came from.

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/quiverhq/quiver/internal/testserver"
)

func TestBuiltinAudit(t *testing.T) {
	open := fdStart(t, testserver.Options{Postgres: true})
	guarded := fdStart(t, testserver.Options{Postgres: true, Env: map[string]string{"QUIVER_EGRESS_ALLOW_PRIVATE": "false"}})
	t.Run("private base_url refused at configuration", func(t *testing.T) { baTestPrivateBaseURL(t, guarded.with(t)) })
	t.Run("credentials in base_url refused", func(t *testing.T) { baTestBaseURLCredentials(t, open.with(t)) })
	t.Run("query takes numbers, booleans and lists", func(t *testing.T) { baTestQueryValues(t, open.with(t)) })
	t.Run("accept-encoding is reserved", func(t *testing.T) { baTestAcceptEncoding(t, open.with(t)) })
	t.Run("browser literal private url", func(t *testing.T) { baTestBrowserLiteral(t, guarded.with(t)) })
	t.Run("browser redirect drops Referer", func(t *testing.T) { baTestBrowserReferer(t, open.with(t)) })
}

// baHits is a local server that counts the requests reaching it.
func baHits(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		io.WriteString(w, "<title>inside</title>")
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func baCall(c *fdClient, tool int64, action string, args map[string]any) *testserver.Response {
	return c.do("POST", "/api/v1/agents/custom-tools/call/", map[string]any{"tool": tool, "action": action, "arguments": args})
}

func baTestPrivateBaseURL(t *testing.T, c *fdClient) {
	srv, hits := baHits(t)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	id := c.createTool("http-request")
	provide := fdPath("/api/v1/agents/custom-tools/%d/provide-config/", id)
	get := fdPath("/api/v1/agents/custom-tools/%d/", id)
	before := c.do("GET", get, nil).Body
	for _, base := range []string{
		"http://169.254.169.254/latest/meta-data/",
		srv.URL + "/v1",
		"http://[::1]:" + port,
		"http://0.0.0.0:" + port,
		"http://10.0.0.1/",
		"http://localhost:" + port + "/", // a name that resolves only to loopback
	} {
		t.Run(base, func(t *testing.T) {
			f := fdWantFields(t, c.do("POST", provide, map[string]any{"user_response": map[string]any{"base_url": base}}), "validation_error", "base_url")
			if msg := f["base_url"].(string); !strings.Contains(msg, "private") {
				t.Errorf("message %q does not say why", msg)
			}
			if now := c.do("GET", get, nil).Body; !bytes.Equal(now, before) {
				t.Fatalf("a refused base_url changed the tool:\n%s\n%s", before, now)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("configuration reached the private server %d times", n)
	}
	// A name that does not resolve is accepted, as before: configuration
	// does not depend on DNS, and the call answers 502 if it still fails.
	m := c.ok(200, "POST", provide, map[string]any{"user_response": map[string]any{"base_url": "https://quiver-no-such-host.invalid/v1"}})
	if s, _ := m["next_configuration_step"].(map[string]any); s == nil || s["step"] != "auth" {
		t.Fatalf("after an unresolvable base_url: %v", m)
	}
	c.ok(200, "POST", provide, map[string]any{"user_response": map[string]any{"auth_type": "none"}})
	fdWantError(t, baCall(c, id, "get", map[string]any{"path": "/"}), 502, "tool_unreachable")
}

func baTestBaseURLCredentials(t *testing.T, c *fdClient) {
	id := c.createTool("http-request")
	provide := fdPath("/api/v1/agents/custom-tools/%d/provide-config/", id)
	get := fdPath("/api/v1/agents/custom-tools/%d/", id)
	for _, base := range []string{"http://u:hunter2-pw@api.example.com/", "https://tokenonly-hunter2@api.example.com/v1"} {
		r := c.do("POST", provide, map[string]any{"user_response": map[string]any{"base_url": base}})
		f := fdWantFields(t, r, "validation_error", "base_url")
		if msg := f["base_url"].(string); !strings.Contains(msg, "auth") {
			t.Errorf("message %q does not point at the auth step", msg)
		}
		fdNoSecret(t, "hunter2", r.Body, c.do("GET", get, nil).Body)
	}
	if s, _ := c.ok(200, "GET", get, nil)["next_configuration_step"].(map[string]any); s["step"] != "base_url" {
		t.Fatalf("refused base_urls moved the tool to %v", s)
	}
}

func baTestQueryValues(t *testing.T, c *fdClient) {
	seen := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.URL.RawQuery
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(srv.Close)
	id := connectHTTPTool(t, c.srv.URL, c.key, srv.URL)

	r := baCall(c, id, "get", map[string]any{"path": "/items", "query": map[string]any{
		"page": 2, "ratio": 0.5, "all": true, "tag": []any{"a", 1, false}, "q": "x y"}})
	if r.Status != 200 {
		t.Fatalf("call: %d %s", r.Status, r.Body)
	}
	got, err := url.ParseQuery(<-seen)
	if err != nil {
		t.Fatal(err)
	}
	want := url.Values{"page": {"2"}, "ratio": {"0.5"}, "all": {"true"}, "tag": {"a", "1", "false"}, "q": {"x y"}}
	if got.Encode() != want.Encode() {
		t.Errorf("query sent %v, want %v", got, want)
	}
	// An object or null is still refused by the schema, before anything is sent.
	for _, bad := range []any{map[string]any{"b": 1}, nil, []any{[]any{"nested"}}} {
		fdWantError(t, baCall(c, id, "get", map[string]any{"path": "/", "query": map[string]any{"a": bad}}), 422, "invalid_arguments")
	}
	select {
	case q := <-seen:
		t.Errorf("a refused query reached the server: %s", q)
	default:
	}
}

func baTestAcceptEncoding(t *testing.T, c *fdClient) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			gz := gzip.NewWriter(w)
			io.WriteString(gz, `{"ok":true}`)
			gz.Close()
			return
		}
		io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(srv.Close)
	id := connectHTTPTool(t, c.srv.URL, c.key, srv.URL)

	for _, name := range []string{"Accept-Encoding", "accept-encoding"} {
		m := fdWantError(t, baCall(c, id, "get", map[string]any{"path": "/", "headers": map[string]any{name: "gzip"}}), 422, "invalid_arguments")
		if msg, _ := m["message"].(string); !strings.Contains(msg, "Accept-Encoding") {
			t.Errorf("message %q does not name the header", msg)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("a refused call reached the server %d times", n)
	}
	// Without it the client asks for gzip itself and hands back the JSON.
	r := baCall(c, id, "get", map[string]any{"path": "/"})
	if r.Status != 200 || !strings.Contains(string(r.Body), `"body":{"ok":true}`) {
		t.Fatalf("call: %d %s", r.Status, r.Body)
	}
	// Nor can the auth step name it as the token's header.
	id = c.createTool("http-request")
	provide := fdPath("/api/v1/agents/custom-tools/%d/provide-config/", id)
	c.ok(200, "POST", provide, map[string]any{"user_response": map[string]any{"base_url": srv.URL}})
	fdWantFields(t, c.do("POST", provide, map[string]any{"user_response": map[string]any{
		"auth_type": "header", "token": "t", "header_name": "Accept-Encoding"}}), "validation_error", "header_name")
}

func baTestBrowserLiteral(t *testing.T, c *fdClient) {
	srv, hits := baHits(t)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	id := c.createTool("browser")
	for _, u := range []string{srv.URL + "/", "http://[::1]:" + port + "/", "http://169.254.169.254/latest/meta-data/"} {
		m := fdWantError(t, baCall(c, id, "fetch_page", map[string]any{"url": u}), 422, "invalid_arguments")
		if msg, _ := m["message"].(string); !strings.Contains(msg, "private") {
			t.Errorf("%s: message %q does not say why", u, msg)
		}
	}
	// A name is checked where it is dialled: it may resolve elsewhere later.
	fdWantError(t, baCall(c, id, "fetch_page", map[string]any{"url": "http://localhost:" + port + "/"}), 502, "tool_unreachable")
	if n := hits.Load(); n != 0 {
		t.Fatalf("the guarded browser reached the private server %d times", n)
	}
}

func baTestBrowserReferer(t *testing.T, c *fdClient) {
	var mu sync.Mutex
	var referers []string
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		referers = append(referers, r.Header.Get("Referer"))
		mu.Unlock()
		io.WriteString(w, "<title>landed</title>")
	}))
	t.Cleanup(target.Close)
	start := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hop" {
			http.Redirect(w, r, "/go?"+r.URL.RawQuery, http.StatusFound)
			return
		}
		http.Redirect(w, r, target.URL+"/landing", http.StatusFound)
	}))
	t.Cleanup(start.Close)

	id := c.createTool("browser")
	r := baCall(c, id, "fetch_page", map[string]any{"url": start.URL + "/hop?token=s3cret-in-query"})
	if r.Status != 200 || !strings.Contains(string(r.Body), `"title":"landed"`) {
		t.Fatalf("fetch_page: %d %s", r.Status, r.Body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(referers) != 1 || referers[0] != "" {
		t.Errorf("the redirect target saw Referer %q, want none", referers)
	}
}
