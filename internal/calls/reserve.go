package calls

// The key's reservation: how long it may wait for the database, what a
// reservation that failed may have left behind, and whether a reserved call
// still has the time to run.

import (
	"context"
	"time"

	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/store"
)

// releaseUnsure deletes the row a failed Reserve may have written all the
// same (its connection lost, or its bound reached, after the insert was
// sent): nothing was dispatched, and a row left behind would hold the key
// as in progress, then as outcome_unknown, though the tool never ran. The
// row is this call's only if it holds its lease token, and only while the
// lease lasts. Until a release deletes it, the release is tried again off
// the request until shortly before the lease ends (releaseMargin): the
// database may not answer yet, or the insert, still running there, may not
// have committed yet. A database away for longer, or an insert that
// commits later, leaves the key to end as outcome_unknown, as does a stop
// of this replica meanwhile.
func (c *call) releaseUnsure(ctx context.Context, callID string) {
	if ok, _ := c.tryRelease(ctx, callID, nil); ok {
		c.e.opts.Logger.WarnContext(ctx, "released a key whose reservation failed but had been written", c.named(callID)...)
		return
	}
	go c.releaseLater(context.WithoutCancel(ctx), callID, c.named(callID), nil, true)
}

// tryRelease makes one attempt to release the call's key, writing entry
// (if any) with the release, bounded by 2 s.
func (c *call) tryRelease(ctx context.Context, callID string, entry *store.CallLog) (bool, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	ok, err := c.e.opts.Store.Release(rctx, c.req.AccountID, c.req.Key, c.token, entry)
	if err != nil {
		c.e.opts.Logger.DebugContext(ctx, "releasing a key", "call_id", callID, "error", err)
	}
	return ok, err
}

// releaseMargin is how long before the lease ends releaseLater stops: an
// attempt's bound and a second, so that a release never lands once the
// lease has run out and other replicas answer outcome_unknown for the key.
const releaseMargin = 3 * time.Second

// releaseLater repeats tryRelease, with a growing pause, until it deletes
// the row or the lease is about to end. An answer that the row is not this
// call's ends it too, unless absent is set: then the row may not have been
// written yet (releaseUnsure). Its lines name what named holds (c.named,
// taken before it was started: the call may resolve its target again meanwhile).
func (c *call) releaseLater(ctx context.Context, callID string, named []any, entry *store.CallLog, absent bool) {
	pause := 250 * time.Millisecond
	var err error
	for time.Now().Add(pause + releaseMargin).Before(c.leaseUntil) {
		time.Sleep(pause)
		var ok bool
		if ok, err = c.tryRelease(ctx, callID, entry); ok {
			c.e.opts.Logger.WarnContext(ctx, "released a key on a later attempt", named...)
			return
		}
		if err == nil && !absent {
			return
		}
		pause = min(2*pause, 2*time.Second)
	}
	if err != nil { // the database never answered: the row, if any, stays
		c.e.opts.Logger.ErrorContext(ctx, "could not release a key within its lease; it will end as outcome_unknown", append(named, "error", err)...)
	}
}

// minReserveWait is the least a reservation waits for the database.
const minReserveWait = 2 * time.Second

// runMargin is what a dispatched call may take past its lease: storing an
// outcome that missed the lease (unstored's bound) and writing the answer.
const runMargin = 3 * time.Second

// timeToRun refuses a call that could not run to its end within ctx's
// bound; it is asked before the key is reserved, and again once it is, so
// that the time the reservation took counts. A dispatched call runs to its end (the tool's
// answer or timeout, and a keyed call's outcome stored: its lease) whatever
// the request's bound says; getting ready (listing the tool's actions, a
// database that was slow) may have used up so much of that bound that the
// request would outlive it, and a stop's drain, which counts on every
// request ending within it, would cut the call off. Nothing has been sent:
// the caller may retry at once, and the listing is cached by then.
func (e *Engine) timeToRun(ctx context.Context) error {
	deadline, ok := ctx.Deadline()
	if !ok {
		return nil
	}
	if left := time.Until(deadline); left < e.opts.Lease+runMargin {
		return &problem.Error{Code: problem.Unavailable, RetryAfter: 1,
			Message: "Getting this call ready (listing the tool's actions, or waiting on the database) took too long to run it within the request's time; nothing was sent. Retry."}
	}
	return nil
}

// reserving bounds a reservation: after half the lease (2 s at least, for a
// database merely slow), so that a release tried again later still finds
// the row this call's (see releaseUnsure), and in any case when the call
// could no longer start in time (timeToRun), so that a database that
// stalls leaves the request time to release what it may have written and
// answer. It is not cancelled with the request (an agent's MCP client can
// cancel it): a cancel would not say whether the insert was written.
func (e *Engine) reserving(ctx context.Context) (context.Context, context.CancelFunc) {
	end := time.Now().Add(max(e.opts.Lease/2, minReserveWait))
	if deadline, ok := ctx.Deadline(); ok {
		if start := deadline.Add(-(e.opts.Lease + runMargin)); start.Before(end) {
			end = start
		}
	}
	return context.WithDeadline(context.WithoutCancel(ctx), end)
}

// notStarted answers a call timeToRun refused after its key was reserved:
// nothing was sent, so the key is released.
func (c *call) notStarted(ctx context.Context, callID string, refusal error) (*Response, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	c.releaseKey(rctx, callID, nil) // nothing was sent: not a call to log
	return nil, refusal
}
