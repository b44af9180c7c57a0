package httprequest_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/quiverhq/quiver/connectors/httprequest"
)

// TestResponseTooLargeSaysWhy: a response whose body is over the
// connector's limit is a tool error that keeps the status and headers and
// says, in words, that it was the response body that was too large and what
// the limit is: not the call's result, whose own 8 MiB limit is another
// (result_too_large). A body that comes compressed counts as it decodes, so
// a small gzip that decodes to far more (a compression bomb) is too large
// too, and read no further than the limit.
func TestResponseTooLargeSaysWhy(t *testing.T) {
	t.Parallel()
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	zero := make([]byte, 1<<20)
	for range 64 {
		zw.Write(zero)
	}
	zw.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Kept", "yes")
		if r.URL.Path == "/gzip" {
			w.Header().Set("Content-Encoding", "gzip")
			w.WriteHeader(http.StatusCreated)
			w.Write(bomb.Bytes())
			return
		}
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, strings.Repeat("x", 2048))
	}))
	t.Cleanup(srv.Close)
	c := httprequest.New(httprequest.Options{AllowPrivate: true, MaxResponseBytes: 1024})
	for _, path := range []string{"/plain", "/gzip"} {
		res, err := c.Call(context.Background(), tool(srv.URL), "post", json.RawMessage(`{"path":"`+path+`"}`))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		r := decode(t, res)
		if !res.IsError || r.Error != "response_too_large" || r.Body != nil || r.Status != http.StatusCreated || r.Headers["X-Kept"] != "yes" {
			t.Errorf("%s: too large = %t %+v", path, res.IsError, r)
		}
		if !strings.Contains(r.Message, "response body") || !strings.Contains(r.Message, "1024 bytes") || strings.Contains(r.Message, "result") {
			t.Errorf("%s: message %q does not say the response body was over 1024 bytes", path, r.Message)
		}
	}
}

// TestDeepJSONBodyAsText: a JSON body nested deeper than clients decode
// (the MCP Go SDK refuses a message nested past 1000, which fails an agent's
// whole tools/call; Python's json stops near there too) comes as its text,
// which every client reads, rather than as parsed JSON that none could. A
// body nested as deep as real APIs nest is parsed as before.
func TestDeepJSONBodyAsText(t *testing.T) {
	t.Parallel()
	nested := func(n int) string { return strings.Repeat(`{"a":[`, n) + "1" + strings.Repeat("]}", n) }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		n := 100
		if r.URL.Path == "/deep" {
			n = 300 // 600 levels
		}
		io.WriteString(w, nested(n))
	}))
	t.Cleanup(srv.Close)
	c := httprequest.New(httprequest.Options{AllowPrivate: true})
	res, err := c.Call(context.Background(), tool(srv.URL), "get", json.RawMessage(`{"path":"/deep"}`))
	if err != nil {
		t.Fatal(err)
	}
	if r := decode(t, res); r.Body != nested(300) || r.BodyEncoding != "" || res.IsError {
		t.Errorf("deep body is %T (encoding %q), want its text", r.Body, r.BodyEncoding)
	}
	res, err = c.Call(context.Background(), tool(srv.URL), "get", json.RawMessage(`{"path":"/shallow"}`))
	if err != nil {
		t.Fatal(err)
	}
	if r := decode(t, res); func() bool { _, ok := r.Body.(map[string]any); return !ok }() {
		t.Errorf("shallow body is %T, want parsed JSON", r.Body)
	}
}
