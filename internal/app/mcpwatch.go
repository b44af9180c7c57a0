package app

import (
	"context"

	"github.com/quiverhq/quiver/internal/mcpserver"
	"github.com/quiverhq/quiver/internal/store"
	"github.com/quiverhq/quiver/internal/toolconfig"
)

// mcpWatch is the store the agents and toolconfig services write through:
// after a write that changes what an agent lists over MCP (its tools, its
// deletion, a tool's configuration or deletion) it drops this replica's
// cached lists, so the change shows on the next request here. Other
// replicas keep theirs for up to QUIVER_CACHE_TTL.
type mcpWatch struct {
	*store.Store
	// Both are set once built, before serving.
	tools *toolconfig.Service
	mcp   *mcpserver.Server
}

func (w *mcpWatch) UpdateAgent(ctx context.Context, accountID, id int64, u store.AgentUpdate) (*store.Agent, error) {
	a, err := w.Store.UpdateAgent(ctx, accountID, id, u)
	w.forgetAgent(accountID, id)
	return a, err
}

func (w *mcpWatch) DeleteAgent(ctx context.Context, accountID, id int64) error {
	err := w.Store.DeleteAgent(ctx, accountID, id)
	w.forgetAgent(accountID, id)
	return err
}

func (w *mcpWatch) UpdateToolConfig(ctx context.Context, t *store.Tool, wantState string, wantVersion int64) error {
	err := w.Store.UpdateToolConfig(ctx, t, wantState, wantVersion)
	w.forgetTool(t.AccountID, t.ID)
	return err
}

func (w *mcpWatch) DeleteTool(ctx context.Context, accountID, id int64) (*store.Tool, error) {
	t, err := w.Store.DeleteTool(ctx, accountID, id)
	w.forgetTool(accountID, id)
	return t, err
}

// The forgets run whatever the write answered: an error may hide a write
// that committed, and a needless rebuild costs one read.
func (w *mcpWatch) forgetAgent(account, id int64) {
	if w.mcp != nil {
		w.mcp.ForgetAgent(account, id)
	}
}

// forgetTool drops toolconfig's cached copy first: a list rebuilt between
// the write and toolconfig's own invalidation would otherwise be built from
// the tool as it was, and kept.
func (w *mcpWatch) forgetTool(account, id int64) {
	if w.tools != nil {
		w.tools.Invalidate(account, id)
	}
	if w.mcp != nil {
		w.mcp.ForgetTool(account, id)
	}
}
