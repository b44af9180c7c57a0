package calls_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quiverhq/quiver/connectors"
	"github.com/quiverhq/quiver/internal/calls"
	"github.com/quiverhq/quiver/internal/metrics"
	"github.com/quiverhq/quiver/internal/problem"
	"github.com/quiverhq/quiver/internal/replaycache"
	"github.com/quiverhq/quiver/internal/store"
)

// TestUnknownOutcomeCountedWhenItsReplyWasLost: a dispatched call with no
// outcome whose MarkUnknown committed but whose reply from the database was
// lost is still counted once in quiver_calls_total{outcome="outcome_unknown"}.
// Before, the engine left the count to the sweeper, which finds nothing to
// sweep once the row is outcome_unknown: the call was never counted.
func TestUnknownOutcomeCountedWhenItsReplyWasLost(t *testing.T) {
	t.Parallel()
	for name, opts := range storeModes() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, acct, row := toolInStore(t, opts(t), "lostreply", `{"base_url":"x"}`)
			st := &lostReplyStore{changingStore: &changingStore{Store: s, t: t}}
			m := metrics.New()
			e := calls.New(calls.Options{Store: st, Tools: &cachingTools{s: st.changingStore, conn: unknownConnector{}},
				Cache: replaycache.NewMemory(), Metrics: m, CallTimeout: 5 * time.Second, Lease: 8 * time.Second, IdempotencyTTL: time.Hour})
			body := []byte(fmt.Sprintf(`{"tool": %d, "action": "send", "arguments": {}}`, row.ID))
			call := func() error {
				_, err := e.Call(ctx, calls.Request{AccountID: acct.ID, Body: body, Key: "lost", HasKey: true})
				return err
			}
			p, ok := problem.As(call())
			if !ok || p.Code != problem.OutcomeUnknownConflict || p.HTTPStatus() != 504 {
				t.Fatalf("the first call: %v, want 504 tool_outcome_unknown", p)
			}
			if r, err := s.GetIdem(ctx, acct.ID, "lost"); err != nil || r.State != store.IdemOutcomeUnknown {
				t.Fatalf("the key: %+v, %v, want outcome_unknown", r, err)
			}
			e.Sweep(ctx) // nothing to sweep: the row is decided
			if n := counted(t, m, "outcome_unknown"); n != 1 {
				t.Fatalf("quiver_calls_total{outcome=\"outcome_unknown\"} = %v after the call and a sweep, want 1", n)
			}
			if p, ok := problem.As(call()); !ok || p.Code != problem.OutcomeUnknownConflict || p.HTTPStatus() != 409 {
				t.Fatalf("the retry: %v, want 409 tool_outcome_unknown", p)
			}
			if n := counted(t, m, "outcome_unknown"); n != 1 {
				t.Fatalf("quiver_calls_total{outcome=\"outcome_unknown\"} = %v after the retry, want 1", n)
			}
			cs, _, err := e.Calls(ctx, acct.ID, &row.ID, store.Page{Limit: 50, List: fmt.Sprintf("calls?tool=%d", row.ID)})
			if err != nil || len(cs) != 1 || cs[0].Outcome != "outcome_unknown" {
				t.Fatalf("the call log: %+v, %v, want one outcome_unknown call", cs, err)
			}
		})
	}
}

// counted is quiver_calls_total{outcome} in m.
func counted(t *testing.T, m *metrics.Metrics, outcome string) float64 {
	t.Helper()
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "quiver_calls_total" {
			continue
		}
		for _, mt := range f.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == outcome {
					return mt.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// lostReplyStore is the real store whose MarkUnknown commits and then
// reports the database unreachable, as when a committed statement's reply
// is lost on the way back, and the next markGets reads of a row after it
// fail too. With loseComplete set, the next Complete that commits does so
// too, and the one read of the row after it fails.
type lostReplyStore struct {
	*changingStore
	loseComplete atomic.Bool
	markGets     int32
	failGets     atomic.Int32 // reads left to fail
}

func (s *lostReplyStore) MarkUnknown(ctx context.Context, accountID int64, key, token string, entry *store.CallLog, earlier ...store.CallLog) (bool, error) {
	ok, err := s.changingStore.MarkUnknown(ctx, accountID, key, token, entry, earlier...)
	if err != nil || !ok {
		return ok, err
	}
	s.failGets.Store(s.markGets)
	return false, fmt.Errorf("%w: the reply was lost", store.ErrUnavailable)
}

func (s *lostReplyStore) Complete(ctx context.Context, accountID int64, key, token string, status int, contentType string, body []byte, entry *store.CallLog, earlier ...store.CallLog) (bool, error) {
	ok, err := s.changingStore.Complete(ctx, accountID, key, token, status, contentType, body, entry, earlier...)
	if err != nil || !ok || !s.loseComplete.CompareAndSwap(true, false) {
		return ok, err
	}
	s.failGets.Store(1)
	return false, fmt.Errorf("%w: the reply was lost", store.ErrUnavailable)
}

func (s *lostReplyStore) GetIdem(ctx context.Context, accountID int64, key string) (*store.IdemRecord, error) {
	for n := s.failGets.Load(); n > 0; n = s.failGets.Load() {
		if s.failGets.CompareAndSwap(n, n-1) {
			return nil, fmt.Errorf("%w: no answer", store.ErrUnavailable)
		}
	}
	return s.changingStore.GetIdem(ctx, accountID, key)
}

// unknownConnector offers one non-retryable action, send, whose every call
// is sent and gets no outcome back.
type unknownConnector struct{}

func (unknownConnector) Actions(ctx context.Context, t *connectors.Tool) ([]connectors.Action, error) {
	return []connectors.Action{{Name: "send", InputSchema: json.RawMessage(`{"type":"object"}`)}}, nil
}

func (unknownConnector) Call(ctx context.Context, t *connectors.Tool, action string, args json.RawMessage) (connectors.Result, error) {
	return connectors.Result{}, connectors.Errorf(connectors.KindOutcomeUnknown, nil, "the connection was lost after the request was sent")
}

// TestStoredOutcomeAnsweredWhenItsReplyAndReadWereLost: a call whose
// Complete committed with its reply lost, and whose read of the key's row
// to learn what the row holds failed too, answers the 200 the row holds
// once the database answers again (its MarkUnknown finds the row no longer
// dispatched), and counts it: not a 504 for an outcome every retry
// replays, left uncounted since no sweeper finds the row.
func TestStoredOutcomeAnsweredWhenItsReplyAndReadWereLost(t *testing.T) {
	t.Parallel()
	for name, opts := range storeModes() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, acct, row := toolInStore(t, opts(t), "lostread", `{"base_url":"x"}`)
			st := &lostReplyStore{changingStore: &changingStore{Store: s, t: t}}
			m := metrics.New()
			conn := &sendConnector{}
			e := calls.New(calls.Options{Store: st, Tools: &cachingTools{s: st.changingStore, conn: conn},
				Cache: replaycache.NewMemory(), Metrics: m, CallTimeout: 5 * time.Second, Lease: 8 * time.Second, IdempotencyTTL: time.Hour})
			body := []byte(fmt.Sprintf(`{"tool": %d, "action": "send", "arguments": {}}`, row.ID))
			call := func() (*calls.Response, error) {
				return e.Call(ctx, calls.Request{AccountID: acct.ID, Body: body, Key: "lostread", HasKey: true})
			}
			st.loseComplete.Store(true)
			first, err := call()
			if err != nil || first.Status != 200 || first.Replayed {
				t.Fatalf("the first call: %s, %v, want a first 200", show(first), err)
			}
			if n, u := counted(t, m, "succeeded"), counted(t, m, "outcome_unknown"); n != 1 || u != 0 {
				t.Fatalf("quiver_calls_total: succeeded %v, outcome_unknown %v, want 1 and 0", n, u)
			}
			again, err := call()
			if err != nil || !again.Replayed || string(again.Body) != string(first.Body) {
				t.Fatalf("the retry: %s, %v, want the first answer replayed", show(again), err)
			}
			if got := conn.sent(); len(got) != 1 {
				t.Fatalf("the tool got %v, want one call", got)
			}
		})
	}
}

// TestUnknownOutcomeCountedOnceTheRowCanBeRead: as
// TestUnknownOutcomeCountedWhenItsReplyWasLost, with the read of the row
// after the lost reply failing too, twice (the database away for a
// moment): the row is read again while the lease lasts, and the call is
// counted once it is, in the background.
func TestUnknownOutcomeCountedOnceTheRowCanBeRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, acct, row := toolInStore(t, storeModes()["postgres"](t), "lostreads", `{"base_url":"x"}`)
	st := &lostReplyStore{changingStore: &changingStore{Store: s, t: t}, markGets: 2}
	m := metrics.New()
	e := calls.New(calls.Options{Store: st, Tools: &cachingTools{s: st.changingStore, conn: unknownConnector{}},
		Cache: replaycache.NewMemory(), Metrics: m, CallTimeout: 5 * time.Second, Lease: 8 * time.Second, IdempotencyTTL: time.Hour})
	body := []byte(fmt.Sprintf(`{"tool": %d, "action": "send", "arguments": {}}`, row.ID))
	_, err := e.Call(ctx, calls.Request{AccountID: acct.ID, Body: body, Key: "lostreads", HasKey: true})
	if p, ok := problem.As(err); !ok || p.HTTPStatus() != 504 {
		t.Fatalf("the call: %v, want 504 tool_outcome_unknown", err)
	}
	for deadline := time.Now().Add(5 * time.Second); counted(t, m, "outcome_unknown") != 1; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("quiver_calls_total{outcome=\"outcome_unknown\"} = %v once the row can be read, want 1", counted(t, m, "outcome_unknown"))
		}
	}
	e.Sweep(ctx)
	if n := counted(t, m, "outcome_unknown"); n != 1 {
		t.Fatalf("quiver_calls_total{outcome=\"outcome_unknown\"} = %v after a sweep, want 1", n)
	}
}
