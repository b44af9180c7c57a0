package toolconfig

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/quiverhq/quiver/catalog"
	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/store"
)

// unsetRefresher is a flow whose provider for the tool has no client on
// this server any more (its QUIVER_OAUTH_<PROVIDER>_* were unset).
type unsetRefresher struct{}

func (unsetRefresher) AuthorizationURL(context.Context, *store.Tool, *catalog.Entry, *catalog.Step) (string, error) {
	return "", ErrProviderNotConfigured
}

func (unsetRefresher) Refresh(context.Context, int64, int64, string) (*store.Tool, error) {
	return nil, ErrProviderNotConfigured
}

func (unsetRefresher) RefusedFresh(int64, string) {}

// TestRefreshWithoutTheProviderSaysWhy: a connected tool whose token is
// due when its provider has no client on this server any more is told so,
// and that a retry will not help until an operator sets the client; it
// used to be told that the provider could not refresh the token and to
// retry shortly, which no retry could make true.
func TestRefreshWithoutTheProviderSaysWhy(t *testing.T) {
	s := New(Options{Store: &racingStore{tools: map[int64]store.Tool{}}, OAuth: unsetRefresher{},
		Logger: slog.New(slog.DiscardHandler)})
	entry := &catalog.Entry{Name: "github-mcp", OAuth: &catalog.OAuthProvider{Provider: "github"}}
	r := &Resolved{Entry: entry, Tool: &connectors.Tool{AccessToken: "at"}, Row: &store.Tool{ID: 1, AccountID: 1, OAuthToken: "sealed"},
		refreshAt: time.Now().Add(-time.Minute), expiry: time.Now().Add(-time.Second)}
	for name, refresh := range map[string]func() (*Resolved, error){
		"due":     func() (*Resolved, error) { return s.fresh(context.Background(), r) },
		"refused": func() (*Resolved, error) { return s.Reauthorize(context.Background(), r) },
	} {
		_, err := refresh()
		p, ok := problem.As(err)
		if !ok || p.Code != problem.ToolUnreachable {
			t.Fatalf("%s: %v, want tool_unreachable", name, err)
		}
		if strings.Contains(p.Message, "Retry shortly") || !strings.Contains(p.Message, "QUIVER_OAUTH_GITHUB_CLIENT_ID") {
			t.Fatalf("%s: %q, want it to name the client to set, not to retry", name, p.Message)
		}
	}
}
