package mcp

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/mcptest"
)

// TestSessionReuse: calls share one session, whether they come together to
// a cold pool (the first connects, the others wait for it) or to a warm one.
func TestSessionReuse(t *testing.T) {
	t.Parallel()
	for _, stateless := range []bool{false, true} {
		for _, warm := range []bool{false, true} {
			t.Run(fmt.Sprintf("stateless=%v,warm=%v", stateless, warm), func(t *testing.T) {
				t.Parallel()
				srv, c, tool := counterSetup(t, mcptest.Options{Stateless: stateless}, nil)
				if warm {
					if _, err := c.Actions(ctxFor(t, 10*time.Second), tool); err != nil {
						t.Fatal(err)
					}
				}
				var wg sync.WaitGroup
				for range 10 {
					wg.Go(func() {
						if _, err := call(t, c, tool, "increment", `{}`); err != nil {
							t.Error(err)
						}
					})
				}
				wg.Wait()
				for range 10 {
					mustCall(t, c, tool, "increment", `{}`)
				}
				wantRuns(t, srv, "increment", 20, 1)
			})
		}
	}
}

func TestSessionForgottenReconnects(t *testing.T) {
	t.Parallel()
	srv, c, tool := counterSetup(t, mcptest.Options{}, nil)
	mustCall(t, c, tool, "increment", `{}`)

	// The server forgets the session: our next POST gets 404, which proves
	// it did not run, so the call is re-sent once on a new session.
	srv.ForgetSessions()
	mustCall(t, c, tool, "increment", `{}`)
	wantRuns(t, srv, "increment", 2, 2)
}

func TestSessionRestartReconnects(t *testing.T) {
	t.Parallel()
	srv, c, tool := counterSetup(t, mcptest.Options{}, nil)
	mustCall(t, c, tool, "read_count", `{}`)

	srv.Restart()
	// A read racing the dropped connections may be lost (outcome unknown);
	// it must come back without any help.
	if !eventually(t, 5*time.Second, func() bool {
		_, err := call(t, c, tool, "read_count", `{}`)
		return err == nil
	}) {
		t.Fatal("never reconnected after a restart")
	}
	mustCall(t, c, tool, "increment", `{}`)
	wantRuns(t, srv, "increment", 1, 2)
}

func TestSessionNewVersion(t *testing.T) {
	t.Parallel()
	srv := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
	c := setup(t, nil)
	v1 := toolFor(srv, 7, nil)
	mustCall(t, c, v1, "read_count", `{}`)
	c.pool.mu.Lock()
	old := c.pool.slots[slotKey{7, 1}]
	c.pool.mu.Unlock()

	v2 := toolFor(srv, 7, nil)
	v2.Version = 2
	mustCall(t, c, v2, "read_count", `{}`)
	if n := srv.Initializes(); n != 2 {
		t.Errorf("initializes = %d, want 2 (a new version gets a new session)", n)
	}
	c.pool.mu.Lock()
	closed, n := old.closed, len(c.pool.slots)
	c.pool.mu.Unlock()
	if !closed || n != 1 {
		t.Errorf("old session closed = %v, slots = %d; want true, 1", closed, n)
	}
	// A late call with the old version still works, on a session of its own.
	mustCall(t, c, v1, "read_count", `{}`)
}

func TestSessionIdleClosed(t *testing.T) {
	t.Parallel()
	srv, c, tool := counterSetup(t, mcptest.Options{}, &Options{AllowPrivate: true, IdleTimeout: 50 * time.Millisecond})
	mustCall(t, c, tool, "read_count", `{}`)
	if !eventually(t, 2*time.Second, func() bool {
		c.pool.mu.Lock()
		defer c.pool.mu.Unlock()
		return len(c.pool.slots) == 0
	}) {
		t.Fatal("idle session never closed")
	}
	mustCall(t, c, tool, "read_count", `{}`)
	if n := srv.Initializes(); n != 2 {
		t.Errorf("initializes = %d, want 2", n)
	}
}

func TestCredentialsStayWithTheirHost(t *testing.T) {
	t.Parallel()
	srv := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
	// The configured server redirects every request to another host (the
	// same test server, named differently).
	u, _ := url.Parse(srv.URL)
	elsewhere := "http://localhost:" + u.Port() + "/mcp"
	var mu sync.Mutex
	var sawAuth, sawCustom int
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if r.Header.Get("Authorization") == "Bearer s3cret" {
			sawAuth++
		}
		if r.Header.Get("X-Custom") == "v" {
			sawCustom++
		}
		mu.Unlock()
		http.Redirect(w, r, elsewhere, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirector.Close)

	c := setup(t, nil)
	tool := &connectors.Tool{ID: 1, Entry: customEntry, Version: 1, Config: map[string]string{
		"url": redirector.URL + "/mcp", "bearer_token": "s3cret", "headers": `{"X-Custom":"v"}`}}
	mustCall(t, c, tool, "increment", `{}`)

	mu.Lock()
	if sawAuth == 0 || sawCustom == 0 {
		t.Errorf("the configured host got no credentials (auth %d, custom %d)", sawAuth, sawCustom)
	}
	mu.Unlock()
	for _, h := range srv.Headers() {
		if h.Get("Authorization") != "" || h.Get("X-Custom") != "" {
			t.Fatalf("credentials reached another host: %v", h)
		}
	}
	if srv.Calls("increment") != 1 {
		t.Errorf("increment ran %d times", srv.Calls("increment"))
	}
}

// recordingTransport records the requests it is given.
type recordingTransport struct{ reqs []*http.Request }

func (r *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r.reqs = append(r.reqs, req)
	return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}, Request: req}, nil
}

func TestRoundTripperOrigin(t *testing.T) {
	t.Parallel()
	tgt, err := resolveTarget(customEntry, map[string]string{"url": "https://api.example.com/mcp",
		"bearer_token": "tok", "headers": `{"x-api-key":"k"}`}, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		url  string
		want bool
	}{
		{"https://api.example.com/mcp", true},
		{"https://API.example.com:443/other", true},
		{"http://api.example.com/mcp", false},       // downgraded scheme
		{"https://api.example.com:8443/mcp", false}, // other port
		{"https://evil.example.com/mcp", false},
		{"https://api.example.com.evil.io/mcp", false},
	} {
		base := &recordingTransport{}
		rt := &roundTripper{base: base, target: tgt, maxBytes: 1 << 20}
		req, _ := http.NewRequest(http.MethodPost, tc.url, strings.NewReader("{}"))
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		got := base.reqs[0]
		hasAuth := got.Header.Get("Authorization") == "Bearer tok" && got.Header.Get("X-Api-Key") == "k"
		if hasAuth != tc.want {
			t.Errorf("%s: credentials sent = %v, want %v", tc.url, hasAuth, tc.want)
		}
		if req.Header.Get("Authorization") != "" {
			t.Errorf("%s: the caller's request was modified", tc.url)
		}
	}
}

// TestResolveTargetHeaderNames: a configured header net/http would not send
// (a name that is no token, a value with a control byte) is the headers
// field's problem, not a request that fails as if the server were away. A
// tool configured before the form checked names reaches resolveTarget with
// one.
func TestResolveTargetHeaderNames(t *testing.T) {
	t.Parallel()
	for _, headers := range []string{`{"é":"v"}`, `{"X(A)":"v"}`, `{"X-A":"v\u0000"}`, `{"X-A":"a\rb"}`, `{"Host":"x"}`} {
		_, err := resolveTarget(customEntry, map[string]string{"url": "https://api.example.com/mcp", "headers": headers}, "")
		var fe *connectors.FieldError
		if !errors.As(err, &fe) || fe.Field != "headers" {
			t.Errorf("headers %s: %v, want a problem on headers", headers, err)
		}
	}
	if _, err := resolveTarget(customEntry, map[string]string{"url": "https://api.example.com/mcp",
		"headers": `{"x-api_key.v2":"a\tb"}`}, ""); err != nil {
		t.Errorf("a token name with a tab in its value: %v", err)
	}
}
