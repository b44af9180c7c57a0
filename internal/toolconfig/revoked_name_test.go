package toolconfig

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/quiverhq/quiver/catalog"
	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/store"
)

// revokedRefresher is a provider that revoked the grant: the refresh moves
// the tool back to its OAuth step.
type revokedRefresher struct{ row *store.Tool }

func (*revokedRefresher) AuthorizationURL(context.Context, *store.Tool, *catalog.Entry, *catalog.Step) (string, error) {
	return "", nil
}

func (r *revokedRefresher) Refresh(context.Context, int64, int64, string) (*store.Tool, error) {
	return r.row, ErrGrantRevoked
}

func (*revokedRefresher) RefusedFresh(int64, string) {}

// TestRevokedGrantNamesTheTool: the tool_not_configured of a tool whose
// grant a refresh found revoked carries UnconfiguredError with the tool's
// name, as that of any tool not configured does: the agent endpoint keeps
// the tool's MCP name by it, and would otherwise hand the name to another
// tool of the same name until its next build.
func TestRevokedGrantNamesTheTool(t *testing.T) {
	row := &store.Tool{ID: 7, AccountID: 1, Name: "crm", OAuthToken: "sealed", State: string(AwaitingAuthorization)}
	s := New(Options{Store: &racingStore{tools: map[int64]store.Tool{}}, OAuth: &revokedRefresher{row: row},
		Logger: slog.New(slog.DiscardHandler)})
	r := &Resolved{Entry: &catalog.Entry{Name: "custom-mcp"}, Tool: &connectors.Tool{AccessToken: "at"}, Row: row}
	_, err := s.Reauthorize(context.Background(), r)
	var nc *UnconfiguredError
	if p, ok := problem.As(err); !ok || p.Code != problem.ToolNotConfigured || !errors.As(err, &nc) || nc.ID != 7 || nc.Name != "crm" {
		t.Fatalf("a revoked grant: %v (cause %+v), want tool_not_configured naming tool 7 crm", err, nc)
	}
}
