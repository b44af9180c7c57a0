package e2e

import (
	"testing"

	"github.com/quiverhq/quiver/internal/accounts"
	"github.com/quiverhq/quiver/internal/store"
	"github.com/quiverhq/quiver/internal/testserver"
)

// TestProbeIsoUnknownKeyScopeIsRefused: a key whose stored scope this
// server does not know (one a newer release made, seen by an older replica
// in a rolling upgrade or rollback) must not be served with full rights.
// It is refused like an unknown key: this server cannot know what the
// scope allows, and must not guess more than it.
func TestProbeIsoUnknownKeyScopeIsRefused(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	acct, err := srv.App.Store.EnsureAccount(t.Context(), "test")
	if err != nil {
		t.Fatal(err)
	}
	const key = "qv_UnknownScopeKey0123456789abcdefghijklmno"
	if !accounts.WellFormed(key) {
		t.Fatal("test key is not well formed")
	}
	err = srv.App.Store.CreateAPIKey(t.Context(), &store.APIKey{AccountID: acct.ID, KeyHash: accounts.Hash(key), Prefix: key[:7], Scope: "calls"})
	if err != nil {
		t.Fatal(err)
	}
	for _, rq := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/api/v1/agents/", nil},
		{"POST", "/api/v1/agents/", map[string]any{"name": "a", "goal": "g"}},
		{"POST", "/api/v1/agents/custom-tools/", map[string]any{"mcp_tool": "browser"}},
	} {
		r := testserver.Do(t, srv.URL, key, rq.method, rq.path, rq.body)
		fdWantError(t, r, 401, "unauthorized")
	}
	// The known scopes still work.
	if r := srv.Do("GET", "/api/v1/agents/", nil); r.Status != 200 {
		t.Fatalf("full key: %d %s", r.Status, r.Body)
	}
}
