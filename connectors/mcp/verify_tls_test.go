package mcp

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestVerifyNamesTLSMismatch: an https:// URL of a server that speaks
// plain HTTP is refused on url with a message that says so, not a bare
// "the connection failed". (An http:// URL of a TLS server gets the
// server's own 400, which says it.)
func TestVerifyNamesTLSMismatch(t *testing.T) {
	t.Parallel()
	plain := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(plain.Close)
	tls := httptest.NewUnstartedServer(http.NotFoundHandler())
	tls.Config.ErrorLog = log.New(io.Discard, "", 0) // the plain request's handshake error
	tls.StartTLS()
	t.Cleanup(tls.Close)
	c := setup(t, nil)
	ctx := ctxFor(t, 20*time.Second)
	for _, tc := range []struct{ url, want string }{
		{"https://" + strings.TrimPrefix(plain.URL, "http://") + "/mcp", "does not speak TLS"},
		{"http://" + strings.TrimPrefix(tls.URL, "https://") + "/mcp", "HTTP request to an HTTPS server"},
	} {
		wantField(t, c.Verify(ctx, customEntry, map[string]string{"url": tc.url}), "url", tc.want)
	}
}
