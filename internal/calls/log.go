package calls

import (
	"context"
	"log/slog"
	"time"

	"github.com/quiverhq/quiver/internal/metrics"
	"github.com/quiverhq/quiver/internal/store"
)

// callLog writes call log entries in batches off the call path: a call
// never waits for its log line. Under overload entries are dropped and
// counted rather than slowing calls down.
type callLog struct {
	store   Store
	logger  *slog.Logger
	metrics *metrics.Metrics
	ch      chan store.CallLog
	done    chan struct{}
}

const (
	logBuffer   = 8192
	logBatch    = 256
	logInterval = 100 * time.Millisecond
)

func newCallLog(s Store, l *slog.Logger, m *metrics.Metrics) *callLog {
	return &callLog{store: s, logger: l, metrics: m, ch: make(chan store.CallLog, logBuffer), done: make(chan struct{})}
}

func (l *callLog) add(c store.CallLog) {
	select {
	case l.ch <- c:
	default:
		l.metrics.LogDropped.Inc()
	}
}

// run writes batches until ctx ends, then flushes what is queued.
func (l *callLog) run(ctx context.Context) {
	defer close(l.done)
	batch := make([]store.CallLog, 0, logBatch)
	tick := time.NewTicker(logInterval)
	defer tick.Stop()
	flush := func() {
		if len(batch) == 0 {
			return
		}
		fctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := l.store.InsertCalls(fctx, batch); err != nil {
			l.logger.Error("writing the call log failed", "entries", len(batch), "error", err)
		}
		cancel()
		batch = batch[:0]
	}
	add := func(c store.CallLog) {
		if batch = append(batch, c); len(batch) >= logBatch {
			flush()
		}
	}
	for {
		select {
		case c := <-l.ch:
			add(c)
		case <-tick.C:
			flush()
		case <-ctx.Done():
			for {
				select {
				case c := <-l.ch:
					add(c)
				default:
					flush()
					return
				}
			}
		}
	}
}
