package oauth

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/store"
	"github.com/quiverhq/quiver/internal/testdb"
	"github.com/quiverhq/quiver/internal/toolconfig"
)

// TestRefreshHoldsNoConnectionAtTheProvider: a refresh waiting on its
// provider holds none of the pool's connections, so an unrelated read is
// answered at once however slow the provider. Each refresh used to hold one
// for the provider's whole round trip (the tool's row lock, SELECT … FOR
// UPDATE, in a transaction): with a pool of 2, two refreshes against a
// provider taking 3 s kept every other read of the replica waiting.
func TestRefreshHoldsNoConnectionAtTheProvider(t *testing.T) {
	const pool = 2
	arrived := make(chan struct{}, pool)
	release := make(chan struct{})
	var once sync.Once
	letGo := func() { once.Do(func() { close(release) }) }
	t.Cleanup(letGo)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		// A slow provider: 3 s, or until the test has read what it needs.
		select {
		case <-release:
		case <-time.After(3 * time.Second):
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": "at-next", "token_type": "Bearer",
			"expires_in": 3600, "refresh_token": "rt-next"})
	}))
	t.Cleanup(ts.Close)
	tok := &toolconfig.Token{AccessToken: "at-first", RefreshToken: "rt-first", Expiry: time.Now().Add(-time.Second)}
	s := newSetupOn(t, store.Options{DatabaseURL: testdb.Postgres(t, "oauthslow"), MaxConns: pool}, ts.URL, tok)
	ids := []int64{s.tool.ID}
	for range pool {
		other := *s.tool
		other.ID = 0
		if err := s.st.CreateTool(context.Background(), &other); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, other.ID)
	}
	unrelated, refreshed := ids[pool], ids[:pool]
	errs := make(chan error, pool)
	for _, id := range refreshed {
		go func() {
			_, err := s.flow.Refresh(context.Background(), s.tool.AccountID, id, "")
			errs <- err
		}()
	}
	for range refreshed {
		select {
		case <-arrived:
		case <-time.After(10 * time.Second):
			t.Fatal("the refreshes did not reach the provider")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	began := time.Now()
	_, err := s.st.GetTool(ctx, s.tool.AccountID, unrelated)
	took := time.Since(began)
	letGo()
	if err != nil {
		t.Fatalf("an unrelated read during two slow refreshes: %v", err)
	}
	if took > 500*time.Millisecond {
		t.Errorf("an unrelated read took %s while %d refreshes waited on their provider (pool of %d), want < 500ms", took.Round(time.Millisecond), pool, pool)
	}
	for range refreshed {
		if err := <-errs; err != nil {
			t.Errorf("a slow refresh answered %v", err)
		}
	}
	for _, id := range refreshed {
		row, err := s.st.GetTool(context.Background(), s.tool.AccountID, id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := toolconfig.OpenToken(s.box, row.OAuthToken)
		if err != nil || got.RefreshToken != "rt-next" || row.Version != s.tool.Version+1 {
			t.Errorf("tool %d after its refresh: version %d, %v", id, row.Version, err)
		}
	}
}

// replica is a second server on s's database: a store and flow of its own.
func (s *setup) replica(t *testing.T, opts store.Options) *Flow {
	t.Helper()
	st, err := store.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tools := toolconfig.New(toolconfig.Options{Store: st, Catalog: s.tools.Catalog(), Box: s.box, Connectors: connectors.Registry{}, Logger: s.flow.opts.Logger})
	o := s.flow.opts
	o.Store, o.Tools, o.Metrics = st, tools, nil
	flow := New(o)
	tools.SetOAuth(flow)
	return flow
}

// TestRefreshOnceAcrossReplicas: concurrent refreshes of one tool on two
// replicas, each with a pool of one, against a provider that rotates its
// refresh tokens and takes a while: one request reaches the provider, the
// other replica waits out its lease and uses the token saved, and every
// call answers with it (none spends the rotated-away refresh token and is
// refused).
func TestRefreshOnceAcrossReplicas(t *testing.T) {
	ts := startTokenServer(t, "rt-first")
	tok := &toolconfig.Token{AccessToken: "at-first", RefreshToken: "rt-first", Expiry: time.Now().Add(-time.Second)}
	opts := store.Options{DatabaseURL: testdb.Postgres(t, "oauthreplicas"), MaxConns: 1}
	s := newSetupOn(t, opts, ts.URL, tok)
	flows := []*Flow{s.flow, s.replica(t, opts)}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			row, err := flows[i%2].Refresh(context.Background(), s.tool.AccountID, s.tool.ID, "")
			if err != nil {
				t.Errorf("refresh on replica %d: %v", i%2, err)
				return
			}
			if got, err := toolconfig.OpenToken(s.box, row.OAuthToken); err != nil || got.AccessToken != "at-b" {
				t.Errorf("refresh on replica %d answered another token, %v", i%2, err)
			}
		}()
	}
	wg.Wait()
	if n := ts.requests.Load(); n != 1 {
		t.Fatalf("token requests = %d, want 1", n)
	}
	row, got := s.stored(t)
	if got == nil || got.RefreshToken != "rt-b" || row.Version != s.tool.Version+1 {
		t.Fatalf("stored after the refreshes: version %d, token %+v", row.Version, got != nil)
	}
}
