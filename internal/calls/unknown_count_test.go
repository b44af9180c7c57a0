package calls_test

import (
	"context"
	"encoding/json"
	"fmt"
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
// is lost on the way back.
type lostReplyStore struct{ *changingStore }

func (s *lostReplyStore) MarkUnknown(ctx context.Context, accountID int64, key, token string, entry *store.CallLog, earlier ...store.CallLog) (bool, error) {
	ok, err := s.changingStore.MarkUnknown(ctx, accountID, key, token, entry, earlier...)
	if err != nil || !ok {
		return ok, err
	}
	return false, fmt.Errorf("%w: the reply was lost", store.ErrUnavailable)
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
