package calls

import (
	"context"

	"github.com/quiverhq/quiver/internal/toolconfig"
)

// Reauthorizer answers a tool server's refusal of our OAuth access token
// (connectors.KindUpstreamAuth): one refresh shared with concurrent callers,
// after which dispatch retries the call once. The retry is safe because the
// server refused before running anything. *toolconfig.Service implements it.
type Reauthorizer interface {
	// Reauthorize returns the tool with a new token, nil and nil when it has
	// no OAuth grant to refresh, or a *problem.Error (tool_not_configured
	// when the grant is dead) that the call answers instead.
	Reauthorize(ctx context.Context, r *toolconfig.Resolved) (*toolconfig.Resolved, error)
}

var _ Reauthorizer = (*toolconfig.Service)(nil)

// reauthorize is dispatch's one retry after a refused token. It returns the
// tool to call again, or nil and the error to answer with (the original
// one when there is nothing to refresh).
func (c *call) reauthorize(ctx context.Context, rt *toolconfig.Resolved, cause error) (*toolconfig.Resolved, error) {
	if c.e.opts.Reauth == nil || rt.Tool.AccessToken == "" {
		return nil, cause
	}
	next, err := c.e.opts.Reauth.Reauthorize(ctx, rt)
	switch {
	case err != nil:
		return nil, err
	case next == nil:
		return nil, cause
	}
	return next, nil
}
