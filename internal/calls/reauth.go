package calls

import (
	"context"

	"github.com/quiverhq/quiver/connectors"
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
	// RefusedFresh says the server refused the retry's token too, so that
	// its next refusals, for a while, are answered without a refresh.
	RefusedFresh(r *toolconfig.Resolved)
}

var _ Reauthorizer = (*toolconfig.Service)(nil)

// retryRefused is the one retry after the tool's server refused our OAuth
// token (cause): it refreshes the token (shared with concurrent callers),
// runs again on the refreshed tool, and when the server refuses the new
// token too, marks it (RefusedFresh) so that its next refusals get no
// refresh for a while. It returns the tool again ran on and again's error,
// or nil and the error to answer with (cause itself when there is nothing
// to refresh).
func (e *Engine) retryRefused(ctx context.Context, rt *toolconfig.Resolved, cause error, again func(*toolconfig.Resolved) error) (*toolconfig.Resolved, error) {
	if e.opts.Reauth == nil || rt.Tool.AccessToken == "" {
		return nil, cause
	}
	next, err := e.opts.Reauth.Reauthorize(ctx, rt)
	switch {
	case err != nil:
		return nil, err
	case next == nil:
		return nil, cause
	}
	err = again(next)
	if connectors.KindOf(err) == connectors.KindUpstreamAuth {
		e.opts.Reauth.RefusedFresh(next)
	}
	return next, err
}

// Actions resolves a connected tool of the account and lists its actions,
// with the same one shared token refresh as a call gets when the tool's
// server refuses our OAuth token. Listing is read-only, so the retry is
// always safe. A connector's failure comes back as a *connectors.Error;
// every other error is the tool's resolution's (a *problem.Error, or an
// unavailable database).
func (e *Engine) Actions(ctx context.Context, accountID, toolID int64) (*toolconfig.Resolved, []connectors.Action, error) {
	rt, err := e.opts.Tools.Resolve(ctx, accountID, toolID)
	if err != nil {
		return nil, nil, err
	}
	actions, err := rt.Connector.Actions(ctx, rt.Tool)
	if connectors.KindOf(err) == connectors.KindUpstreamAuth {
		next, rerr := e.retryRefused(ctx, rt, err, func(rt *toolconfig.Resolved) error {
			actions, err = rt.Connector.Actions(ctx, rt.Tool)
			return err
		})
		if next == nil {
			return nil, nil, rerr
		}
		rt = next
	}
	if err != nil {
		return nil, nil, err
	}
	return rt, actions, nil
}
