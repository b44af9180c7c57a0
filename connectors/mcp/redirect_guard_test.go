package mcp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/connectors/connectortest"
	"github.com/quiverhq/quiver/internal/mcptest"
)

// publicTest makes c dial "public.test" to addr without the egress guard
// (connectortest.PublicDial); inside counts the other dials that got past it.
func publicTest(c *Connector, addr string, inside *atomic.Int32) {
	dial := connectortest.PublicDial(addr, inside)
	c.transport.DialContext = dial
	c.h1 = newH1Transport(dial, nil)
}

// TestRedirectIntoThePrivateNetwork: a public MCP server that redirects
// Quiver's requests to a loopback address (307, which re-sends a POST) does
// not get them there: configuring it is 422 on url, saying it redirected, and
// a call it redirects is unreachable (nothing ran: the public server only
// answered with a redirect, and the private address was never dialled).
// This cannot be set up through the HTTP API, where
// QUIVER_EGRESS_ALLOW_PRIVATE is one switch for every address.
func TestRedirectIntoThePrivateNetwork(t *testing.T) {
	t.Parallel()
	srv := mcptest.Start(t, mcptest.Counter, mcptest.Options{})
	inner, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	// SetURL sends the server's own Host, which the SDK checks.
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(&url.URL{Scheme: "http", Host: inner.Host}) }}
	var redirectAll atomic.Bool
	var inside atomic.Int32
	public := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		if redirectAll.Load() || bytes.Contains(b, []byte(`"tools/call"`)) {
			http.Redirect(w, r, srv.URL, http.StatusTemporaryRedirect)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(public.Close)
	c := New(&Options{})
	t.Cleanup(func() { c.Close() })
	publicTest(c, strings.TrimPrefix(public.URL, "http://"), &inside)
	config := map[string]string{"url": "http://public.test:1" + inner.Path}

	redirectAll.Store(true)
	err = c.Verify(context.Background(), customEntry, config)
	var fe *connectors.FieldError
	if !errors.As(err, &fe) || fe.Field != "url" || !strings.Contains(fe.Message, "redirected the request to 127.0.0.1") {
		t.Fatalf("configuring a server that redirects inside: %v, want a problem on url naming the redirect", err)
	}

	redirectAll.Store(false)
	if err := c.Verify(context.Background(), customEntry, config); err != nil {
		t.Fatalf("configuring it when only its calls redirect: %v", err)
	}
	tool := &connectors.Tool{ID: 1, AccountID: 1, Entry: customEntry, Config: config, Version: 1}
	for _, action := range []string{"increment", "read_count"} {
		_, err := call(t, c, tool, action, `{}`)
		wantKind(t, err, connectors.KindUnreachable)
		if !strings.Contains(err.Error(), "redirected the request to 127.0.0.1") {
			t.Errorf("%s: %v, want it to name the redirect", action, err)
		}
	}
	if n := srv.Calls("increment") + srv.Calls("read_count"); n != 0 {
		t.Errorf("the server inside ran %d calls", n)
	}
	if n := inside.Load(); n != 0 {
		t.Errorf("the private address was dialled %d times", n)
	}
}
