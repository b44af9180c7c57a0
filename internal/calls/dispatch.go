package calls

// Dispatch and record: calling the tool and storing what came back.

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/egress"
	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/replaycache"
	"github.com/quiverhq/quiver/internal/store"
	"github.com/quiverhq/quiver/internal/toolconfig"
)

// dispatch calls the tool on a context detached from the client and
// records what came back.
func (c *call) dispatch(ctx context.Context, rt *toolconfig.Resolved, action *connectors.Action, callID string) (*Response, error) {
	e := c.e
	e.opts.Metrics.InProgress.Inc()
	defer e.opts.Metrics.InProgress.Dec()
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.opts.CallTimeout)
	defer cancel()
	args := c.b.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	began := time.Now()
	result, err := rt.Connector.Call(dctx, rt.Tool, action.Name, args)
	var refused error // the answer of a failed reauthorization: nothing ran
	if connectors.KindOf(err) == connectors.KindUpstreamAuth {
		// The server refused our token before running anything: refresh
		// once (shared with concurrent calls) and retry once.
		next, rerr := e.retryRefused(dctx, rt, err, func(rt *toolconfig.Resolved) error {
			result, err = rt.Connector.Call(dctx, rt.Tool, action.Name, args)
			return err
		})
		switch {
		case next != nil:
			rt = next
		case rerr != err:
			refused = unavailable(rerr)
		}
	}
	dur := time.Since(began)
	// Recording must happen even if the client is gone, on a context made
	// only where something is recorded before the answer: a keyless call's
	// success is queued for the log, and a timer it does not need would cost
	// it CPU (a new earliest timer may wake a thread to watch it).
	recording := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	}
	if refused != nil || err != nil {
		rctx, rcancel := recording()
		defer rcancel()
		switch {
		case refused != nil:
			return c.rejected(rctx, rt, action, callID, dur, refused)
		case connectors.KindOf(err) == connectors.KindOutcomeUnknown:
			return c.unknown(rctx, rt, action, callID, dur, err)
		}
		return c.rejected(rctx, rt, action, callID, dur, err)
	}
	outcome := "succeeded"
	if result.IsError {
		outcome = "tool_error"
	}
	respBody, answer := encodeResult(callID, rt.Tool.ID, action.Name, result, dur)
	if c.req.HasKey {
		// The row decides: only once it holds the outcome does the outcome
		// go to the replay cache. Another replica that reads an entry there
		// keeps a copy in memory for the key's whole life, so an entry put
		// before a commit that then failed would be replayed there as a 200
		// the database never held. The attempt ends with the lease: after
		// it, the row is no longer this call's to complete. The call's log
		// entry is written with the outcome, so a crash right after cannot
		// lose it.
		c.outcome = outcome // for unknown, should the row hold it after all
		entry := c.entry(rt, action, callID, outcome, dur)
		rctx, rcancel := recording()
		defer rcancel()
		cctx, ccancel := context.WithDeadline(rctx, c.leaseUntil)
		earlier := e.log.earlier()
		ok, err := e.opts.Store.Complete(cctx, c.req.AccountID, c.req.Key, c.token, 200, ContentType, respBody, &entry, earlier.entries...)
		ccancel()
		e.log.settle(earlier, err)
		if err != nil {
			ok, err = c.completeRetry(ctx, callID, respBody, &entry, err)
		}
		if err != nil || !ok {
			return c.unstored(ctx, rt, action, callID, outcome, dur, err)
		}
		c.cacheOutcome(ctx, callID, replaycache.StateSucceeded, 200, ContentType, respBody, readOnlyRecord(action), c.freshTTL())
	} else {
		e.log.add(c.entry(rt, action, callID, outcome, dur)) // a keyed call's was written with its outcome
	}
	resp := c.succeeded(outcome, respBody)
	resp.Answer = answer
	return resp, nil
}

// succeeded counts a call whose outcome came back, and answers it. Its log
// entry is written already, or queued.
func (c *call) succeeded(outcome string, body []byte) *Response {
	c.count(outcome)
	return &Response{Status: 200, ContentType: ContentType, Body: body}
}

// count counts a dispatched call by its outcome and records how long it
// took, whatever the outcome: a timeout left out of the histogram would
// hide the slowest calls.
func (c *call) count(outcome string) {
	c.e.opts.Metrics.Calls.WithLabelValues(outcome).Inc()
	c.observe()
}

// observe records how long a dispatched call took.
func (c *call) observe() {
	c.e.opts.Metrics.CallDuration.WithLabelValues("first").Observe(time.Since(c.start).Seconds())
}

// completeRetryMax is the longest wait between two attempts to store an
// outcome.
const completeRetryMax = 250 * time.Millisecond

// completeRetry stores a known outcome after Complete failed (the database
// could not be reached), trying again with a short backoff while the call
// holds its lease: until then the row is this call's alone to decide, so a
// short blip still stores the 200 that this replica's cache already holds,
// and every replica replays it. Once the lease has run out it returns the
// last error. The lease ends on the database's clock at the earliest
// c.leaseUntil, and Complete refuses a row whose lease ran out, so an
// attempt that arrives late changes nothing.
func (c *call) completeRetry(ctx context.Context, callID string, respBody []byte, entry *store.CallLog, err error) (bool, error) {
	e := c.e
	e.opts.Logger.WarnContext(ctx, "storing a call outcome failed; retrying while the call holds its lease",
		append(c.named(callID), "lease_left", time.Until(c.leaseUntil).String(), "error", err)...)
	backoff := 20 * time.Millisecond
	for {
		left := time.Until(c.leaseUntil)
		if left <= 0 {
			return false, err
		}
		time.Sleep(min(backoff, left))
		backoff = min(2*backoff, completeRetryMax)
		if left = time.Until(c.leaseUntil); left <= 0 {
			return false, err
		}
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), left)
		var ok bool
		ok, err = e.opts.Store.Complete(actx, c.req.AccountID, c.req.Key, c.token, 200, ContentType, respBody, entry)
		cancel()
		if err == nil {
			return ok, nil
		}
	}
}

// unstored answers a call whose known outcome could not be stored while it
// held its lease: the database stayed unreachable, or the lease was lost.
// The row decides what every caller sees. If it holds this call's outcome
// (a Complete that committed but whose reply was lost), that is the answer.
// Otherwise the outcome is unknown for everyone: the row is marked so (or
// the sweeper will mark it once its lease has run out), the replay cache
// says so too, and the answer is 504. No replica can have replayed a 200:
// the cache gets an outcome only after the row holds it.
func (c *call) unstored(ctx context.Context, rt *toolconfig.Resolved, action *connectors.Action, callID, outcome string, dur time.Duration, cause error) (*Response, error) {
	e := c.e
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	r, err := e.opts.Store.GetIdem(fctx, c.req.AccountID, c.req.Key)
	if err == nil && r.CallID == callID && r.State == store.IdemSucceeded {
		// The Complete that committed wrote the log entry too.
		c.cacheOutcome(ctx, callID, replaycache.StateSucceeded, 200, ContentType, r.Response, r.ReadOnly, rowTTL(r))
		return c.succeeded(outcome, r.Response), nil
	}
	if cause == nil {
		cause = errors.New("the call's lease was lost before its outcome was stored")
	}
	if err == nil && r.CallID != callID {
		// The key was released and taken again (its TTL ran out): the
		// cache entry belongs to that call now, not ours to overwrite.
		c.count("outcome_unknown")
		e.log.add(c.entry(rt, action, callID, "outcome_unknown", dur))
		return nil, outcomeUnknown(cause, c.req.HasKey)
	}
	return c.unknown(fctx, rt, action, callID, dur, cause)
}

// unknown records a dispatched call with no outcome: terminal for its key.
func (c *call) unknown(ctx context.Context, rt *toolconfig.Resolved, action *connectors.Action, callID string, dur time.Duration, cause error) (*Response, error) {
	e := c.e
	entry := c.entry(rt, action, callID, "outcome_unknown", dur)
	recorded := true
	if c.req.HasKey {
		// The log entry is written with the outcome, so a crash right
		// after the answer cannot lose it. A row this call could not mark
		// is logged by whoever decided it (the sweeper, or a Complete that
		// committed); the entry queued here as well is skipped then, by its
		// call ID.
		var err error
		earlier := e.log.earlier()
		recorded, err = e.opts.Store.MarkUnknown(ctx, c.req.AccountID, c.req.Key, c.token, &entry, earlier.entries...)
		e.log.settle(earlier, err)
		if !recorded {
			// The row may hold this call decided all the same: by this
			// MarkUnknown, committed with its reply lost (no sweeper will
			// find the row: the call is counted and cached here or
			// nowhere), or by a Complete of this call that committed with
			// its reply lost, which unstored could not read back: the row's
			// outcome is then the answer, as it is every retry's.
			r, early, rerr := c.ownRow(ctx, callID)
			switch {
			case r != nil && r.State == store.IdemSucceeded && c.outcome != "":
				c.cacheOutcome(ctx, callID, replaycache.StateSucceeded, 200, ContentType, r.Response, r.ReadOnly, rowTTL(r))
				return c.succeeded(c.outcome, r.Response), nil
			case r != nil && r.State == store.IdemOutcomeUnknown && err != nil && early:
				recorded = true
			case err != nil:
				e.opts.Logger.ErrorContext(ctx, "recording an unknown outcome failed; the sweeper will", append(c.named(callID), "error", err)...)
				if rerr != nil && early {
					go c.countLater(context.WithoutCancel(ctx), callID)
				}
			}
		}
		// Only what the row says goes to the cache. A row this call could
		// not mark may hold its outcome after all (a Complete that
		// committed, its answer lost): readers of the row replay it, and a
		// cached outcome_unknown would contradict them.
		if recorded {
			c.cacheOutcome(ctx, callID, replaycache.StateOutcomeUnknown, 0, "", nil, readOnlyRecord(action), c.freshTTL())
		}
	}
	e.opts.Logger.WarnContext(ctx, "call outcome unknown", "call_id", callID, "tool", rt.Tool.ID, "action", action.Name,
		"code", string(problem.OutcomeUnknownConflict), "error", cause)
	if !c.req.HasKey || !recorded {
		e.log.add(entry)
	}
	if recorded {
		c.count("outcome_unknown")
	} else {
		c.observe() // a sweeper marks the row, and counts the call: once in all
	}
	return nil, outcomeUnknown(cause, c.req.HasKey)
}

// ownRow reads the key's row after a MarkUnknown that did not mark it, and
// returns it when it holds this call (nil otherwise), with whether it was
// read before c.leaseUntil, when the lease ends at the earliest, and the
// read's error. A row read so as outcome_unknown was marked by this call:
// the sweeper marks only rows whose lease ran out on the database's clock,
// and nothing else marks a row so; read later, the two cannot be told
// apart, and the call is left to the sweeper.
func (c *call) ownRow(ctx context.Context, callID string) (*store.IdemRecord, bool, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	r, err := c.e.opts.Store.GetIdem(rctx, c.req.AccountID, c.req.Key)
	early := time.Now().Before(c.leaseUntil)
	if err != nil || r.CallID != callID {
		return nil, early, err
	}
	return r, early, nil
}

// countLater reads the key's row again, with a growing pause, while the
// lease lasts, after a MarkUnknown that failed and a read of the row that
// failed too (the database away for a moment): a row that then holds this
// call as outcome_unknown was marked by that MarkUnknown (ownRow), and no
// sweeper will count the call, so it is counted here. Any other answer, or
// none before the lease is about to end, leaves the row to the sweeper. It
// runs off the request and touches nothing of the call but what it reads.
func (c *call) countLater(ctx context.Context, callID string) {
	pause := 250 * time.Millisecond
	for time.Now().Add(pause).Before(c.leaseUntil) {
		time.Sleep(pause)
		r, early, err := c.ownRow(ctx, callID)
		if err == nil {
			if r != nil && early && r.State == store.IdemOutcomeUnknown {
				c.e.opts.Metrics.Calls.WithLabelValues("outcome_unknown").Inc() // its duration was observed
			}
			return
		}
		pause = min(2*pause, 2*time.Second)
	}
}

// named is what a line about the call names, so that an operator reading
// it alone knows which tool's call it was: its call ID, tool and action.
func (c *call) named(callID string) []any {
	tool, action := c.b.ToolID, c.b.Action
	if c.rt != nil {
		tool = c.rt.Tool.ID
	}
	if c.action != nil {
		action = c.action.Name
	}
	return []any{"call_id", callID, "tool", tool, "action", action}
}

// outcomeUnknown is the first answer of a call dispatched with no outcome.
func outcomeUnknown(cause error, keyed bool) error {
	msg := "The call was sent to the tool and no outcome came back; it will not be run again for this key. Check the tool before trying a new key."
	if !keyed {
		msg = "The call was sent to the tool and no outcome came back. Check the tool before calling again."
	}
	return &problem.Error{Code: problem.OutcomeUnknownConflict, Status: 504, Err: cause, Message: msg}
}

// rejected releases the key of a call the tool refused before running it.
func (c *call) rejected(ctx context.Context, rt *toolconfig.Resolved, action *connectors.Action, callID string, dur time.Duration, cause error) (*Response, error) {
	c.count("rejected")
	// A keyed call's entry is written with the release (or with a later
	// try of it), so a crash right after the answer cannot lose it; without
	// a key, or when the row is no longer this call's, it is queued.
	entry := c.entry(rt, action, callID, "rejected", dur)
	if !c.releaseKey(ctx, callID, &entry) {
		c.e.log.add(entry)
	}
	answer := connectorProblem(cause)
	// The request's own line names a route and a status alone: this one
	// says which call, tool and action.
	level, code := answerLevel(answer)
	c.e.opts.Logger.Log(ctx, level, "call rejected before the tool ran it", "call_id", callID, "tool", rt.Tool.ID,
		"action", action.Name, "code", code, "error", cause)
	return nil, answer
}

// answerLevel is the level of a line about a call answered with err, the
// level of the request's own line for its status: warn for the tool's
// server failing it (502, 504: the tool owner's to fix), error for
// Quiver's own failures and its database's (500, 503), info for a refusal
// of the caller's request (its arguments, a limit). It returns err's code.
func answerLevel(err error) (slog.Level, string) {
	p, ok := problem.As(err)
	if !ok {
		return slog.LevelError, string(problem.Internal)
	}
	switch s := p.HTTPStatus(); {
	case s == 502 || s == 504:
		return slog.LevelWarn, string(p.Code)
	case s >= 500:
		return slog.LevelError, string(p.Code)
	}
	return slog.LevelInfo, string(p.Code)
}

// releaseKey frees the key of a call that reserved it and sent nothing,
// writing entry (if any) with the release. It reports whether entry is
// taken care of: written with the release, or to be written with a release
// tried again off the request while the lease lasts (releaseLater), since
// the database did not answer; the caller's answer already says nothing
// was sent, and a key left reserved would end as outcome_unknown. A release
// the database refuses (the row is no longer this call's) returns false.
func (c *call) releaseKey(ctx context.Context, callID string, entry *store.CallLog) bool {
	if !c.req.HasKey {
		return false
	}
	var earlier taken // a release with no entry of its own has nothing to order
	if entry != nil {
		earlier = c.e.log.earlier()
	}
	ok, err := c.e.opts.Store.Release(ctx, c.req.AccountID, c.req.Key, c.token, entry, earlier.entries...)
	c.e.log.settle(earlier, err)
	if err != nil {
		named := c.named(callID)
		c.e.opts.Logger.WarnContext(ctx, "releasing a key failed; trying again while its lease lasts", append(named, "error", err)...)
		go c.releaseLater(context.WithoutCancel(ctx), callID, named, entry, false)
		return true
	}
	return ok
}

// connectorProblem maps a pre-effect connector error to its API error.
func connectorProblem(err error) error {
	var ce *connectors.Error
	if !errors.As(err, &ce) {
		return err
	}
	switch ce.Kind {
	case connectors.KindUnreachable:
		msg := "The tool's server could not be reached; nothing was sent."
		if ce.Err != nil {
			msg = strings.TrimSuffix(msg, ".") + " (" + rootCause(ce.Err) + ")."
		}
		return &problem.Error{Code: problem.ToolUnreachable, Message: msg, Err: err}
	case connectors.KindUpstreamAuth:
		return &problem.Error{Code: problem.UpstreamAuthFailed, Message: "The tool's server refused our credentials before running anything: " + ce.Message, Err: err}
	case connectors.KindUnknownAction:
		return &problem.Error{Code: problem.NotFound, Message: ce.Message, Err: err}
	case connectors.KindUpstreamRefused:
		return &problem.Error{Code: problem.UpstreamRefused, Message: "The tool's server refused the request before running anything: " + ce.Message, Err: err}
	case connectors.KindRejected:
		field := "arguments"
		if ce.Argument != "" {
			field = ce.Argument
		}
		return &problem.Error{Code: problem.InvalidArguments, Message: "The tool refused the request before running it: " + ce.Message,
			Fields: map[string]string{field: ce.Message}, Err: err}
	case connectors.KindUpstreamLimited:
		// Nothing ran: the tool's provider (Tavily, say) refused for its own
		// rate or usage limits. rate_limited tells the caller to slow down;
		// the message says whose limit it was, as Quiver's own per-account
		// limit answers the same code. Retry-After is the provider's delay,
		// bounded; none when it gave none (a used-up plan: retrying soon
		// will not help, and the message says so).
		return &problem.Error{Code: problem.RateLimited, RetryAfter: upstreamRetryAfter(ce.RetryAfter),
			Message: "The tool's provider limited the request before running it (its limit, not Quiver's per-account limit): " + ce.Message,
			Err:     err}
	}
	return &problem.Error{Code: problem.OutcomeUnknownConflict, Status: 504, Message: ce.Message, Err: err}
}

// ListingProblem maps a failure to list a tool's actions, for a call or
// for GET .../actions/, to its API error. A listing runs nothing, so none of
// its failures is an unknown outcome: one without a typed refusal (a 5xx, a
// lost connection, a timeout) is tool_unreachable, and a refusal is never
// about arguments, since a listing sends none.
func ListingProblem(err error) error {
	var ce *connectors.Error
	if !errors.As(err, &ce) {
		return unavailable(err)
	}
	switch ce.Kind {
	case connectors.KindUpstreamAuth, connectors.KindUpstreamLimited, connectors.KindUpstreamRefused:
		return connectorProblem(err)
	case connectors.KindRejected:
		return &problem.Error{Code: problem.UpstreamRefused, Message: "The tool's server refused to list its actions: " + ce.Message, Err: err}
	}
	return &problem.Error{Code: problem.ToolUnreachable, Message: "The tool's actions could not be listed: " + strings.TrimRight(ce.Message, ".") + ".", Err: err}
}

// maxUpstreamRetryAfter bounds the delay a tool's provider can make us
// tell a caller: past an hour, the caller had better look at the plan.
const maxUpstreamRetryAfter = time.Hour

// upstreamRetryAfter is a provider's delay in whole seconds, rounded up
// and at most maxUpstreamRetryAfter; 0 (no Retry-After) when it gave none.
func upstreamRetryAfter(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int((min(d, maxUpstreamRetryAfter) + time.Second - 1) / time.Second)
}

// rootCause is the innermost message of err: "connect: connection refused"
// rather than the whole chain. A dial error names a host and port only, but
// a transport's error may name the URL it was posting to (an MCP server's,
// with its key in the query), whose mask is above it in the chain.
func rootCause(err error) string {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return "the name " + dns.Name + " does not resolve" // not which resolver said so
	}
	// The text of an error below a connectors.HideURLs mask is its own,
	// unmasked: each mask passed on the way down applies to it.
	var hiders []connectors.URLHider
	hide := func(s string) string {
		for _, h := range hiders {
			s = h.HideURLsIn(s)
		}
		return s
	}
	for {
		if h, ok := err.(connectors.URLHider); ok {
			hiders = append(hiders, h)
		}
		next := errors.Unwrap(err)
		if next == nil {
			return hide(err.Error())
		}
		if _, ok := next.(*egress.BlockedError); ok {
			return hide(next.Error())
		}
		err = next
	}
}

func (c *call) entry(rt *toolconfig.Resolved, action *connectors.Action, callID, outcome string, dur time.Duration) store.CallLog {
	var key *string
	if c.req.HasKey {
		k := c.req.Key
		key = &k
	}
	return store.CallLog{CallID: callID, AccountID: c.req.AccountID, ToolID: rt.Tool.ID, Action: action.Name,
		Outcome: outcome, DurationMS: dur.Milliseconds(), IdempotencyKey: key, CreatedAt: c.start.UTC()}
}
