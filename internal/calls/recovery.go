package calls

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// purgeEvery is how many sweeps pass between purges of expired keys.
const purgeEvery = 30

// Run starts the engine's background work — the sweeper, the purges and
// the call log writer — and returns when ctx ends and the log is flushed.
// Every replica runs it; the sweep and the purges are safe to run
// concurrently, on one replica and across replicas.
func (e *Engine) Run(ctx context.Context) {
	logCtx, stopLog := context.WithCancel(context.Background())
	go e.log.run(logCtx)
	interval := e.opts.SweepInterval
	if interval <= 0 {
		interval = 2 * time.Second
	}
	var purging sync.WaitGroup
	if e.opts.CallLogRetention > 0 {
		// On its own: a long purge (a backlog) must not hold up the sweep
		// of expired leases.
		purging.Go(func() { e.purgeLogEvery(ctx, interval) })
	}
	defer func() {
		purging.Wait()
		stopLog()
		<-e.log.done
	}()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for n := 0; ; n++ {
		e.Sweep(ctx)
		if n%purgeEvery == 0 {
			e.Purge(ctx)
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

// maxLogPurges bounds the batches one purgeLog deletes from the call log
// (store.PurgeCalls takes up to a thousand entries each) before it pauses
// for a sweep interval: a backlog, such as a retention just shortened,
// goes in stretches rather than in one long run of deletes.
const maxLogPurges = 50

// Purge deletes keys past QUIVER_IDEMPOTENCY_TTL.
func (e *Engine) Purge(ctx context.Context) {
	n, err := e.opts.Store.PurgeExpiredKeys(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		e.opts.Logger.Warn("purging expired idempotency keys failed", "error", err)
	case n > 0:
		e.opts.Logger.Info("purged expired idempotency keys", "count", n)
	}
}

// purgeLogEvery purges the call log every purgeEvery sweep intervals, and
// after one interval only while a purge stopped at maxLogPurges with more
// to delete: else a replica would delete at most 50 000 entries a minute,
// fewer than one writes under load.
func (e *Engine) purgeLogEvery(ctx context.Context, interval time.Duration) {
	for {
		wait := interval * purgeEvery
		if e.purgeLog(ctx) {
			wait = interval
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
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
