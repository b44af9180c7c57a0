package calls

import (
	"context"
	"fmt"
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
	// held has what keyed calls took (earlier) and have not settled.
	held map[chan struct{}]struct{}
}

const (
	logBuffer   = 8192
	logBatch    = 256
	logInterval = 100 * time.Millisecond
	// writeTimeout bounds the writing of one batch.
	writeTimeout = 10 * time.Second
	// earlierWait bounds how long earlier waits for a batch being written.
	earlierWait = 20 * time.Millisecond
	// heldWait bounds how long sync waits for keyed calls to write what
	// they took (earlier), as the store bounds a list's wait for writes in
	// flight.
	heldWait = 150 * time.Millisecond
)

func newCallLog(s Store, l *slog.Logger, m *metrics.Metrics) *callLog {
	return &callLog{store: s, logger: l, metrics: m, full: make(chan struct{}, 1), done: make(chan struct{}),
		writing: make(chan struct{}, 1), held: map[chan struct{}]struct{}{}}
}

func (l *callLog) lockWriting()   { l.writing <- struct{}{} }
func (l *callLog) unlockWriting() { <-l.writing }

// taken is what earlier took from the queue: entries of calls that ended
// before a keyed call, for it to write ahead of its own. Its zero value
// holds nothing. Until the keyed call settles it, sync waits for it, so a
// list never misses an entry that is neither queued nor written.
type taken struct {
	entries []store.CallLog
	done    chan struct{} // closed by settle; nil when nothing was taken
}

// earlier takes what is queued, for a keyed call to write ahead of its own
// entry (Store.Complete's earlier); the call then settles it. It waits for
// a batch being written, up to earlierWait (the database may be slow or
// away: the call's own outcome matters more than the order); past that,
// the call's entry may come before the batch's.
func (l *callLog) earlier() taken {
	select {
	case l.writing <- struct{}{}:
	default:
		wait := time.NewTimer(earlierWait)
		defer wait.Stop()
		select {
		case l.writing <- struct{}{}:
		case <-wait.C:
			return taken{}
		}
	}
	defer l.unlockWriting()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.queue) == 0 {
		return taken{}
	}
	t := taken{entries: slices.Clone(l.queue), done: make(chan struct{})}
	l.queue = l.queue[:0]
	l.held[t.done] = struct{}{}
	return t
}

// settle ends what earlier took, once the keyed call's statement returned
// err: entries it did not write go back to the queue (putBack) before a
// sync waiting for them goes on.
func (l *callLog) settle(t taken, err error) {
	if t.done == nil {
		return
	}
	if err != nil {
		l.putBack(t.entries)
	}
	l.mu.Lock()
	delete(l.held, t.done)
	l.mu.Unlock()
	close(t.done)
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

// sync writes what is queued now, after waiting for a batch being written
// and for entries keyed calls took (earlier), so that a list of the log
// that follows shows every call this replica has answered. What cannot be
// written goes back to the queue; the list then meets the same database.
// Entries a keyed call holds past heldWait (a stalled database) make the
// list unavailable rather than short.
func (l *callLog) sync(ctx context.Context) error {
	l.lockWriting()
	defer l.unlockWriting()
	// With writing held no call takes more, so what is held now is all
	// that must be waited for.
	l.mu.Lock()
	pending := make([]chan struct{}, 0, len(l.held))
	for done := range l.held {
		pending = append(pending, done)
	}
	l.mu.Unlock()
	if len(pending) > 0 {
		wait := time.NewTimer(heldWait)
		defer wait.Stop()
		for _, done := range pending {
			select {
			case <-done:
			case <-ctx.Done():
				return ctx.Err()
			case <-wait.C:
				return fmt.Errorf("%w: %w: a keyed call has been writing the call log for %v", store.ErrUnavailable, store.ErrWritesInFlight, heldWait)
			}
		}
	}
	_ = l.write(ctx, l.take(nil))
	return nil
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
