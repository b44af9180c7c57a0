package httprequest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/quiverhq/quiver/catalog"
	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/connectors/connectortest"
	"github.com/quiverhq/quiver/connectors/httprequest"
)

// seen is what the test server received.
type seen struct {
	Method, URI, Body string
	Header            http.Header
}

// echo answers every request with JSON describing it, except under /text,
// /fail and /redirect.
func echo(t *testing.T) (*httptest.Server, chan seen) {
	t.Helper()
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.URL.RequestURI(), string(b), r.Header.Clone()}
		switch {
		case strings.HasSuffix(r.URL.Path, "/text"):
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			io.WriteString(w, "plain words")
		case strings.HasSuffix(r.URL.Path, "/fail"):
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"title":"no such thing"}`)
		case strings.HasSuffix(r.URL.Path, "/redirect"):
			http.Redirect(w, r, "https://elsewhere.example/steal", http.StatusFound)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.Header().Add("X-Multi", "a")
			w.Header().Add("X-Multi", "b")
			io.WriteString(w, `{"ok":true,"n":12345678901234567890}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

func tool(base string, config ...string) *connectors.Tool {
	c := map[string]string{httprequest.ConfigBaseURL: base}
	for i := 0; i+1 < len(config); i += 2 {
		c[config[i]] = config[i+1]
	}
	return &connectors.Tool{ID: 7, Config: c}
}

func open() *httprequest.Connector { return httprequest.New(httprequest.Options{AllowPrivate: true}) }

func decode(t *testing.T, res connectors.Result) httprequest.Response {
	t.Helper()
	var r httprequest.Response
	if err := json.Unmarshal(res.Content, &r); err != nil {
		t.Fatalf("result %s: %v", res.Content, err)
	}
	return r
}

func TestGetJSON(t *testing.T) {
	t.Parallel()
	srv, got := echo(t)
	res, err := open().Call(context.Background(), tool(srv.URL+"/v1/?api=2"), "get",
		json.RawMessage(`{"path":"/users/a%2Fb?x=1","query":{"page":"2","tag":["a","b"]},"headers":{"x-trace":"abc"}}`))
	if err != nil {
		t.Fatal(err)
	}
	s := <-got
	if s.Method != "GET" || s.URI != "/v1/users/a%2Fb?api=2&x=1&page=2&tag=a&tag=b" {
		t.Errorf("request = %s %s", s.Method, s.URI)
	}
	if s.Header.Get("X-Trace") != "abc" || s.Header.Get("Authorization") != "" {
		t.Errorf("headers = %v", s.Header)
	}
	r := decode(t, res)
	if res.IsError || r.Status != 200 || r.Headers["X-Multi"] != "a, b" {
		t.Errorf("response = %+v", r)
	}
	// The JSON body is kept as JSON, numbers by their literal text.
	if !strings.Contains(string(res.Content), `"body":{"ok":true,"n":12345678901234567890}`) {
		t.Errorf("content = %s", res.Content)
	}
}

func TestTextBodyAndErrorStatus(t *testing.T) {
	t.Parallel()
	srv, got := echo(t)
	res, err := open().Call(context.Background(), tool(srv.URL), "get", json.RawMessage(`{"path":"text"}`))
	if err != nil {
		t.Fatal(err)
	}
	<-got
	if r := decode(t, res); r.Body != "plain words" || res.IsError {
		t.Errorf("text response = %+v", r)
	}

	res, err = open().Call(context.Background(), tool(srv.URL), "delete", json.RawMessage(`{"path":"/things/fail"}`))
	if err != nil {
		t.Fatal(err)
	}
	if s := <-got; s.Method != "DELETE" {
		t.Errorf("method = %s", s.Method)
	}
	r := decode(t, res)
	if !res.IsError || r.Status != 404 {
		t.Errorf("404: is_error %t, %+v", res.IsError, r)
	}
	if body, _ := r.Body.(map[string]any); body["title"] != "no such thing" {
		t.Errorf("problem+json body = %#v", r.Body)
	}
}

func TestBodies(t *testing.T) {
	t.Parallel()
	cases := []struct {
		action, args, method, body, contentType string
	}{
		{"post", `{"path":"/x","body":{"b":2,"a":[1,2.50]}}`, "POST", `{"b":2,"a":[1,2.50]}`, "application/json"},
		{"patch", `{"path":"/x","body":"raw text"}`, "PATCH", "raw text", "text/plain; charset=utf-8"},
		{"put", `{"path":"/x","body":"<a/>","headers":{"Content-Type":"application/xml"}}`, "PUT", "<a/>", "application/xml"},
		{"put", `{"path":"/x","body":42}`, "PUT", "42", "application/json"},
		{"post", `{"path":"/x"}`, "POST", "", ""},
		{"head", `{"path":"/x"}`, "HEAD", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.action+tc.args, func(t *testing.T) {
			t.Parallel()
			srv, got := echo(t)
			res, err := open().Call(context.Background(), tool(srv.URL), tc.action, json.RawMessage(tc.args))
			if err != nil {
				t.Fatal(err)
			}
			s := <-got
			if s.Method != tc.method || s.Body != tc.body || s.Header.Get("Content-Type") != tc.contentType {
				t.Errorf("got %s %q (%s)", s.Method, s.Body, s.Header.Get("Content-Type"))
			}
			if tc.method == "HEAD" {
				if r := decode(t, res); r.Body != "" || r.Status != 200 {
					t.Errorf("head response = %+v", r)
				}
			}
		})
	}
}

func TestAuthModes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		config []string
		args   string
		header string
		want   string
	}{
		{"none", []string{httprequest.ConfigAuthType, "none", httprequest.ConfigToken, "unused"}, `{"path":"/"}`, "Authorization", ""},
		{"bearer", []string{httprequest.ConfigAuthType, "bearer", httprequest.ConfigToken, "s3cret"}, `{"path":"/"}`, "Authorization", "Bearer s3cret"},
		{"bearer wins over argument", []string{httprequest.ConfigAuthType, "bearer", httprequest.ConfigToken, "s3cret"}, `{"path":"/","headers":{"Authorization":"Bearer mine"}}`, "Authorization", "Bearer s3cret"},
		{"header", []string{httprequest.ConfigAuthType, "header", httprequest.ConfigToken, "k-1", httprequest.ConfigHeaderName, "X-Api-Key"}, `{"path":"/"}`, "X-Api-Key", "k-1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, got := echo(t)
			if _, err := open().Call(context.Background(), tool(srv.URL, tc.config...), "get", json.RawMessage(tc.args)); err != nil {
				t.Fatal(err)
			}
			if s := <-got; s.Header.Get(tc.header) != tc.want {
				t.Errorf("%s = %q, want %q", tc.header, s.Header.Get(tc.header), tc.want)
			}
		})
	}
}

func TestRefusedBeforeSending(t *testing.T) {
	t.Parallel()
	srv, got := echo(t)
	cases := []struct {
		name, action, args string
		config             []string
		kind               connectors.Kind
	}{
		{"unknown action", "options", `{"path":"/"}`, nil, connectors.KindUnknownAction},
		{"absolute url", "get", `{"path":"https://evil.example/x"}`, nil, connectors.KindRejected},
		{"scheme-relative", "get", `{"path":"//evil.example/x"}`, nil, connectors.KindRejected},
		{"other scheme", "get", `{"path":"file:///etc/passwd"}`, nil, connectors.KindRejected},
		{"dot dot", "get", `{"path":"/v1/../admin"}`, nil, connectors.KindRejected},
		{"encoded dot dot", "get", `{"path":"/%2e%2e/admin"}`, nil, connectors.KindRejected},
		{"host header", "get", `{"path":"/","headers":{"Host":"evil.example"}}`, nil, connectors.KindRejected},
		// It would turn off the client's transparent decompression.
		{"accept-encoding header", "get", `{"path":"/","headers":{"accept-encoding":"gzip"}}`, nil, connectors.KindRejected},
		{"bad header value", "get", `{"path":"/","headers":{"X-A":"a\r\nX-B: b"}}`, nil, connectors.KindRejected},
		{"object query", "get", `{"path":"/","query":{"a":{"b":1}}}`, nil, connectors.KindRejected},
		{"head with body", "head", `{"path":"/","body":{"a":1}}`, nil, connectors.KindRejected},
		{"not an object", "get", `[1]`, nil, connectors.KindRejected},
		{"bearer without token", "get", `{"path":"/"}`, []string{httprequest.ConfigAuthType, "bearer"}, connectors.KindUpstreamAuth},
		{"header without name", "get", `{"path":"/"}`, []string{httprequest.ConfigAuthType, "header", httprequest.ConfigToken, "t"}, connectors.KindRejected},
		{"unknown auth type", "get", `{"path":"/"}`, []string{httprequest.ConfigAuthType, "basic"}, connectors.KindRejected},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := open().Call(context.Background(), tool(srv.URL, tc.config...), tc.action, json.RawMessage(tc.args))
			if got := connectortest.Kind(t, err); got != tc.kind {
				t.Errorf("kind = %s, want %s (%v)", got, tc.kind, err)
			}
		})
	}
	if _, err := open().Call(context.Background(), tool("ftp://example.com"), "get", json.RawMessage(`{"path":"/"}`)); connectortest.Kind(t, err) != connectors.KindRejected {
		t.Errorf("ftp base: %v", err)
	}
	select {
	case s := <-got:
		t.Errorf("a refused call reached the server: %s %s", s.Method, s.URI)
	default:
	}
}

func TestActionsFromCatalog(t *testing.T) {
	t.Parallel()
	c, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	e, _ := c.Get("http-request")
	acts, err := open().Actions(context.Background(), &connectors.Tool{Entry: e})
	if err != nil || len(acts) != 6 {
		t.Fatalf("actions = %+v, %v", acts, err)
	}
	for _, a := range acts {
		if _, err := open().Call(context.Background(), tool("http://127.0.0.1:1"), a.Name, json.RawMessage(`{"path":"//x"}`)); connectortest.Kind(t, err) != connectors.KindRejected {
			t.Errorf("catalog action %s is not handled: %v", a.Name, err)
		}
	}
}

func TestRedirectNotFollowed(t *testing.T) {
	t.Parallel()
	srv, got := echo(t)
	res, err := open().Call(context.Background(), tool(srv.URL, httprequest.ConfigAuthType, "bearer", httprequest.ConfigToken, "s3cret"), "get", json.RawMessage(`{"path":"/redirect"}`))
	if err != nil {
		t.Fatal(err)
	}
	<-got
	r := decode(t, res)
	if r.Status != http.StatusFound || r.Headers["Location"] != "https://elsewhere.example/steal" || res.IsError {
		t.Errorf("redirect response = %+v", r)
	}
}

func TestResponseTooLarge(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("x", 2048))
	}))
	t.Cleanup(srv.Close)
	c := httprequest.New(httprequest.Options{AllowPrivate: true, MaxResponseBytes: 1024})
	res, err := c.Call(context.Background(), tool(srv.URL), "get", json.RawMessage(`{"path":"/"}`))
	if err != nil {
		t.Fatal(err)
	}
	if r := decode(t, res); !res.IsError || r.Error != "response_too_large" || r.Body != nil || r.Status != 200 {
		t.Errorf("too large = %t %+v", res.IsError, r)
	}
}

func TestSSRFGuard(t *testing.T) {
	t.Parallel()
	srv, got := echo(t)
	_, err := httprequest.New(httprequest.Options{}).Call(context.Background(), tool(srv.URL), "post", json.RawMessage(`{"path":"/"}`))
	if k := connectortest.Kind(t, err); k != connectors.KindUnreachable {
		t.Errorf("kind = %s (%v)", k, err)
	}
	select {
	case <-got:
		t.Error("the guarded request reached the server")
	default:
	}
}

func TestTransportFailures(t *testing.T) {
	t.Parallel()
	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		if _, err := open().Call(context.Background(), tool("http://"+connectortest.ClosedAddr(t)), "post", json.RawMessage(`{"path":"/"}`)); connectortest.Kind(t, err) != connectors.KindUnreachable {
			t.Errorf("refused: %v", err)
		}
	})
	t.Run("hangs past deadline", func(t *testing.T) {
		t.Parallel()
		srv := connectortest.HangingServer(t)
		ctx, cancel := context.WithTimeout(context.Background(), connectortest.HangDeadline)
		defer cancel()
		if _, err := open().Call(ctx, tool(srv.URL), "post", json.RawMessage(`{"path":"/","body":{"a":1}}`)); connectortest.Kind(t, err) != connectors.KindOutcomeUnknown {
			t.Errorf("hang: %v", err)
		}
	})
	t.Run("closed mid-response", func(t *testing.T) {
		t.Parallel()
		srv := connectortest.CutServer(t, "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"id\":")
		if _, err := open().Call(context.Background(), tool(srv.URL), "post", json.RawMessage(`{"path":"/"}`)); connectortest.Kind(t, err) != connectors.KindOutcomeUnknown {
			t.Errorf("cut: %v", err)
		}
	})
	t.Run("closed before answering", func(t *testing.T) {
		t.Parallel()
		srv := connectortest.CutServer(t, "")
		if _, err := open().Call(context.Background(), tool(srv.URL), "post", json.RawMessage(`{"path":"/"}`)); connectortest.Kind(t, err) != connectors.KindOutcomeUnknown {
			t.Errorf("closed: %v", err)
		}
	})
}

// Repeated headers join with ", ", as HTTP combines a list, except
// Set-Cookie, whose values may hold commas: those join with "\n".
func TestRepeatedHeaders(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Set-Cookie", "a=1; Expires=Wed, 21 Oct 2026 07:28:00 GMT")
		w.Header().Add("Set-Cookie", "b=2")
		w.Header().Add("Vary", "Accept")
		w.Header().Add("Vary", "Origin")
	}))
	t.Cleanup(srv.Close)
	res, err := open().Call(context.Background(), tool(srv.URL), "get", json.RawMessage(`{"path":"/"}`))
	if err != nil {
		t.Fatal(err)
	}
	r := decode(t, res)
	if got := r.Headers["Set-Cookie"]; got != "a=1; Expires=Wed, 21 Oct 2026 07:28:00 GMT\nb=2" {
		t.Errorf("Set-Cookie = %q", got)
	}
	if got := r.Headers["Vary"]; got != "Accept, Origin" {
		t.Errorf("Vary = %q", got)
	}
}

// A configured credential that HTTP cannot carry (a line break or a control
// character: configurations stored before such tokens were refused) makes
// the call a rejection, not an unknown outcome: nothing was sent, so the
// caller's key is released. The server sees no request.
func TestUnsendableCredential(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		config []string
	}{
		{"bearer with CRLF", []string{httprequest.ConfigAuthType, "bearer", httprequest.ConfigToken, "a\r\nb"}},
		{"bearer with control character", []string{httprequest.ConfigAuthType, "bearer", httprequest.ConfigToken, "a\u0001b"}},
		{"header with CRLF", []string{httprequest.ConfigAuthType, "header", httprequest.ConfigHeaderName, "X-Api-Key", httprequest.ConfigToken, "a\r\nX-Injected: 1"}},
		{"header with NUL", []string{httprequest.ConfigAuthType, "header", httprequest.ConfigHeaderName, "X-Api-Key", httprequest.ConfigToken, "a\x00b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, got := echo(t)
			_, err := open().Call(context.Background(), tool(srv.URL, tc.config...), "post", json.RawMessage(`{"path":"/","body":{"a":1}}`))
			if k := connectortest.Kind(t, err); k != connectors.KindRejected {
				t.Errorf("kind = %s, want %s (%v)", k, connectors.KindRejected, err)
			}
			if err != nil && strings.Contains(err.Error(), "a\r\n") {
				t.Errorf("the error shows the token: %v", err)
			}
			select {
			case s := <-got:
				t.Errorf("the request reached the server: %s %s", s.Method, s.URI)
			default:
			}
		})
	}
}

// TestNotSentTwice: a non-retryable request that carries an upstream's own
// idempotency key in its headers reaches the server once, even when the
// kept-alive connection it went out on breaks before the answer. net/http
// re-sends a request with such a header by itself in that case, and did:
// the server counted two.
func TestNotSentTwice(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	counts := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		counts[r.Method+" "+r.URL.Path]++
		// What the server sees is the request as the caller made it: the
		// key, and no body framing changed (a bodiless POST once went out
		// chunked, which servers that read Content-Length misread).
		if got := r.Header.Get("Idempotency-Key") + r.Header.Get("X-Idempotency-Key"); (strings.HasPrefix(r.URL.Path, "/drop") && got == "") ||
			len(r.TransferEncoding) > 0 || (r.ContentLength != 0 && strings.Contains(r.URL.Path, "bare")) {
			t.Errorf("%s %s: key %q, transfer encoding %v, length %d", r.Method, r.URL.Path, got, r.TransferEncoding, r.ContentLength)
		}
		mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/drop") {
			// The request was taken in; the connection breaks unanswered.
			c, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				c.Close()
			}
			return
		}
		io.WriteString(w, "{}")
	}))
	t.Cleanup(srv.Close)
	c := open()
	for _, tc := range []struct{ action, args string }{
		{"post", `{"path":"/drop/post","headers":{"Idempotency-Key":"up-1"},"body":{"a":1}}`},
		{"patch", `{"path":"/drop/patch","headers":{"X-Idempotency-Key":"up-2"},"body":"text"}`},
		{"post", `{"path":"/drop/bare-post","headers":{"idempotency-key":"up-3"}}`},
		{"put", `{"path":"/drop/bare-put","headers":{"Idempotency-Key":"up-5"}}`},
		{"delete", `{"path":"/drop/delete","headers":{"Idempotency-Key":"up-4"}}`},
	} {
		// A first request leaves a kept-alive connection for the next.
		if _, err := c.Call(context.Background(), tool(srv.URL), "get", json.RawMessage(`{"path":"/warm"}`)); err != nil {
			t.Fatal(err)
		}
		_, err := c.Call(context.Background(), tool(srv.URL), tc.action, json.RawMessage(tc.args))
		if connectortest.Kind(t, err) != connectors.KindOutcomeUnknown {
			t.Errorf("%s: %v, want an unknown outcome", tc.args, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, path := range []string{"POST /drop/post", "PATCH /drop/patch", "POST /drop/bare-post", "PUT /drop/bare-put", "DELETE /drop/delete"} {
		if counts[path] != 1 {
			t.Errorf("%s reached the server %d times, want 1", path, counts[path])
		}
	}
}

// TestTextInItsCharset: text in a declared charset comes back as text, in
// UTF-8 (it came back as base64); bytes that are not text come back as
// base64, marked so.
func TestTextInItsCharset(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/latin1" {
			w.Header().Set("Content-Type", "text/plain; charset=iso-8859-1")
			w.Write([]byte("caf\xe9"))
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write([]byte{0xff, 0xfe, 0x00, 0x01})
	}))
	t.Cleanup(srv.Close)
	for path, want := range map[string]httprequest.Response{
		"/latin1": {Body: "café"},
		"/binary": {Body: "//4AAQ==", BodyEncoding: "base64"},
	} {
		res, err := open().Call(context.Background(), tool(srv.URL), "get", json.RawMessage(`{"path":"`+path+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		if r := decode(t, res); r.Body != want.Body || r.BodyEncoding != want.BodyEncoding {
			t.Errorf("%s: body %#v (%q), want %#v (%q)", path, r.Body, r.BodyEncoding, want.Body, want.BodyEncoding)
		}
	}
}

// A header value refused says why: a NUL is no line break, and an object
// is no string.
func TestHeaderValueRefusalsSayWhy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ args, want string }{
		{`{"path":"/","headers":{"X-A":"a\u0000b"}}`, "control characters"},
		{`{"path":"/","headers":{"X-A":"a\r\nX-B: b"}}`, "one line"},
		{`{"path":"/","headers":{"X-A":{"b":1}}}`, "string, number or boolean"},
	} {
		_, err := open().Call(context.Background(), tool("http://example.com"), "get", json.RawMessage(tc.args))
		if connectortest.Kind(t, err) != connectors.KindRejected || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want a refusal saying %q", tc.args, err, tc.want)
		}
	}
}
