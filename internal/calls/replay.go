package calls

// The replay side of a call: answering from the cache or from the row that
// holds the key, and keeping the cache in step.

import (
	"bytes"
	"context"
	"time"

	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/replaycache"
	"github.com/quiverhq/quiver/internal/store"
)

// lookup asks the replay cache; done means it answered.
func (c *call) lookup(ctx context.Context) (*Response, error, bool) {
	e := c.e
	if e.opts.Cache == nil || time.Now().UnixNano() < e.cacheDownUntil.Load() {
		return nil, nil, false
	}
	res, err := e.opts.Cache.Begin(ctx, c.req.AccountID, c.req.Key, c.fp, c.token, e.opts.Lease)
	if err != nil {
		e.cacheFailed(ctx, err)
		return nil, nil, false
	}
	switch {
	case res.Entry != nil:
		resp, err := c.fromEntry(ctx, res.Entry)
		return resp, err, true
	case res.Locked:
		c.locked = true
		return nil, nil, false
	}
	// Nothing cached, or another call's lock: it holds the key, or held it
	// (a lock stays until its lease ends when its holder's outcome could
	// not be put in the cache, see cacheDo), or is about to, or never will
	// (it may yet be refused before reserving, or have died). The row says
	// which, whatever body the lock was taken for: a different body is
	// idempotency_key_reused only once the key holds a row.
	return nil, nil, false
}

// fromEntry answers from a cached terminal outcome.
func (c *call) fromEntry(ctx context.Context, en *replaycache.Entry) (*Response, error) {
	if !bytes.Equal(en.Fingerprint, c.fp) {
		return nil, c.conflict(problem.IdempotencyKeyReused)
	}
	if c.req.ReadOnly {
		ro := en.ReadOnly
		if ro == nil {
			ro = c.rowReadOnly(ctx, en)
		}
		if ro != nil && !*ro {
			return nil, forbiddenReplay(c.b.Action) // the same body: the same action
		}
	}
	if en.State == replaycache.StateOutcomeUnknown {
		return nil, c.conflict(problem.OutcomeUnknownConflict)
	}
	return c.replay(en.Status, en.ContentType, en.Body), nil
}

func (c *call) replay(status int, contentType string, b []byte) *Response {
	c.e.opts.Metrics.Replays.Inc()
	c.e.opts.Metrics.CallDuration.WithLabelValues("replay").Observe(time.Since(c.start).Seconds())
	return &Response{Status: status, ContentType: contentType, Body: b, Replayed: true}
}

// CountConflict counts a 409 of kind code in quiver_call_conflicts_total:
// the engine counts its own, bar those a Request.UncountedReuse leaves to
// its caller.
func (e *Engine) CountConflict(code problem.Code) {
	e.opts.Metrics.Conflicts.WithLabelValues(string(code)).Inc()
}

// conflict returns the 409 for a key in use.
func (c *call) conflict(code problem.Code) *problem.Error {
	if !c.req.UncountedReuse || code != problem.IdempotencyKeyReused {
		c.e.CountConflict(code)
	}
	switch code {
	case problem.IdempotencyKeyReused:
		return problem.New(code, "This Idempotency-Key was already used with a different request body.")
	case problem.RequestInProgress:
		p := problem.New(code, "A request with this Idempotency-Key is still running; retry after a moment.")
		p.RetryAfter = 1
		return p
	default:
		return problem.New(code, "The earlier request with this Idempotency-Key was dispatched and its outcome is unknown; it will not be run again. Check the tool, then use a new key for a new operation.")
	}
}

// rowReadOnly reads from the key's row whether the action of a cached
// outcome that does not say (an older build cached it) was read-only, and
// caches the outcome again with the answer: the cost of a database read
// falls on a read-only key's replay of such an outcome alone. It is nil
// when the row does not say either (it was reserved before rows recorded
// it), holds another call, or cannot be read: a read-only key is then
// refused only where the tool still says the action is not read-only
// (readOnlyForbidden), as before rows recorded it.
func (c *call) rowReadOnly(ctx context.Context, en *replaycache.Entry) *bool {
	r, err := c.e.opts.Store.GetIdem(ctx, c.req.AccountID, c.req.Key)
	if err != nil || r.CallID != en.CallID || r.ReadOnly == nil {
		return nil
	}
	c.cacheOutcome(ctx, en.CallID, en.State, en.Status, en.ContentType, en.Body, r.ReadOnly, rowTTL(r))
	return r.ReadOnly
}

// fromRow answers from the database row that holds the key. A read-only
// key is refused every answer of a row whose action was not read-only
// when it was reserved, whatever its tool has become; a row reserved
// before rows recorded it (ReadOnly nil) answers it as any key, once
// readOnlyForbidden found nothing to refuse.
func (c *call) fromRow(ctx context.Context, r *store.IdemRecord) (*Response, error) {
	if !bytes.Equal(r.Fingerprint, c.fp) {
		return nil, c.conflict(problem.IdempotencyKeyReused)
	}
	if c.req.ReadOnly && r.ReadOnly != nil && !*r.ReadOnly {
		return nil, forbiddenReplay(r.Action)
	}
	switch {
	case r.State == store.IdemSucceeded:
		ct := ContentType
		if r.ContentType != nil {
			ct = *r.ContentType
		}
		status := 200
		if r.StatusCode != nil {
			status = *r.StatusCode
		}
		c.cacheOutcome(ctx, r.CallID, replaycache.StateSucceeded, status, ct, r.Response, r.ReadOnly, rowTTL(r))
		return c.replay(status, ct, r.Response), nil
	case r.State == store.IdemOutcomeUnknown || r.LeaseExpired():
		c.cacheOutcome(ctx, r.CallID, replaycache.StateOutcomeUnknown, 0, "", nil, r.ReadOnly, rowTTL(r))
		return nil, c.conflict(problem.OutcomeUnknownConflict)
	default:
		return nil, c.conflict(problem.RequestInProgress)
	}
}

// rowTTL is how long the key of a row read from the database has left.
func rowTTL(r *store.IdemRecord) time.Duration {
	return time.Duration(r.ExpiresAt-r.NowMS) * time.Millisecond
}

// freshTTL is how long a key this call reserved has left: the row's TTL
// began a moment after the call started, so this errs on the short side.
func (c *call) freshTTL() time.Duration { return c.e.opts.IdempotencyTTL - time.Since(c.start) }

// cacheOutcome puts a terminal outcome in the replay cache for the rest of
// its key's life (best effort), with whether its action was read-only as
// the key's row records it.
func (c *call) cacheOutcome(ctx context.Context, callID string, state byte, status int, ct string, b []byte, readOnly *bool, ttl time.Duration) {
	e := c.e
	if e.opts.Cache == nil || ttl <= 0 {
		return
	}
	en := &replaycache.Entry{Fingerprint: c.fp, State: state, Status: status, ContentType: ct, Body: b, CallID: callID,
		ReadOnly: readOnly, ExpiresAt: time.Now().Add(ttl).UnixMilli()}
	e.cacheDo(ctx, func(ctx context.Context) error { return e.opts.Cache.Finish(ctx, c.req.AccountID, c.req.Key, en, ttl) })
	c.locked = false
}

// cacheDo runs a cache write on a context of its own, detached from the
// request's ctx but carrying its values (its request ID, for the log): it
// must happen even if the client left, and must not hold the answer up for
// long. While the
// cache is marked down it is skipped, as lookups are: a dead Redis costs
// one timeout, not one per call. A lock left in place that way ends with
// its lease; until then a retry with the same body asks the database
// (lookup), which holds the outcome.
func (e *Engine) cacheDo(ctx context.Context, fn func(ctx context.Context) error) {
	if time.Now().UnixNano() < e.cacheDownUntil.Load() {
		return
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if err := fn(wctx); err != nil {
		e.cacheFailed(ctx, err)
	}
}

// cacheBackoff is how long the replay cache is skipped after an error.
const cacheBackoff = time.Second

// cacheFailed records a cache error and skips the cache for cacheBackoff:
// calls go to the database alone meanwhile, which is slower, never weaker.
// The warning names the request (ctx) that met the error.
func (e *Engine) cacheFailed(ctx context.Context, err error) {
	e.opts.Metrics.CacheErrors.Inc()
	now := time.Now().UnixNano()
	if prev := e.cacheDownUntil.Load(); now >= prev && e.cacheDownUntil.CompareAndSwap(prev, now+int64(cacheBackoff)) {
		e.opts.Logger.WarnContext(ctx, "replay cache unavailable; using the database alone for a moment", "error", err)
	}
}
