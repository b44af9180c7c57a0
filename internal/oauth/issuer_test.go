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
