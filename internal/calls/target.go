package calls

// A call's target: the connected tool its body names and the action it
// calls, from the tool's cached list of actions, or from the list read
// again when the action is missing from it (Relist).

import (
	"context"
	"errors"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/toolconfig"
)

// target resolves the tool named by the body, once per call: a read-only
// key's check and the run share the answer (a tool that failed to list its
// actions is not asked twice).
func (c *call) target(ctx context.Context) (*toolconfig.Resolved, *connectors.Action, error) {
	if !c.targeted {
		c.rt, c.action, c.targetErr = c.resolveTarget(ctx)
		c.targeted = true
	}
	return c.rt, c.action, c.targetErr
}

func (c *call) resolveTarget(ctx context.Context) (*toolconfig.Resolved, *connectors.Action, error) {
	e := c.e
	if c.b.problem != nil {
		return nil, nil, c.b.problem
	}
	id := c.b.ToolID
	if c.b.ToolName != "" {
		var err error
		if id, err = e.opts.Tools.ResolveName(ctx, c.req.AccountID, c.b.ToolName); err != nil {
			return nil, nil, err
		}
	}
	rt, actions, err := e.actionsForCall(ctx, c.req.AccountID, id)
	if err != nil {
		return nil, nil, c.listingFailed(ctx, id, err)
	}
	if a := findAction(actions, c.b.Action); a != nil {
		return rt, a, nil
	}
	rt, actions, err = e.Relist(ctx, rt)
	if err != nil {
		return nil, nil, c.listingFailed(ctx, id, err)
	}
	if a := findAction(actions, c.b.Action); a != nil {
		return rt, a, nil
	}
	return nil, nil, problem.New(problem.NotFound, "Tool %d has no action %q.", id, c.b.Action)
}

// listingFailed answers a call whose tool's actions could not be listed
// (nothing was sent). The request's line names a route and a status alone:
// a failure of the tool's server gets a line saying whose actions could
// not be listed, for which action.
func (c *call) listingFailed(ctx context.Context, toolID int64, err error) error {
	answer := ListingProblem(err)
	if _, ok := errors.AsType[*connectors.Error](err); ok {
		level, code := answerLevel(answer)
		c.e.opts.Logger.Log(ctx, level, "a call's tool could not list its actions; nothing was sent",
			"tool", toolID, "action", cutInput(c.b.Action), "code", code, "error", err)
	}
	return answer
}

// cutInput is a caller's input as a log line names it: cut to
// problem.MaxQuoted characters, so a megabyte sent is not a megabyte logged.
func cutInput(s string) string {
	n := 0
	for i := range s {
		if n == problem.MaxQuoted {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

func findAction(actions []connectors.Action, name string) *connectors.Action {
	for i := range actions {
		if actions[i].Name == name {
			return &actions[i]
		}
	}
	return nil
}

// Relist asks a connector whose list may lag the tool's own to read it
// again, when a call names an action missing from it; the connector
// decides whether it does (connectors.ActionsRelister). It waits no longer
// than a call may. The agent MCP endpoint asks through it too.
//
// It returns the tool to run the call on and the list to look the action
// up in: the re-read one, or the one the connector has cached (nil when
// none). A re-list the tool's server refused our OAuth token for gets the
// one shared refresh and one more re-list with the refreshed tool, which is
// then the one to run on (retryRefused, as a call and a listing get). The
// error, which the call answers before anything is reserved, is the
// refresh's refusal (a dead grant: tool_not_configured) or the server's
// refusal of our credentials where no refresh helped (upstream_auth_failed,
// as a listed action's call gets: the missing action may well be there).
// Every other failure of the re-list, the server unreachable included,
// leaves the call to answer from the list it gives: an action still missing
// is not_found as before, a rejection that leaves the key free.
func (e *Engine) Relist(ctx context.Context, rt *toolconfig.Resolved) (*toolconfig.Resolved, []connectors.Action, error) {
	r, ok := rt.Connector.(connectors.ActionsRelister)
	if !ok {
		return rt, nil, nil
	}
	if e.opts.CallTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.opts.CallTimeout)
		defer cancel()
	}
	actions, err := r.RelistActions(ctx, rt.Tool)
	if connectors.KindOf(err) != connectors.KindUpstreamAuth {
		return rt, actions, nil
	}
	next, err := e.retryRefused(ctx, rt, err, func(next *toolconfig.Resolved) (err error) {
		actions, err = r.RelistActions(ctx, next.Tool)
		return err
	})
	switch {
	case connectors.KindOf(err) == connectors.KindUpstreamAuth:
		return nil, nil, err // the refreshed token refused too, or nothing to refresh
	case next != nil:
		return next, actions, nil // err: the retry's other failure, logged by the connector
	default:
		return nil, nil, err
	}
}

// actionsForCall is Actions for a call. Listing the tool's actions is part
// of the call: it waits no longer than the call may (a tool that does not
// answer is unreachable). A tool and actions at hand need no bound, and
// are taken without one (a timer costs a call CPU).
func (e *Engine) actionsForCall(ctx context.Context, accountID, toolID int64) (*toolconfig.Resolved, []connectors.Action, error) {
	if e.opts.CallTimeout <= 0 {
		return e.Actions(ctx, accountID, toolID)
	}
	if rt, ok := e.opts.Tools.AtHand(accountID, toolID); ok {
		if c, ok := rt.Connector.(connectors.ActionsAtHand); ok {
			if actions, ok := c.CachedActions(rt.Tool); ok {
				return rt, actions, nil
			}
		}
	}
	actx, cancel := context.WithTimeout(ctx, e.opts.CallTimeout)
	defer cancel()
	return e.Actions(actx, accountID, toolID)
}
