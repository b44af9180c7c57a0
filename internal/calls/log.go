package calls

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/quiverhq/quiver/internal/metrics"
	"github.com/quiverhq/quiver/internal/store"
)

// callLog writes call log entries in batches off the call path: a call
// never waits for its log line, and does not wake the writer either (a
// wakeup per call is a thread switch per call on an idle replica): entries
// queue under a mutex and the writer takes them every logInterval, or as
// soon as a full batch is waiting. A batch the database refuses is tried
// again on the next tick. Under overload, or with the database away for
// long, entries are dropped and counted rather than slowing calls down.
// A list of the log first writes what this replica has queued (sync), and
// a keyed call writes it ahead of its own entry (earlier), so that the log
// keeps the order in which this replica's calls ended.
type callLog struct {
	store   Store
	logger  *slog.Logger
	metrics *metrics.Metrics
	mu      sync.Mutex
	queue   []store.CallLog
	full    chan struct{} // signalled when a batch is waiting
	done    chan struct{}
	// writing holds a token while entries taken from the queue are
	// written, so that sync, and earlier for a while, wait for a batch the
	// writer has taken and not yet written.
	writing chan struct{}
}

const (
	logBuffer   = 8192
	logBatch    = 256
	logInterval = 100 * time.Millisecond
	// writeTimeout bounds the writing of one batch.
	writeTimeout = 10 * time.Second
	// earlierWait bounds how long earlier waits for a batch being written.
	earlierWait = 20 * time.Millisecond
)

func newCallLog(s Store, l *slog.Logger, m *metrics.Metrics) *callLog {
	return &callLog{store: s, logger: l, metrics: m, full: make(chan struct{}, 1), done: make(chan struct{}),
		writing: make(chan struct{}, 1)}
}

func (l *callLog) lockWriting()   { l.writing <- struct{}{} }
func (l *callLog) unlockWriting() { <-l.writing }

// earlier takes what is queued, for a keyed call to write ahead of its own
// entry (Store.Complete's earlier): entries of calls that ended before it.
// It waits for a batch being written, up to earlierWait (the database may
// be slow or away: the call's own outcome matters more than the order);
// past that, the call's entry may come before the batch's. The caller puts
// back what it could not write (putBack).
func (l *callLog) earlier() []store.CallLog {
	select {
	case l.writing <- struct{}{}:
	default:
		wait := time.NewTimer(earlierWait)
		defer wait.Stop()
		select {
		case l.writing <- struct{}{}:
		case <-wait.C:
			return nil
		}
	}
	defer l.unlockWriting()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.queue) == 0 {
		return nil
	}
	taken := slices.Clone(l.queue)
	l.queue = l.queue[:0]
	return taken
}

func (l *callLog) add(c store.CallLog) {
	l.mu.Lock()
	n := len(l.queue)
	if n < logBuffer {
		l.queue = append(l.queue, c)
	}
	l.mu.Unlock()
	switch {
	case n >= logBuffer:
		l.metrics.LogDropped.Inc()
	case n+1 == logBatch:
		select {
		case l.full <- struct{}{}:
		default:
		}
	}
}

// take removes and returns what is queued.
func (l *callLog) take(into []store.CallLog) []store.CallLog {
	l.mu.Lock()
	defer l.mu.Unlock()
	into = append(into[:0], l.queue...)
	l.queue = l.queue[:0]
	return into
}

// putBack queues entries that could not be written again, ahead of those
// queued since, as far as the buffer has room; the rest are dropped and
// counted. A batch is written whole or not at all, and an entry written
// twice is skipped by its call ID, so trying again loses and doubles
// nothing.
func (l *callLog) putBack(failed []store.CallLog) {
	l.mu.Lock()
	room := max(logBuffer-len(l.queue), 0)
	kept := failed[:min(len(failed), room)]
	l.queue = append(append(make([]store.CallLog, 0, len(kept)+len(l.queue)), kept...), l.queue...)
	l.mu.Unlock()
	if dropped := len(failed) - len(kept); dropped > 0 {
		l.metrics.LogDropped.Add(float64(dropped))
	}
}

// sync writes what is queued now, and waits for a batch being written, so
// that a list of the log that follows shows every call this replica has
// answered. What cannot be written goes back to the queue; the list then
// meets the same database.
func (l *callLog) sync(ctx context.Context) {
	l.lockWriting()
	defer l.unlockWriting()
	_ = l.write(ctx, l.take(nil))
}

// write writes batch in pieces of logBatch, each within writeTimeout, and
// on a failure puts what is left back in the queue and returns the error.
// The caller holds writing.
func (l *callLog) write(ctx context.Context, batch []store.CallLog) error {
	for len(batch) > 0 {
		n := min(len(batch), logBatch)
		wctx, cancel := context.WithTimeout(ctx, writeTimeout)
		err := l.store.InsertCalls(wctx, batch[:n])
		cancel()
		if err != nil {
			l.putBack(batch)
			return err
		}
		batch = batch[n:]
	}
	return nil
}

// run writes batches until ctx ends, then flushes what is queued.
func (l *callLog) run(ctx context.Context) {
	defer close(l.done)
	var batch []store.CallLog
	tick := time.NewTicker(logInterval)
	defer tick.Stop()
	// flush writes what is queued; on a failure it puts the rest back for
	// the next tick (the database may be back by then) and reports whether
	// everything was written. A run of failures is logged when it begins
	// and when it ends, not on every tick.
	failing := 0
	flush := func() bool {
		l.lockWriting()
		defer l.unlockWriting()
		batch = l.take(batch)
		if err := l.write(context.Background(), batch); err != nil {
			if failing++; failing == 1 {
				l.logger.Error("writing the call log failed; trying again on every tick", "entries", len(batch), "error", err)
			}
			return false
		}
		if failing > 0 {
			l.logger.Info("the call log is written again", "failed_attempts", failing)
			failing = 0
		}
		return true
	}
	for {
		select {
		case <-l.full:
		case <-tick.C:
		case <-ctx.Done():
			// What cannot be written on the way out is counted as dropped.
			if !flush() {
				l.metrics.LogDropped.Add(float64(len(l.take(nil))))
			}
			return
		}
		flush()
	}
}
