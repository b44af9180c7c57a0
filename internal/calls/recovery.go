package calls

import (
	"context"
	"strconv"
	"time"
)

// purgeEvery is how many sweeps pass between purges of expired keys.
const purgeEvery = 30

// Run starts the engine's background work — the sweeper, the purge and the
// call log writer — and returns when ctx ends and the log is flushed. Every
// replica runs it; the sweep and the purge are safe to run concurrently.
func (e *Engine) Run(ctx context.Context) {
	logCtx, stopLog := context.WithCancel(context.Background())
	go e.log.run(logCtx)
	defer func() {
		stopLog()
		<-e.log.done
	}()
	interval := e.opts.SweepInterval
	if interval <= 0 {
		interval = 2 * time.Second
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	// backlog: the last purge stopped at maxLogPurges with entries past
	// their retention left, so the next sweep goes on with the log: else a
	// replica deleted at most 50 000 entries per purgeEvery sweeps (833 a
	// second by default), fewer than one replica writes under load.
	backlog := false
	for n := 0; ; n++ {
		e.Sweep(ctx)
		switch {
		case n%purgeEvery == 0:
			backlog = e.Purge(ctx)
		case backlog:
			backlog = e.purgeLog(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Sweep turns dispatched calls whose lease ran out (their replica died)
// into outcome_unknown, and logs them so. It never re-runs them.
func (e *Engine) Sweep(ctx context.Context) {
	swept, err := e.opts.Store.SweepExpiredLeases(ctx)
	if err != nil {
		if ctx.Err() == nil && e.sweepFailing.Add(1) == 1 {
			e.opts.Logger.Warn("sweeping expired leases failed; trying again on every tick", "error", err)
		}
		return
	}
	if n := e.sweepFailing.Swap(0); n > 0 {
		e.opts.Logger.Info("sweeping expired leases works again", "failed_attempts", n)
	}
	for _, k := range swept {
		e.opts.Metrics.Swept.Inc()
		e.opts.Metrics.Calls.WithLabelValues("outcome_unknown").Inc()
		// Its log entry was written with the sweep.
		e.opts.Logger.Warn("lease expired: call outcome recorded as unknown", "call_id", k.CallID,
			"account", strconv.FormatInt(k.AccountID, 10), "tool", k.ToolID, "action", k.Action)
	}
}

// maxLogPurges bounds the batches one Purge deletes from the call log
// (store.PurgeCalls takes up to a thousand entries each): a backlog, such as
// a retention just shortened, goes over several purges rather than in one
// long stretch of deletes.
const maxLogPurges = 50

// Purge deletes keys past QUIVER_IDEMPOTENCY_TTL and call log entries past
// QUIVER_CALL_LOG_RETENTION, and reports whether the log has more to delete
// than one purge takes.
func (e *Engine) Purge(ctx context.Context) bool {
	n, err := e.opts.Store.PurgeExpiredKeys(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		e.opts.Logger.Warn("purging expired idempotency keys failed", "error", err)
	case n > 0:
		e.opts.Logger.Info("purged expired idempotency keys", "count", n)
	}
	return e.opts.CallLogRetention > 0 && e.purgeLog(ctx)
}

// purgeLog deletes the call log's entries past its retention, a batch at a
// time until one deletes nothing, and reports whether it stopped at
// maxLogPurges batches instead, with more maybe left.
func (e *Engine) purgeLog(ctx context.Context) (more bool) {
	var total int64
	more = true
	for range maxLogPurges {
		n, err := e.opts.Store.PurgeCalls(ctx, e.opts.CallLogRetention)
		if err != nil {
			if ctx.Err() == nil {
				e.opts.Logger.Warn("purging the call log's old entries failed", "error", err, "purged", total)
			}
			return false
		}
		total += n
		e.opts.Metrics.LogPurged.Add(float64(n))
		if n == 0 {
			more = false
			break
		}
	}
	if total > 0 {
		e.opts.Logger.Info("purged call log entries past their retention", "count", total, "retention", e.opts.CallLogRetention.String())
	}
	return more
}
