package calls

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/quiverhq/quiver/internal/metrics"
	"github.com/quiverhq/quiver/internal/store"
)

// callLog writes call log entries in batches off the call path: a call
// never waits for its log line, and does not wake the writer either (a
// wakeup per call is a thread switch per call on an idle replica): entries
// queue under a mutex and the writer takes them every logInterval, or as
// soon as a full batch is waiting. Under overload entries are dropped and
// counted rather than slowing calls down.
type callLog struct {
	store   Store
	logger  *slog.Logger
	metrics *metrics.Metrics
	mu      sync.Mutex
	queue   []store.CallLog
	full    chan struct{} // signalled when a batch is waiting
	done    chan struct{}
}

const (
	logBuffer   = 8192
	logBatch    = 256
	logInterval = 100 * time.Millisecond
)

func newCallLog(s Store, l *slog.Logger, m *metrics.Metrics) *callLog {
	return &callLog{store: s, logger: l, metrics: m, full: make(chan struct{}, 1), done: make(chan struct{})}
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

// run writes batches until ctx ends, then flushes what is queued.
func (l *callLog) run(ctx context.Context) {
	defer close(l.done)
	var batch []store.CallLog
	tick := time.NewTicker(logInterval)
	defer tick.Stop()
	flush := func() {
		batch = l.take(batch)
		for len(batch) > 0 {
			n := min(len(batch), logBatch)
			fctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := l.store.InsertCalls(fctx, batch[:n]); err != nil {
				l.logger.Error("writing the call log failed", "entries", n, "error", err)
			}
			cancel()
			batch = batch[n:]
		}
	}
	for {
		select {
		case <-l.full:
		case <-tick.C:
		case <-ctx.Done():
			flush()
			return
		}
		flush()
	}
}
