package e2e

import (
	"net/http"
	"testing"
	"time"
)

// The OAuth refresh series a probe watches (quiver_oauth_refreshes_total).
var oaRefreshSeries = []string{
	`quiver_oauth_refreshes_total{result="refreshed"}`, `quiver_oauth_refreshes_total{result="refused"}`,
	`quiver_oauth_refreshes_total{result="unrefreshable"}`, `quiver_oauth_refreshes_total{result="client_rejected"}`,
	`quiver_oauth_refreshes_total{result="failed"}`,
}

// TestOAuthRefreshMetrics: /metrics counts each token refresh by what came
// of it, through the real API: a token past half its life refreshed once
// for a call (refreshed), then a grant the user revoked at the provider,
// found by the refresh a refused token asks for (refused: the tool is back
// at its oauth step). Every series is there, at zero, before any refresh.
func TestOAuthRefreshMetrics(t *testing.T) {
	p, _, srv, id := oaConnected(t, 2*time.Second, time.Hour)
	before := obsMetrics(t, srv)
	for _, s := range oaRefreshSeries {
		if v, ok := before[s]; !ok || v != 0 {
			t.Fatalf("before any refresh: %s = %v (present %t), want 0", s, v, ok)
		}
	}
	moved := func(what string, want map[string]float64) {
		t.Helper()
		after := obsMetrics(t, srv)
		for _, s := range oaRefreshSeries {
			if got := after[s] - before[s]; got != want[s] {
				t.Errorf("%s: %s moved by %v, want %v", what, s, got, want[s])
			}
		}
		before = after
	}

	oaPastHalfLife(p)
	if r := oaCall(t, srv, id, "read_count"); r.Status != 200 {
		t.Fatalf("a call due for a refresh: %d %s", r.Status, r.Body)
	}
	moved("a call due for a refresh", map[string]float64{`quiver_oauth_refreshes_total{result="refreshed"}`: 1})
	if r := oaCall(t, srv, id, "read_count"); r.Status != 200 {
		t.Fatalf("a call with the fresh token: %d %s", r.Status, r.Body)
	}
	moved("a call with the fresh token", nil)

	p.revokeGrant()
	if r := oaCall(t, srv, id, "read_count"); r.Status != 409 || r.JSON()["error"] != "tool_not_configured" {
		t.Fatalf("a call after the grant was revoked: %d %s, want 409 tool_not_configured", r.Status, r.Body)
	}
	moved("a call after the grant was revoked", map[string]float64{`quiver_oauth_refreshes_total{result="refused"}`: 1})

	// The other new series are exposed from the start too.
	for _, s := range []string{
		`quiver_oauth_revocations_total{result="revoked"}`, `quiver_oauth_revocations_total{result="failed"}`,
		`quiver_mcp_sessions_opened_total`, `quiver_mcp_session_failures_total`,
		`quiver_mcp_sessions_retired_total{reason="idle"}`, `quiver_mcp_sessions_retired_total{reason="ended"}`,
		`quiver_db_sessions_ended_total`,
	} {
		if _, ok := before[s]; !ok {
			t.Errorf("/metrics has no %s", s)
		}
	}
	if before[`quiver_mcp_sessions_opened_total`] < 1 {
		t.Errorf("quiver_mcp_sessions_opened_total = %v after calls to an MCP server, want at least 1", before[`quiver_mcp_sessions_opened_total`])
	}
}

// TestOAuthRevocationMetrics: each token a tool's deletion revokes at its
// provider is counted in quiver_oauth_revocations_total: revoked when the
// provider takes it, failed when it answers 500.
func TestOAuthRevocationMetrics(t *testing.T) {
	for _, c := range []struct {
		status int32
		result string
	}{{0, "revoked"}, {http.StatusInternalServerError, "failed"}} {
		t.Run(c.result, func(t *testing.T) {
			t.Parallel()
			p := oaStartProvider(t)
			rv := orvStart(t, p, true)
			rv.status.Store(c.status)
			srv, id := orvConnect(t, rv, "catalog")
			before := obsMetrics(t, srv)
			orvDisconnect(t, srv, id, "delete")
			srv.App.Tools.WaitRevocations()
			after := obsMetrics(t, srv)
			for _, result := range []string{"revoked", "failed"} {
				s := `quiver_oauth_revocations_total{result="` + result + `"}`
				want := 0.0
				if result == c.result {
					want = 2
				}
				if got := after[s] - before[s]; got != want {
					t.Errorf("%s moved by %v, want %v", s, got, want)
				}
			}
		})
	}
}
