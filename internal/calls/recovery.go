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

// Purge deletes keys past QUIVER_IDEMPOTENCY_TTL.
func (e *Engine) Purge(ctx context.Context) {
	n, err := e.opts.Store.PurgeExpiredKeys(ctx)
	if err != nil {
		if ctx.Err() == nil {
			e.opts.Logger.Warn("purging expired idempotency keys failed", "error", err)
		}
		return
	}
	if n > 0 {
		e.opts.Logger.Info("purged expired idempotency keys", "count", n)
	}
}
