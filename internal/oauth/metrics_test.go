package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/metrics"
	"github.com/quiverhq/quiver/internal/secrets"
	"github.com/quiverhq/quiver/internal/store"
	"github.com/quiverhq/quiver/internal/toolconfig"
)

// refreshCounts reads quiver_oauth_refreshes_total's nonzero series by
// result.
func refreshCounts(f *Flow) map[string]float64 {
	return counts(f.opts.Metrics, "quiver_oauth_refreshes_total")
}

// counts reads the nonzero series of the counter name, by the value of its
// one label ("" for a counter without one).
func counts(m *metrics.Metrics, name string) map[string]float64 {
	out := map[string]float64{}
	mfs, _ := m.Registry.Gather()
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, s := range mf.GetMetric() {
			label := ""
			if l := s.GetLabel(); len(l) == 1 {
				label = l[0].GetValue()
			}
			if v := s.GetCounter().GetValue(); v != 0 {
				out[label] = v
			}
		}
	}
	return out
}

func wantCounts(t *testing.T, what string, got, want map[string]float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: counted %v, want %v", what, got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s: counted %v, want %v", what, got, want)
		}
	}
}

// TestRefreshCounted: each refresh is counted once in
// quiver_oauth_refreshes_total by what came of it; many calls sharing one
// refresh count it once, and a refresh another call made first is not
// counted again.
func TestRefreshCounted(t *testing.T) {
	ctx := context.Background()
	t.Run("refreshed", func(t *testing.T) {
		ts := startTokenServer(t, "rt-first")
		s := newSetup(t, ts.URL, &toolconfig.Token{AccessToken: "at-first", RefreshToken: "rt-first", Expiry: time.Now().Add(-time.Second)})
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() {
				if _, err := s.flow.Refresh(ctx, s.tool.AccountID, s.tool.ID, ""); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		wantCounts(t, "ten calls due for one refresh", refreshCounts(s.flow), map[string]float64{"refreshed": 1})
		if _, err := s.flow.Refresh(ctx, s.tool.AccountID, s.tool.ID, "at-first"); err != nil {
			t.Fatal(err)
		}
		wantCounts(t, "a refusal of a token already refreshed", refreshCounts(s.flow), map[string]float64{"refreshed": 1})
	})
	t.Run("refused", func(t *testing.T) {
		ts := startTokenServer(t, "rt-other")
		s := newSetup(t, ts.URL, &toolconfig.Token{AccessToken: "at-old", RefreshToken: "rt-dead", Expiry: time.Now().Add(-time.Minute)})
		if _, err := s.flow.Refresh(ctx, s.tool.AccountID, s.tool.ID, ""); !errors.Is(err, toolconfig.ErrGrantRevoked) {
			t.Fatalf("err = %v", err)
		}
		wantCounts(t, "invalid_grant", refreshCounts(s.flow), map[string]float64{"refused": 1})
	})
	t.Run("failed", func(t *testing.T) {
		ts := startTokenServer(t, "rt-first")
		ts.fail.Store(http.StatusBadGateway)
		s := newSetup(t, ts.URL, &toolconfig.Token{AccessToken: "at-first", RefreshToken: "rt-first", Expiry: time.Now().Add(-time.Second)})
		if _, err := s.flow.Refresh(ctx, s.tool.AccountID, s.tool.ID, ""); err == nil {
			t.Fatal("a refresh the provider failed succeeded")
		}
		wantCounts(t, "a 502 from the provider", refreshCounts(s.flow), map[string]float64{"failed": 1})
	})
	t.Run("client_rejected", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":"invalid_client"}`))
		}))
		t.Cleanup(srv.Close)
		s := newSetup(t, srv.URL, &toolconfig.Token{AccessToken: "at-first", RefreshToken: "rt-first", Expiry: time.Now().Add(-time.Second)})
		if _, err := s.flow.Refresh(ctx, s.tool.AccountID, s.tool.ID, ""); !errors.Is(err, toolconfig.ErrClientRejected) {
			t.Fatalf("err = %v, want ErrClientRejected", err)
		}
		wantCounts(t, "invalid_client", refreshCounts(s.flow), map[string]float64{"client_rejected": 1})
	})
	t.Run("refused, not saved", func(t *testing.T) {
		ts := startTokenServer(t, "rt-other")
		s := newSetup(t, ts.URL, &toolconfig.Token{AccessToken: "at-old", RefreshToken: "rt-dead", Expiry: time.Now().Add(-time.Minute)})
		s.flow.opts.Store = failingSave{s.flow.opts.Store}
		if _, err := s.flow.Refresh(ctx, s.tool.AccountID, s.tool.ID, ""); err == nil || errors.Is(err, toolconfig.ErrGrantRevoked) {
			t.Fatalf("err = %v, want the save's", err)
		}
		wantCounts(t, "invalid_grant, the tool's return to its oauth step not saved", refreshCounts(s.flow), map[string]float64{"failed": 1})
	})
	t.Run("unrefreshable", func(t *testing.T) {
		ts := startTokenServer(t, "rt-first")
		s := newSetup(t, ts.URL, &toolconfig.Token{AccessToken: "at-first", Expiry: time.Now().Add(-time.Second)})
		if _, err := s.flow.Refresh(ctx, s.tool.AccountID, s.tool.ID, ""); !errors.Is(err, toolconfig.ErrGrantRevoked) {
			t.Fatalf("err = %v, want ErrGrantRevoked", err)
		}
		if n := ts.requests.Load(); n != 0 {
			t.Fatalf("the provider was asked %d times", n)
		}
		wantCounts(t, "an expired token without a refresh token", refreshCounts(s.flow), map[string]float64{"unrefreshable": 1})
	})
}

// TestRevocationsCounted: each token a revocation sends is counted in
// quiver_oauth_revocations_total, revoked or failed; a stored token that
// cannot be opened is one failure (nothing was sent), and a provider
// without a revocation endpoint is not counted.
func TestRevocationsCounted(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(status) }))
	t.Cleanup(srv.Close)
	box, err := secrets.New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	f := New(Options{PublicURL: "http://quiver.test", AllowPrivate: true, Box: box, Logger: slog.New(slog.DiscardHandler)})
	tool := func(revocation, sealed string) *store.Tool {
		d := &toolconfig.DiscoveredOAuth{Issuer: srv.URL, AuthorizationURL: srv.URL + "/authorize", TokenURL: srv.URL + "/token",
			ClientID: "c1", AuthMethod: "none", RevocationURL: revocation}
		cfg, _ := json.Marshal(map[string]any{toolconfig.DiscoveredKey: d})
		return &store.Tool{ID: 7, CatalogName: "custom-mcp", Config: string(cfg), OAuthToken: sealed}
	}
	sealed, err := toolconfig.SealToken(box, &toolconfig.Token{AccessToken: "at", RefreshToken: "rt"})
	if err != nil {
		t.Fatal(err)
	}
	revocations := func() map[string]float64 { return counts(f.opts.Metrics, "quiver_oauth_revocations_total") }
	ctx := context.Background()
	f.RevokeTokens(ctx, tool(srv.URL+"/revoke", sealed))
	wantCounts(t, "both tokens revoked", revocations(), map[string]float64{"revoked": 2})
	f.RevokeTokens(ctx, tool("", sealed))
	wantCounts(t, "no revocation endpoint", revocations(), map[string]float64{"revoked": 2})
	status = http.StatusServiceUnavailable
	f.RevokeTokens(ctx, tool(srv.URL+"/revoke", sealed))
	wantCounts(t, "the provider down", revocations(), map[string]float64{"revoked": 2, "failed": 2})
	f.RevokeTokens(ctx, tool(srv.URL+"/revoke", box.Seal([]byte("not a token"))))
	wantCounts(t, "a token that cannot be opened", revocations(), map[string]float64{"revoked": 2, "failed": 3})
}

// failingSave is a Store whose LockTool hands fn a save that fails.
type failingSave struct{ Store }

func (f failingSave) LockTool(ctx context.Context, accountID, id int64, fn func(t *store.Tool, save store.SaveToolFunc) error) error {
	return f.Store.LockTool(ctx, accountID, id, func(t *store.Tool, _ store.SaveToolFunc) error {
		return fn(t, func(*store.Tool) error { return errors.New("the disk is full") })
	})
}
