package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/quiverhq/quiver/internal/secrets"
	"github.com/quiverhq/quiver/internal/store"
	"github.com/quiverhq/quiver/internal/toolconfig"
)

// TestRevocationNoContentIsRevoked: a revocation endpoint that answers
// 204 No Content, as several do, revoked the token: it is counted revoked,
// not failed, and no failure is logged. RFC 7009 asks for 200, and only a
// 200 used to count.
func TestRevocationNoContentIsRevoked(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(srv.Close)
	box, err := secrets.New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	f := New(Options{PublicURL: "http://quiver.test", AllowPrivate: true, Box: box, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	d := &toolconfig.DiscoveredOAuth{Issuer: srv.URL, AuthorizationURL: srv.URL + "/authorize", TokenURL: srv.URL + "/token",
		ClientID: "c1", AuthMethod: "none", RevocationURL: srv.URL + "/revoke"}
	cfg, _ := json.Marshal(map[string]any{toolconfig.DiscoveredKey: d})
	sealed, err := toolconfig.SealToken(box, &toolconfig.Token{AccessToken: "at", RefreshToken: "rt"})
	if err != nil {
		t.Fatal(err)
	}
	f.RevokeTokens(context.Background(), &store.Tool{ID: 7, CatalogName: "custom-mcp", Config: string(cfg), OAuthToken: sealed})
	wantCounts(t, "204 No Content", counts(f.opts.Metrics, "quiver_oauth_revocations_total"), map[string]float64{"revoked": 2})
	if bytes.Contains(logs.Bytes(), []byte("revocation failed")) {
		t.Fatalf("a 204 was logged as a failure:\n%s", logs.String())
	}
}
