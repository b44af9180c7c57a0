package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/quiverhq/quiver/internal/store"
	"github.com/quiverhq/quiver/internal/toolconfig"
)

// heldProvider is a token endpoint with rotating refresh tokens whose
// refresh answers wait until the test releases them, and a revocation
// endpoint that records what it was sent.
type heldProvider struct {
	*httptest.Server
	entered, release chan struct{}
	mu               sync.Mutex
	revoked          []string
}

func startHeldProvider(t *testing.T) *heldProvider {
	p := &heldProvider{entered: make(chan struct{}, 1), release: make(chan struct{})}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		switch r.URL.Path {
		case "/token":
			p.entered <- struct{}{}
			<-p.release
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"access_token": "at-next", "token_type": "Bearer",
				"expires_in": 3600, "refresh_token": "rt-next"})
		case "/revoke":
			p.mu.Lock()
			p.revoked = append(p.revoked, r.PostForm.Get("token"))
			p.mu.Unlock()
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *heldProvider) revokedTokens() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.revoked)
}

// TestRefreshOvertakenRevokesWhatItWasIssued: on the embedded database a
// refresh holds no row lock, so its tool can be deleted or reset while the
// provider answers; the tokens the provider then issued are stored
// nowhere, and are revoked, as a callback overtaken the same way revokes
// the grant it was issued. They used to be left live at the provider: the
// delete revoked the spent refresh token it read, and the rotated one the
// refresh was given outlived the tool there.
func TestRefreshOvertakenRevokesWhatItWasIssued(t *testing.T) {
	for _, how := range []string{"deleted", "reset"} {
		t.Run(how, func(t *testing.T) {
			p := startHeldProvider(t)
			s := newSetup(t, p.URL+"/token", &toolconfig.Token{AccessToken: "at-first", RefreshToken: "rt-first", Expiry: time.Now().Add(-time.Second)})
			s.flow.opts.Endpoints["github"] = Endpoint{TokenURL: p.URL + "/token", RevocationURL: p.URL + "/revoke"}
			ctx := context.Background()
			errs := make(chan error, 1)
			go func() {
				_, err := s.flow.Refresh(ctx, s.tool.AccountID, s.tool.ID, "")
				errs <- err
			}()
			select {
			case <-p.entered:
			case <-time.After(10 * time.Second):
				t.Fatal("no refresh reached the provider")
			}
			var err error
			if how == "deleted" {
				err = s.tools.Delete(ctx, s.tool.AccountID, s.tool.ID)
			} else {
				_, err = s.tools.Reset(ctx, s.tool.AccountID, s.tool.ID)
			}
			if err != nil {
				t.Fatal(err)
			}
			s.tools.WaitRevocations()
			close(p.release)
			if err := <-errs; !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("the overtaken refresh answered %v, want a conflict", err)
			}
			got := p.revokedTokens()
			for _, want := range []string{"rt-first", "at-first", "rt-next", "at-next"} {
				if !slices.Contains(got, want) {
					t.Errorf("revoked %q, want %s among them", got, want)
				}
			}
			if how == "reset" {
				if row, tok := s.stored(t); row.State != string(toolconfig.AwaitingAuthorization) || tok != nil {
					t.Fatalf("the refresh undid the reset: state %s, token %t", row.State, tok != nil)
				}
			}
		})
	}
}
