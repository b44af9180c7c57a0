package oauth

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/store"
	"github.com/quiverhq/quiver/internal/testdb"
	"github.com/quiverhq/quiver/internal/toolconfig"
)

// providerAnswer is a token endpoint that answers every request with
// status, contentType and body, as a provider's real one does.
func providerAnswer(t *testing.T, status int, contentType, body string) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(ts.Close)
	return ts
}

// TestRefreshProviderSpecificCodes: the catalog's providers that answer a
// dead refresh token or a refused client with codes of their own, not RFC
// 6749's, are understood: GitHub's bad_refresh_token (HTTP 200, a form
// body) and Slack's invalid_refresh_token and token_revoked (HTTP 200,
// "ok": false) put the tool back at its oauth step, as invalid_grant does,
// and GitHub's incorrect_client_credentials and Slack's bad_client_secret
// and invalid_client_id are the client's own refusal. They used to be
// taken for a passing failure: a tool whose GitHub refresh token had
// expired answered every call 502 "retry shortly", forever, and was never
// shown its oauth step again.
func TestRefreshProviderSpecificCodes(t *testing.T) {
	const form, js = "application/x-www-form-urlencoded; charset=utf-8", "application/json; charset=utf-8"
	cases := []struct {
		provider, catalog string
		contentType, body string
		want              error
	}{
		{"github", "github-mcp", form, "error=bad_refresh_token&error_description=The+refresh+token+passed+is+incorrect+or+expired.", toolconfig.ErrGrantRevoked},
		{"github", "github-mcp", form, "error=incorrect_client_credentials&error_description=The+client_id+and%2For+client_secret+passed+are+incorrect.", toolconfig.ErrClientRejected},
		{"slack", "slack", js, `{"ok":false,"error":"invalid_refresh_token"}`, toolconfig.ErrGrantRevoked},
		{"slack", "slack", js, `{"ok":false,"error":"token_revoked"}`, toolconfig.ErrGrantRevoked},
		{"slack", "slack", js, `{"ok":false,"error":"bad_client_secret"}`, toolconfig.ErrClientRejected},
		{"slack", "slack", js, `{"ok":false,"error":"invalid_client_id"}`, toolconfig.ErrClientRejected},
	}
	for _, c := range cases {
		t.Run(c.provider+"/"+c.body, func(t *testing.T) {
			ts := providerAnswer(t, http.StatusOK, c.contentType, c.body)
			s := newSetup(t, ts.URL, &toolconfig.Token{AccessToken: "at-first", RefreshToken: "rt-first", Expiry: time.Now().Add(-time.Second)})
			s.flow.opts.Clients[c.provider] = Client{ID: "id", Secret: "client-secret"}
			s.flow.opts.Endpoints[c.provider] = Endpoint{TokenURL: ts.URL}
			if err := s.st.DB().Model(&store.Tool{}).Where("id = ?", s.tool.ID).Update("catalog_name", c.catalog).Error; err != nil {
				t.Fatal(err)
			}
			row, err := s.flow.Refresh(context.Background(), s.tool.AccountID, s.tool.ID, "")
			if !errors.Is(err, c.want) {
				t.Fatalf("refresh answered %q: err = %v, want %v", c.body, err, c.want)
			}
			stored, tok := s.stored(t)
			if c.want == toolconfig.ErrGrantRevoked {
				if row == nil || row.State != string(toolconfig.AwaitingAuthorization) || stored.State != row.State || tok != nil {
					t.Fatalf("a dead grant left the tool at %s with a token %t", stored.State, tok != nil)
				}
				return
			}
			if stored.State != string(toolconfig.Configured) || tok == nil || tok.RefreshToken != "rt-first" {
				t.Fatalf("a refused client changed the tool: state %s, token kept %t", stored.State, tok != nil)
			}
		})
	}
}

// TestRefreshRefusalsHoldOneConnectionEach: on Postgres a refresh holds
// its tool's row lock, and so one connection of the pool, while the
// provider answers; a refresh the provider refuses must judge the refusal
// without asking the pool for a second one. It used to read the tool again
// on another connection inside the locked transaction, so as many refused
// refreshes at once as the pool has connections waited for one another
// until their deadline (25 s), and then could not store the tools back at
// their oauth steps either: each call answered 502, and the next ones did
// it all again.
func TestRefreshRefusalsHoldOneConnectionEach(t *testing.T) {
	const pool = 2
	arrived := make(chan struct{}, pool)
	all := make(chan struct{})
	var once sync.Once
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Every refresh is refused once all of them hold their lock.
		arrived <- struct{}{}
		if len(arrived) == pool {
			once.Do(func() { close(all) })
		}
		select {
		case <-all:
		case <-time.After(5 * time.Second):
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":"invalid_grant"}`)
	}))
	t.Cleanup(ts.Close)
	tok := &toolconfig.Token{AccessToken: "at-first", RefreshToken: "rt-first", Expiry: time.Now().Add(-time.Second)}
	s := newSetupOn(t, store.Options{DatabaseURL: testdb.Postgres(t, "oauthpool"), MaxConns: pool}, ts.URL, tok)
	ids := []int64{s.tool.ID}
	for range pool - 1 {
		other := *s.tool
		other.ID = 0
		if err := s.st.CreateTool(context.Background(), &other); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, other.ID)
	}
	began := time.Now()
	errs := make(chan error, len(ids))
	for _, id := range ids {
		go func() {
			_, err := s.flow.Refresh(context.Background(), s.tool.AccountID, id, "")
			errs <- err
		}()
	}
	for range ids {
		if err := <-errs; !errors.Is(err, toolconfig.ErrGrantRevoked) {
			t.Errorf("a refused refresh answered %v, want ErrGrantRevoked", err)
		}
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("%d refused refreshes on a pool of %d took %s", len(ids), pool, took.Round(time.Second))
	}
	for _, id := range ids {
		row, err := s.st.GetTool(context.Background(), s.tool.AccountID, id)
		if err != nil {
			t.Fatal(err)
		}
		if row.State != string(toolconfig.AwaitingAuthorization) || row.OAuthToken != "" {
			t.Errorf("tool %d after its grant was refused: state %s, token kept %t", id, row.State, row.OAuthToken != "")
		}
	}
}
